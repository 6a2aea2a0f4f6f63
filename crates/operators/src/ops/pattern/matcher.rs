//! The matcher of one partition: a Pike VM over the compiled pattern, run for every row that
//! may start a match (SQL's semantics: try a start row, take its most preferred match, then
//! skip; otherwise try the next row). Attempts run side by side as rows arrive; an attempt's
//! result counts only once every earlier attempt has ended, which is when the skip strategy
//! decides which later attempts survive. Partial matches share their history (the SASE+ /
//! Flink shared buffer): a thread is a program counter and a pointer into a tree of steps.

use std::collections::VecDeque;
use std::sync::Arc;

use super::eval::{eval, View};
use super::expr::E;
use super::program::Inst;
use super::value::Value;

/// What follows a match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Skip {
    PastLastRow,
    ToNextRow,
    /// To the first row mapped to the variable.
    ToFirst(usize),
    /// To the last row mapped to the variable.
    ToLast(usize),
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
    },
    /// No match: the time bound ran out while it was partial (its most preferred partial
    /// match).
    TimedOut {
        start: u64,
        steps: Vec<(u64, usize)>,
    },
}

/// The pattern is too ambiguous to follow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TooManyThreads {
    pub start: u64,
    pub threads: usize,
}

#[derive(Debug)]
struct Step {
    row: u64,
    var: usize,
    prev: Option<Arc<Step>>,
    /// The last row mapped to each of the first [`TRACKED`] variables up to this step
    /// ([`NO_ROW`]: none), so that `A.price` in a later condition needs no walk back to A.
    last: [u64; TRACKED],
}

/// How many variables a step remembers the last rows of (a pattern with more walks the
/// history for the others).
const TRACKED: usize = 4;
const NO_ROW: u64 = u64::MAX;

impl Step {
    fn after(row: u64, var: usize, prev: Option<Arc<Step>>) -> Arc<Step> {
        let mut last = prev.as_ref().map_or([NO_ROW; TRACKED], |p| p.last);
        if let Some(l) = last.get_mut(var) {
            *l = row;
        }
        Arc::new(Step {
            row,
            var,
            prev,
            last,
        })
    }
}

#[derive(Debug, Clone)]
struct Thread {
    pc: usize,
    hist: Option<Arc<Step>>,
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

/// One partition's rows and attempts.
#[derive(Debug, Default)]
pub(crate) struct Partition {
    rows: VecDeque<Row>,
    /// The index of `rows[0]`.
    base: u64,
    /// The index the next row gets.
    next: u64,
    /// Rows before this one cannot start a match (they were skipped).
    resume: u64,
    /// Matches emitted so far.
    matches: i64,
    attempts: VecDeque<Attempt>,
    /// Scratch space of [`closure`].
    seen: Seen,
    /// An empty thread list whose allocation the next step reuses.
    spare: Vec<Thread>,
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
            Some((s.row, s.var))
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
}

fn to_steps(mut hist: Option<&Arc<Step>>) -> Vec<(u64, usize)> {
    let mut out = Vec::new();
    while let Some(s) = hist {
        out.push((s.row, s.var));
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
    /// ended, in order.
    pub(crate) fn push(
        &mut self,
        p: &Pattern,
        row: Row,
        out: &mut Vec<Outcome>,
    ) -> Result<(), TooManyThreads> {
        let idx = self.next;
        self.next += 1;
        let ts = row.ts;
        self.rows.push_back(row);
        if idx >= self.resume {
            let mut a = Attempt {
                start: idx,
                start_ts: ts,
                threads: Vec::new(),
                best: None,
                timed_out: None,
            };
            let mut threads = Vec::new();
            if closure(p, &mut self.seen, 0, None, &mut threads) {
                a.best = Some(None);
            }
            a.threads = threads;
            self.attempts.push_back(a);
        }
        for i in 0..self.attempts.len() {
            if self.attempts[i].ended() {
                continue;
            }
            if p.within
                .is_some_and(|w| ts.saturating_sub(self.attempts[i].start_ts) >= w)
            {
                let a = &mut self.attempts[i];
                time_out(a);
                continue;
            }
            let mut threads = std::mem::take(&mut self.attempts[i].threads);
            let mut next = std::mem::take(&mut self.spare);
            let mut found = None;
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
                        eval(cond, &view, &p.vars) == Value::Bool(true)
                    }
                };
                if !ok {
                    continue;
                }
                let hist = Some(Step::after(idx, var, t.hist.clone()));
                if closure(p, &mut self.seen, t.pc + 1, hist.clone(), &mut next) {
                    found = Some(hist);
                    break;
                }
                if next.len() > p.max_threads {
                    return Err(TooManyThreads {
                        start: self.attempts[i].start,
                        threads: next.len(),
                    });
                }
            }
            threads.clear();
            self.spare = threads;
            let a = &mut self.attempts[i];
            if let Some(h) = found {
                a.best = Some(h);
            }
            a.threads = next;
        }
        self.settle(p, out);
        Ok(())
    }

    /// Event time has passed `watermark`: every row still to come has `ts >= watermark`, so
    /// attempts whose time bound ends by then cannot grow and end now.
    pub(crate) fn advance(&mut self, p: &Pattern, watermark: i64, out: &mut Vec<Outcome>) {
        let Some(w) = p.within else { return };
        for a in self.attempts.iter_mut() {
            if !a.ended() && a.start_ts.saturating_add(w) <= watermark {
                time_out(a);
            }
        }
        self.settle(p, out);
    }

    /// The input ended: partial matches fail; completed matches waiting on them are reported.
    pub(crate) fn finish(&mut self, p: &Pattern, out: &mut Vec<Outcome>) {
        for a in self.attempts.iter_mut() {
            a.threads.clear();
        }
        self.settle(p, out);
    }

    /// Reports attempts that ended, oldest first, applying the skip after each match.
    fn settle(&mut self, p: &Pattern, out: &mut Vec<Outcome>) {
        while self.attempts.front().is_some_and(Attempt::ended) {
            let a = self.attempts.pop_front().expect("front exists");
            match a.best {
                Some(hist) => {
                    let steps = to_steps(hist.as_ref());
                    self.matches += 1;
                    let after = |var: usize, first: bool| {
                        let mut rows = steps.iter().filter(|(_, v)| *v == var).map(|(r, _)| *r);
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
                    out.push(Outcome::Match {
                        start: a.start,
                        steps,
                        number: self.matches,
                    });
                }
                None => {
                    if let Some(partial) = a.timed_out {
                        out.push(Outcome::TimedOut {
                            start: a.start,
                            steps: to_steps(partial.as_ref()),
                        });
                    }
                }
            }
        }
    }

    /// Drops rows no attempt and no PREV can reach any more, and says how many. Call after
    /// the outcomes have been turned into output.
    pub(crate) fn trim(&mut self, p: &Pattern) -> usize {
        let first = self.attempts.front().map_or(self.next, |a| a.start);
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

    /// How many rows the partition keeps.
    pub(crate) fn rows_kept(&self) -> usize {
        self.rows.len()
    }

    /// What a snapshot holds: the rows kept, the index of the first, the first row of the
    /// oldest attempt (where a restore replays from), the resume point and the match count.
    pub(crate) fn parts(&self) -> (&VecDeque<Row>, u64, u64, u64, i64) {
        let replay = self.attempts.front().map_or(self.next, |a| a.start);
        (&self.rows, self.base, replay, self.resume, self.matches)
    }

    /// Rebuilds a partition from [`Partition::parts`] by replaying its rows from `replay`;
    /// then the caller applies the last watermark with [`Partition::advance`].
    pub(crate) fn rebuild(
        p: &Pattern,
        rows: Vec<Row>,
        base: u64,
        replay: u64,
        resume: u64,
        matches: i64,
    ) -> Result<Partition, TooManyThreads> {
        let split = usize::try_from(replay.saturating_sub(base))
            .unwrap_or(usize::MAX)
            .min(rows.len());
        let mut rows = rows;
        let again = rows.split_off(split);
        let mut part = Partition {
            next: base + rows.len() as u64,
            rows: rows.into(),
            base,
            resume,
            matches,
            attempts: VecDeque::new(),
            seen: Seen::default(),
            spare: Vec::new(),
        };
        let mut out = Vec::new();
        for row in again {
            part.push(p, row, &mut out)?;
        }
        debug_assert!(out.is_empty(), "a replay re-reports nothing: {out:?}");
        Ok(part)
    }
}

fn time_out(a: &mut Attempt) {
    if a.best.is_none() {
        a.timed_out = Some(a.threads.first().and_then(|t| t.hist.clone()));
    }
    a.threads.clear();
}

/// Follows the moves that consume no row from `pc`, in preference order, adding a thread at
/// every `Label` reached; returns true when `Done` is reached (the threads after it in
/// preference order are not added: the match is preferred to them). `fresh` has a bit per
/// loop whose current iteration began in this closure: its `Check` ends the path.
fn closure(
    p: &Pattern,
    seen: &mut Seen,
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
            Inst::Label(_) => out.push(Thread {
                pc,
                hist: hist.clone(),
            }),
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
