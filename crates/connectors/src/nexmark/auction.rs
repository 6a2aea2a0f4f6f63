//! `auction` events: an item put up for sale by a (often "hot") seller, in one of five
//! categories, with an initial bid, a reserve and an expiry.

use std::sync::Arc;

use anduin_types::ColumnType;
use arrow::array::{ArrayRef, Int64Array, StringBuilder, TimestampMillisecondArray};

use super::ids::{
    last_base0_auction_id, last_base0_person_id, next_base0_person_id, Config, AUCTION_PROPORTION,
    AVG_AUCTION_BYTES, FIRST_AUCTION_ID, FIRST_CATEGORY_ID, FIRST_PERSON_ID, HOT_BATCH,
    HOT_SELLER_RATIO, NUM_CATEGORIES, NUM_IN_FLIGHT_AUCTIONS, PROPORTION_DENOMINATOR,
};
use super::strings::{next_extra, next_price, next_string, Rng};
use super::Columns;

/// The columns of the `auction` output.
pub const FIELDS: &[(&str, ColumnType)] = &[
    ("id", ColumnType::Int),
    ("itemName", ColumnType::String),
    ("description", ColumnType::String),
    ("initialBid", ColumnType::Int),
    ("reserve", ColumnType::Int),
    ("dateTime", ColumnType::Timestamp),
    ("expires", ColumnType::Timestamp),
    ("seller", ColumnType::Int),
    ("category", ColumnType::Int),
    ("extra", ColumnType::String),
];

/// Auction rows being built.
#[derive(Default)]
pub struct Auctions {
    id: Vec<i64>,
    item_name: StringBuilder,
    description: StringBuilder,
    initial_bid: Vec<i64>,
    reserve: Vec<i64>,
    date_time: Vec<i64>,
    expires: Vec<i64>,
    seller: Vec<i64>,
    category: Vec<i64>,
    extra: StringBuilder,
}

/// How long auction `id` runs: up to twice the event time it takes for the in-flight
/// auctions to be replaced, so that about that many are open at any time.
fn length_ms(config: &Config, id: u64, now: i64, rng: &mut Rng) -> i64 {
    let events_for_auctions = NUM_IN_FLIGHT_AUCTIONS * PROPORTION_DENOMINATOR / AUCTION_PROPORTION;
    let number = id - config.first_event_id;
    let horizon = config.timestamp_of_number(number + events_for_auctions) - now;
    1 + rng.below((horizon * 2).max(1).unsigned_abs()) as i64
}

impl Columns for Auctions {
    fn push(&mut self, config: &Config, id: u64) {
        let mut rng = Rng::for_event(config.seed, id);
        let now = config.timestamp_of_id(id);
        let seller = if rng.below(HOT_SELLER_RATIO) > 0 {
            // The first person of the current batch of hot sellers.
            (last_base0_person_id(id) / HOT_BATCH) * HOT_BATCH
        } else {
            next_base0_person_id(id, &mut rng)
        };
        let category = FIRST_CATEGORY_ID + rng.below(NUM_CATEGORIES) as i64;
        let initial_bid = next_price(&mut rng);
        let expires = now + length_ms(config, id, now, &mut rng);
        let name = next_string(&mut rng, 20, ' ');
        let description = next_string(&mut rng, 100, ' ');
        let reserve = initial_bid + next_price(&mut rng);
        let size = 8 + name.len() + description.len() + 8 + 8 + 8 + 8 + 8;
        let extra = next_extra(&mut rng, size, AVG_AUCTION_BYTES);
        self.id
            .push(last_base0_auction_id(id) as i64 + FIRST_AUCTION_ID);
        self.item_name.append_value(name);
        self.description.append_value(description);
        self.initial_bid.push(initial_bid);
        self.reserve.push(reserve);
        self.date_time.push(now);
        self.expires.push(expires);
        self.seller.push(seller as i64 + FIRST_PERSON_ID);
        self.category.push(category);
        self.extra.append_value(extra);
    }

    fn finish(&mut self) -> Vec<ArrayRef> {
        let ints = |v: &mut Vec<i64>| -> ArrayRef { Arc::new(Int64Array::from(std::mem::take(v))) };
        let times = |v: &mut Vec<i64>| -> ArrayRef {
            Arc::new(TimestampMillisecondArray::from(std::mem::take(v)))
        };
        vec![
            ints(&mut self.id),
            Arc::new(self.item_name.finish()),
            Arc::new(self.description.finish()),
            ints(&mut self.initial_bid),
            ints(&mut self.reserve),
            times(&mut self.date_time),
            times(&mut self.expires),
            ints(&mut self.seller),
            ints(&mut self.category),
            Arc::new(self.extra.finish()),
        ]
    }
}
