//! Issue 18 (H2, H3): a DEFINE condition's running aggregates grow with the partial match, a
//! row's work per row, instead of a walk over the whole match at every row (n² per match).

use super::super::eval::rows_walked;
use super::grown_states::GROW_AFTER;
use super::tests::{compiled, row_of};
use super::{Outcome, Partition, Scratch};

/// Pushes `n` rows whose values cycle through 0..50 (the last one -1) through `pattern` with
/// `defines`; returns the outcomes, the rows the aggregates walked and the scratch space.
fn pushed(pattern: &str, defines: &str, n: i64) -> (Vec<Outcome>, u64, Scratch) {
    let p = compiled(pattern, defines);
    let mut part = Partition::default();
    let mut s = Scratch::default();
    let mut out = Vec::new();
    let before = rows_walked();
    for i in 0..n {
        let value = if i + 1 == n { -1 } else { i % 50 };
        part.push(&p, &mut s, row_of(i, value), &mut out)
            .expect("taken");
    }
    (out, rows_walked() - before, s)
}

#[test]
fn running_aggregates_of_conditions_add_each_row_once_instead_of_walking_the_match() {
    let n = 2_000;
    for agg in [
        "count(DISTINCT value) < 100000",
        "stddev(value) >= 0 OR stddev(value) IS NULL",
        "length(string_agg(CAST(value AS VARCHAR), '')) >= 0",
        "max(A.value) >= 0 AND avg(A.value) >= 0",
        "count(A.value) FILTER (WHERE value > 3) >= 0",
    ] {
        // Anchored: one attempt, from the first row.
        let (out, walked, s) = pushed(
            "^ A+ B",
            &format!("A AS value >= 0 AND {agg}, B AS value < 0"),
            n,
        );
        let Some(Outcome::Match { steps, .. }) = out.first() else {
            panic!("{agg}: one match of every row, found {out:?}");
        };
        assert_eq!(steps.len() as i64, n, "{agg}");
        // The first GROW_AFTER rows walk the partial match (once per aggregate of the
        // condition, two at most here); the rows after never do (n² / 2 = 2 000 000 did).
        let short = 2 * GROW_AFTER * GROW_AFTER;
        assert!(
            walked <= short,
            "{agg}: {walked} rows walked, at most {short}"
        );
        // A row extends the partial match once per label it waits at (A and B).
        assert!(
            s.grown.work.grown <= 2 * n as u64,
            "{agg}: {:?} for {n} rows",
            s.grown.work
        );
        assert!(
            s.grown.work.rebuilt <= GROW_AFTER,
            "{agg}: {:?}",
            s.grown.work
        );
    }
}

#[test]
fn a_distinct_count_in_a_condition_ends_the_match_where_a_walk_would() {
    // The 51st distinct value ends the run of A: values 0..50 repeat, so the run is the
    // whole input up to the -1 (50 distinct), then with `< 30` the run stops at 30.
    let (out, _, _) = pushed(
        "^ A+ B",
        "A AS count(DISTINCT value) <= 30, B AS value >= 30",
        200,
    );
    let Some(Outcome::Match { steps, .. }) = out.first() else {
        panic!("a match, found {out:?}");
    };
    assert_eq!(steps.len(), 31, "30 rows of A, then B at value 30");
}

#[test]
fn start_rows_whose_partial_matches_pile_up_stop_at_the_partition_s_guard() {
    // Issue 18 (H3): every start row keeps a partial match per (count of A, count of B), so
    // after n rows the partition has n² of them, each evaluated at every row: no start row
    // reaches the guard of one, the partition reaches its own.
    let mut p = compiled(
        "(A | B)+ C",
        "A AS count(A.*) >= 0, B AS count(B.*) >= 0, C AS value < 0",
    );
    p.max_threads = 200;
    let mut part = Partition::default();
    let mut s = Scratch::default();
    let mut out = Vec::new();
    let refused = (0..1_000).find_map(|i| {
        part.push(&p, &mut s, row_of(i, 1), &mut out)
            .err()
            .map(|e| (i, e))
    });
    let Some((row, super::Refused::TooManyThreads(e))) = refused else {
        panic!("the guard stops the partition, found {refused:?}");
    };
    assert!(row < 40, "at row {row}: {e:?}");
    assert!(e.attempts > 1 && e.threads > 200, "{e:?}");
    assert_eq!(e.start, 0, "{e:?}");
}
