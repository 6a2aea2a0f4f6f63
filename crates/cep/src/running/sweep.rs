//! The end of the input without its peak of memory.
//!
//! At the end of the input every row waiting for the watermark is fed before the time bound
//! ends any partial match (the end is one watermark at +∞, visited after the rows). At a
//! Nexmark rate that is 4 s of rows (≈ 3.7 M), each starting a partial match in a partition of
//! its own (cep_q3), beside the 5 s of partitions whose partial matches wait for their bound:
//! the run's peak of memory, a fifth above the rest of the run.
//!
//! As rows of time `t` are fed, every row still to come is at `t` or later, so a watermark at
//! `t` could pass. A partition queued by `t` (see `store/deadlines.rs`) that no row still to
//! come reaches, whose partial matches that watermark would all end with nothing to report but
//! time-outs (which no output shows) and leave blank, ends and goes now: what the end would do
//! to it, without a row of output. Any other partition due is set aside, untouched and still
//! recording its time, and queued again after the rows: the end visits it where it would have.
//! So the output is that of the end's single watermark, row for row and in its order.

use anduin_operator_api::OperatorError;

use super::super::key::Key;
use super::super::matcher::Outcome;
use super::{store_error, PatternOp};

/// The rows still to come at the end of the input, counted by a hash of their partition key
/// (a count shared by several keys only keeps them all from being swept; one that reached
/// the largest count stays there), and the partitions due that were set aside.
pub(super) struct Sweep {
    hasher: ahash::RandomState,
    /// Four counts per row (2 bytes each): at most a quarter in use, so that a partition
    /// rarely shares one with a row still to come.
    left: Vec<u16>,
    /// The last time swept: a sweep per time, not per row.
    swept: i64,
    /// Entries of the queue of deadlines to put back.
    pub(super) aside: Vec<(i64, Key)>,
}

impl Sweep {
    /// Before feeding the `rows` rows of `keys`.
    pub(super) fn new<'k>(rows: usize, keys: impl Iterator<Item = &'k Key>) -> Self {
        let mut sweep = Sweep {
            hasher: ahash::RandomState::new(),
            left: vec![0; 4 * rows.max(1).next_power_of_two()],
            swept: i64::MIN,
            aside: Vec::new(),
        };
        for key in keys {
            let slot = sweep.slot(key);
            sweep.left[slot] = sweep.left[slot].saturating_add(1);
        }
        sweep
    }

    fn slot(&self, key: &[u8]) -> usize {
        // The length is a power of two.
        (self.hasher.hash_one(key) as usize) & (self.left.len() - 1)
    }

    /// A row of partition `key` is fed.
    pub(super) fn fed(&mut self, key: &[u8]) {
        let slot = self.slot(key);
        if self.left[slot] != u16::MAX {
            self.left[slot] = self.left[slot].saturating_sub(1);
        }
    }

    /// Whether no row still to come is of partition `key`.
    fn none_left(&self, key: &[u8]) -> bool {
        self.left[self.slot(key)] == 0
    }
}

impl PatternOp {
    /// Before the rows of time `t` are fed: ends and forgets the partitions due by `t` that
    /// `sweep` finds no row still to come for and that a watermark at `t` leaves blank with
    /// nothing to report; sets the other partitions due aside (see the module's
    /// documentation).
    pub(super) fn sweep(&mut self, sweep: &mut Sweep, t: i64) -> Result<(), OperatorError> {
        if t <= sweep.swept {
            return Ok(());
        }
        sweep.swept = t;
        let pattern = &self.setup.pattern;
        while let Some((due, key)) = self.store.pop_due(t) {
            let Some(slot) = self.store.live_mut(&key) else {
                continue;
            };
            let part = &mut *slot.part;
            if !sweep.none_left(&key) || !part.ends_blank_by(pattern, t) {
                sweep.aside.push((due, key));
                continue;
            }
            let before = part.attempts_kept();
            part.advance(pattern, t, &mut self.outcomes);
            self.figures.partial(before, part);
            self.figures.outcomes(&self.outcomes);
            debug_assert!(
                (self.outcomes.iter()).all(|o| matches!(o, Outcome::TimedOut { .. })),
                "a partition swept reports only time-outs, which no output shows"
            );
            self.outcomes.clear();
            let dropped = part.trim(pattern);
            self.figures.kept(part, 0, dropped);
            debug_assert!(part.is_blank(pattern), "a partition swept is blank");
            self.store
                .forget(pattern, &key)
                .map_err(|e| store_error(&self.setup.name, e))?;
        }
        Ok(())
    }
}
