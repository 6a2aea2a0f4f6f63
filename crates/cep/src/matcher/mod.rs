//! The matcher of one partition: a Pike VM over the compiled pattern, run for every row that
//! may start a match (SQL's semantics: try a start row, take its most preferred match, then
//! skip; otherwise try the next row). Attempts run side by side as rows arrive; an attempt's
//! result counts only once every earlier attempt has ended, which is when the skip strategy
//! decides which later attempts survive. Partial matches share their history (the SASE+ /
//! Flink shared buffer): a thread is a program counter and a pointer into a tree of steps.
//!
//! Here: the pattern, rows, steps, threads and attempts, and how a row advances a
//! partition's attempts ([`Partition::push_starting`]); `closure.rs`: the moves that consume no row;
//! `ending.rs`: how attempts end (a match, a time bound, the end of the input) and what a
//! snapshot keeps; `views.rs`: a match as expressions see it.

mod closure;
mod ending;
mod grown_states;
mod handing;
mod views;

#[cfg(test)]
mod handing_tests;
#[cfg(test)]
mod tests;

use std::collections::VecDeque;
use std::sync::Arc;

use super::equivalence::{Needs, Pruner, Rows, Steps};
use super::eval::eval;
use super::expr::{Sel, E};
use super::program::Inst;
use super::value::{EvalError, Value};
use closure::{closure, At, Seen};
pub(crate) use grown_states::{GrownStates, Running};
pub(crate) use handing::{AdoptError, HandedPart};
use views::HistView;
pub(crate) use views::{MatchView, Memo, Past};

/// What follows a match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Skip {
    PastLastRow,
    ToNextRow,
    /// To the first row mapped to the variable (or to a member of the SUBSET).
    ToFirst(Sel),
    /// To the last row mapped to the variable (or to a member of the SUBSET).
    ToLast(Sel),
}

/// The compiled pattern, shared by every partition.
#[derive(Debug)]
pub(crate) struct Pattern {
    pub prog: Vec<Inst>,
    /// Per instruction, its class of labels with the same future (see `label_classes.rs`):
    /// partial matches are pruned per class, not per instruction.
    pub classes: Vec<usize>,
    /// Each variable's condition (`None`: any row).
    pub defines: Vec<Option<E>>,
    /// The aggregates of `defines` that grow with a partial match (`grown_states.rs`):
    /// made from `defines` ([`Running::of`]) and kept beside them.
    pub running: Running,
    pub vars: Vec<Arc<str>>,
    /// A row joins a match only while `row.ts - first.ts < within`.
    pub within: Option<i64>,
    pub skip: Skip,
    /// How far PREV looks back from a match's first row (rows kept before it).
    pub max_back: usize,
    /// The most threads one attempt may have at once.
    pub max_threads: usize,
    /// Whether a condition can fail on a row ([`E::can_fail`]): only then does a row's
    /// step keep what it changed, to undo it if a condition fails.
    pub fallible: bool,
    /// What the conditions read of a partial match's history: threads at one instruction
    /// that show them the same are equivalent, and only the preferred one is kept.
    pub needs: Needs,
    /// The pattern has `^`: a partition that has seen a row is never blank (a new one
    /// would take its next row for the partition's first).
    pub anchored: bool,
    /// The pattern has `$`: threads may wait for the end of the partition.
    pub ends: bool,
    /// Per instruction, whether it is a `Label` inside an exclusion `{- … -}`.
    pub excluded: Vec<bool>,
    /// Report the rows in no match ([`Outcome::Unmatched`]: ALL ROWS PER MATCH WITH
    /// UNMATCHED ROWS).
    pub unmatched: bool,
    /// Timed-out partial matches are output (`timeout_output`): an
    /// [`Outcome::TimedOut`] carries the partial match's rows. Without, it carries none (it
    /// is only counted): cep_q3 times out a partial match per bid, and listing their rows
    /// for nothing was a few per cent of its time.
    pub timed_out_rows: bool,
}

impl Pattern {
    /// Whether the threads of the attempts in flight stand for a later attempt's that are
    /// equivalent to them (at labels of one class, showing the conditions the same rows of
    /// the partition), so that those go. It holds when nothing the conditions read depends on
    /// where the match started (not `COUNT(*)`, `FIRST(x)`, `LAST(x, n)`: see
    /// [`Needs::from_start`]), so that equivalent threads of two attempts accept the same
    /// rows from then on; no `within` ends an earlier attempt before the later one; and the
    /// skip is past the last row.
    ///
    /// An attempt E stands for the later ones when no match that an attempt before it has
    /// found reaches E's start (the front attempt, the next to be reported, always does).
    /// Each of E's threads has consumed every row up to the current one and is preferred to
    /// any match E found before (the less preferred threads went when it was found). If a
    /// later attempt's thread would complete a match, so would E's equivalent one: E ends
    /// with a match reaching the current row (from its threads, all preferred to what it
    /// found before). Of the attempts before E, each reports no match, or one found before,
    /// which ends before E's start (the skip after it leaves E to be tried), or one found
    /// from now on, which ends at a row yet to come; so a match reported before E's either
    /// reaches the current row or leaves E to be reported. Either way a reported match
    /// covers the later attempt's start, and with the skip past the last row that attempt is
    /// never reported. Otherwise neither completes and the later attempt ends as it would
    /// have. So `(A+)+ B` over a run of n rows keeps one attempt in flight, not n, and
    /// `((A | B){2})* C` two (one for the rows at even and one for those at odd distances
    /// from the first: a label of the first attempt's is never at the class of the second's).
    ///
    /// An aggregate over a variable (`COUNT(A.*)`, `SUM(A.x)`) tells threads apart by its
    /// summary, the same whichever attempt the rows were aggregated in (its argument reads
    /// only the row aggregated and rows before it: see `calls.rs`), so a later attempt's
    /// thread whose aggregates have gathered what an earlier one's have goes too:
    /// `(A | B)* C` with `COUNT(A.*)` over a run of rows that are both keeps one attempt with
    /// a partial match per count, not one attempt per row each with a partial match per
    /// count. Comparing costs a walk to the first row of each thread, as evaluating the
    /// aggregate does, and where they rarely agree (`A+ B` with `AVG(A.x)`: the later
    /// attempt has fewer rows) it is pure cost (a fifth more CPU for Nexmark's cep_q1 in a
    /// debug build, whose attempts never agree; twenty times as much for 200 attempts of
    /// `(A+)+ B` with `SUM(A.x)` in flight): with aggregates, attempts stand for later ones
    /// only while at least [`CROWDED`] are in flight ([`Pattern::rivals`]), as when a long
    /// run of rows keeps attempts from ending, and after a row in which they claimed nothing
    /// they skip 1, 2, 4… up to [`MOST_SKIPPED`] rows before they try again
    /// ([`Pruner::agg_turn`]). Where the conditions read all rows of a
    /// variable (an aggregate reading `MATCH_NUMBER()`), the rows themselves tell threads
    /// apart, and a later attempt's are
    /// never an earlier one's: those are left alone. (The first rows of a variable,
    /// `FIRST(A.x)`, `FIRST(CLASSIFIER(U))`, cost such a walk too, but what they show, a
    /// value or a variable, often agrees.)
    pub(crate) fn earlier_stands_for_later(&self) -> bool {
        let n = &self.needs;
        self.skip == Skip::PastLastRow
            && self.within.is_none()
            && !n.from_start
            && n.all.is_empty()
            && n.head == 0
    }

    /// Whether, with `in_flight` attempts in the partition, the earlier ones stand for the
    /// later ones in the row being pushed ([`Pattern::earlier_stands_for_later`]). Pruning
    /// never changes what is found, only what it costs: where the conditions aggregate, the
    /// comparison waits until the attempts crowd.
    pub(crate) fn rivals(&self, in_flight: usize) -> bool {
        self.earlier_stands_for_later()
            && in_flight > 1
            && (self.needs.aggs.is_empty() || in_flight >= CROWDED)
    }
}

/// How many attempts in flight make those of a pattern whose conditions aggregate over a
/// variable stand for later ones (see [`Pattern::earlier_stands_for_later`]).
pub(crate) const CROWDED: usize = 8;

/// The longest run of rows in which the attempts of a pattern whose conditions aggregate over
/// a variable do not stand for later ones, after a row in which they claimed nothing (see
/// [`Pattern::earlier_stands_for_later`]).
pub(crate) const MOST_SKIPPED: u32 = 64;

/// Whether any of `defines` can fail on a row (for [`Pattern::fallible`]).
pub(crate) fn fallible(defines: &[Option<E>]) -> bool {
    defines.iter().flatten().any(E::can_fail)
}

/// A row of the partition.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Row {
    pub ts: i64,
    pub cells: Box<[Value]>,
}

/// An ended attempt the caller reports: its rows oldest first as (row index, variable).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// A match (possibly empty: no steps, at row `start`) with its number in the partition.
    Match {
        start: u64,
        steps: Vec<(u64, usize)>,
        number: i64,
        /// The rows matched inside an exclusion `{- … -}` (not output row by row).
        excluded: Vec<u64>,
    },
    /// No match: the time bound ran out while it was partial (its most preferred partial
    /// match).
    TimedOut {
        start: u64,
        steps: Vec<(u64, usize)>,
        excluded: Vec<u64>,
    },
    /// Row `row` is in no match: no match starts at it and none covers it (reported only
    /// with [`Pattern::unmatched`]).
    Unmatched { row: u64 },
}

/// The pattern is too ambiguous to follow: one start row has more than
/// [`Pattern::max_threads`] partial matches in flight, or (`attempts` > 1) the start rows of a
/// partition have that many between them beyond one each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TooManyThreads {
    /// The (first) start row.
    pub start: u64,
    pub threads: usize,
    /// How many start rows share `threads` (1: one start row's).
    pub attempts: usize,
}

/// Why a row was not taken; the partition is as it was before the row.
#[derive(Debug)]
pub(crate) enum Refused {
    /// The condition of variable `var` failed on the row (it goes to the dead letters, as
    /// the caller has it: the partition dropped it).
    Condition { var: usize, error: EvalError },
    /// The pattern is too ambiguous to follow (the query stops).
    TooManyThreads(TooManyThreads),
}

/// Rows of a partial match mapped to one variable, after the rows before them: a run of
/// consecutive rows of the partition (the rows of a match are), all mapped alike.
///
/// A Nexmark run keeps a step or two per partition and millions of partitions: the
/// variable is 31 bits with the exclusion flag beside it, and the last rows of the tracked
/// variables are 32-bit distances, so that a step (40 bytes, 56 with its reference counts)
/// is in the allocator's 56-byte size class (with 64-bit rows it was in the 80-byte one).
///
/// A run is one step: cep_q3's `A B* C` keeps the attempts of the cheapest bids of a hot
/// (auction, bidder) pair for 5 s, each mapping every later bid of the pair to `B`; with a
/// step per row they held ≈ 0.3 MB a pair, most of what a pair held (see
/// [`Step::marked`]).
#[derive(Debug)]
pub(crate) struct Step {
    /// The last row of the run.
    pub row: u64,
    pub prev: Option<Arc<Step>>,
    /// The last row mapped to each of the first [`TRACKED`] variables up to this step, so
    /// that `A.price` in a later condition needs no walk back to A: see [`Step::last`].
    last: [u32; TRACKED],
    /// The variable, and the exclusion flag in the top bit ([`EXCLUDED`]): see
    /// [`Step::var`], [`Step::excluded`].
    var: u32,
    /// How many rows the run has: rows `row + 1 - len ..= row` (at least 1).
    len: u32,
}

/// How many variables a step remembers the last rows of (a pattern with more walks the
/// history for the others).
pub(crate) const TRACKED: usize = 4;
/// In [`Step::last`]: no row of the variable up to the step.
const NO_ROW: u32 = 0;
/// In [`Step::last`]: a row too far back to say (2^32 rows or more): walk the history.
const FAR: u32 = u32::MAX;
/// In [`Step::var`]: the rows were matched inside an exclusion `{- … -}` (part of the
/// match, not of ALL ROWS PER MATCH).
const EXCLUDED: u32 = 1 << 31;

/// A history is a chain as long as its match: dropped link by link, each dropping the next,
/// a match of a million rows (`A+` over a run without `within`) overflowed the stack. The
/// chain is unlinked in a loop instead, as far as no other history shares it.
impl Drop for Step {
    fn drop(&mut self) {
        let mut prev = self.prev.take();
        while let Some(p) = prev {
            prev = Arc::into_inner(p).and_then(|mut s| s.prev.take());
        }
    }
}

impl Step {
    pub(crate) fn after(row: u64, var: usize, prev: Option<Arc<Step>>) -> Arc<Step> {
        Step::marked(row, var, prev, false)
    }

    /// [`Step::after`], `excluded` or not. Where `prev` is a run of the same variable (and
    /// flag) ending at the row before, the new step is that run one row longer, after the
    /// step before it: `prev` itself goes once no other thread holds it. The rows are the
    /// same, one step fewer.
    pub(crate) fn marked(
        row: u64,
        var: usize,
        prev: Option<Arc<Step>>,
        excluded: bool,
    ) -> Arc<Step> {
        let var = u32::try_from(var)
            .ok()
            .filter(|v| v & EXCLUDED == 0)
            .expect(
                "a pattern has fewer than 2^31 variables (its program is bounded by MAX_PROGRAM)",
            )
            | if excluded { EXCLUDED } else { 0 };
        // Distances back from this row: the row itself is 1 back, the one before it 2… (0 is
        // NO_ROW); those of the step before, moved by the rows between.
        let mut last = [NO_ROW; TRACKED];
        if let Some(p) = &prev {
            let gap = row.saturating_sub(p.row);
            for (l, d) in last.iter_mut().zip(p.last) {
                *l = match d {
                    NO_ROW | FAR => d,
                    d => u64::from(d)
                        .checked_add(gap)
                        .and_then(|d| u32::try_from(d).ok())
                        .unwrap_or(FAR),
                };
            }
        }
        if let Some(l) = last.get_mut((var & !EXCLUDED) as usize) {
            *l = 1;
        }
        let (prev, len) = match prev {
            Some(p) if p.var == var && p.row.checked_add(1) == Some(row) && p.len < u32::MAX => {
                (p.prev.clone(), p.len + 1)
            }
            prev => (prev, 1),
        };
        Arc::new(Step {
            row,
            prev,
            last,
            var,
            len,
        })
    }

    /// The variable the rows are mapped to.
    pub(crate) fn var(&self) -> usize {
        (self.var & !EXCLUDED) as usize
    }

    /// Whether the rows were matched inside an exclusion `{- … -}`.
    pub(crate) fn excluded(&self) -> bool {
        self.var & EXCLUDED != 0
    }

    /// How many rows the step maps (the run ends at [`Step::row`]).
    pub(crate) fn len(&self) -> u64 {
        u64::from(self.len)
    }

    /// The last row mapped to variable `var` up to this step: `Some(None)` if none is,
    /// `None` if the step does not say (a variable after the first [`TRACKED`], or a row
    /// 2^32 rows back or more): walk the history.
    pub(crate) fn last(&self, var: usize) -> Option<Option<u64>> {
        match *self.last.get(var)? {
            NO_ROW => Some(None),
            FAR => None,
            d => Some(Some(self.row.saturating_sub(u64::from(d - 1)))),
        }
    }
}

/// The rows of history `hist`, newest first, as (row, variable): each step's run row by row.
pub(crate) fn walk(hist: Option<&Arc<Step>>) -> Walk<'_> {
    Walk {
        step: hist.map(|s| &**s),
        back: 0,
    }
}

/// See [`walk`]: a clone walks on from where it is.
#[derive(Debug, Clone)]
pub(crate) struct Walk<'a> {
    step: Option<&'a Step>,
    /// How many rows of `step`'s run were walked.
    back: u32,
}

impl Iterator for Walk<'_> {
    type Item = (u64, usize);

    fn next(&mut self) -> Option<(u64, usize)> {
        let s = self.step?;
        let row = s.row.saturating_sub(u64::from(self.back));
        self.back += 1;
        if self.back >= s.len {
            self.step = s.prev.as_deref();
            self.back = 0;
        }
        Some((row, s.var()))
    }
}

/// At which rows a partition starts attempts (a match may start).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Starts<'a> {
    /// At every row the skip strategy allows: the instance that starts matches.
    Every,
    /// At none: an instance that only extends the partial matches handed to it.
    Never,
    /// At these rows only (ascending): replaying the attempts handed over.
    At(&'a [u64]),
}

impl Starts<'_> {
    fn admits(self, row: u64) -> bool {
        match self {
            Starts::Every => true,
            Starts::Never => false,
            Starts::At(rows) => rows.binary_search(&row).is_ok(),
        }
    }
}

/// A partial match waiting at an instruction.
#[derive(Debug, Clone)]
pub(crate) struct Thread {
    pub pc: usize,
    pub hist: Option<Arc<Step>>,
}

/// The match attempt from one start row.
///
/// Most partitions of a Nexmark run hold one, for seconds: it is 56 bytes (the allocator's
/// 56-byte class), with one field for what it found, a match or a time-out (80 with one
/// for each).
#[derive(Debug)]
struct Attempt {
    start: u64,
    start_ts: i64,
    /// Live threads in preference order, each waiting at a `Label`.
    threads: Vec<Thread>,
    found: Found,
}

/// What an attempt has found so far.
#[derive(Debug)]
enum Found {
    Nothing,
    /// Its most preferred complete match so far (`None`: the empty match).
    Match(Option<Arc<Step>>),
    /// No match: the time bound ended it with live threads (its most preferred partial
    /// match).
    TimedOut(Option<Arc<Step>>),
}

impl Attempt {
    fn ended(&self) -> bool {
        self.threads.is_empty()
    }

    /// Whether it has found a complete match.
    fn has_match(&self) -> bool {
        matches!(self.found, Found::Match(_))
    }

    /// The last row of the match it has found (its start for an empty match).
    fn best_end(&self) -> Option<u64> {
        match &self.found {
            Found::Match(b) => Some(b.as_ref().map_or(self.start, |s| s.row)),
            _ => None,
        }
    }
}

/// Whether attempt `a` stands for later ones (its threads claim theirs, see
/// [`Pattern::earlier_stands_for_later`]) where the matches the attempts before it have found
/// end at row `reach` at the latest: none of them reaches its start.
fn stands_for_later(reach: Option<u64>, a: &Attempt) -> bool {
    reach.is_none_or(|r| r < a.start)
}

/// What a row changed in one attempt, kept until the row is taken so that a condition that
/// fails on it can undo everything: the attempt's threads before the row (their vector is
/// reused once the row is taken) and, if the row changed it, what it had found before.
#[derive(Debug)]
struct Undo {
    attempt: usize,
    threads: Vec<Thread>,
    found: Option<Found>,
}

/// One partition's rows and attempts.
///
/// A Nexmark run holds millions of partitions of a row or two, each inline in the store's
/// table: a field more is 8 bytes times the table's buckets. The index the next row gets is
/// therefore `base + rows.len()` ([`Partition::next`]), and whether the pattern is anchored
/// is the pattern's to say.
#[derive(Debug, Default)]
pub(crate) struct Partition {
    rows: VecDeque<Row>,
    /// The index of `rows[0]`.
    base: u64,
    /// Rows before this one cannot start a match (they were skipped).
    resume: u64,
    /// Matches emitted so far.
    matches: i64,
    /// Rows before this one are in a match, or were reported unmatched.
    covered: u64,
    attempts: VecDeque<Attempt>,
}

/// The working space of [`Partition::push_starting`], shared by the partitions of an operator (a
/// Nexmark run has millions of partitions of a row or two: space of their own would be most
/// of their memory).
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    /// Of [`closure()`].
    seen: Seen,
    /// Of an attempt's row: which threads are equivalent, which steps exist.
    prune: Pruner,
    steps: Steps,
    /// The states of the conditions' running aggregates per partial match.
    pub(crate) grown: GrownStates,
    /// Empty thread lists whose allocations the next steps reuse.
    spare: Vec<Vec<Thread>>,
    /// What the row being pushed changed (empty between rows).
    undo: Vec<Undo>,
    /// An attempt other than the front one ended with nothing to report in the row being
    /// pushed.
    emptied: bool,
    /// An attempt found a match ending at the row being pushed (the last one pushed, once
    /// it is taken).
    ended_match: bool,
    /// Tests: only the attempts inside the front attempt's match go early, as before the
    /// attempts inside any match that covers them for good did (see
    /// [`Partition::drop_covered`]): what that must agree with.
    #[cfg(test)]
    pub(crate) front_only: bool,
}

impl Scratch {
    /// Whether the last row taken is the last row of a match an attempt found with it
    /// (one that may be reported later, or has been).
    pub(crate) fn ended_match(&self) -> bool {
        self.ended_match
    }
}

impl Partition {
    /// Row `index` of the partition, if still kept.
    pub(crate) fn row(&self, index: u64) -> Option<&Row> {
        let i = usize::try_from(index.checked_sub(self.base)?).ok()?;
        self.rows.get(i)
    }

    /// A cell of row `row` of the partition, if still kept.
    pub(crate) fn cell_at(&self, row: u64, col: usize) -> Option<&Value> {
        self.cell(row, col)
    }

    fn cell(&self, row: u64, col: usize) -> Option<&Value> {
        self.row(row).and_then(|r| r.cells.get(col))
    }

    /// [`Partition::push_starting`] at every row the skip allows (tests).
    #[cfg(test)]
    pub(crate) fn push(
        &mut self,
        p: &Pattern,
        s: &mut Scratch,
        row: Row,
        out: &mut Vec<Outcome>,
    ) -> Result<(), Refused> {
        self.push_starting(p, s, row, out, Starts::Every)
    }

    /// Feeds the next row (rows arrive in event-time order) and reports the attempts that
    /// ended, in order. An attempt starts at the row only where `starts` says (an instance
    /// that only extends the partial matches handed to it starts none). A row a condition
    /// fails on is refused and changes nothing: the partition is as if it had never arrived
    /// (its rows, attempts, their threads and best matches), and `out` is untouched.
    pub(crate) fn push_starting(
        &mut self,
        p: &Pattern,
        s: &mut Scratch,
        row: Row,
        out: &mut Vec<Outcome>,
        starts: Starts<'_>,
    ) -> Result<(), Refused> {
        let idx = self.next();
        let ts = row.ts;
        s.ended_match = false;
        // A Nexmark run has millions of partitions of a row or two, each with an attempt:
        // room for one row and one attempt first, not the four a first push makes (a fifth of
        // such a partition's memory, all of it fresh pages the kernel zeroes).
        if self.rows.capacity() == 0 {
            self.rows.reserve_exact(1);
        }
        self.rows.push_back(row);
        let mut started = idx >= self.resume && starts.admits(idx);
        // Whether the attempts in flight stand for later ones in this row (the new one's
        // counted).
        let aggs = !p.needs.aggs.is_empty();
        let rivals =
            p.rivals(self.attempts.len() + usize::from(started)) && (!aggs || s.prune.agg_turn());
        if rivals {
            s.prune.count_claimed();
        }
        if started {
            let mut threads = s.spare.pop().unwrap_or_default();
            // The threads of the attempts in flight wait for this row too: those of the new
            // attempt equivalent to one of theirs go (see
            // `Pattern::earlier_stands_for_later`).
            let rival = rivals && self.attempts.iter().any(|a| !a.ended());
            if rival {
                s.prune.start_row(p.prog.len());
                self.claim(p, &mut s.prune);
            }
            s.prune.clear(p.prog.len());
            s.prune.set_rival(rival);
            let at = At {
                first: idx == 0,
                ended: false,
                rows: Some(self.rows(p, &s.grown)),
            };
            let best =
                closure(p, &mut s.seen, &mut s.prune, at, 0, None, &mut threads).then_some(None);
            // An empty match: shown as its start row.
            s.ended_match |= best.is_some();
            if rival {
                s.prune.end_row();
            }
            if rival && threads.is_empty() && best.is_none() && !p.unmatched {
                // It ends at once with nothing to report.
                s.spare.push(threads);
                started = false;
            } else {
                if self.attempts.capacity() == 0 {
                    self.attempts.reserve_exact(1);
                }
                self.attempts.push_back(Attempt {
                    start: idx,
                    start_ts: ts,
                    threads,
                    found: best.map_or(Found::Nothing, Found::Match),
                });
            }
        }
        let stepped = self.step(p, s, idx, ts, rivals);
        if rivals && aggs {
            s.prune.agg_outcome();
        }
        if let Err(failed) = stepped {
            return Err(self.roll_back(s, started, failed));
        }
        if started {
            // The new attempt's threads are in a list of the working space's, with room for
            // more: most partitions of a Nexmark run keep the attempt of their one row for
            // seconds (cep_q3) or to the end (cep_q0), with a thread or two (16 bytes each)
            // in room for four. It keeps a list of its size, and the roomy one goes back.
            if let Some(a) = self.attempts.back_mut() {
                if a.threads.capacity() > a.threads.len() {
                    let tight = a.threads.to_vec();
                    let mut roomy = std::mem::replace(&mut a.threads, tight);
                    roomy.clear();
                    s.spare.push(roomy);
                }
            }
        }
        // The row is taken: the threads before it go.
        for u in s.undo.drain(..) {
            let mut old = u.threads;
            old.clear();
            s.spare.push(old);
        }
        // Attempts that ended with nothing to report (no match, no time-out, no unmatched
        // row to show) go now rather than when they reach the front: behind a front attempt
        // that stands for them they are most rows' attempts.
        if std::mem::take(&mut s.emptied) && !p.unmatched {
            self.attempts
                .retain(|a| !a.ended() || !matches!(a.found, Found::Nothing));
        }
        #[cfg(test)]
        let front_only = s.front_only;
        #[cfg(not(test))]
        let front_only = false;
        self.drop_covered(p, front_only);
        // Keep about as many spare lists as the next row may need.
        s.spare.truncate(self.attempts.len() + 2);
        self.settle(p, out);
        Ok(())
    }

    /// Claims in `prune` the threads of the attempts that stand for later ones: each in
    /// flight that no match found by an attempt before it reaches (see
    /// [`Pattern::earlier_stands_for_later`]).
    fn claim(&self, p: &Pattern, prune: &mut Pruner) {
        let mut reach = None;
        for a in &self.attempts {
            if stands_for_later(reach, a) {
                prune.claim(p, &a.threads);
            }
            reach = reach.max(a.best_end());
        }
    }

    /// What the pruner reads of the partition (for the summaries of aggregates), with the
    /// states of the running aggregates `grown`.
    fn rows<'a>(&'a self, p: &'a Pattern, grown: &'a GrownStates) -> Rows<'a> {
        Rows {
            part: self,
            vars: &p.vars,
            number: self.matches + 1,
            running: &p.running,
            grown,
        }
    }

    /// Past the last row, the attempts inside a match found by an earlier attempt go now if
    /// that match is reported or else one that covers them too: they are never reported. So
    /// a hot (auction, bidder) pair of cep_q3 keeps, behind the attempt of a cheap bid that
    /// waits 5 s for its time bound, the attempts whose matches would follow its time-out,
    /// not one per bid.
    ///
    /// Attempt `a` with a match (ended, or live: a live one ends with that match or a
    /// preferred one, which ends later, as its live partial matches have consumed every row so
    /// far) covers a later attempt `b` when `b` starts within the match, and `b` is reported
    /// only if a match reported before `a`'s ends before `b`'s start without covering `a`'s
    /// start, or `a`'s start and not `b`'s. A match an attempt before `a` finds from now on
    /// ends at a row yet to come, after `b`'s start; so `a`'s matches cover `b` for good when
    /// the matches found before `a` (all ended) end before `a`'s start. (With `a` the front
    /// attempt, the next to be reported, this always holds.)
    /// (`front_only`: only the front attempt covers later ones, for tests.)
    fn drop_covered(&mut self, p: &Pattern, front_only: bool) {
        if p.skip != Skip::PastLastRow || self.attempts.len() < 2 {
            return;
        }
        // The last row of the matches found by the attempts kept so far (all ended while
        // `certain`), and the end of the match that covers the attempts up to it for good.
        let mut reach: Option<u64> = None;
        let mut certain = true;
        let mut cover: Option<u64> = None;
        self.attempts.retain(|a| {
            if cover.is_some_and(|end| a.start <= end) {
                return false;
            }
            if let Some(end) = a.best_end() {
                if certain && reach.is_none_or(|r| r < a.start) {
                    cover = Some(end);
                }
                if a.ended() {
                    reach = reach.max(Some(end));
                } else {
                    certain = false;
                }
            }
            certain &= !front_only;
            true
        });
    }

    /// Advances every attempt by row `idx` (the last row, at time `ts`), recording in
    /// `s.undo` what it changed. On an error, the attempt being advanced is as it was and
    /// the earlier ones are advanced, with their old state in `s.undo`.
    fn step(
        &mut self,
        p: &Pattern,
        s: &mut Scratch,
        idx: u64,
        ts: i64,
        rivals: bool,
    ) -> Result<(), StepFailed> {
        // The last row of the matches the attempts so far have found (see
        // `stands_for_later`).
        let mut reach = None;
        if rivals {
            s.prune.start_row(p.prog.len());
        }
        // The attempts advanced so far, their partial matches, and the first one's start.
        let (mut live, mut in_flight, mut first_live) = (0usize, 0usize, None);
        for i in 0..self.attempts.len() {
            if self.attempts[i].ended() {
                reach = reach.max(self.attempts[i].best_end());
                continue;
            }
            if p.within
                .is_some_and(|w| ts.saturating_sub(self.attempts[i].start_ts) >= w)
            {
                let a = &mut self.attempts[i];
                let mut threads = std::mem::take(&mut a.threads);
                let found = (!a.has_match()).then(|| {
                    let partial = threads.first().and_then(|t| t.hist.clone());
                    std::mem::replace(&mut a.found, Found::TimedOut(partial))
                });
                if p.fallible {
                    s.undo.push(Undo {
                        attempt: i,
                        threads,
                        found,
                    });
                } else {
                    // No condition can fail: nothing will be undone.
                    threads.clear();
                    s.spare.push(threads);
                }
                continue;
            }
            let threads = std::mem::take(&mut self.attempts[i].threads);
            let mut next = s.spare.pop().unwrap_or_default();
            let mut found = None;
            let mut failed = None;
            s.prune.clear(p.prog.len());
            s.prune.set_rival(rivals && i > 0);
            // Equal histories are one allocation only where equivalence looks at them.
            let share = !p.needs.nothing() && threads.len() > 1;
            // How many threads still to extend each history in this row: the last takes the
            // history's aggregate states rather than a copy.
            // Short partial matches walk their rows (cheaper than keeping states: cep_q1's
            // are a few rows); from GROW_AFTER rows on, the states grow with them.
            let grow = !p.running.is_empty()
                && idx.saturating_sub(self.attempts[i].start) >= grown_states::GROW_AFTER;
            if grow {
                s.grown.count_users(&threads);
            }
            for t in &threads {
                let Inst::Label(var) = p.prog[t.pc] else {
                    continue;
                };
                let number = self.matches + 1;
                let grown = grow.then(|| {
                    let last = s.grown.last_use(t.hist.as_ref());
                    s.grown
                        .extended(p, self, number, t.hist.as_ref(), (idx, var), last)
                });
                let ok = match &p.defines[var] {
                    None => true,
                    Some(cond) => {
                        let view = HistView {
                            part: self,
                            head: (idx, var),
                            hist: t.hist.as_ref(),
                            number,
                            grown: grown.as_deref().map(|g| (&p.running, g)),
                        };
                        match eval(cond, &view, &p.vars) {
                            Ok(v) => v == Value::Bool(true),
                            Err(error) => {
                                failed = Some(StepFailed::Condition { var, error });
                                break;
                            }
                        }
                    }
                };
                if !ok {
                    continue;
                }
                let excluded = p.excluded.get(t.pc).copied().unwrap_or(false);
                let step = if share {
                    s.steps.after(idx, var, t.hist.as_ref(), excluded)
                } else {
                    Step::marked(idx, var, t.hist.clone(), excluded)
                };
                if let Some(states) = grown {
                    s.grown.keep(&step, states);
                }
                let hist = Some(step);
                let done = closure(
                    p,
                    &mut s.seen,
                    &mut s.prune,
                    At {
                        rows: Some(self.rows(p, &s.grown)),
                        ..At::default()
                    },
                    t.pc + 1,
                    hist.clone(),
                    &mut next,
                );
                if done {
                    found = Some(hist);
                    break;
                }
                if next.len() > p.max_threads {
                    failed = Some(StepFailed::TooManyThreads(TooManyThreads {
                        start: self.attempts[i].start,
                        threads: next.len(),
                        attempts: 1,
                    }));
                    break;
                }
            }
            s.steps.clear();
            // The partition's guard: the partial matches of its start rows beyond one each
            // (`(A | B)+ C` with `count(A.*)` and `count(B.*)` over rows that are both: every
            // start row keeps one per count, n² after n rows, each evaluated at every row).
            live += 1;
            in_flight += next.len();
            if failed.is_none() && in_flight.saturating_sub(live) > p.max_threads {
                failed = Some(StepFailed::TooManyThreads(TooManyThreads {
                    start: first_live.unwrap_or(self.attempts[i].start),
                    threads: in_flight,
                    attempts: live,
                }));
            }
            first_live.get_or_insert(self.attempts[i].start);
            let a = &mut self.attempts[i];
            if let Some(failed) = failed {
                a.threads = threads;
                next.clear();
                s.spare.push(next);
                if rivals {
                    s.prune.end_row();
                }
                return Err(failed);
            }
            a.threads = next;
            s.ended_match |= found.is_some();
            let before = found.map(|h| std::mem::replace(&mut a.found, Found::Match(h)));
            if rivals {
                if stands_for_later(reach, a) {
                    s.prune.claim(p, &a.threads);
                }
                reach = reach.max(a.best_end());
                if i > 0 && a.ended() && !a.has_match() {
                    s.emptied = true;
                }
            }
            if p.fallible {
                s.undo.push(Undo {
                    attempt: i,
                    threads,
                    found: before,
                });
            } else {
                let mut old = threads;
                old.clear();
                s.spare.push(old);
            }
        }
        if rivals {
            s.prune.end_row();
        }
        Ok(())
    }

    /// Undoes row `self.next - 1` after `failed`: its attempt (if it `started` one) goes, the
    /// other attempts get back what `s.undo` kept, and the row is handed back.
    fn roll_back(&mut self, s: &mut Scratch, started: bool, failed: StepFailed) -> Refused {
        s.emptied = false;
        for u in s.undo.drain(..).rev() {
            let a = &mut self.attempts[u.attempt];
            let mut new = std::mem::replace(&mut a.threads, u.threads);
            new.clear();
            s.spare.push(new);
            if let Some(found) = u.found {
                a.found = found;
            }
        }
        if started {
            let a = self
                .attempts
                .pop_back()
                .expect("the row's own attempt is the last");
            let mut threads = a.threads;
            threads.clear();
            s.spare.push(threads);
        }
        self.rows.pop_back().expect("the row was pushed");
        match failed {
            StepFailed::Condition { var, error } => Refused::Condition { var, error },
            StepFailed::TooManyThreads(e) => Refused::TooManyThreads(e),
        }
    }
}

/// Why advancing the attempts by a row failed.
enum StepFailed {
    Condition { var: usize, error: EvalError },
    TooManyThreads(TooManyThreads),
}

#[cfg(test)]
mod grown_tests;
