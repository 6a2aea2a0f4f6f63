//! The matcher of one partition: a Pike VM over the compiled pattern, run for every row that
//! may start a match (SQL's semantics: try a start row, take its most preferred match, then
//! skip; otherwise try the next row). Attempts run side by side as rows arrive; an attempt's
//! result counts only once every earlier attempt has ended, which is when the skip strategy
//! decides which later attempts survive. Partial matches share their history (the SASE+ /
//! Flink shared buffer): a thread is a program counter and a pointer into a tree of steps.

use std::collections::VecDeque;
use std::sync::Arc;

use super::equivalence::{Needs, Pruner, Steps};
use super::eval::{eval, View};
use super::expr::{Sel, E};
use super::program::Inst;
use super::value::{EvalError, Value};

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
    /// Each variable's condition (`None`: any row).
    pub defines: Vec<Option<E>>,
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
}

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

/// The pattern is too ambiguous to follow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TooManyThreads {
    pub start: u64,
    pub threads: usize,
}

/// Why a row was not taken; the partition is as it was before the row.
#[derive(Debug)]
pub(crate) enum Refused {
    /// The condition of variable `var` failed on the row (it goes to the dead letters).
    Condition {
        row: Row,
        var: usize,
        error: EvalError,
    },
    /// The pattern is too ambiguous to follow (the query stops).
    TooManyThreads(TooManyThreads),
}

/// A row of a partial match, mapped to a variable, after the rows before it.
#[derive(Debug)]
///
/// A Nexmark run keeps a step or two per partition and millions of partitions: the
/// variable is 32 bits so that the exclusion flag fits in the padding, and a step stays in
/// the allocator's 80-byte size class (with 64 bits and the flag, it took 8 bytes more, and
/// cep_q3 about 10% more memory).
pub(crate) struct Step {
    pub row: u64,
    pub prev: Option<Arc<Step>>,
    /// The last row mapped to each of the first [`TRACKED`] variables up to this step
    /// ([`NO_ROW`]: none), so that `A.price` in a later condition needs no walk back to A.
    pub last: [u64; TRACKED],
    /// The variable, see [`Step::var`].
    var: u32,
    /// Matched inside an exclusion `{- … -}`: part of the match, not of ALL ROWS PER MATCH.
    pub excluded: bool,
}

/// How many variables a step remembers the last rows of (a pattern with more walks the
/// history for the others).
pub(crate) const TRACKED: usize = 4;
pub(crate) const NO_ROW: u64 = u64::MAX;

impl Step {
    pub(crate) fn after(row: u64, var: usize, prev: Option<Arc<Step>>) -> Arc<Step> {
        Step::marked(row, var, prev, false)
    }

    /// [`Step::after`], `excluded` or not.
    pub(crate) fn marked(
        row: u64,
        var: usize,
        prev: Option<Arc<Step>>,
        excluded: bool,
    ) -> Arc<Step> {
        let mut last = prev.as_ref().map_or([NO_ROW; TRACKED], |p| p.last);
        if let Some(l) = last.get_mut(var) {
            *l = row;
        }
        Arc::new(Step {
            row,
            var: u32::try_from(var).expect(
                "a pattern has fewer than 2^32 variables (its program is bounded by MAX_PROGRAM)",
            ),
            prev,
            last,
            excluded,
        })
    }

    /// The variable the row is mapped to.
    pub(crate) fn var(&self) -> usize {
        self.var as usize
    }
}

/// A partial match waiting at an instruction.
#[derive(Debug, Clone)]
pub(crate) struct Thread {
    pub pc: usize,
    pub hist: Option<Arc<Step>>,
}

#[derive(Debug)]
struct Attempt {
    start: u64,
    start_ts: i64,
    /// Live threads in preference order, each waiting at a `Label`.
    threads: Vec<Thread>,
    /// The most preferred complete match found so far (`Some(None)`: the empty match).
    best: Option<Option<Arc<Step>>>,
    /// Set when the time bound ended it with live threads and no match.
    timed_out: Option<Option<Arc<Step>>>,
}

impl Attempt {
    fn ended(&self) -> bool {
        self.threads.is_empty()
    }
}

/// An attempt's `best` (or `timed_out`) match.
type Best = Option<Option<Arc<Step>>>;

/// What a row changed in one attempt, kept until the row is taken so that a condition that
/// fails on it can undo everything: the attempt's threads before the row (their vector is
/// reused once the row is taken) and, if the row changed it, its `best` before.
#[derive(Debug)]
struct Undo {
    attempt: usize,
    threads: Vec<Thread>,
    best: Option<Best>,
    /// The row timed the attempt out.
    timed_out: bool,
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

/// The working space of [`Partition::push`], shared by the partitions of an operator (a
/// Nexmark run has millions of partitions of a row or two: space of their own would be most
/// of their memory).
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    /// Of [`closure`].
    seen: Seen,
    /// Of an attempt's row: which threads are equivalent, which steps exist.
    prune: Pruner,
    steps: Steps,
    /// Empty thread lists whose allocations the next steps reuse.
    spare: Vec<Vec<Thread>>,
    /// What the row being pushed changed (empty between rows).
    undo: Vec<Undo>,
}

/// Which (instruction, fresh loops) states one closure has visited, so that each is followed
/// once (a later visit has the same history and a lower preference). A stamp per instruction
/// makes clearing one increment; the rare second mask at one instruction goes to `extra`.
#[derive(Debug, Default)]
struct Seen {
    stamps: Vec<u32>,
    masks: Vec<u64>,
    extra: Vec<(usize, u64)>,
    now: u32,
    stack: Vec<(usize, u64)>,
}

impl Seen {
    fn clear(&mut self, len: usize) {
        if self.stamps.len() != len || self.now == u32::MAX {
            self.stamps = vec![0; len];
            self.masks = vec![0; len];
            self.now = 0;
        }
        self.now += 1;
        self.extra.clear();
        self.stack.clear();
    }

    /// Marks `(pc, mask)`; false if it was marked already.
    fn mark(&mut self, pc: usize, mask: u64) -> bool {
        if self.stamps[pc] != self.now {
            self.stamps[pc] = self.now;
            self.masks[pc] = mask;
            return true;
        }
        if self.masks[pc] == mask || self.extra.contains(&(pc, mask)) {
            return false;
        }
        self.extra.push((pc, mask));
        true
    }
}

struct HistView<'a> {
    part: &'a Partition,
    head: (u64, usize),
    hist: Option<&'a Arc<Step>>,
    number: i64,
}

impl View for HistView<'_> {
    fn steps(&self) -> impl Iterator<Item = (u64, usize)> + '_ {
        let mut cur = self.hist;
        std::iter::once(self.head).chain(std::iter::from_fn(move || {
            let s = cur?;
            cur = s.prev.as_ref();
            Some((s.row, s.var()))
        }))
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
        Some(
            self.hist
                .and_then(|s| s.last.get(var).copied())
                .filter(|r| *r != NO_ROW),
        )
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
fn excluded_rows(mut hist: Option<&Arc<Step>>) -> Vec<u64> {
    let mut out = Vec::new();
    while let Some(s) = hist {
        if s.excluded {
            out.push(s.row);
        }
        hist = s.prev.as_ref();
    }
    out
}

fn to_steps(mut hist: Option<&Arc<Step>>) -> Vec<(u64, usize)> {
    let mut out = Vec::new();
    while let Some(s) = hist {
        out.push((s.row, s.var()));
        hist = s.prev.as_ref();
    }
    out.reverse();
    out
}

impl Partition {
    /// Row `index` of the partition, if still kept.
    pub(crate) fn row(&self, index: u64) -> Option<&Row> {
        let i = usize::try_from(index.checked_sub(self.base)?).ok()?;
        self.rows.get(i)
    }

    fn cell(&self, row: u64, col: usize) -> Option<&Value> {
        self.row(row).and_then(|r| r.cells.get(col))
    }

    /// Feeds the next row (rows arrive in event-time order) and reports the attempts that
    /// ended, in order. A row a condition fails on is refused and changes nothing: the
    /// partition is as if it had never arrived (its rows, attempts, their threads and best
    /// matches), and `out` is untouched.
    pub(crate) fn push(
        &mut self,
        p: &Pattern,
        s: &mut Scratch,
        row: Row,
        out: &mut Vec<Outcome>,
    ) -> Result<(), Refused> {
        let idx = self.next();
        let ts = row.ts;
        self.rows.push_back(row);
        let started = idx >= self.resume;
        if started {
            let mut threads = s.spare.pop().unwrap_or_default();
            s.prune.clear(p.prog.len());
            let at = At {
                first: idx == 0,
                ended: false,
            };
            let best =
                closure(p, &mut s.seen, &mut s.prune, at, 0, None, &mut threads).then_some(None);
            self.attempts.push_back(Attempt {
                start: idx,
                start_ts: ts,
                threads,
                best,
                timed_out: None,
            });
        }
        if let Err(failed) = self.step(p, s, idx, ts) {
            return Err(self.roll_back(s, started, failed));
        }
        // The row is taken: the threads before it go.
        for u in s.undo.drain(..) {
            let mut old = u.threads;
            old.clear();
            s.spare.push(old);
        }
        // Keep about as many spare lists as the next row may need.
        s.spare.truncate(self.attempts.len() + 2);
        self.settle(p, out);
        Ok(())
    }

    /// Advances every attempt by row `idx` (the last row, at time `ts`), recording in
    /// `s.undo` what it changed. On an error, the attempt being advanced is as it was and
    /// the earlier ones are advanced, with their old state in `s.undo`.
    fn step(&mut self, p: &Pattern, s: &mut Scratch, idx: u64, ts: i64) -> Result<(), StepFailed> {
        for i in 0..self.attempts.len() {
            if self.attempts[i].ended() {
                continue;
            }
            if p.within
                .is_some_and(|w| ts.saturating_sub(self.attempts[i].start_ts) >= w)
            {
                let a = &mut self.attempts[i];
                let mut threads = std::mem::take(&mut a.threads);
                if a.best.is_none() {
                    a.timed_out = Some(threads.first().and_then(|t| t.hist.clone()));
                }
                if p.fallible {
                    s.undo.push(Undo {
                        attempt: i,
                        threads,
                        best: None,
                        timed_out: true,
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
            // Equal histories are one allocation only where equivalence looks at them.
            let share = !p.needs.nothing() && threads.len() > 1;
            for t in &threads {
                let Inst::Label(var) = p.prog[t.pc] else {
                    continue;
                };
                let ok = match &p.defines[var] {
                    None => true,
                    Some(cond) => {
                        let view = HistView {
                            part: self,
                            head: (idx, var),
                            hist: t.hist.as_ref(),
                            number: self.matches + 1,
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
                let hist = Some(if share {
                    s.steps.after(idx, var, t.hist.as_ref(), excluded)
                } else {
                    Step::marked(idx, var, t.hist.clone(), excluded)
                });
                let done = closure(
                    p,
                    &mut s.seen,
                    &mut s.prune,
                    At::default(),
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
                    }));
                    break;
                }
            }
            s.steps.clear();
            let a = &mut self.attempts[i];
            if let Some(failed) = failed {
                a.threads = threads;
                next.clear();
                s.spare.push(next);
                return Err(failed);
            }
            a.threads = next;
            let best = found.map(|h| a.best.replace(h));
            if p.fallible {
                s.undo.push(Undo {
                    attempt: i,
                    threads,
                    best,
                    timed_out: false,
                });
            } else {
                let mut old = threads;
                old.clear();
                s.spare.push(old);
            }
        }
        Ok(())
    }

    /// Undoes row `self.next - 1` after `failed`: its attempt (if it `started` one) goes, the
    /// other attempts get back what `s.undo` kept, and the row is handed back.
    fn roll_back(&mut self, s: &mut Scratch, started: bool, failed: StepFailed) -> Refused {
        for u in s.undo.drain(..).rev() {
            let a = &mut self.attempts[u.attempt];
            let mut new = std::mem::replace(&mut a.threads, u.threads);
            new.clear();
            s.spare.push(new);
            if let Some(best) = u.best {
                a.best = best;
            }
            if u.timed_out {
                a.timed_out = None;
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
        let row = self.rows.pop_back().expect("the row was pushed");
        match failed {
            StepFailed::Condition { var, error } => Refused::Condition { row, var, error },
            StepFailed::TooManyThreads(e) => Refused::TooManyThreads(e),
        }
    }

    /// Event time has passed `watermark`: every row still to come has `ts >= watermark`, so
    /// attempts whose time bound ends by then cannot grow and end now.
    pub(crate) fn advance(&mut self, p: &Pattern, watermark: i64, out: &mut Vec<Outcome>) {
        if watermark == i64::MAX {
            // No row can come any more: the partition has ended, which `$` waits for.
            self.end(p);
        }
        if let Some(w) = p.within {
            for a in self.attempts.iter_mut() {
                if !a.ended() && a.start_ts.saturating_add(w) <= watermark {
                    time_out(p, a);
                }
            }
        }
        self.settle(p, out);
    }

    /// The input ended: partial matches waiting at `$` complete, the others fail; completed
    /// matches waiting on them are reported.
    pub(crate) fn finish(&mut self, p: &Pattern, out: &mut Vec<Outcome>) {
        self.end(p);
        for a in self.attempts.iter_mut() {
            a.threads.clear();
        }
        self.settle(p, out);
    }

    /// The partition has ended: in each attempt, the most preferred thread waiting at `$`
    /// that completes without another row becomes its match (live threads are preferred to
    /// the match an attempt found before); every thread ends.
    fn end(&mut self, p: &Pattern) {
        if !p.ends {
            return;
        }
        let at = At {
            first: self.next() == 0,
            ended: true,
        };
        let mut seen = Seen::default();
        let mut prune = Pruner::default();
        let mut scratch = Vec::new();
        for a in self.attempts.iter_mut() {
            for t in a.threads.drain(..) {
                if p.prog[t.pc] != Inst::End {
                    continue;
                }
                prune.clear(p.prog.len());
                scratch.clear();
                let hist = t.hist.clone();
                if closure(p, &mut seen, &mut prune, at, t.pc + 1, hist, &mut scratch) {
                    a.best = Some(t.hist);
                    break;
                }
            }
            a.threads.clear();
        }
    }

    /// Reports attempts that ended, oldest first, applying the skip after each match.
    fn settle(&mut self, p: &Pattern, out: &mut Vec<Outcome>) {
        while self.attempts.front().is_some_and(Attempt::ended) {
            let a = self.attempts.pop_front().expect("front exists");
            match a.best {
                Some(hist) => {
                    let steps = to_steps(hist.as_ref());
                    let excluded = excluded_rows(hist.as_ref());
                    self.matches += 1;
                    let after = |var: Sel, first: bool| {
                        let mut rows = steps.iter().filter(|(_, v)| var.has(*v)).map(|(r, _)| *r);
                        if first {
                            rows.next()
                        } else {
                            rows.next_back()
                        }
                    };
                    let to = match p.skip {
                        Skip::PastLastRow => steps.last().map_or(a.start + 1, |(r, _)| r + 1),
                        Skip::ToNextRow => a.start + 1,
                        Skip::ToFirst(v) => after(v, true).unwrap_or(a.start + 1),
                        Skip::ToLast(v) => after(v, false).unwrap_or(a.start + 1),
                    }
                    .max(a.start + 1);
                    self.resume = self.resume.max(to);
                    while self.attempts.front().is_some_and(|b| b.start < to) {
                        self.attempts.pop_front();
                    }
                    // An empty match covers its start row (it is output, not unmatched).
                    let end = steps.last().map_or(a.start, |(r, _)| *r) + 1;
                    self.covered = self.covered.max(end);
                    out.push(Outcome::Match {
                        start: a.start,
                        steps,
                        number: self.matches,
                        excluded,
                    });
                }
                None => {
                    if let Some(partial) = a.timed_out {
                        out.push(Outcome::TimedOut {
                            start: a.start,
                            steps: to_steps(partial.as_ref()),
                            excluded: excluded_rows(partial.as_ref()),
                        });
                    }
                    if p.unmatched && a.start >= self.covered {
                        self.covered = a.start + 1;
                        out.push(Outcome::Unmatched { row: a.start });
                    }
                }
            }
        }
    }

    /// Drops rows no attempt and no PREV can reach any more, and says how many. Call after
    /// the outcomes have been turned into output.
    pub(crate) fn trim(&mut self, p: &Pattern) -> usize {
        let first = self.attempts.front().map_or(self.next(), |a| a.start);
        let keep_from = first.saturating_sub(p.max_back as u64);
        let mut dropped = 0;
        while self.base < keep_from && !self.rows.is_empty() {
            self.rows.pop_front();
            self.base += 1;
            dropped += 1;
        }
        dropped
    }

    /// Whether no partial match is in flight (only rows PREV may reach are kept).
    pub(crate) fn is_idle(&self) -> bool {
        self.attempts.is_empty()
    }

    /// Whether the partition is as good as a new one under pattern `p`: no partial match,
    /// no row kept, no match numbered yet (the row indices differ, but only their
    /// differences matter), and no row seen if `p` has `^` (a new partition would take its
    /// next row for the partition's first).
    pub(crate) fn is_blank(&self, p: &Pattern) -> bool {
        self.attempts.is_empty()
            && self.rows.is_empty()
            && self.matches == 0
            && !(p.anchored && self.next() > 0)
    }

    /// The index the next row gets.
    fn next(&self) -> u64 {
        self.base + self.rows.len() as u64
    }

    /// The most threads an attempt in flight has.
    #[cfg(test)]
    fn most_threads(&self) -> usize {
        self.attempts
            .iter()
            .map(|a| a.threads.len())
            .max()
            .unwrap_or(0)
    }

    /// How many rows the partition keeps.
    pub(crate) fn rows_kept(&self) -> usize {
        self.rows.len()
    }

    /// What a snapshot holds: the rows kept, the index of the first, the first row of the
    /// oldest attempt (where a restore replays from), the resume point and the match count.
    pub(crate) fn parts(&self) -> (&VecDeque<Row>, u64, u64, u64, i64) {
        let replay = self.attempts.front().map_or(self.next(), |a| a.start);
        (&self.rows, self.base, replay, self.resume, self.matches)
    }

    /// Rows before this one are in a match or were reported unmatched (kept by a snapshot
    /// after [`Partition::parts`]).
    pub(crate) fn covered(&self) -> u64 {
        self.covered
    }

    /// Rebuilds a partition from [`Partition::parts`] (and [`Partition::covered`]) by
    /// replaying its rows from `replay`; then the caller applies the last watermark with
    /// [`Partition::advance`].
    pub(crate) fn rebuild(
        p: &Pattern,
        rows: Vec<Row>,
        (base, replay, resume): (u64, u64, u64),
        matches: i64,
        covered: u64,
    ) -> Result<Partition, Refused> {
        let split = usize::try_from(replay.saturating_sub(base))
            .unwrap_or(usize::MAX)
            .min(rows.len());
        let mut rows = rows;
        let again = rows.split_off(split);
        let mut part = Partition {
            rows: rows.into(),
            base,
            resume,
            matches,
            covered,
            attempts: VecDeque::new(),
        };
        let mut out = Vec::new();
        let mut scratch = Scratch::default();
        for row in again {
            part.push(p, &mut scratch, row, &mut out)?;
        }
        debug_assert!(out.is_empty(), "a replay re-reports nothing: {out:?}");
        Ok(part)
    }
}

/// Why advancing the attempts by a row failed.
enum StepFailed {
    Condition { var: usize, error: EvalError },
    TooManyThreads(TooManyThreads),
}

/// The time bound of `a` has passed: its threads waiting for a row end (the most preferred
/// one is its timed-out partial match if it found no match). Threads waiting at `$` consume
/// no row and wait on, for the end of the input (a row ends them).
fn time_out(p: &Pattern, a: &mut Attempt) {
    let first = a.threads.first().and_then(|t| t.hist.clone());
    if p.ends {
        a.threads.retain(|t| p.prog[t.pc] == Inst::End);
    } else {
        a.threads.clear();
    }
    if a.best.is_none() && a.threads.is_empty() {
        a.timed_out = Some(first);
    }
}

/// Where a closure is: at the partition's first row (`^` passes), or after its last (the
/// partition ended: `$` passes, and no thread waits for a row).
#[derive(Debug, Clone, Copy, Default)]
struct At {
    first: bool,
    ended: bool,
}

/// Follows the moves that consume no row from `pc`, in preference order, adding a thread at
/// every `Label` reached unless `prune` finds an equivalent one in `out` already; returns
/// true when `Done` is reached (the threads after it in preference order are not added: the
/// match is preferred to them). `fresh` has a bit per loop whose current iteration began in
/// this closure: its `Check` ends the path.
fn closure(
    p: &Pattern,
    seen: &mut Seen,
    prune: &mut Pruner,
    at: At,
    pc: usize,
    hist: Option<Arc<Step>>,
    out: &mut Vec<Thread>,
) -> bool {
    seen.clear(p.prog.len());
    seen.stack.push((pc, 0));
    while let Some((pc, fresh)) = seen.stack.pop() {
        if !seen.mark(pc, fresh) {
            continue;
        }
        match p.prog[pc] {
            // A thread waits here for the next row (at `$`: for the end).
            Inst::Label(_) | Inst::End if !at.ended => {
                if prune.admit(&p.needs, pc, hist.as_ref(), out) {
                    out.push(Thread {
                        pc,
                        hist: hist.clone(),
                    });
                }
            }
            // The partition has ended: no row comes, `$` passes.
            Inst::Label(_) => {}
            Inst::End => seen.stack.push((pc + 1, fresh)),
            Inst::Start => {
                if at.first {
                    seen.stack.push((pc + 1, fresh));
                }
            }
            Inst::Split(a, b) => {
                seen.stack.push((b, fresh));
                seen.stack.push((a, fresh));
            }
            Inst::Jump(t) => seen.stack.push((t, fresh)),
            Inst::Enter(l) => seen.stack.push((pc + 1, fresh | 1 << l)),
            Inst::Check(l) => {
                if fresh & (1 << l) == 0 {
                    seen.stack.push((pc + 1, fresh));
                }
            }
            Inst::Done => return true,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::super::expr::{compile_defines, Scope};
    use super::super::{deepest_prev, program, syntax};
    use super::*;
    use anduin_types::ColumnType;

    /// splitmix64: the seeded randomness of these tests.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }

        fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
            &items[self.below(items.len() as u64) as usize]
        }
    }

    const PATTERNS: &[&str] = &[
        "A B+ C",
        "A B* C?",
        "(A | B) C+",
        "A{2,3} B+?",
        "A B+",
        "A+? B",
        "A (B C)* D",
        "(A B | C)+? D?",
    ];

    /// Conditions over columns `value` and `d`; `W` becomes a variable of the pattern.
    const CONDITIONS: &[&str] = &[
        "true",
        "value > PREV(value)",
        "value < 50",
        "value % 3 = 0",
        "value > LAST(W.value)",
        "SUM(W.value) < 200",
        "COUNT(W.*) <= 3",
        "LAST(W.value, 1) IS NULL OR value < LAST(W.value, 1)",
        "PREV(value, 2) IS NOT NULL AND value <> PREV(value, 2)",
    ];

    /// A pattern some of whose conditions compute `100 / d`, which fails where `d = 0`: first,
    /// so that it fails on every such row that any attempt tries for the variable, or after
    /// the rest of the condition (`AND` evaluates its right side only when the left is true).
    fn pattern(rng: &mut Rng) -> (Pattern, String) {
        let text = *rng.pick(PATTERNS);
        let parsed = syntax::parse(text).expect("parses");
        let prog = program::compile(&parsed.pat).expect("compiles");
        let columns: Vec<(String, ColumnType)> = vec![
            ("ts".into(), ColumnType::Timestamp),
            ("value".into(), ColumnType::Int),
            ("d".into(), ColumnType::Int),
        ];
        let defines_text = parsed
            .vars
            .iter()
            .map(|v| {
                let w = rng.pick(&parsed.vars).clone();
                let cond = rng.pick(CONDITIONS).replace('W', &w);
                match rng.below(3) {
                    0 => format!("{v} AS 100 / d < 1000 AND ({cond})"),
                    1 => format!("{v} AS ({cond}) AND 100 / d < 1000"),
                    _ => format!("{v} AS {cond}"),
                }
            })
            .collect::<Vec<_>>()
            .join(", ");
        let scope = Scope::new(&columns, &parsed.vars);
        let mut defines = vec![None; parsed.vars.len()];
        let mut max_back = 0;
        for (v, t, _) in compile_defines(&defines_text, &scope).expect("compiles") {
            max_back = max_back.max(deepest_prev(&t.e));
            defines[v] = Some(t.e);
        }
        let skip = match rng.below(4) {
            0 => Skip::PastLastRow,
            1 => Skip::ToNextRow,
            2 => Skip::ToFirst(Sel::One(parsed.vars.len() - 1)),
            _ => Skip::ToLast(Sel::One(0)),
        };
        let within = (rng.below(2) == 0).then(|| 1 + rng.below(8) as i64);
        let p = Pattern {
            prog,
            fallible: fallible(&defines),
            needs: Needs::of(&defines),
            defines,
            vars: parsed.vars.iter().map(|v| Arc::from(v.as_str())).collect(),
            within,
            skip,
            max_back,
            max_threads: 100_000,
            anchored: false,
            excluded: Vec::new(),
            unmatched: false,
            ends: false,
        };
        let what = format!("pattern {text}, define {defines_text}, {skip:?}, within {within:?}");
        (p, what)
    }

    /// A partition's state as [`Partition::parts`] tells it.
    type State = (Vec<Row>, u64, u64, u64, i64);

    fn row(ts: i64, value: i64, d: i64) -> Row {
        Row {
            ts,
            cells: vec![Value::Int(ts), Value::Int(value), Value::Int(d)].into(),
        }
    }

    /// Feeds `rows` as the operator does (trimming after each row, then the end of input; the
    /// watermark at each good row's time first, the same in a run with bad rows as without):
    /// the outcomes, the state after each row taken, and which rows were refused.
    fn run(p: &Pattern, rows: &[Row]) -> (Vec<Outcome>, Vec<State>, Vec<usize>) {
        let mut part = Partition::default();
        let mut scratch = Scratch::default();
        let mut out = Vec::new();
        let mut states = Vec::new();
        let mut refused = Vec::new();
        for (i, r) in rows.iter().enumerate() {
            if r.cells[2] != Value::Int(0) {
                part.advance(p, r.ts, &mut out);
            }
            match part.push(p, &mut scratch, r.clone(), &mut out) {
                Ok(()) => {
                    part.trim(p);
                    let (rows, base, replay, resume, matches) = part.parts();
                    states.push((
                        rows.iter().cloned().collect(),
                        base,
                        replay,
                        resume,
                        matches,
                    ));
                }
                Err(Refused::Condition { row, error, .. }) => {
                    assert_eq!(&row, r, "the refused row is handed back");
                    assert_eq!(error.message(), "Divide by zero error");
                    refused.push(i);
                }
                Err(Refused::TooManyThreads(e)) => panic!("{e:?}"),
            }
        }
        part.finish(p, &mut out);
        (out, states, refused)
    }

    /// A Nexmark run holds millions of steps and partitions: a field more in either costs
    /// about a tenth of cep_q3's memory (a step of 64 bytes leaves the allocator's 80-byte
    /// class with its two counts; a partition lives inline in the store's table).
    #[test]
    #[cfg(target_pointer_width = "64")]
    fn a_step_and_a_partition_stay_as_small_as_they_were() {
        assert_eq!(std::mem::size_of::<Step>(), 56);
        assert_eq!(std::mem::size_of::<Partition>(), 96);
    }

    #[test]
    fn a_row_a_condition_fails_on_leaves_the_partition_as_if_it_had_never_arrived() {
        let mut refusals = 0;
        let mut after_changes = 0;
        for seed in 0..600u64 {
            let mut rng = Rng(seed);
            let (p, what) = pattern(&mut rng);
            let n = 5 + rng.below(60) as usize;
            let mut ts = 0;
            let rows: Vec<Row> = (0..n)
                .map(|_| {
                    ts += rng.below(3) as i64;
                    let d = if rng.below(5) == 0 {
                        0
                    } else {
                        1 + rng.below(4) as i64
                    };
                    row(ts, rng.below(100) as i64, d)
                })
                .collect();
            let (with, states_with, refused) = run(&p, &rows);
            assert!(
                refused.iter().all(|i| rows[*i].cells[2] == Value::Int(0)),
                "seed {seed}: only rows with d = 0 fail"
            );
            let taken: Vec<Row> = (0..n)
                .filter(|i| !refused.contains(i))
                .map(|i| rows[i].clone())
                .collect();
            let (without, states_without, none) = run(&p, &taken);
            assert!(none.is_empty());
            assert_eq!(with, without, "seed {seed}: {what}");
            assert_eq!(states_with, states_without, "seed {seed}: {what}");
            refusals += refused.len();
            after_changes += usize::from(what.contains(") AND 100 / d") && !refused.is_empty());
        }
        assert!(refusals > 1000, "the test refuses rows: {refusals}");
        assert!(
            after_changes > 50,
            "and some after other attempts changed: {after_changes}"
        );
    }

    #[test]
    fn a_refused_row_keeps_partial_matches_best_matches_and_time_outs() {
        // `A B+` greedy: after A B B the attempt has a best match and a live thread; a bad row
        // must leave both, and a bad row at the time bound must not time the attempt out
        // (the row's own attempt fails on it after the bound ended the first one).
        let parsed = syntax::parse("A B+").expect("parses");
        let columns: Vec<(String, ColumnType)> = vec![
            ("ts".into(), ColumnType::Timestamp),
            ("value".into(), ColumnType::Int),
            ("d".into(), ColumnType::Int),
        ];
        let scope = Scope::new(&columns, &parsed.vars);
        let mut defines = vec![None; 2];
        for (v, t, _) in compile_defines(
            "A AS 10 / d > 0 AND value = 0, B AS 10 / d > 0 AND value > 0",
            &scope,
        )
        .expect("compiles")
        {
            defines[v] = Some(t.e);
        }
        let p = Pattern {
            prog: program::compile(&parsed.pat).expect("compiles"),
            fallible: fallible(&defines),
            needs: Needs::of(&defines),
            defines,
            vars: vec![Arc::from("A"), Arc::from("B")],
            within: Some(10),
            skip: Skip::PastLastRow,
            max_back: 0,
            max_threads: 100,
            anchored: false,
            excluded: Vec::new(),
            unmatched: false,
            ends: false,
        };
        let mut part = Partition::default();
        let mut scratch = Scratch::default();
        let mut out = Vec::new();
        for r in [row(0, 0, 1), row(1, 1, 1), row(2, 1, 1)] {
            part.push(&p, &mut scratch, r, &mut out).expect("taken");
        }
        assert!(out.is_empty(), "the greedy B+ may still grow");
        for (r, var) in [(row(3, 1, 0), 1), (row(10, 1, 0), 0)] {
            let refused = part
                .push(&p, &mut scratch, r, &mut out)
                .expect_err("10 / 0 fails");
            assert!(
                matches!(refused, Refused::Condition { var: v, .. } if v == var),
                "{refused:?}"
            );
        }
        assert!(out.is_empty());
        part.push(&p, &mut scratch, row(4, 1, 1), &mut out)
            .expect("taken");
        part.push(&p, &mut scratch, row(5, 0, 1), &mut out)
            .expect("taken");
        assert_eq!(
            out,
            vec![Outcome::Match {
                start: 0,
                steps: vec![(0, 0), (1, 1), (2, 1), (3, 1)],
                number: 1,
                excluded: Vec::new(),
            }]
        );
    }

    /// `pattern` with `defines` over columns `ts` and `value`, without a time bound.
    fn compiled(pattern: &str, defines: &str) -> Pattern {
        let parsed = syntax::parse(pattern).expect("parses");
        let columns: Vec<(String, ColumnType)> = vec![
            ("ts".into(), ColumnType::Timestamp),
            ("value".into(), ColumnType::Int),
        ];
        let scope = Scope::new(&columns, &parsed.vars);
        let mut defines_of = vec![None; parsed.vars.len()];
        for (v, t, _) in compile_defines(defines, &scope).expect("compiles") {
            defines_of[v] = Some(t.e);
        }
        Pattern {
            prog: program::compile(&parsed.pat).expect("compiles"),
            fallible: fallible(&defines_of),
            needs: Needs::of(&defines_of),
            defines: defines_of,
            vars: parsed.vars.iter().map(|v| Arc::from(v.as_str())).collect(),
            within: None,
            skip: Skip::PastLastRow,
            max_back: 1,
            max_threads: 100_000,
            anchored: false,
            excluded: Vec::new(),
            unmatched: false,
            ends: false,
        }
    }

    // Issue 18. Without pruning, `(A+)+ B` has a thread for every way of splitting the rows so
    // far among the iterations (2^n), `(A | B)* C` one for every mapping of them to A or B:
    // the guard of 100 000 threads stopped them after about 17 rows. Pruned, an attempt keeps at
    // most one thread per `Label` when the conditions read no earlier row, or when they do
    // but every thread maps the rows alike; when threads differ in what the conditions read
    // (here the first A row: none, or one of the rows so far), one per `Label` and value.
    // (Every row starts an attempt that lives to the end: the work grows with the square of
    // the rows, and with the fourth power in the last case, which runs on fewer.)
    #[test]
    fn equivalent_partial_matches_are_pruned_so_nested_loops_keep_a_few_threads() {
        for (pattern, defines, rows, values) in [
            ("(A+)+ B", "B AS value < 0", 200, 1),
            ("(A*)* B", "B AS value < 0", 200, 1),
            ("(A | B)* C", "C AS value < 0", 200, 1),
            ("((A | B)+)+? C", "C AS value < 0", 200, 1),
            (
                "(A+)+ B",
                "A AS SUM(A.value) > 0, B AS value < LAST(A.value)",
                200,
                1,
            ),
            (
                "(A+ | B+)* C",
                "A AS value > PREV(value), C AS CLASSIFIER() = 'A'",
                200,
                1,
            ),
            ("(A | B)* C", "C AS value < FIRST(A.value)", 30, 31),
        ] {
            let p = compiled(pattern, defines);
            let mut part = Partition::default();
            let mut scratch = Scratch::default();
            let mut out = Vec::new();
            let mut seen = 0;
            for i in 0..rows {
                if let Err(e) = part.push(&p, &mut scratch, row_of(i, i + 1), &mut out) {
                    panic!("{pattern} with {defines}, row {i}: {e:?}");
                }
                seen = seen.max(part.most_threads());
            }
            assert!(out.is_empty(), "no match: B and C never hold");
            let labels = p
                .prog
                .iter()
                .filter(|i| matches!(i, Inst::Label(_)))
                .count();
            assert!(
                seen <= labels * values,
                "{pattern} with {defines}: {seen} threads at once, {labels} labels"
            );
        }
    }

    fn row_of(ts: i64, value: i64) -> Row {
        Row {
            ts,
            cells: vec![Value::Int(ts), Value::Int(value)].into(),
        }
    }
}
