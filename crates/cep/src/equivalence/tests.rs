//! What conditions read, signatures, and the walk that stops early.

use std::sync::Arc;

use super::super::expr::{compile_defines, Scope, Sel};
use super::super::matcher::Step;
use super::super::syntax;
use super::super::value::Value;
use super::signature::{cells_of, signature, vars_of};
use super::{CellsOf, Needs, VarsOf};
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
    // The row before the last row of A: its variable, and for a later row of A, the
    // variable of the last row. Where the rows of A are does not count.
    let n = needs("(A | B)* C", "C AS PREV(CLASSIFIER(A)) = 'B'");
    assert_eq!(
        n.vars_of,
        [VarsOf {
            sel: Sel::One(0),
            k: 1,
            back: 1,
            first: false
        }]
    );
    assert!(
        n.all.is_empty() && n.cells_of.is_empty() && n.tail == 1,
        "{n:?}"
    );
    let n = needs("(A | B)* C", "C AS FIRST(CLASSIFIER(A), 1) IS NULL");
    assert_eq!(
        n.vars_of,
        [VarsOf {
            sel: Sel::One(0),
            k: 2,
            back: 0,
            first: true
        }]
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
    // Column 1 (`value`) of: the last B row before the one being classified (the current
    // row is B's last), the last A row, the first three B rows.
    let cells = |sel: usize, k: usize, first: bool| CellsOf {
        sel: Sel::One(sel),
        k,
        back: 0,
        col: 1,
        first,
    };
    assert_eq!(
        n,
        Needs {
            cells_of: vec![cells(1, 1, false), cells(0, 1, false), cells(1, 3, true)],
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
        tail: 2,
        head: 1,
        ..Needs::default()
    };
    // The last two rows are A and B, the first is B.
    let a = signature(&n, hist(&[1, 0, 1, 0]).as_ref());
    assert_eq!(&a[..], &[0, 1, 1]);
    assert_eq!(a, signature(&n, hist(&[1, 2, 1, 0]).as_ref()));
    assert_ne!(a, signature(&n, hist(&[2, 0, 1, 0]).as_ref()));
    assert_eq!(&signature(&n, hist(&[1]).as_ref())[..], &[1, u64::MAX, 1]);
    let n = Needs {
        all: vec![2],
        ..Needs::default()
    };
    assert_eq!(&signature(&n, hist(&[2, 0, 2, 1]).as_ref())[..], &[2, 2, 0]);
    assert_eq!(&signature(&n, hist(&[0, 1]).as_ref())[..], &[0]);
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
            tail: 2,
            ..Needs::default()
        },
        Needs {
            all: vec![2, 5],
            head: 1,
            ..Needs::default()
        },
        Needs {
            all: vec![0],
            tail: 1,
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

/// What [`cells_of`] shows, from the whole history, oldest row first: the cell of row `r`
/// in column `c` is `r * 10 + c` (rows 2 and 5 hold NULL), as values' words.
fn cells_of_the_whole(need: &CellsOf, vars: &[usize]) -> Vec<u64> {
    let mut rows: Vec<usize> = (0..vars.len()).filter(|r| need.sel.has(vars[*r])).collect();
    if !need.first {
        rows.reverse();
    }
    let mut out = Vec::new();
    let found = rows.len().min(need.k);
    for r in rows.into_iter().take(need.k) {
        match r.checked_sub(need.back).filter(|at| *at != 2 && *at != 5) {
            Some(at) => out.extend([2, (at * 10 + need.col) as u64]),
            None => out.push(0),
        }
    }
    out.extend(std::iter::repeat_n(u64::MAX, need.k - found));
    out
}

#[test]
fn the_cells_of_rows_by_their_place_among_a_variables_rows_equal_a_whole_walk() {
    let cell = |row: u64, col: usize| -> Option<Value> {
        (row != 2 && row != 5).then(|| Value::Int((row * 10) as i64 + col as i64))
    };
    let needs = [
        // One of the first variables, its last row: kept in the newest step.
        CellsOf {
            sel: Sel::One(1),
            k: 1,
            back: 0,
            col: 3,
            first: false,
        },
        CellsOf {
            sel: Sel::One(5),
            k: 2,
            back: 1,
            col: 1,
            first: false,
        },
        CellsOf {
            sel: Sel::Union(0b101),
            k: 2,
            back: 2,
            col: 0,
            first: true,
        },
        CellsOf {
            sel: Sel::One(0),
            k: 1,
            back: 0,
            col: 2,
            first: true,
        },
    ];
    let alphabet = [0, 1, 2, 5];
    for len in 0..=6u32 {
        for code in 0..4usize.pow(len) {
            let vars: Vec<usize> = (0..len)
                .map(|i| alphabet[code / 4usize.pow(i) % 4])
                .collect();
            let h = hist(&vars);
            for need in &needs {
                let mut got = Vec::new();
                cells_of(need, h.as_ref(), Some(&cell), &mut got);
                assert_eq!(
                    got,
                    cells_of_the_whole(need, &vars),
                    "{need:?} over {vars:?}"
                );
            }
        }
    }
}

/// What [`vars_of`] shows, from the whole history, oldest row first.
fn vars_of_the_whole(need: &VarsOf, vars: &[usize]) -> Vec<u64> {
    let mut rows: Vec<usize> = (0..vars.len()).filter(|r| need.sel.has(vars[*r])).collect();
    if !need.first {
        rows.reverse();
    }
    let mut out = Vec::new();
    for r in rows.into_iter().take(need.k) {
        out.push(vars[r] as u64);
        if need.back > 0 {
            out.push(match r.checked_sub(need.back) {
                Some(b) => vars[b] as u64,
                None => u64::MAX - 1,
            });
        }
    }
    out.resize(need.k * if need.back > 0 { 2 } else { 1 }, u64::MAX);
    out
}

#[test]
fn the_variables_of_rows_by_their_place_among_a_variables_rows_equal_a_whole_walk() {
    let needs = [
        VarsOf {
            sel: Sel::One(1),
            k: 2,
            back: 1,
            first: false,
        },
        VarsOf {
            sel: Sel::Union(0b101),
            k: 1,
            back: 2,
            first: false,
        },
        VarsOf {
            sel: Sel::Union(0b011),
            k: 2,
            back: 1,
            first: true,
        },
        VarsOf {
            sel: Sel::One(2),
            k: 3,
            back: 0,
            first: true,
        },
    ];
    for len in 0..=6u32 {
        for code in 0..3usize.pow(len) {
            let vars: Vec<usize> = (0..len).map(|i| code / 3usize.pow(i) % 3).collect();
            let h = hist(&vars);
            for need in &needs {
                let mut got = Vec::new();
                vars_of(need, h.as_ref(), &mut got);
                assert_eq!(
                    got,
                    vars_of_the_whole(need, &vars),
                    "{need:?} over {vars:?}"
                );
            }
        }
    }
}
