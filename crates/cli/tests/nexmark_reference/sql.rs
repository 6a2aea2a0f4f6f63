//! Naive references of the relational Nexmark queries: each is the query's SQL computed over
//! the whole input with loops, `BTreeMap`s and `BTreeSet`s. Windows are aligned to the epoch
//! and exist only where they hold a row.

use std::collections::{BTreeMap, BTreeSet};

use super::{Auction, Bid, Person, Row, V};

/// `SELECT auction, bidder, price, dateTime, extra FROM bid`
pub fn q0(bids: &[Bid]) -> Vec<Row> {
    let mut rows = Vec::new();
    for b in bids {
        rows.push(vec![
            V::I(b.auction),
            V::I(b.bidder),
            V::I(b.price),
            V::I(b.date_time),
            V::S(b.extra.clone()),
        ]);
    }
    rows
}

/// `SELECT auction, bidder, 0.908 * price AS price, dateTime, extra FROM bid` (a DOUBLE)
pub fn q1(bids: &[Bid]) -> Vec<Row> {
    let mut rows = Vec::new();
    for b in bids {
        rows.push(vec![
            V::I(b.auction),
            V::I(b.bidder),
            V::F(0.908 * b.price as f64),
            V::I(b.date_time),
            V::S(b.extra.clone()),
        ]);
    }
    rows
}

/// `SELECT Q.category, AVG(Q.final) FROM (SELECT MAX(B.price) AS final, A.category FROM
/// auction A, bid B WHERE A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND A.expires
/// GROUP BY A.id, A.category) Q GROUP BY Q.category` (the average a DOUBLE)
pub fn q4(auctions: &[Auction], bids: &[Bid]) -> Vec<Row> {
    let mut per_auction: BTreeMap<i64, Vec<&Bid>> = BTreeMap::new();
    for b in bids {
        per_auction.entry(b.auction).or_default().push(b);
    }
    let mut finals: BTreeMap<(i64, i64), i64> = BTreeMap::new();
    for a in auctions {
        for b in per_auction.get(&a.id).into_iter().flatten() {
            if a.date_time <= b.date_time && b.date_time <= a.expires {
                let best = finals.entry((a.id, a.category)).or_insert(b.price);
                *best = (*best).max(b.price);
            }
        }
    }
    let mut per_category: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
    for ((_, category), best) in finals {
        per_category.entry(category).or_default().push(best);
    }
    (per_category.into_iter())
        .map(|(category, finals)| {
            let sum: i64 = finals.iter().sum();
            vec![V::I(category), V::F(sum as f64 / finals.len() as f64)]
        })
        .collect()
}

/// `SELECT Q.seller, AVG(Q.final) OVER (PARTITION BY Q.seller ORDER BY Q.dateTime ROWS
/// BETWEEN 10 PRECEDING AND CURRENT ROW) FROM Q`, Q the winning bid of each auction (its
/// highest price while it is open, the earliest of equal ones) as `final` and its `dateTime`:
/// per seller, its auctions' winning bids in time order, each with the average of its price
/// and the 10 before (the average a DOUBLE).
pub fn q6(auctions: &[Auction], bids: &[Bid]) -> Vec<Row> {
    let winners = q9(auctions, bids);
    let seller: BTreeMap<i64, i64> = auctions.iter().map(|a| (a.id, a.seller)).collect();
    // Per seller, (time, price) of its winning bids.
    let mut per_seller: BTreeMap<i64, Vec<(i64, i64)>> = BTreeMap::new();
    for w in winners {
        let [V::I(id), _, V::I(price), V::I(time)] = w.as_slice() else {
            panic!("a winning bid is id, bidder, price, time: {w:?}")
        };
        per_seller
            .entry(seller[id])
            .or_default()
            .push((*time, *price));
    }
    let mut rows = Vec::new();
    for (s, mut wins) in per_seller {
        wins.sort();
        for i in 0..wins.len() {
            let frame = &wins[i.saturating_sub(10)..=i];
            let sum: i64 = frame.iter().map(|(_, p)| p).sum();
            rows.push(vec![V::I(s), V::F(sum as f64 / frame.len() as f64)]);
        }
    }
    rows
}

/// `SELECT auction, price FROM bid WHERE auction % 123 = 0`
pub fn q2(bids: &[Bid]) -> Vec<Row> {
    let mut rows = Vec::new();
    for b in bids {
        if b.auction % 123 == 0 {
            rows.push(vec![V::I(b.auction), V::I(b.price)]);
        }
    }
    rows
}

/// Local item suggestion (a regular join: every auction and person, whenever it came):
///
/// ```sql
/// SELECT P.name, P.city, P.state, A.id
/// FROM auction AS A INNER JOIN person AS P on A.seller = P.id
/// WHERE A.category = 10 and (P.state = 'OR' OR P.state = 'ID' OR P.state = 'CA')
/// ```
pub fn q3(people: &[Person], auctions: &[Auction]) -> Vec<Row> {
    let mut rows = Vec::new();
    for a in auctions {
        for p in people {
            if a.seller == p.id
                && a.category == 10
                && (p.state == "OR" || p.state == "ID" || p.state == "CA")
            {
                rows.push(vec![
                    V::S(p.name.clone()),
                    V::S(p.city.clone()),
                    V::S(p.state.clone()),
                    V::I(a.id),
                ]);
            }
        }
    }
    rows
}

/// The starts of the `HOP` windows of `size` every `slide` that contain time `t`: every
/// `k × slide` with `k × slide <= t < k × slide + size`.
fn hop_starts(t: i64, slide: i64, size: i64) -> Vec<i64> {
    let mut starts = Vec::new();
    let mut start = t.div_euclid(slide) * slide;
    while start + size > t {
        starts.push(start);
        start -= slide;
    }
    starts
}

/// The start of the `TUMBLE` window of `size` that contains time `t`.
fn tumble_start(t: i64, size: i64) -> i64 {
    t.div_euclid(size) * size
}

/// Hot items:
///
/// ```sql
/// SELECT AuctionBids.auction, AuctionBids.num
/// FROM (SELECT auction, count(*) AS num, window_start AS starttime, window_end AS endtime
///       FROM TABLE(HOP(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
///       GROUP BY auction, window_start, window_end) AS AuctionBids
/// JOIN (SELECT max(CountBids.num) AS maxn, CountBids.starttime, CountBids.endtime
///       FROM (SELECT count(*) AS num, window_start AS starttime, window_end AS endtime
///             FROM TABLE(HOP(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
///             GROUP BY auction, window_start, window_end) AS CountBids
///       GROUP BY CountBids.starttime, CountBids.endtime) AS MaxBids
/// ON AuctionBids.starttime = MaxBids.starttime AND AuctionBids.endtime = MaxBids.endtime
///    AND AuctionBids.num >= MaxBids.maxn
/// ```
pub fn q5(bids: &[Bid]) -> Vec<Row> {
    const SLIDE: i64 = 2_000;
    const SIZE: i64 = 10_000;
    // AuctionBids, and CountBids: (starttime, auction) → num. All windows have one size, so
    // the start stands for (starttime, endtime).
    let mut auction_bids: BTreeMap<(i64, i64), i64> = BTreeMap::new();
    for b in bids {
        for start in hop_starts(b.date_time, SLIDE, SIZE) {
            *auction_bids.entry((start, b.auction)).or_default() += 1;
        }
    }
    // MaxBids: starttime → maxn.
    let mut max_bids: BTreeMap<i64, i64> = BTreeMap::new();
    for (&(start, _), &num) in &auction_bids {
        let maxn = max_bids.entry(start).or_insert(num);
        *maxn = (*maxn).max(num);
    }
    let mut rows = Vec::new();
    for (&(start, auction), &num) in &auction_bids {
        for (&max_start, &maxn) in &max_bids {
            if start == max_start && num >= maxn {
                rows.push(vec![V::I(auction), V::I(num)]);
            }
        }
    }
    rows
}

/// Highest bid (`BETWEEN` includes both ends: a bid at exactly a window's end with that
/// window's highest price matches that window too):
///
/// ```sql
/// SELECT B.auction, B.price, B.bidder, B.dateTime, B.extra
/// FROM bid B
/// JOIN (SELECT MAX(price) AS maxprice, window_end AS dateTime
///       FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
///       GROUP BY window_start, window_end) B1
/// ON B.price = B1.maxprice
/// WHERE B.dateTime BETWEEN B1.dateTime - INTERVAL '10' SECOND AND B1.dateTime
/// ```
pub fn q7(bids: &[Bid]) -> Vec<Row> {
    const SIZE: i64 = 10_000;
    // B1: window_end → maxprice.
    let mut b1: BTreeMap<i64, i64> = BTreeMap::new();
    for b in bids {
        let end = tumble_start(b.date_time, SIZE) + SIZE;
        let maxprice = b1.entry(end).or_insert(b.price);
        *maxprice = (*maxprice).max(b.price);
    }
    let mut rows = Vec::new();
    for (&end, &maxprice) in &b1 {
        for b in bids {
            if b.price == maxprice && end - SIZE <= b.date_time && b.date_time <= end {
                rows.push(vec![
                    V::I(b.auction),
                    V::I(b.price),
                    V::I(b.bidder),
                    V::I(b.date_time),
                    V::S(b.extra.clone()),
                ]);
            }
        }
    }
    rows
}

/// New users:
///
/// ```sql
/// SELECT P.id, P.name, P.starttime
/// FROM (SELECT id, name, window_start AS starttime, window_end AS endtime
///       FROM TABLE(TUMBLE(TABLE person, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
///       GROUP BY id, name, window_start, window_end) P
/// JOIN (SELECT seller, window_start AS starttime, window_end AS endtime
///       FROM TABLE(TUMBLE(TABLE auction, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
///       GROUP BY seller, window_start, window_end) A
/// ON P.id = A.seller AND P.starttime = A.starttime AND P.endtime = A.endtime
/// ```
pub fn q8(people: &[Person], auctions: &[Auction]) -> Vec<Row> {
    const SIZE: i64 = 10_000;
    let mut p: BTreeSet<(i64, String, i64, i64)> = BTreeSet::new();
    for person in people {
        let start = tumble_start(person.date_time, SIZE);
        p.insert((person.id, person.name.clone(), start, start + SIZE));
    }
    let mut a: BTreeSet<(i64, i64, i64)> = BTreeSet::new();
    for auction in auctions {
        let start = tumble_start(auction.date_time, SIZE);
        a.insert((auction.seller, start, start + SIZE));
    }
    let mut rows = Vec::new();
    for (id, name, p_start, p_end) in &p {
        for (seller, a_start, a_end) in &a {
            if id == seller && p_start == a_start && p_end == a_end {
                rows.push(vec![V::I(*id), V::S(name.clone()), V::I(*p_start)]);
            }
        }
    }
    rows
}

#[test]
fn a_time_is_in_five_hops_and_one_tumbling_window() {
    assert_eq!(
        hop_starts(10_001, 2_000, 10_000),
        [10_000, 8_000, 6_000, 4_000, 2_000]
    );
    assert_eq!(
        hop_starts(9_999, 2_000, 10_000),
        [8_000, 6_000, 4_000, 2_000, 0]
    );
    assert_eq!(tumble_start(19_999, 10_000), 10_000);
    assert_eq!(tumble_start(20_000, 10_000), 20_000);
}

/// Winning bids (a regular join bounded by the auction's own times, then the top bid of
/// each auction), as `id, bidder, price, bid_dateTime`:
///
/// ```sql
/// SELECT id, …, auction, bidder, price, bid_dateTime, bid_extra FROM (
///   SELECT A.*, B.auction, B.bidder, B.price, B.dateTime AS bid_dateTime, B.extra AS bid_extra,
///     ROW_NUMBER() OVER (PARTITION BY A.id ORDER BY B.price DESC, B.dateTime ASC) AS rownum
///   FROM auction A, bid B
///   WHERE A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND A.expires)
/// WHERE rownum <= 1
/// ```
pub fn q9(auctions: &[Auction], bids: &[Bid]) -> Vec<Row> {
    let mut per: BTreeMap<i64, Vec<&Bid>> = BTreeMap::new();
    for b in bids {
        per.entry(b.auction).or_default().push(b);
    }
    let mut rows = Vec::new();
    for a in auctions {
        let open = per
            .get(&a.id)
            .into_iter()
            .flatten()
            .filter(|b| a.date_time <= b.date_time && b.date_time <= a.expires);
        // The highest price; of equal ones the earliest.
        let best = open.min_by_key(|b| (std::cmp::Reverse(b.price), b.date_time));
        if let Some(b) = best {
            rows.push(vec![
                V::I(a.id),
                V::I(b.bidder),
                V::I(b.price),
                V::I(b.date_time),
            ]);
        }
    }
    rows
}
