//! Naive references of the Nexmark CEP queries (`MATCH_RECOGNIZE`), by the SQL:2016 row-by-row
//! procedure: per partition, rows in event-time order (ties in arrival order; the input has
//! none); from a start row, the most preferred match, found by backtracking in preference
//! order (a greedy quantifier tries one more row before it stops); after a match, the next
//! start row is the `AFTER MATCH SKIP` target, else the next row. Every pattern here is a
//! concatenation of greedily quantified variables, which is all the matcher knows.

use std::collections::BTreeMap;

use super::{Bid, Row, V};

/// One element of a row pattern: a variable, quantified greedily `{min, max}`.
struct Element {
    var: &'static str,
    min: usize,
    max: usize,
}

/// `var` (exactly one row).
fn one(var: &'static str) -> Element {
    Element {
        var,
        min: 1,
        max: 1,
    }
}

/// `var+`
fn plus(var: &'static str) -> Element {
    Element {
        var,
        min: 1,
        max: usize::MAX,
    }
}

/// `var*`
fn star(var: &'static str) -> Element {
    Element {
        var,
        min: 0,
        max: usize::MAX,
    }
}

/// A (partial) match: its rows in order, each with its variable.
type Mapped<'a> = [(&'static str, &'a Bid)];

/// Whether a row may be mapped to a variable after a partial match: `define(var, mapped, row)`.
type Define = dyn for<'a> Fn(&str, &Mapped<'a>, &Bid) -> bool;

/// The rows of `var` in `mapped`, in order.
fn rows_of<'a>(mapped: &Mapped<'a>, var: &str) -> Vec<&'a Bid> {
    (mapped.iter())
        .filter(|(v, _)| *v == var)
        .map(|&(_, b)| b)
        .collect()
}

/// The bids partitioned by `(auction, bidder)`, each partition in event-time order (a stable
/// sort, so ties would keep their arrival order).
fn partitions(bids: &[Bid]) -> BTreeMap<(i64, i64), Vec<&Bid>> {
    let mut parts: BTreeMap<(i64, i64), Vec<&Bid>> = BTreeMap::new();
    for b in bids {
        parts.entry((b.auction, b.bidder)).or_default().push(b);
    }
    for rows in parts.values_mut() {
        rows.sort_by_key(|b| b.date_time);
    }
    parts
}

/// A search for the most preferred match over one partition's rows.
struct Search<'s, 'a> {
    rows: &'s [&'a Bid],
    pattern: &'s [Element],
    /// A row joins a match only while its time is less than the first row's + `within`.
    within: Option<i64>,
    define: &'s Define,
    mapped: Vec<(&'static str, &'a Bid)>,
}

impl<'a> Search<'_, 'a> {
    /// Whether the pattern from `element` (of which `taken` rows are mapped) matches from row
    /// `next` on; on success `mapped` holds the match. Tries, in order of preference, one more
    /// row for `element`, then the next element.
    fn from(&mut self, element: usize, taken: usize, next: usize) -> bool {
        let Some(e) = self.pattern.get(element) else {
            return true;
        };
        if let (true, Some(&row)) = (taken < e.max, self.rows.get(next)) {
            let in_time = match (self.within, self.mapped.first()) {
                (Some(within), Some((_, first))) => row.date_time - first.date_time < within,
                _ => true,
            };
            if in_time && (self.define)(e.var, &self.mapped, row) {
                self.mapped.push((e.var, row));
                if self.from(element, taken + 1, next + 1) {
                    return true;
                }
                self.mapped.pop();
            }
        }
        taken >= e.min && self.from(element + 1, 0, next)
    }
}

/// Where the next match may start after a match (`AFTER MATCH SKIP …`): the match's first
/// row's position and the match.
type Skip = fn(usize, &Mapped<'_>) -> usize;

fn skip_past_last_row(start: usize, m: &Mapped<'_>) -> usize {
    start + m.len()
}

fn skip_to_next_row(start: usize, _: &Mapped<'_>) -> usize {
    start + 1
}

/// `bid MATCH_RECOGNIZE (PARTITION BY auction, bidder ORDER BY dateTime … ONE ROW PER
/// MATCH …)`: a row `auction, bidder, measures(match)` per match.
fn match_recognize(
    bids: &[Bid],
    pattern: &[Element],
    within: Option<i64>,
    define: &Define,
    skip: Skip,
    measures: &dyn Fn(&Mapped<'_>) -> Vec<V>,
) -> Vec<Row> {
    let mut out = Vec::new();
    for ((auction, bidder), rows) in partitions(bids) {
        let mut start = 0;
        while start < rows.len() {
            let mut search = Search {
                rows: &rows,
                pattern,
                within,
                define,
                mapped: Vec::new(),
            };
            if search.from(0, 0, start) {
                let mut row = vec![V::I(auction), V::I(bidder)];
                row.extend(measures(&search.mapped));
                out.push(row);
                start = skip(start, &search.mapped).max(start + 1);
            } else {
                start += 1;
            }
        }
    }
    out
}

/// Periods of a constantly decreasing price. `LAST(PRICE_DOWN.price, 1)` is, in
/// PRICE_DOWN's own condition (where the current row counts as the last), the PRICE_DOWN row
/// before the current one; in PRICE_UP's, the one before the last: a single PRICE_DOWN never
/// lets a PRICE_UP follow. `SKIP TO LAST PRICE_UP` restarts at the match's last row.
///
/// ```sql
/// SELECT auction, bidder, start_tstamp, bottom_tstamp, end_tstamp
/// FROM bid MATCH_RECOGNIZE (
///     PARTITION BY auction, bidder
///     ORDER BY dateTime
///     MEASURES
///         START_ROW.dateTime AS start_tstamp,
///         LAST(PRICE_DOWN.dateTime) AS bottom_tstamp,
///         LAST(PRICE_UP.dateTime) AS end_tstamp
///     ONE ROW PER MATCH
///     AFTER MATCH SKIP TO LAST PRICE_UP
///     PATTERN (START_ROW PRICE_DOWN+ PRICE_UP)
///     DEFINE
///         PRICE_DOWN AS
///             (LAST(PRICE_DOWN.price, 1) IS NULL AND PRICE_DOWN.price < START_ROW.price) OR
///                 PRICE_DOWN.price < LAST(PRICE_DOWN.price, 1),
///         PRICE_UP AS
///             PRICE_UP.price > LAST(PRICE_DOWN.price, 1))
/// ```
pub fn cep_q0(bids: &[Bid]) -> Vec<Row> {
    let pattern = [one("START_ROW"), plus("PRICE_DOWN"), one("PRICE_UP")];
    let define = |var: &str, mapped: &Mapped<'_>, row: &Bid| -> bool {
        let downs = rows_of(mapped, "PRICE_DOWN");
        match var {
            "PRICE_DOWN" => match downs.last() {
                Some(previous) => row.price < previous.price,
                None => row.price < rows_of(mapped, "START_ROW")[0].price,
            },
            "PRICE_UP" => downs.len() >= 2 && row.price > downs[downs.len() - 2].price,
            _ => true,
        }
    };
    let skip_to_last_price_up: Skip =
        |start, m| (m.iter().rposition(|(v, _)| *v == "PRICE_UP")).map_or(start + 1, |i| start + i);
    let measures = |m: &Mapped<'_>| {
        let last = |var| {
            rows_of(m, var)
                .last()
                .expect("a row of every variable")
                .date_time
        };
        vec![
            V::I(last("START_ROW")),
            V::I(last("PRICE_DOWN")),
            V::I(last("PRICE_UP")),
        ]
    };
    match_recognize(
        bids,
        &pattern,
        None,
        &define,
        skip_to_last_price_up,
        &measures,
    )
}

/// `PATTERN (A+ B)` with `A AS AVG(A.price) < 10000` (the average of the A rows so far and
/// the current one; B, undefined, is any row) and the measures `FIRST(A.dateTime)`,
/// `LAST(A.dateTime)`, `AVG(A.price)`, the last cast to BIGINT (truncated) in the select
/// list, as Flink's AVG of a BIGINT is.
fn average_price_below_10000(bids: &[Bid], skip: Skip) -> Vec<Row> {
    let pattern = [plus("A"), one("B")];
    let define = |var: &str, mapped: &Mapped<'_>, row: &Bid| -> bool {
        let a = rows_of(mapped, "A");
        let sum: i64 = a.iter().map(|b| b.price).sum::<i64>() + row.price;
        var != "A" || sum < 10_000 * (a.len() as i64 + 1)
    };
    let measures = |m: &Mapped<'_>| {
        let a = rows_of(m, "A");
        let sum: i64 = a.iter().map(|b| b.price).sum();
        vec![
            V::I(a[0].date_time),
            V::I(a[a.len() - 1].date_time),
            V::I(sum / a.len() as i64),
        ]
    };
    match_recognize(bids, &pattern, None, &define, skip, &measures)
}

/// Longest period of time for average price:
///
/// ```sql
/// SELECT auction, bidder, start_tstamp, end_tstamp, CAST(avg_price AS BIGINT) AS avg_price
/// FROM bid MATCH_RECOGNIZE (
///     PARTITION BY auction, bidder
///     ORDER BY dateTime
///     MEASURES
///         FIRST(A.dateTime) AS start_tstamp,
///         LAST(A.dateTime) AS end_tstamp,
///         AVG(A.price) AS avg_price
///     ONE ROW PER MATCH
///     AFTER MATCH SKIP PAST LAST ROW
///     PATTERN (A+ B)
///     DEFINE
///         A AS AVG(A.price) < 10000)
/// ```
pub fn cep_q1(bids: &[Bid]) -> Vec<Row> {
    average_price_below_10000(bids, skip_past_last_row)
}

/// [`cep_q1`] with `AFTER MATCH SKIP TO NEXT ROW`: a match from every row that starts one.
pub fn cep_q2(bids: &[Bid]) -> Vec<Row> {
    average_price_below_10000(bids, skip_to_next_row)
}

/// Price drop within an interval (a row joins a match only while it is less than 5 s after
/// the match's first row; a price of exactly `A.price - 50` is neither B nor C):
///
/// ```sql
/// SELECT auction, bidder, drop_time, drop_diff
/// FROM bid MATCH_RECOGNIZE (
///     PARTITION BY auction, bidder
///     ORDER BY dateTime
///     MEASURES
///         C.dateTime AS drop_time,
///         A.price - C.price AS drop_diff
///     ONE ROW PER MATCH
///     AFTER MATCH SKIP PAST LAST ROW
///     PATTERN (A B* C) WITHIN INTERVAL '5' SECOND
///     DEFINE
///         B AS B.price > A.price - 50,
///         C AS C.price < A.price - 50)
/// ```
pub fn cep_q3(bids: &[Bid]) -> Vec<Row> {
    let pattern = [one("A"), star("B"), one("C")];
    let define = |var: &str, mapped: &Mapped<'_>, row: &Bid| -> bool {
        let a = || rows_of(mapped, "A")[0].price;
        match var {
            "B" => row.price > a() - 50,
            "C" => row.price < a() - 50,
            _ => true,
        }
    };
    let measures = |m: &Mapped<'_>| {
        let (a, c) = (rows_of(m, "A")[0], rows_of(m, "C")[0]);
        vec![V::I(c.date_time), V::I(a.price - c.price)]
    };
    match_recognize(
        bids,
        &pattern,
        Some(5_000),
        &define,
        skip_past_last_row,
        &measures,
    )
}

#[cfg(test)]
mod by_hand {
    use super::*;

    /// Bids of `(auction, bidder, dateTime, price)`.
    fn bids(rows: &[(i64, i64, i64, i64)]) -> Vec<Bid> {
        (rows.iter())
            .map(|&(auction, bidder, date_time, price)| Bid {
                auction,
                bidder,
                price,
                channel: String::new(),
                url: String::new(),
                date_time,
                extra: String::new(),
            })
            .collect()
    }

    fn ints(rows: Vec<Row>) -> Vec<Vec<i64>> {
        let int = |v: &V| match v {
            V::I(i) => *i,
            _ => panic!("{v:?} is not an int"),
        };
        rows.iter().map(|r| r.iter().map(int).collect()).collect()
    }

    #[test]
    fn q0_restarts_at_the_price_up_and_needs_two_falls() {
        // (1, 10): 100 | 90 80 | 95 (above 90, the fall before the last), then from 95:
        // 95 | 94 93 | 96. (1, 11): 50 | 40 | 45 has one fall only.
        let input = bids(&[
            (1, 10, 1, 100),
            (1, 10, 2, 90),
            (1, 11, 3, 50),
            (1, 10, 4, 80),
            (1, 11, 5, 40),
            (1, 10, 6, 95),
            (1, 11, 7, 45),
            (1, 10, 8, 94),
            (1, 10, 9, 93),
            (1, 10, 10, 96),
        ]);
        assert_eq!(ints(cep_q0(&input)), [[1, 10, 1, 4, 6], [1, 10, 6, 9, 10]]);
    }

    /// Auction 2, bidder 1: 5000 6000 20000 3000 4000 15000 9000 at times 1 … 7.
    const AVERAGES: [(i64, i64, i64, i64); 7] = [
        (2, 1, 1, 5000),
        (2, 1, 2, 6000),
        (2, 1, 3, 20000),
        (2, 1, 4, 3000),
        (2, 1, 5, 4000),
        (2, 1, 6, 15000),
        (2, 1, 7, 9000),
    ];

    #[test]
    fn q1_takes_the_longest_cheap_run_that_leaves_a_row_for_b() {
        // From 1: A 5000 6000 (20000 would lift the average to 10333), B 20000. From 4: A
        // 3000 4000 15000 9000 (7750) leaves no B, so A gives 9000 back to B: A ends at 6,
        // averaging 7333.
        assert_eq!(
            ints(cep_q1(&bids(&AVERAGES))),
            [[2, 1, 1, 2, 5500], [2, 1, 4, 6, 7333]]
        );
    }

    #[test]
    fn q2_matches_from_every_row_that_starts_a_match() {
        // 3 and 6 are no A (20000, 15000); from 7, 9000 is an A with no B after it.
        assert_eq!(
            ints(cep_q2(&bids(&AVERAGES))),
            [
                [2, 1, 1, 2, 5500],
                [2, 1, 2, 2, 6000],
                [2, 1, 4, 6, 7333],
                [2, 1, 5, 6, 9500]
            ]
        );
    }

    #[test]
    fn q3_ends_a_match_5_seconds_after_its_first_row() {
        // 1000 | 990 | 940 (< 950); 500 then 450, which is exactly 50 less: neither B nor C;
        // from 10 s: 1000 | 1100 | 100 at 15 s, 5 s after the A: too late, but a match from
        // the 1100 at 12 s.
        let input = bids(&[
            (3, 1, 0, 1000),
            (3, 1, 1_000, 990),
            (3, 1, 2_000, 940),
            (3, 1, 6_000, 500),
            (3, 1, 7_000, 450),
            (3, 1, 10_000, 1000),
            (3, 1, 12_000, 1100),
            (3, 1, 15_000, 100),
        ]);
        assert_eq!(
            ints(cep_q3(&input)),
            [[3, 1, 2_000, 60], [3, 1, 15_000, 1000]]
        );
    }
}
