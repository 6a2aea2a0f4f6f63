//! How a partition's attempts end — a match found and no earlier attempt pending, a time
//! bound passed, the end of the input (which `$` waits for) — and what a snapshot keeps of a
//! partition and how it is rebuilt.

use std::collections::VecDeque;

use super::super::equivalence::Pruner;
use super::super::expr::Sel;
use super::super::program::Inst;
use super::super::value::Value;
use super::closure::{closure, At, Seen};
use super::views::{excluded_rows, to_steps};
use super::{Attempt, Found, Outcome, Partition, Pattern, Refused, Row, Scratch, Skip, Starts};

impl Partition {
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
        // No thread waits after the end: the pruner admits none, and reads no rows.
        let at = At {
            first: self.next() == 0,
            ended: true,
            rows: None,
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
                    a.found = Found::Match(t.hist);
                    break;
                }
            }
            a.threads.clear();
        }
    }

    /// Reports attempts that ended, oldest first, applying the skip after each match.
    pub(super) fn settle(&mut self, p: &Pattern, out: &mut Vec<Outcome>) {
        while self.attempts.front().is_some_and(Attempt::ended) {
            let a = self.attempts.pop_front().expect("front exists");
            match a.found {
                Found::Match(hist) => {
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
                other => {
                    if let Found::TimedOut(partial) = other {
                        let (steps, excluded) = if p.timed_out_rows {
                            (to_steps(partial.as_ref()), excluded_rows(partial.as_ref()))
                        } else {
                            (Vec::new(), Vec::new())
                        };
                        out.push(Outcome::TimedOut {
                            start: a.start,
                            steps,
                            excluded,
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

    /// When the time bound of `p` next ends one of the partition's partial matches: the
    /// bound of the first attempt in flight that has not passed at event time `after`
    /// (`None`: no such attempt, or no bound). Attempts start in event-time order, so the
    /// first is the earliest; one whose bound passed at `after` is in flight only while its
    /// threads wait for the end of the input (`$`), and the next row ends it.
    pub(crate) fn next_deadline(&self, p: &Pattern, after: i64) -> Option<i64> {
        let w = p.within?;
        self.attempts
            .iter()
            .filter(|a| !a.ended())
            .map(|a| a.start_ts.saturating_add(w))
            .find(|due| *due > after)
    }

    /// Appends `rest` to the cells of the last row taken (if still kept): a row fed with
    /// only the cells something reads gets the others, which a dead letter of a match it
    /// ends shows (see `Setup::shed`).
    pub(crate) fn complete_last(&mut self, rest: impl Iterator<Item = Value>) {
        // The last row taken is the last kept, if any is.
        let Some(row) = self.rows.back_mut() else {
            return;
        };
        let mut cells = std::mem::take(&mut row.cells).into_vec();
        cells.extend(rest);
        row.cells = cells.into_boxed_slice();
    }

    /// Whether event time reaching `t` (a watermark at `t`) would end every partial match of
    /// the partition with nothing to report but time-outs (no match, no row in no match) and
    /// leave it [`Partition::is_blank`]: under `p` with a `within`, and without `$`, `^`,
    /// `PREV` or unmatched rows.
    pub(crate) fn ends_blank_by(&self, p: &Pattern, t: i64) -> bool {
        let Some(w) = p.within else {
            return false;
        };
        !p.ends
            && !p.anchored
            && !p.unmatched
            && p.max_back == 0
            && self.matches == 0
            && self
                .attempts
                .iter()
                .all(|a| !a.has_match() && (a.ended() || a.start_ts.saturating_add(w) <= t))
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
    pub(super) fn next(&self) -> u64 {
        self.base + self.rows.len() as u64
    }

    /// The most threads an attempt in flight has.
    #[cfg(test)]
    pub(super) fn most_threads(&self) -> usize {
        self.attempts
            .iter()
            .map(|a| a.threads.len())
            .max()
            .unwrap_or(0)
    }

    /// How many attempts are kept (live, or ended and waiting for an earlier one): the
    /// partial matches of the partition (each attempt holds those of one start row).
    pub(crate) fn attempts_kept(&self) -> usize {
        self.attempts.len()
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
    /// replaying its rows from `replay`, starting attempts where `starts` says (an instance
    /// that only extends the partial matches handed to it kept their start rows, see
    /// [`Partition::starts`]); then the caller applies the last watermark with
    /// [`Partition::advance`].
    pub(crate) fn rebuild(
        p: &Pattern,
        rows: Vec<Row>,
        (base, replay, resume): (u64, u64, u64),
        (matches, covered): (i64, u64),
        starts: Starts<'_>,
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
            part.push_starting(p, &mut scratch, row, &mut out, starts)?;
        }
        debug_assert!(out.is_empty(), "a replay re-reports nothing: {out:?}");
        Ok(part)
    }
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
    if !a.has_match() && a.threads.is_empty() {
        a.found = Found::TimedOut(first);
    }
}
