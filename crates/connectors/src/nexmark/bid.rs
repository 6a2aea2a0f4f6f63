//! `bid` events: a price offered on an auction (often the current "hot" one) by a bidder
//! (often a "hot" one), through a channel.
//!
//! We deliberately differ from the reference on one point: nexmark-flink adds
//! `FIRST_PERSON_ID` to the bidder twice (after choosing a 0-based id, and again after the
//! channel), so that its bidders run ahead of its person ids by 1000. Here the bidder is a 0-based person id plus `FIRST_PERSON_ID` once,
//! like the seller of an auction, so every bidder is a person that exists or is in flight.

use std::sync::Arc;

use anduin_types::ColumnType;
use arrow::array::{ArrayRef, Int64Array, StringBuilder, TimestampMillisecondArray};

use super::ids::{
    last_base0_auction_id, last_base0_person_id, next_base0_auction_id, next_base0_person_id,
    Config, AVG_BID_BYTES, FIRST_AUCTION_ID, FIRST_PERSON_ID, HOT_AUCTION_RATIO, HOT_BATCH,
    HOT_BIDDER_RATIO,
};
use super::strings::{next_price, next_string, push_extra, Rng};
use super::Columns;

/// The columns of the `bid` output.
pub const FIELDS: &[(&str, ColumnType)] = &[
    ("auction", ColumnType::Int),
    ("bidder", ColumnType::Int),
    ("price", ColumnType::Int),
    ("channel", ColumnType::String),
    ("url", ColumnType::String),
    ("dateTime", ColumnType::Timestamp),
    ("extra", ColumnType::String),
];

/// The four hot channels; half of the bids come through one of them.
pub const HOT_CHANNELS: &[&str] = &["Google", "Facebook", "Baidu", "Apple"];
/// One bid in this many comes through a random channel, the others through a hot one.
const HOT_CHANNELS_RATIO: u64 = 2;
/// How many other channels there are (`channel-0` … `channel-9999`).
const CHANNELS: u64 = 10_000;
/// Keys of [`Rng::for_key`] for urls.
const HOT_URL_DOMAIN: u64 = 1;
const CHANNEL_URL_DOMAIN: u64 = 2;

/// A page of the auction site, with random path segments.
fn base_url(rng: &mut Rng) -> String {
    format!(
        "https://www.nexmark.com/{}/{}/{}/item.htm?query=1",
        next_string(rng, 5, '_'),
        next_string(rng, 5, '_'),
        next_string(rng, 5, '_')
    )
}

/// The url of hot channel `i`: fixed for a seed.
pub fn hot_url(seed: u64, i: u64) -> String {
    base_url(&mut Rng::for_key(seed, HOT_URL_DOMAIN, i))
}

/// The url of `channel-{n}`: fixed for a seed; nine in ten carry the channel id, its digits
/// reversed.
fn channel_url(seed: u64, n: u64) -> String {
    let mut rng = Rng::for_key(seed, CHANNEL_URL_DOMAIN, n);
    let url = base_url(&mut rng);
    if rng.below(10) > 0 {
        let reversed: String = n.to_string().chars().rev().collect();
        let reversed = reversed.trim_start_matches('0');
        format!(
            "{url}&channel_id={}",
            if reversed.is_empty() { "0" } else { reversed }
        )
    } else {
        url
    }
}

/// Bid rows being built.
#[derive(Default)]
pub struct Bids {
    auction: Vec<i64>,
    bidder: Vec<i64>,
    price: Vec<i64>,
    channel: StringBuilder,
    url: StringBuilder,
    date_time: Vec<i64>,
    extra: StringBuilder,
    /// The hot channels' urls, once computed.
    hot_urls: Vec<String>,
    /// The other channels' names and urls, computed when first used.
    channels: Vec<Option<(String, String)>>,
    /// The `extra` of the bid being built.
    scratch: String,
}

impl Columns for Bids {
    fn push(&mut self, config: &Config, id: u64) {
        let mut rng = Rng::for_event(config.seed, id);
        let auction = if rng.below(HOT_AUCTION_RATIO) > 0 {
            // The first auction of the current batch of hot auctions.
            (last_base0_auction_id(id) / HOT_BATCH) * HOT_BATCH
        } else {
            next_base0_auction_id(id, &mut rng)
        };
        let bidder = if rng.below(HOT_BIDDER_RATIO) > 0 {
            // The second person of the current batch of hot bidders.
            (last_base0_person_id(id) / HOT_BATCH) * HOT_BATCH + 1
        } else {
            next_base0_person_id(id, &mut rng)
        };
        let price = next_price(&mut rng);
        if rng.below(HOT_CHANNELS_RATIO) > 0 {
            let i = rng.below(HOT_CHANNELS.len() as u64);
            if self.hot_urls.is_empty() {
                self.hot_urls = (0..HOT_CHANNELS.len() as u64)
                    .map(|i| hot_url(config.seed, i))
                    .collect();
            }
            let i = i as usize;
            self.channel
                .append_value(HOT_CHANNELS.get(i).copied().unwrap_or_default());
            self.url
                .append_value(self.hot_urls.get(i).map(String::as_str).unwrap_or_default());
        } else {
            let n = rng.below(CHANNELS);
            if self.channels.is_empty() {
                self.channels.resize(CHANNELS as usize, None);
            }
            let (name, url) = self
                .channels
                .get_mut(n as usize)
                .expect("n < CHANNELS, the cache's length")
                .get_or_insert_with(|| (format!("channel-{n}"), channel_url(config.seed, n)));
            self.channel.append_value(name.as_str());
            self.url.append_value(url.as_str());
        }
        self.scratch.clear();
        push_extra(&mut rng, 8 + 8 + 8 + 8, AVG_BID_BYTES, &mut self.scratch);
        self.auction.push(auction as i64 + FIRST_AUCTION_ID);
        self.bidder.push(bidder as i64 + FIRST_PERSON_ID);
        self.price.push(price);
        self.date_time.push(config.timestamp_of_id(id));
        self.extra.append_value(self.scratch.as_str());
    }

    fn finish(&mut self) -> Vec<ArrayRef> {
        let ints = |v: &mut Vec<i64>| -> ArrayRef { Arc::new(Int64Array::from(std::mem::take(v))) };
        vec![
            ints(&mut self.auction),
            ints(&mut self.bidder),
            ints(&mut self.price),
            Arc::new(self.channel.finish()),
            Arc::new(self.url.finish()),
            Arc::new(TimestampMillisecondArray::from(std::mem::take(
                &mut self.date_time,
            ))),
            Arc::new(self.extra.finish()),
        ]
    }
}
