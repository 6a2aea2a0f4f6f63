//! What conditions read, signatures, and the walk that stops early.

use std::sync::Arc;

use super::super::expr::{compile_defines, Scope};
use super::super::matcher::Step;
use super::super::syntax;
use super::signature::signature;
use super::Needs;
use anduin_types::ColumnType;

fn needs(pattern: &str, defines: &str) -> Needs {
    let parsed = syntax::parse(pattern).expect("parses");
    let columns: Vec<(String, ColumnType)> = vec![
        ("ts".into(), ColumnType::Timestamp),
        ("value".into(), ColumnType::Int),
    ];
    let scope = Scope::new(&columns, &parsed.vars);
    let mut out = vec![None; parsed.vars.len()];
    for (v, t, _) in compile_defines(defines, &scope).expect("compiles") {
        out[v] = Some(t.e);
    }
    Needs::of(&out)
}

#[test]
fn the_current_row_prev_and_aggregates_over_the_whole_match_read_no_history() {
    let n = needs(
        "(A | B)* C",
        "A AS value > PREV(value, 2), B AS B.value < 5 AND MATCH_NUMBER() > 0, C AS SUM(value) > 3 AND COUNT(*) > 2",
    );
    assert!(n.nothing(), "{n:?}");
    assert!(
        n.from_start,
        "COUNT(*) and SUM(value) count from the first row: {n:?}"
    );
    let n = needs(
        "(A | B)* C",
        "A AS value > PREV(value), C AS CLASSIFIER() = 'C'",
    );
    assert!(n.nothing() && !n.from_start, "{n:?}");
    for defines in ["C AS FIRST(value) < 3", "C AS LAST(value, 1) < value"] {
        assert!(needs("(A | B)* C", defines).from_start, "{defines}");
    }
}

#[test]
fn classifier_navigation_reads_the_variables_of_the_rows_it_reaches() {
    assert_eq!(needs("(A | B)* C", "C AS PREV(CLASSIFIER()) = 'A'").tail, 1);
    assert_eq!(
        needs("(A | B)* C", "C AS PREV(CLASSIFIER(), 2) = 'A'").tail,
        2
    );
    assert_eq!(
        needs("(A | B)* C", "C AS LAST(CLASSIFIER(), 1) = 'A'").tail,
        1
    );
    assert_eq!(
        needs("(A | B)* C", "C AS FIRST(CLASSIFIER(), 1) = 'A'").head,
        2
    );
    // The row before a row of A may be any row.
    assert_eq!(
        needs("(A | B)* C", "C AS PREV(CLASSIFIER(A)) = 'B'").all,
        [0, 1, 2]
    );
    // The row before each row aggregated: the summary of what the rows so far gave, and
    // the variables of the last two rows, before the rows a later row aggregates.
    let n = needs(
        "(A | B)* C",
        "C AS SUM(CASE WHEN PREV(CLASSIFIER(), 2) = 'A' THEN A.value END) > 0",
    );
    assert!(n.all.is_empty() && n.aggs.len() == 1, "{n:?}");
    assert!(n.tail == 2 && n.from_start, "{n:?}");
}

#[test]
fn navigation_reads_the_rows_it_names_and_aggregates_over_a_variable_read_all() {
    let n = needs(
        "A B+ C",
        "B AS B.value < LAST(B.value, 1) AND value > A.value, C AS value > FIRST(B.value, 2)",
    );
    assert_eq!(
        n,
        Needs {
            last: vec![(1, 1), (0, 1)],
            first: vec![(1, 3)],
            ..Needs::default()
        }
    );
    // An aggregate over a variable: what its rows gave it so far, not which rows they are.
    let n = needs("A+ B", "A AS AVG(A.value) < 10 AND COUNT(A.*) < 5");
    assert!(
        n.all.is_empty() && n.aggs.len() == 2 && !n.from_start,
        "{n:?}"
    );
    // Unless its argument reads MATCH_NUMBER(), which changes as matches are reported.
    let n = needs("A+ B", "A AS SUM(A.value + MATCH_NUMBER()) < 10");
    assert!(n.all == [0] && n.aggs.is_empty(), "{n:?}");
    let n = needs("A B", "B AS CLASSIFIER() = 'B'");
    assert!(n.nothing(), "the row being classified: {n:?}");
}

fn hist(vars: &[usize]) -> Option<Arc<Step>> {
    let mut h = None;
    for (row, v) in vars.iter().enumerate() {
        h = Some(Step::after(row as u64, *v, h));
    }
    h
}

#[test]
fn signatures_show_only_what_is_needed() {
    let n = Needs {
        last: vec![(0, 2)],
        first: vec![(1, 1)],
        tail: 1,
        ..Needs::default()
    };
    // The last two A rows are 3 and 1, the first B row is 0, the last row is A.
    let a = signature(&n, hist(&[1, 0, 1, 0]).as_ref());
    let b = signature(&n, hist(&[1, 0, 2, 0]).as_ref());
    assert_eq!(a, b);
    assert_eq!(&a[..], &[3, 1, 0, 0]);
    let c = signature(&n, hist(&[2, 0, 1, 0]).as_ref());
    assert_ne!(a, c, "the first B row differs");
    let d = signature(&n, hist(&[1, 2, 1, 0]).as_ref());
    assert_ne!(a, d, "only one A row");
    assert_eq!(d[1], u64::MAX);
    let n = Needs {
        all: vec![2],
        ..Needs::default()
    };
    assert_eq!(&signature(&n, hist(&[2, 0, 2, 1]).as_ref())[..], &[2, 2, 0]);
    assert_eq!(&signature(&n, hist(&[0, 1]).as_ref())[..], &[0]);
    // The last row of a variable, kept in the newest step.
    let n = Needs {
        last: vec![(1, 1), (5, 1)],
        ..Needs::default()
    };
    assert_eq!(
        &signature(&n, hist(&[1, 0, 0]).as_ref())[..],
        &[0, u64::MAX]
    );
    assert_eq!(
        &signature(&n, hist(&[0, 0, 5]).as_ref())[..],
        &[u64::MAX, 2]
    );
    assert_eq!(&signature(&n, None)[..], &[u64::MAX, u64::MAX]);
}

/// The signature from the whole history, oldest row first, without stopping early.
fn walked_to_the_start(needs: &Needs, vars: &[usize]) -> Vec<u64> {
    let rows_of = |v: usize| -> Vec<u64> {
        (0..vars.len())
            .filter(|r| vars[*r] == v)
            .map(|r| r as u64)
            .collect()
    };
    let mut out = Vec::new();
    let mut put = |mut values: Vec<u64>, len: usize| {
        values.resize(len, u64::MAX);
        out.extend(values);
    };
    for (v, k) in &needs.last {
        put(rows_of(*v).into_iter().rev().take(*k).collect(), *k);
    }
    for (v, k) in &needs.first {
        let mut first: Vec<u64> = rows_of(*v).into_iter().take(*k).collect();
        first.reverse();
        put(first, *k);
    }
    put(
        vars.iter()
            .rev()
            .take(needs.tail)
            .map(|v| *v as u64)
            .collect(),
        needs.tail,
    );
    let mut head: Vec<u64> = vars.iter().take(needs.head).map(|v| *v as u64).collect();
    head.reverse();
    put(head, needs.head);
    for v in &needs.all {
        let rows: Vec<u64> = rows_of(*v).into_iter().rev().collect();
        out.push(rows.len() as u64);
        out.extend(rows);
    }
    out
}

#[test]
fn a_signature_stops_where_no_earlier_row_can_change_it_and_equals_the_whole_walk() {
    // Variables 0-2 are tracked in a step (the walk may stop at the last row of them),
    // 5 is not.
    let needs = [
        Needs {
            last: vec![(2, 2), (5, 2), (0, 1)],
            ..Needs::default()
        },
        Needs {
            first: vec![(1, 2), (5, 1)],
            tail: 2,
            ..Needs::default()
        },
        Needs {
            all: vec![2, 5],
            head: 1,
            ..Needs::default()
        },
        Needs {
            last: vec![(1, 3)],
            all: vec![0],
            ..Needs::default()
        },
    ];
    let alphabet = [0, 1, 2, 5];
    for len in 0..=6u32 {
        for code in 0..4usize.pow(len) {
            let vars: Vec<usize> = (0..len)
                .map(|i| alphabet[code / 4usize.pow(i) % 4])
                .collect();
            let h = hist(&vars);
            for n in &needs {
                assert_eq!(
                    signature(n, h.as_ref()).to_vec(),
                    walked_to_the_start(n, &vars),
                    "{n:?} over {vars:?}"
                );
            }
        }
    }
}
