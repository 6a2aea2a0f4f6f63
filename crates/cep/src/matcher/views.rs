//! A match as DEFINE conditions and MEASURES see it: a partial match being extended by a row
//! ([`HistView`]), a finished one output row by row ([`MatchView`]); and a history as rows.

use std::sync::Arc;

use super::super::eval::View;
use super::super::value::Value;
use super::{walk, Partition, Step, TRACKED};

/// A partial match extended by the row being classified, `head` (row, variable).
pub(super) struct HistView<'a> {
    pub part: &'a Partition,
    pub head: (u64, usize),
    pub hist: Option<&'a Arc<Step>>,
    pub number: i64,
}

impl View for HistView<'_> {
    fn steps(&self) -> impl Iterator<Item = (u64, usize)> + '_ {
        std::iter::once(self.head).chain(walk(self.hist))
    }
    fn cell(&self, row: u64, col: usize) -> Option<&Value> {
        self.part.cell(row, col)
    }
    fn match_number(&self) -> i64 {
        self.number
    }
    fn last_of(&self, var: usize) -> Option<Option<u64>> {
        if self.head.1 == var {
            return Some(Some(self.head.0));
        }
        if var >= TRACKED {
            return None;
        }
        match self.hist {
            None => Some(None),
            Some(s) => s.last(var),
        }
    }
}

/// The rows of a partial match so far, newest first, as the summary of an aggregate reads
/// them (`eval/summary.rs`).
pub(crate) struct Past<'a> {
    pub part: &'a Partition,
    pub hist: Option<&'a Arc<Step>>,
    pub number: i64,
}

impl View for Past<'_> {
    fn steps(&self) -> impl Iterator<Item = (u64, usize)> + '_ {
        walk(self.hist)
    }
    fn cell(&self, row: u64, col: usize) -> Option<&Value> {
        self.part.cell(row, col)
    }
    fn match_number(&self) -> i64 {
        self.number
    }
}

/// A finished match (or partial one) as expressions see it.
pub(crate) struct MatchView<'a> {
    pub part: &'a Partition,
    /// Oldest first.
    pub steps: &'a [(u64, usize)],
    /// The whole match, of which `steps` is a beginning (ALL ROWS PER MATCH: the rows up to
    /// the one output).
    pub all: &'a [(u64, usize)],
    pub number: i64,
}

impl View for MatchView<'_> {
    fn steps(&self) -> impl Iterator<Item = (u64, usize)> + '_ {
        self.steps.iter().rev().copied()
    }
    fn cell(&self, row: u64, col: usize) -> Option<&Value> {
        self.part.cell(row, col)
    }
    fn match_number(&self) -> i64 {
        self.number
    }
    fn whole(&self) -> Option<MatchView<'_>> {
        Some(MatchView {
            part: self.part,
            steps: self.all,
            all: self.all,
            number: self.number,
        })
    }
}

/// The rows of `hist` matched inside an exclusion `{- … -}`, newest first.
pub(super) fn excluded_rows(mut hist: Option<&Arc<Step>>) -> Vec<u64> {
    let mut out = Vec::new();
    while let Some(s) = hist {
        if s.excluded() {
            out.extend((0..s.len()).map(|back| s.row.saturating_sub(back)));
        }
        hist = s.prev.as_ref();
    }
    out
}

/// The rows of `hist`, oldest first, as (row, variable).
pub(super) fn to_steps(hist: Option<&Arc<Step>>) -> Vec<(u64, usize)> {
    let mut out: Vec<(u64, usize)> = walk(hist).collect();
    out.reverse();
    out
}
