//! What a partial match's history shows the conditions, as a key: equal keys, equivalent
//! partial matches.

use std::sync::Arc;

use super::super::eval::{summarize, value_words};
use super::super::expr::Sel;
use super::super::matcher::{walk, GrownStates, Partition, Past, Running, Step, TRACKED};
use super::super::value::Value;
use super::{CellsOf, Needs, VarsOf};

/// What the pruner reads besides the histories: the partition's rows and the names of the
/// variables, which the cells read ([`Needs::cells_of`]) and the summaries of aggregates
/// ([`Needs::aggs`]) are read or computed from.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rows<'a> {
    pub part: &'a Partition,
    pub vars: &'a [Arc<str>],
    /// MATCH_NUMBER() as the conditions see it now (no summarized argument reads it).
    pub number: i64,
    /// The conditions' running aggregates and their states per history: a summary is the
    /// state where it can be, without a walk.
    pub running: &'a Running,
    pub grown: &'a GrownStates,
}

/// Where an aggregate has no summary (its argument fails on a row, or no [`Rows`] were
/// given): every row of the history and its variable, after their number.
const ROWS: u64 = 3;

/// The key of a partial match with history `hist`: its [`signature`], the variables and the
/// cells of the rows the conditions read by their place among a variable's rows
/// ([`vars_of`], [`cells_of`]: the values read, not where the rows are), then the summary of
/// each aggregate the conditions compute over its rows (see `eval/summary.rs`), or where an
/// aggregate has none, its rows. Equal keys, equivalent partial matches.
pub(super) fn key(needs: &Needs, hist: Option<&Arc<Step>>, rows: Option<Rows<'_>>) -> Box<[u64]> {
    let sig = signature(needs, hist);
    if needs.aggs.is_empty() && needs.vars_of.is_empty() && needs.cells_of.is_empty() {
        return sig;
    }
    let mut out = sig.into_vec();
    for need in &needs.vars_of {
        vars_of(need, hist, &mut out);
    }
    let cell = rows.map(|r| move |row: u64, col: usize| r.part.cell_at(row, col).cloned());
    for need in &needs.cells_of {
        cells_of(
            need,
            hist,
            cell.as_ref()
                .map(|c| c as &dyn Fn(u64, usize) -> Option<Value>),
            &mut out,
        );
    }
    for a in &needs.aggs {
        let start = out.len();
        let summarized = rows.is_some_and(|r| {
            let past = Past {
                part: r.part,
                hist,
                number: r.number,
                grown: r.grown.get(hist).map(|g| (r.running, g)),
            };
            summarize(a, &past, r.vars, &mut out).unwrap_or(false)
        });
        if !summarized {
            out.truncate(start);
            out.extend([ROWS, 0]);
            let mut n = 0u64;
            for (row, var) in walk(hist) {
                out.extend([row, var as u64]);
                n += 1;
            }
            if let Some(count) = out.get_mut(start + 1) {
                *count = n;
            }
        }
    }
    out.into()
}

/// No such row: fewer rows of the variable.
const NONE: u64 = u64::MAX;
/// The row `back` before is before the match.
const OUT: u64 = u64::MAX - 1;

/// Appends what `need` reads of `hist`: for each of the last (first) `k` rows of its
/// variable (newest first, oldest first), that row's variable and, with `back`, the variable
/// of the row `back` before it (the rows of a match are consecutive rows of the partition) or
/// [`OUT`]; [`NONE`] in their places where there are fewer rows.
pub(super) fn vars_of(need: &VarsOf, hist: Option<&Arc<Step>>, out: &mut Vec<u64>) {
    let width = if need.back > 0 { 2 } else { 1 };
    let start = out.len();
    let mut found = 0;
    if need.first {
        let mut all: Vec<usize> = walk(hist).map(|(_, v)| v).collect();
        all.reverse();
        for (i, v) in all.iter().enumerate() {
            if found == need.k {
                break;
            }
            if need.sel.has(*v) {
                out.push(*v as u64);
                if need.back > 0 {
                    let before = i.checked_sub(need.back).and_then(|j| all.get(j));
                    out.push(before.map_or(OUT, |w| *w as u64));
                }
                found += 1;
            }
        }
    } else {
        let mut rows = walk(hist);
        while let Some((_, var)) = rows.next() {
            if found == need.k {
                break;
            }
            if need.sel.has(var) {
                out.push(var as u64);
                if need.back > 0 {
                    // The walk is at the row before this one.
                    let before = rows.clone().nth(need.back - 1);
                    out.push(before.map_or(OUT, |(_, w)| w as u64));
                }
                found += 1;
            }
        }
    }
    out.resize(start + need.k * width, NONE);
}

/// Appends what `need` reads of `hist`: column `col` of the last (first) `k` rows of its
/// variable (newest first, oldest first), or of the rows `back` before them, as `cell` gives
/// the cells of the partition (the rows before the partition's first are NULL); [`NONE`] in
/// their places where there are fewer rows. Without `cell`, the rows' indices.
pub(super) fn cells_of(
    need: &CellsOf,
    hist: Option<&Arc<Step>>,
    cell: Option<&dyn Fn(u64, usize) -> Option<Value>>,
    out: &mut Vec<u64>,
) {
    let mut rows: Vec<u64> = Vec::with_capacity(need.k);
    match (need.sel, hist) {
        // The last row of one of the first variables is in the newest step.
        (Sel::One(v), Some(s)) if !need.first && need.k == 1 && s.last(v).is_some() => {
            rows.extend(s.last(v).flatten());
        }
        _ => {
            for (row, var) in walk(hist) {
                if need.sel.has(var) {
                    if need.first {
                        // Walking from the newest, the first rows are the last ones met.
                        if rows.len() == need.k {
                            rows.remove(0);
                        }
                        rows.push(row);
                    } else {
                        rows.push(row);
                        if rows.len() == need.k {
                            break;
                        }
                    }
                }
            }
            if need.first {
                rows.reverse();
            }
        }
    }
    for r in &rows {
        match cell {
            Some(cell) => {
                let v = r
                    .checked_sub(need.back as u64)
                    .and_then(|at| cell(at, need.col))
                    .unwrap_or(Value::Null);
                value_words(&v, out);
            }
            None => out.push(*r),
        }
    }
    out.extend(std::iter::repeat_n(NONE, need.k - rows.len()));
}

/// What a history shows the conditions of the variables of its rows: equal signatures,
/// equivalent threads (as far as those go). Variable numbers (of the last `tail` rows, of
/// the first `head`), each list padded to its length, then the rows of each variable all of
/// whose rows are read, after their number.
pub(super) fn signature(needs: &Needs, hist: Option<&Arc<Step>>) -> Box<[u64]> {
    let mut tail = Vec::with_capacity(needs.tail);
    let mut head: Vec<u64> = Vec::with_capacity(needs.head);
    let mut all: Vec<Vec<u64>> = vec![Vec::new(); needs.all.len()];
    let mut cur = hist;
    'walk: while let Some(s) = cur {
        let var = s.var() as u64;
        // The run's rows, newest first.
        for back in 0..s.len() {
            if tail.len() < needs.tail {
                tail.push(var);
            }
            for (v, rows) in needs.all.iter().zip(&mut all) {
                if s.var() == *v {
                    rows.push(s.row.saturating_sub(back));
                }
            }
            // Walking from the newest row, the first rows are the last ones met: a window.
            if needs.head > 0 {
                if head.len() == needs.head {
                    head.remove(0);
                }
                head.push(var);
            }
            // Whether no row before this one is mapped to `v` (known for the first
            // variables: the walk stops there rather than at the start of the match).
            let first_of_run = back + 1 == s.len();
            let none_before = |v: usize| {
                v < TRACKED
                    && (v != s.var() || first_of_run)
                    && s.prev.as_ref().is_none_or(|p| p.last(v) == Some(None))
            };
            let done = needs.head == 0
                && tail.len() == needs.tail
                && needs.all.iter().all(|v| none_before(*v));
            if done {
                break 'walk;
            }
        }
        cur = s.prev.as_ref();
    }
    let mut out = Vec::new();
    let mut put = |values: &[u64], len: usize| {
        out.extend_from_slice(values);
        out.extend(std::iter::repeat_n(NONE, len - values.len()));
    };
    put(&tail, needs.tail);
    put(&head, needs.head);
    for rows in &all {
        out.push(rows.len() as u64);
        out.extend_from_slice(rows);
    }
    out.into()
}
