//! What a partial match's history shows the conditions, as a key: equal keys, equivalent
//! partial matches.

use std::sync::Arc;

use super::super::eval::summarize;
use super::super::matcher::{Partition, Past, Step, NO_ROW, TRACKED};
use super::Needs;

/// What the pruner reads besides the histories: the partition's rows and the names of the
/// variables, which the summaries of aggregates ([`Needs::aggs`]) are computed from.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rows<'a> {
    pub part: &'a Partition,
    pub vars: &'a [Arc<str>],
    /// MATCH_NUMBER() as the conditions see it now (no summarized argument reads it).
    pub number: i64,
}

/// Where an aggregate has no summary (its argument fails on a row, or no [`Rows`] were
/// given): every row of the history and its variable, after their number.
const ROWS: u64 = 3;

/// The key of a partial match with history `hist`: its [`signature`], then the summary of
/// each aggregate the conditions compute over its rows (see `eval/summary.rs`), or where an
/// aggregate has none, its rows. Equal keys, equivalent partial matches.
pub(super) fn key(needs: &Needs, hist: Option<&Arc<Step>>, rows: Option<Rows<'_>>) -> Box<[u64]> {
    let sig = signature(needs, hist);
    if needs.aggs.is_empty() {
        return sig;
    }
    let mut out = sig.into_vec();
    for a in &needs.aggs {
        let start = out.len();
        let summarized = rows.is_some_and(|r| {
            let past = Past {
                part: r.part,
                hist,
                number: r.number,
            };
            summarize(a, &past, r.vars, &mut out).unwrap_or(false)
        });
        if !summarized {
            out.truncate(start);
            out.extend([ROWS, 0]);
            let mut n = 0u64;
            let mut cur = hist;
            while let Some(s) = cur {
                out.extend([s.row, s.var() as u64]);
                n += 1;
                cur = s.prev.as_ref();
            }
            if let Some(count) = out.get_mut(start + 1) {
                *count = n;
            }
        }
    }
    out.into()
}

/// What a history shows the conditions: equal signatures, equivalent threads. Row indices
/// and variable numbers, each list padded to its length (the lists of all rows of a variable
/// after their length).
pub(super) fn signature(needs: &Needs, hist: Option<&Arc<Step>>) -> Box<[u64]> {
    const NONE: u64 = u64::MAX;
    // The last row of the first variables is in the newest step.
    let mut last: Vec<Vec<u64>> = needs
        .last
        .iter()
        .map(|(v, k)| match hist {
            Some(s) if *k == 1 && *v < TRACKED => vec![s.last[*v]]
                .into_iter()
                .filter(|r| *r != NO_ROW)
                .collect(),
            _ => Vec::with_capacity(*k),
        })
        .collect();
    // Walking from the newest step, the first rows are the last ones met: a window of them.
    let mut first: Vec<Vec<u64>> = needs
        .first
        .iter()
        .map(|(_, k)| Vec::with_capacity(*k))
        .collect();
    let mut tail = Vec::with_capacity(needs.tail);
    let mut head: Vec<u64> = Vec::with_capacity(needs.head);
    let mut all: Vec<Vec<u64>> = vec![Vec::new(); needs.all.len()];
    let mut cur = hist;
    while let Some(s) = cur {
        let var = s.var() as u64;
        if tail.len() < needs.tail {
            tail.push(var);
        }
        for ((v, k), rows) in needs.last.iter().zip(&mut last) {
            if s.var() == *v && rows.len() < *k && !(*k == 1 && *v < TRACKED) {
                rows.push(s.row);
            }
        }
        for ((v, k), rows) in needs.first.iter().zip(&mut first) {
            if s.var() == *v {
                if rows.len() == *k {
                    rows.remove(0);
                }
                rows.push(s.row);
            }
        }
        for (v, rows) in needs.all.iter().zip(&mut all) {
            if s.var() == *v {
                rows.push(s.row);
            }
        }
        if needs.head > 0 {
            if head.len() == needs.head {
                head.remove(0);
            }
            head.push(var);
        }
        // Whether no row before this step is mapped to `v` (known for the first variables:
        // the walk stops there rather than at the start of the match).
        let none_before =
            |v: usize| v < TRACKED && s.prev.as_ref().is_none_or(|p| p.last[v] == NO_ROW);
        let done = needs.head == 0
            && tail.len() == needs.tail
            && needs.last.iter().zip(&last).all(|((v, k), rows)| {
                rows.len() == *k || (*k == 1 && *v < TRACKED) || none_before(*v)
            })
            && needs.first.iter().all(|(v, _)| none_before(*v))
            && needs.all.iter().all(|v| none_before(*v));
        if done {
            break;
        }
        cur = s.prev.as_ref();
    }
    let mut out = Vec::new();
    let mut put = |values: &[u64], len: usize| {
        out.extend_from_slice(values);
        out.extend(std::iter::repeat_n(NONE, len - values.len()));
    };
    for ((_, k), rows) in needs.last.iter().zip(&last) {
        put(rows, *k);
    }
    for ((_, k), rows) in needs.first.iter().zip(&first) {
        put(rows, *k);
    }
    put(&tail, needs.tail);
    put(&head, needs.head);
    for rows in &all {
        out.push(rows.len() as u64);
        out.extend_from_slice(rows);
    }
    out.into()
}
