//! Every Nexmark query of `benches/nexmark/` (q0 to q9 and the CEP queries
//! cep_q0 … cep_q3), run by `anduin` on a small generated input, gives the rows of a naive
//! reference: its SQL computed over the same events with plain loops, `Vec`s and `BTreeMap`s,
//! written from the SQL's semantics, not from anduin's code.
//!
//! Each test generates the three streams with anduin's `nexmark` operator into
//! `person.csv`, `auction.csv` and `bid.csv` (50 000 events at 500 per second of event time:
//! 100 s, so ten 10-second windows and 54 two-second hops), runs the query file from the
//! repository with the same `EVENTS`, `RATE` and `SEED` and its `OUTPUT` beside them, and
//! compares the two results as sorted multisets of normalized rows: integers and timestamps
//! as numbers, doubles within a relative tolerance, so that formatting does not matter. Each
//! test also asks for a least number of rows, so that none passes on an empty output.
//!
//! What the comparison relies on: the generator emits in event-time order, so with the
//! queries' 4-second watermark no row is late and a streaming result equals the SQL's over
//! the whole input (the end of the input closes every window and every partial match); no
//! two events share a time, so the CEP queries' order by event time is unambiguous. q4, q6
//! and q9 write updates: their output (upserts, or a changelog) is folded into the table it
//! describes first.

use crate::nexmark_reference;

use nexmark_reference::cep::{cep_q0, cep_q1, cep_q2, cep_q3};
use nexmark_reference::sql::{q0, q1, q2, q3, q4, q5, q6, q7, q8, q9};
use nexmark_reference::{
    assert_same_rows, folded_changelog, folded_upserts, hand_made_bids, input, run_query, V,
};

#[test]
fn q0_passes_every_bid_through() {
    let input = input();
    let got = run_query(&input, "q0", "iiits");
    assert_same_rows("q0", got, q0(&input.bids), 40_000);
}

#[test]
fn q1_converts_every_price_to_euros() {
    let input = input();
    let got = run_query(&input, "q1", "iifts");
    assert_same_rows("q1", got, q1(&input.bids), 40_000);
}

#[test]
fn q2_keeps_the_bids_of_every_123rd_auction() {
    let input = input();
    let got = run_query(&input, "q2", "ii");
    assert_same_rows("q2", got, q2(&input.bids), 150);
}

#[test]
fn q3_joins_every_auction_of_category_10_with_its_seller_from_or_id_or_ca() {
    let input = input();
    let got = run_query(&input, "q3", "sssi");
    assert_same_rows("q3", got, q3(&input.people, &input.auctions), 100);
}

#[test]
fn q4_averages_the_winning_bids_of_each_category() {
    let input = input();
    // An upsert per change of a category's average, folded: the averages at the end.
    let got = folded_upserts(run_query(&input, "q4", "sif"));
    assert_same_rows("q4", got, q4(&input.auctions, &input.bids), 5);
}

#[test]
fn q5_finds_the_auctions_with_the_most_bids_in_every_hop() {
    let input = input();
    let got = run_query(&input, "q5", "ii");
    assert_same_rows("q5", got, q5(&input.bids), 54);
}

#[test]
fn q6_averages_each_seller_s_last_winning_bids() {
    let input = input();
    // The changelog of the averages, folded: one per auction with a winning bid.
    let got = folded_changelog(run_query(&input, "q6", "sif"));
    assert_same_rows("q6", got, q6(&input.auctions, &input.bids), 1_000);
}

#[test]
fn q7_finds_the_highest_bids_of_every_tumbling_window() {
    let input = input();
    let got = run_query(&input, "q7", "iiits");
    assert_same_rows("q7", got, q7(&input.bids), 10);
}

/// The generated bids never put a window's highest price at exactly the window's end, where
/// `BETWEEN` pairs it with the window it ends as well as with its own: hand-made bids do.
#[test]
fn q7_pairs_a_bid_at_a_window_end_with_the_window_it_ends_too() {
    // [0, 10 s): 100, 300; [10, 20 s): 300 at 10 s, 400, 400 at 20 s; [20, 30 s): 400 at 20 s,
    // 50; [30, 40 s): 10 at 30 s.
    let input = hand_made_bids(
        "auction,bidder,price,channel,url,dateTime,extra\n\
         1,1,100,c,u,1000,a\n2,1,300,c,u,5000,b\n3,1,300,c,u,10000,c\n\
         4,1,400,c,u,12000,d\n5,1,400,c,u,20000,e\n6,1,50,c,u,25000,f\n7,1,10,c,u,30000,g\n",
    );
    let expected = q7(&input.bids);
    let row = |auction, price, time, extra: &str| {
        let (i, s) = (V::I, |x: &str| V::S(x.to_string()));
        format!("{:?}", [i(auction), i(price), i(1), i(time), s(extra)])
    };
    assert_eq!(
        expected.iter().map(|r| format!("{r:?}")).collect::<Vec<_>>(),
        [
            row(2, 300, 5_000, "b"),
            row(3, 300, 10_000, "c"),
            row(4, 400, 12_000, "d"),
            row(5, 400, 20_000, "e"),
            row(5, 400, 20_000, "e"),
            row(7, 10, 30_000, "g"),
        ],
        "the reference: the 300 at 10 s ends [0, 10 s), the 400 at 20 s [10, 20 s) and is the top of [20, 30 s)"
    );
    let got = run_query(&input, "q7", "iiits");
    assert_same_rows("q7", got, expected, 6);
}

#[test]
fn q8_finds_the_people_who_open_an_auction_in_the_window_they_join() {
    let input = input();
    let got = run_query(&input, "q8", "ist");
    assert_same_rows("q8", got, q8(&input.people, &input.auctions), 100);
}

#[test]
fn q9_finds_the_highest_bid_of_every_auction_while_it_is_open() {
    let input = input();
    // An upsert per change of an auction's best bid, folded: the winning bids.
    let got = folded_upserts(run_query(&input, "q9", "sissiittiisiiits"));
    let got = got
        .into_iter()
        .map(|r| vec![r[0].clone(), r[11].clone(), r[12].clone(), r[13].clone()])
        .collect();
    assert_same_rows("q9", got, q9(&input.auctions, &input.bids), 1_000);
}

#[test]
fn cep_q0_finds_the_periods_of_falling_prices() {
    let input = input();
    let got = run_query(&input, "cep_q0", "iittt");
    assert_same_rows("cep_q0", got, cep_q0(&input.bids), 1_000);
}

#[test]
fn cep_q1_finds_the_cheap_runs_and_skips_past_them() {
    let input = input();
    let got = run_query(&input, "cep_q1", "iitti");
    assert_same_rows("cep_q1", got, cep_q1(&input.bids), 5_000);
}

#[test]
fn cep_q2_finds_a_cheap_run_from_every_row_that_starts_one() {
    let input = input();
    let got = run_query(&input, "cep_q2", "iitti");
    assert_same_rows("cep_q2", got, cep_q2(&input.bids), 5_000);
}

#[test]
fn cep_q3_finds_the_price_drops_within_5_seconds() {
    let input = input();
    let got = run_query(&input, "cep_q3", "iiti");
    assert_same_rows("cep_q3", got, cep_q3(&input.bids), 5_000);
}
