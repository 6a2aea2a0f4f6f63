//! Handing a partition's oldest attempts to another instance of the pattern (paper §4.4: on
//! memory overflow, partial matches spread over further instances that all see the input;
//! the first instance starts matches, the others only extend the ones handed to them).
//!
//! Only where attempts are independent (see `spread.rs`: skip to next row, no unmatched rows,
//! no `MATCH_NUMBER()`): then what an attempt reports depends only on the rows from its start
//! (and on the `max_back` rows before it that `PREV` reaches), and an instance that replays
//! those rows, starting only that attempt, rebuilds it exactly, as a checkpoint's restore
//! rebuilds a partition. What moves is rows and start rows, never thread states.
//!
//! Row indices: every instance sees a partition's rows in the same order, and one that takes
//! attempts for a partition it does not hold adopts the giver's indices, so that all
//! instances number the rows of a partition alike (the starting instance's numbering). Where
//! the taker holds attempts of the partition already, the numbering may differ by a constant
//! (the starting instance forgot a blank partition and numbers it from 0 again): the handed
//! rows are placed by their end, which is the same row on both sides.

use std::collections::VecDeque;

use super::{Outcome, Partition, Pattern, Refused, Row, Scratch, Starts};

/// The attempts a partition hands to another instance, with the rows they need.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HandedPart {
    /// The index, in the giver's partition, of `rows[0]`.
    pub from: u64,
    /// The first rows of the attempts handed, ascending (in the giver's indices).
    pub starts: Vec<u64>,
    /// The giver's rows from `from` to its last one, oldest first: those the attempts hold
    /// and those `PREV` reaches before the first of them.
    pub rows: Vec<Row>,
}

impl HandedPart {
    /// The index, in the giver's partition, of the row after the last one handed.
    pub(crate) fn next(&self) -> u64 {
        self.from + self.rows.len() as u64
    }

    /// Whether the starts are ascending and among the rows (a part read from bytes may be
    /// neither).
    pub(crate) fn is_consistent(&self) -> bool {
        !self.starts.is_empty()
            && self.starts.windows(2).all(|w| w[0] < w[1])
            && self.starts.first().is_some_and(|s| *s >= self.from)
            && self.starts.last().is_some_and(|s| *s < self.next())
    }
}

/// Why a partition could not take the attempts handed to it.
#[derive(Debug)]
pub(crate) enum AdoptError {
    /// Replaying the handed rows refused one (it cannot: the giver took each of them).
    Replay(Refused),
    /// The handed part is inconsistent (its starts are not ascending, or not among its rows).
    Inconsistent,
    /// The taker and the giver number the partition's rows so differently that the handed
    /// rows would start before the taker's first possible index, or that a `^` pattern would
    /// see another first row: a bug in anduin.
    Misaligned {
        from: u64,
        next: u64,
        taker_next: u64,
    },
    /// The taker holds an attempt from the same start row as one handed: two instances
    /// would report its match.
    Duplicate { start: u64 },
}

impl Partition {
    /// Hands over the attempts that started before event time `before` (the oldest ones,
    /// a prefix of the queue, and the ended ones that waited for them), with the rows they
    /// need; from then on this partition neither
    /// holds nor starts them again (also after a restore: the resume point moves past them).
    /// `None` if no attempt started before `before`. The caller trims the rows no attempt
    /// needs any more.
    pub(crate) fn hand(&mut self, p: &Pattern, before: i64) -> Option<HandedPart> {
        let mut n = self
            .attempts
            .iter()
            .take_while(|a| a.start_ts < before)
            .count();
        // Attempts that ended and waited for those go too: kept, they would be reported at
        // the next row or watermark, and a snapshot before that would replay them.
        n += self
            .attempts
            .iter()
            .skip(n)
            .take_while(|a| a.ended())
            .count();
        if n == 0 {
            return None;
        }
        let starts: Vec<u64> = self.attempts.drain(..n).map(|a| a.start).collect();
        let first = *starts.first().expect("n > 0 attempts were drained");
        let last = *starts.last().expect("n > 0 attempts were drained");
        let from = first.saturating_sub(p.max_back as u64).max(self.base);
        let skip = usize::try_from(from - self.base).unwrap_or(usize::MAX);
        let rows = self.rows.iter().skip(skip).cloned().collect();
        self.resume = self.resume.max(last + 1);
        Some(HandedPart { from, starts, rows })
    }

    /// The event times at which the attempts kept started, oldest first.
    pub(crate) fn attempt_times(&self) -> impl Iterator<Item = i64> + '_ {
        self.attempts.iter().map(|a| a.start_ts)
    }

    /// The first rows of the attempts kept, ascending (what a snapshot of an instance that
    /// only extends keeps, so that a restore starts exactly those again).
    pub(crate) fn starts(&self) -> Vec<u64> {
        self.attempts.iter().map(|a| a.start).collect()
    }

    /// Takes the attempts another instance handed ([`Partition::hand`]) at the same point of
    /// the partition's rows: replays their rows starting only them, and adds them to the
    /// attempts kept. Outcomes the replay ends (none, when both instances saw the same
    /// watermarks) go to `out`, to be rendered from this partition. The caller then applies
    /// the watermark with [`Partition::advance`].
    pub(crate) fn adopt(
        &mut self,
        p: &Pattern,
        s: &mut Scratch,
        piece: HandedPart,
        out: &mut Vec<Outcome>,
    ) -> Result<(), AdoptError> {
        if !piece.is_consistent() {
            return Err(AdoptError::Inconsistent);
        }
        let taker_next = self.next();
        let misaligned = AdoptError::Misaligned {
            from: piece.from,
            next: piece.next(),
            taker_next,
        };
        let base = if self.attempts.is_empty() {
            piece.from
        } else {
            // The last handed row is this partition's last row.
            let base = piece
                .from
                .checked_add(taker_next)
                .and_then(|n| n.checked_sub(piece.next()));
            let Some(base) = base else {
                return Err(misaligned);
            };
            if p.anchored && base != piece.from {
                return Err(misaligned);
            }
            base
        };
        let mut taken = Partition::replayed(p, s, piece, base, out).map_err(AdoptError::Replay)?;
        if self.attempts.is_empty() {
            taken.matches = self.matches;
            *self = taken;
            return Ok(());
        }
        if base < self.base {
            let before = usize::try_from(self.base - base).unwrap_or(usize::MAX);
            for row in taken.rows.drain(..before.min(taken.rows.len())).rev() {
                self.rows.push_front(row);
            }
            self.base = base;
        }
        let mut mine = std::mem::take(&mut self.attempts);
        let mut theirs = taken.attempts;
        let mut merged = VecDeque::with_capacity(mine.len() + theirs.len());
        loop {
            let take_mine = match (mine.front(), theirs.front()) {
                (Some(a), Some(b)) if a.start == b.start => {
                    return Err(AdoptError::Duplicate { start: a.start });
                }
                (Some(a), Some(b)) => a.start < b.start,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => break,
            };
            let next = if take_mine {
                mine.pop_front()
            } else {
                theirs.pop_front()
            };
            merged.extend(next);
        }
        self.attempts = merged;
        self.settle(p, out);
        Ok(())
    }

    /// A partition of `piece`'s rows numbered from `base` (the index its first row has in
    /// the taker), with only `piece`'s attempts, replayed.
    fn replayed(
        p: &Pattern,
        s: &mut Scratch,
        piece: HandedPart,
        base: u64,
        out: &mut Vec<Outcome>,
    ) -> Result<Partition, Refused> {
        let starts: Vec<u64> = piece
            .starts
            .iter()
            .map(|st| st - piece.from + base)
            .collect();
        let first = starts.first().copied().unwrap_or(base);
        let mut rows = piece.rows;
        let split = usize::try_from(first - base)
            .unwrap_or(usize::MAX)
            .min(rows.len());
        let again = rows.split_off(split);
        let mut part = Partition {
            rows: rows.into(),
            base,
            resume: first,
            ..Partition::default()
        };
        for row in again {
            part.push_starting(p, s, row, out, Starts::At(&starts))?;
        }
        Ok(part)
    }
}
