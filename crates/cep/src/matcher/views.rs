//! A match as DEFINE conditions and MEASURES see it: a partial match being extended by a row
//! ([`HistView`]), a finished one output row by row ([`MatchView`]); and a history as rows.

use std::sync::Arc;

use super::super::eval::{Grown, View};
use super::super::expr::Agg;
use super::super::value::{Eval, Value};
use super::grown_states::{find, Running};
use super::{walk, Partition, Step, TRACKED};

/// A partial match extended by the row being classified, `head` (row, variable).
pub(super) struct HistView<'a> {
    pub part: &'a Partition,
    pub head: (u64, usize),
    pub hist: Option<&'a Arc<Step>>,
    pub number: i64,
    /// The states of the running aggregates after `hist` and `head` (`grown_states.rs`).
    pub grown: Option<(&'a Running, &'a [Grown])>,
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
    fn grown(&self, a: &Agg) -> Option<&Grown> {
        find(self.grown, a)
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
    /// The states of the running aggregates after `hist` (`grown_states.rs`).
    pub grown: Option<(&'a Running, &'a [Grown])>,
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
    fn grown(&self, a: &Agg) -> Option<&Grown> {
        find(self.grown, a)
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
    /// The aggregates of the measures known without a walk (ALL ROWS PER MATCH: see
    /// [`Memo`]); `whole`: this is the view of `FINAL`, over `all`.
    pub memo: Option<&'a Memo>,
    pub whole: bool,
}

/// The aggregates of ALL ROWS PER MATCH's measures over a match (issue 18: none is computed
/// over the whole match at every row): running ones grown row by row as the rows are output,
/// `FINAL` ones computed once per match. Found by the address of the aggregate in the
/// measures.
#[derive(Debug, Default)]
pub(crate) struct Memo {
    pub running: Vec<(usize, Agg, Grown)>,
    pub finals: Vec<(usize, Eval)>,
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
            memo: self.memo,
            whole: true,
        })
    }
    fn grown(&self, a: &Agg) -> Option<&Grown> {
        let addr = std::ptr::from_ref(a) as usize;
        let memo = self.memo.filter(|_| !self.whole)?;
        (memo.running.iter())
            .find(|(at, _, _)| *at == addr)
            .map(|(_, _, g)| g)
    }
    fn known(&self, a: &Agg) -> Option<Eval> {
        if !self.whole {
            return self.grown(a).and_then(Grown::value);
        }
        let addr = std::ptr::from_ref(a) as usize;
        let memo = self.memo?;
        (memo.finals.iter())
            .find(|(at, _)| *at == addr)
            .map(|(_, v)| v.clone())
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
