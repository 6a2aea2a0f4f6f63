//! Naive references of nexmark-flink's queries beyond the original suite (q10, q11, q13–q22),
//! as `benches/nexmark/` writes them: each is the query's SQL computed over the whole input
//! with loops and `BTreeMap`s. Days, hours and minutes are of UTC.

use std::collections::{BTreeMap, BTreeSet};

use super::{Auction, Bid, Row, V};

/// The civil date `(year, month, day)` of a day counted from 1970-01-01 (Howard Hinnant's
/// `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// `yyyy-MM-dd` of an instant in epoch milliseconds.
fn day(ms: i64) -> String {
    let (y, m, d) = civil_from_days(ms.div_euclid(86_400_000));
    format!("{y:04}-{m:02}-{d:02}")
}

/// The hour of the day of an instant in epoch milliseconds.
fn hour(ms: i64) -> i64 {
    ms.rem_euclid(86_400_000) / 3_600_000
}

/// `HH:mm` of an instant in epoch milliseconds.
fn minute(ms: i64) -> String {
    let m = ms.rem_euclid(86_400_000) / 60_000;
    format!("{:02}:{:02}", m / 60, m % 60)
}

#[test]
fn days_hours_and_minutes_are_of_utc() {
    // 2024-03-01T12:30:05.5Z
    let t = 1_709_296_205_500;
    assert_eq!(
        (day(t), hour(t), minute(t)),
        ("2024-03-01".into(), 12, "12:30".into())
    );
    assert_eq!(day(0), "1970-01-01");
    assert_eq!(day(951_782_400_000), "2000-02-29");
}

/// `SELECT auction, bidder, price, dateTime, extra, DATE_FORMAT(dateTime, 'yyyy-MM-dd'),
/// DATE_FORMAT(dateTime, 'HH:mm') FROM bid`
pub fn q10(bids: &[Bid]) -> Vec<Row> {
    (bids.iter())
        .map(|b| {
            vec![
                V::I(b.auction),
                V::I(b.bidder),
                V::I(b.price),
                V::I(b.date_time),
                V::S(b.extra.clone()),
                V::S(day(b.date_time)),
                V::S(minute(b.date_time)),
            ]
        })
        .collect()
}

/// `SELECT bidder, count(*), SESSION_START(dateTime, INTERVAL '10' SECOND),
/// SESSION_END(…) FROM bid GROUP BY bidder, SESSION(dateTime, INTERVAL '10' SECOND)`: a
/// bidder's session goes on while each bid comes at most 10 s after the one before (a bid
/// exactly 10 s after the last is in the session, as in Flink, whose windows `[t, t + gap)`
/// merge when they touch); it starts at its first bid and ends 10 s after its last.
pub fn q11(bids: &[Bid]) -> Vec<Row> {
    const GAP: i64 = 10_000;
    let mut per_bidder: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
    for b in bids {
        per_bidder.entry(b.bidder).or_default().push(b.date_time);
    }
    let mut rows = Vec::new();
    for (bidder, mut times) in per_bidder {
        times.sort_unstable();
        let (mut start, mut last, mut count) = (times[0], times[0], 0);
        for t in times {
            if t > last + GAP {
                rows.push(vec![
                    V::I(bidder),
                    V::I(count),
                    V::I(start),
                    V::I(last + GAP),
                ]);
                (start, count) = (t, 0);
            }
            last = t;
            count += 1;
        }
        rows.push(vec![
            V::I(bidder),
            V::I(count),
            V::I(start),
            V::I(last + GAP),
        ]);
    }
    rows
}

/// q12's result summed over its processing-time windows, which depend on when each bid is
/// processed: `SELECT bidder, count(*) FROM bid GROUP BY bidder`, each bidder's bids over all
/// windows.
pub fn q12_over_all_windows(bids: &[Bid]) -> Vec<Row> {
    let mut per_bidder: BTreeMap<i64, i64> = BTreeMap::new();
    for b in bids {
        *per_bidder.entry(b.bidder).or_default() += 1;
    }
    (per_bidder.into_iter())
        .map(|(bidder, n)| vec![V::I(bidder), V::I(n)])
        .collect()
}

/// `SELECT B.auction, B.bidder, B.price, B.dateTime, S.value FROM bid B JOIN side_input S ON
/// mod(B.auction, 10000) = S.key`, the side input holding `i, 'i'` for i in 0 … 9 999: every
/// bid, with the text of its auction id modulo 10 000.
pub fn q13(bids: &[Bid]) -> Vec<Row> {
    (bids.iter())
        .map(|b| {
            vec![
                V::I(b.auction),
                V::I(b.bidder),
                V::I(b.price),
                V::I(b.date_time),
                V::S(b.auction.rem_euclid(10_000).to_string()),
            ]
        })
        .collect()
}

/// `SELECT auction, bidder, 0.908 * price, CASE WHEN HOUR(dateTime) …, dateTime, extra,
/// count_char(extra, 'c') FROM bid WHERE 0.908 * price > 1000000 AND 0.908 * price <
/// 50000000`
pub fn q14(bids: &[Bid]) -> Vec<Row> {
    let mut rows = Vec::new();
    for b in bids {
        let euros = 0.908 * b.price as f64;
        if !(euros > 1_000_000.0 && euros < 50_000_000.0) {
            continue;
        }
        let h = hour(b.date_time);
        let kind = if (8..=18).contains(&h) {
            "dayTime"
        } else if h <= 6 || h >= 20 {
            "nightTime"
        } else {
            "otherTime"
        };
        rows.push(vec![
            V::I(b.auction),
            V::I(b.bidder),
            V::F(euros),
            V::S(kind.to_string()),
            V::I(b.date_time),
            V::S(b.extra.clone()),
            V::I(b.extra.chars().filter(|&c| c == 'c').count() as i64),
        ]);
    }
    rows
}

/// The counts of q15 and q16 for one group: bids, distinct bidders and distinct auctions, in
/// all and at each of three levels of price (`< 10000`, `[10000, 1000000)`, `>= 1000000`).
#[derive(Default)]
struct Counts {
    bids: [i64; 4],
    bidders: [BTreeSet<i64>; 4],
    auctions: [BTreeSet<i64>; 4],
}

impl Counts {
    fn add(&mut self, b: &Bid) {
        let rank = match b.price {
            p if p < 10_000 => 1,
            p if p < 1_000_000 => 2,
            _ => 3,
        };
        for i in [0, rank] {
            self.bids[i] += 1;
            self.bidders[i].insert(b.bidder);
            self.auctions[i].insert(b.auction);
        }
    }

    fn values(&self) -> Vec<V> {
        let mut row: Vec<V> = self.bids.iter().map(|&n| V::I(n)).collect();
        row.extend(self.bidders.iter().map(|s| V::I(s.len() as i64)));
        row.extend(self.auctions.iter().map(|s| V::I(s.len() as i64)));
        row
    }
}

/// `SELECT DATE_FORMAT(dateTime, 'yyyy-MM-dd') AS day, count(*), count(*) FILTER (WHERE …)
/// …, count(DISTINCT bidder) …, count(DISTINCT auction) … FROM bid GROUP BY day`
pub fn q15(bids: &[Bid]) -> Vec<Row> {
    let mut per_day: BTreeMap<String, Counts> = BTreeMap::new();
    for b in bids {
        per_day.entry(day(b.date_time)).or_default().add(b);
    }
    (per_day.into_iter())
        .map(|(d, c)| [vec![V::S(d)], c.values()].concat())
        .collect()
}

/// q15 per `channel, day`, with `max(DATE_FORMAT(dateTime, 'HH:mm'))` after the key.
pub fn q16(bids: &[Bid]) -> Vec<Row> {
    let mut groups: BTreeMap<(String, String), (String, Counts)> = BTreeMap::new();
    for b in bids {
        let key = (b.channel.clone(), day(b.date_time));
        let (latest, counts) = groups.entry(key).or_default();
        *latest = latest.clone().max(minute(b.date_time));
        counts.add(b);
    }
    (groups.into_iter())
        .map(|((channel, d), (latest, c))| {
            [vec![V::S(channel), V::S(d), V::S(latest)], c.values()].concat()
        })
        .collect()
}

/// `SELECT auction, DATE_FORMAT(dateTime, 'yyyy-MM-dd') AS day, count(*), count(*) FILTER
/// (WHERE …) …, min(price), max(price), avg(price), sum(price) FROM bid GROUP BY auction, day`
pub fn q17(bids: &[Bid]) -> Vec<Row> {
    let mut groups: BTreeMap<(i64, String), Vec<i64>> = BTreeMap::new();
    for b in bids {
        let key = (b.auction, day(b.date_time));
        groups.entry(key).or_default().push(b.price);
    }
    (groups.into_iter())
        .map(|((auction, d), prices)| {
            let n = prices.len() as i64;
            let count = |f: fn(i64) -> bool| prices.iter().filter(|&&p| f(p)).count() as i64;
            let sum: i64 = prices.iter().sum();
            vec![
                V::I(auction),
                V::S(d),
                V::I(n),
                V::I(count(|p| p < 10_000)),
                V::I(count(|p| (10_000..1_000_000).contains(&p))),
                V::I(count(|p| p >= 1_000_000)),
                V::I(*prices.iter().min().expect("a bid")),
                V::I(*prices.iter().max().expect("a bid")),
                V::F(sum as f64 / n as f64),
                V::I(sum),
            ]
        })
        .collect()
}

/// A bid's row: `auction, bidder, price, channel, url, dateTime, extra`.
fn bid_row(b: &Bid) -> Row {
    vec![
        V::I(b.auction),
        V::I(b.bidder),
        V::I(b.price),
        V::S(b.channel.clone()),
        V::S(b.url.clone()),
        V::I(b.date_time),
        V::S(b.extra.clone()),
    ]
}

/// `… ROW_NUMBER() OVER (PARTITION BY bidder, auction ORDER BY dateTime DESC) … WHERE
/// rank_number <= 1`: the last bid of each bidder on each auction.
pub fn q18(bids: &[Bid]) -> Vec<Row> {
    let mut last: BTreeMap<(i64, i64), &Bid> = BTreeMap::new();
    for b in bids {
        let held = last.entry((b.bidder, b.auction)).or_insert(b);
        if b.date_time > held.date_time {
            *held = b;
        }
    }
    last.into_values().map(bid_row).collect()
}

/// `… ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) AS rank_number … WHERE
/// rank_number <= 10`: the 10 highest bids of each auction, with their rank. Bids of one
/// auction at one price take their ranks in the order of their times here; the query leaves
/// that order open, so a comparison holds the price at each rank (which ties do not change)
/// apart from which bid has it; where the 10th and 11th share a price, which of them are
/// kept is open too ([`q19_ties_at_the_tenth`]).
pub fn q19(bids: &[Bid]) -> Vec<Row> {
    let mut per_auction: BTreeMap<i64, Vec<&Bid>> = BTreeMap::new();
    for b in bids {
        per_auction.entry(b.auction).or_default().push(b);
    }
    let mut rows = Vec::new();
    for (_, mut bs) in per_auction {
        bs.sort_by_key(|b| (std::cmp::Reverse(b.price), b.date_time));
        for (rank, b) in bs.iter().take(10).enumerate() {
            let mut row = bid_row(b);
            row.push(V::I(rank as i64 + 1));
            rows.push(row);
        }
    }
    rows
}

/// The auctions whose 10th and 11th highest bids share a price, with that price: which bids
/// of that price q19 keeps is the engine's choice.
pub fn q19_ties_at_the_tenth(bids: &[Bid]) -> BTreeMap<i64, i64> {
    let mut per_auction: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
    for b in bids {
        per_auction.entry(b.auction).or_default().push(b.price);
    }
    (per_auction.into_iter())
        .filter_map(|(auction, mut prices)| {
            prices.sort_unstable_by(|a, b| b.cmp(a));
            (prices.len() > 10 && prices[9] == prices[10]).then(|| (auction, prices[9]))
        })
        .collect()
}

/// `SELECT auction, bidder, price, channel, url, B.dateTime, B.extra, …, A.dateTime, expires,
/// seller, category, … FROM bid AS B INNER JOIN auction AS A ON B.auction = A.id WHERE
/// A.category = 10`, without the auction's text columns (the reference does not read them):
/// `auction, bidder, price, channel, url, bid_dateTime, bid_extra, auction_dateTime, expires,
/// seller, category`.
pub fn q20(auctions: &[Auction], bids: &[Bid]) -> Vec<Row> {
    let mut of_category_10: BTreeMap<i64, Vec<&Auction>> = BTreeMap::new();
    for a in auctions.iter().filter(|a| a.category == 10) {
        of_category_10.entry(a.id).or_default().push(a);
    }
    let mut rows = Vec::new();
    for b in bids {
        for a in of_category_10.get(&b.auction).into_iter().flatten() {
            let mut row = bid_row(b);
            row.extend([
                V::I(a.date_time),
                V::I(a.expires),
                V::I(a.seller),
                V::I(a.category),
            ]);
            rows.push(row);
        }
    }
    rows
}

/// Java's `REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2)`, by hand: the value of the
/// first `channel_id=` at the start of `url` or after a `&`, up to the next `&`.
fn channel_id_of(url: &str) -> Option<String> {
    let mut from = 0;
    while let Some(i) = url[from..].find("channel_id=").map(|i| i + from) {
        if i == 0 || url.as_bytes()[i - 1] == b'&' {
            let value = &url[i + "channel_id=".len()..];
            return Some(value.split('&').next().unwrap_or_default().to_string());
        }
        from = i + 1;
    }
    None
}

#[test]
fn a_channel_id_follows_an_ampersand_or_starts_the_url() {
    assert_eq!(
        channel_id_of("a?q=1&channel_id=12&x=3").as_deref(),
        Some("12")
    );
    assert_eq!(channel_id_of("channel_id=7").as_deref(), Some("7"));
    assert_eq!(
        channel_id_of("a?xchannel_id=1&channel_id=2").as_deref(),
        Some("2")
    );
    assert_eq!(channel_id_of("a?xchannel_id=1"), None);
}

/// `SELECT auction, bidder, price, channel, CASE WHEN lower(channel) = 'apple' THEN '0' …
/// ELSE REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2) END FROM bid WHERE
/// REGEXP_EXTRACT(…) IS NOT NULL OR lower(channel) IN ('apple', 'google', 'facebook',
/// 'baidu')`
pub fn q21(bids: &[Bid]) -> Vec<Row> {
    let mut rows = Vec::new();
    for b in bids {
        let hot = match b.channel.to_lowercase().as_str() {
            "apple" => Some("0"),
            "google" => Some("1"),
            "facebook" => Some("2"),
            "baidu" => Some("3"),
            _ => None,
        };
        let extracted = channel_id_of(&b.url);
        let Some(id) = hot.map(str::to_string).or(extracted) else {
            continue;
        };
        rows.push(vec![
            V::I(b.auction),
            V::I(b.bidder),
            V::I(b.price),
            V::S(b.channel.clone()),
            V::S(id),
        ]);
    }
    rows
}

/// `SELECT auction, bidder, price, channel, SPLIT_INDEX(url, '/', 3), SPLIT_INDEX(url, '/',
/// 4), SPLIT_INDEX(url, '/', 5) FROM bid` (pieces counted from 0)
pub fn q22(bids: &[Bid]) -> Vec<Row> {
    (bids.iter())
        .map(|b| {
            let pieces: Vec<&str> = b.url.split('/').collect();
            let piece = |i: usize| V::S(pieces.get(i).copied().unwrap_or_default().to_string());
            vec![
                V::I(b.auction),
                V::I(b.bidder),
                V::I(b.price),
                V::S(b.channel.clone()),
                piece(3),
                piece(4),
                piece(5),
            ]
        })
        .collect()
}
