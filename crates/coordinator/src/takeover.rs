//! What a coordinator decides when it takes over the running attempt of a coordinator that
//! died: pure, facts in, decisions out.
//!
//! Which parts to wait for. Each running part's executor reports again to the new
//! coordinator. A part that ended is not waited for: its end is in the catalog (the
//! coordinator before noted it) or its worker reports it again (it had not been noted). A part
//! that failed, or whose worker died, while no coordinator ran is restored alone once the
//! others are taken over (with per-task recovery); so is one whose executor stays silent
//! for a heartbeat timeout on a live worker (its deployment never left the coordinator before,
//! or its executor died).
//!
//! Checkpoint numbers. The tasks of a running attempt remember the newest barrier they had:
//! a consumer ignores any barrier numbered as one it has had (it takes it for the replay of
//! a restored producer), and an aligning task any barrier numbered as a checkpoint it aligned
//! or gave up. A checkpoint numbered again after such a one would wait forever for their
//! acknowledgements. So the coordinator that takes over numbers its checkpoints after every
//! one its predecessors may have begun: those that completed, those with anything in the
//! checkpoint store, and those given up, whose files are removed but which the catalog records
//! ([`crate::catalog::Edit::CheckpointGivenUp`]).

use std::collections::{BTreeMap, BTreeSet};

use anduin_types::Epoch;

/// What a coordinator taking an attempt over finds of the checkpoints its predecessors
/// numbered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NumberingFacts {
    /// The last complete checkpoint.
    pub last_complete: Option<Epoch>,
    /// The newest checkpoint with anything in the checkpoint store (complete or not).
    pub newest_in_store: Option<Epoch>,
    /// The newest checkpoint the catalog records as given up (nothing of it may be left in
    /// the store).
    pub newest_given_up: Option<Epoch>,
}

/// The newest checkpoint a coordinator before this one may have begun (`Epoch(0)`: none):
/// its barrier is asked of every source again (a source that injected it does not inject it
/// twice), and this coordinator's first checkpoint comes after it.
pub fn newest_begun(facts: &NumberingFacts) -> Epoch {
    [
        facts.last_complete,
        facts.newest_in_store,
        facts.newest_given_up,
    ]
    .into_iter()
    .flatten()
    .max()
    .unwrap_or(Epoch(0))
}

/// Where the worker that runs a part is, for a coordinator taking its attempt over.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Host {
    /// Registered with this coordinator and heartbeating.
    #[default]
    Alive,
    /// Known from the catalog, not registered again yet: it may until a heartbeat timeout
    /// after this coordinator started, when it is declared dead.
    Awaited,
    /// Declared dead.
    Dead,
}

/// What a coordinator taking an attempt over knows of one of its parts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PartFacts {
    /// Its executor has reported again.
    pub reported: bool,
    /// Its end, when known: `Some(None)` it finished its part, `Some(Some(why))` it failed.
    pub ended: Option<Option<String>>,
    /// The worker it runs on.
    pub host: Host,
}

impl PartFacts {
    /// It failed, or its worker died: it is restored alone.
    fn lost(&self) -> bool {
        self.host == Host::Dead || matches!(self.ended, Some(Some(_)))
    }
}

/// Whether to take the attempt over now, and without which parts.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub enum TakeOver {
    /// Every part has reported again or finished: take the attempt over whole.
    Whole,
    /// Take it over without these parts, which failed or whose worker died while no
    /// coordinator ran: they are restored alone once it runs.
    WithoutLost {
        /// The parts.
        lost: BTreeSet<u32>,
    },
    /// Take it over without these parts, whose executors stayed silent on live workers for a
    /// heartbeat timeout: they are given up (their executors, if any, killed) and restored
    /// alone once it runs, as are the lost ones. (A part on a worker still awaited is waited
    /// for: its worker is declared dead at the same heartbeat timeout, unless it comes back.)
    WithoutSilent {
        /// The silent parts.
        silent: BTreeSet<u32>,
        /// The parts lost besides.
        lost: BTreeSet<u32>,
    },
    /// Wait for more reports.
    Wait,
}

/// What to do with an attempt whose `parts` are as given; `per_task`: per-task recovery is
/// on (without it, every part must report again or finish); `silence_over`: a heartbeat
/// timeout has passed since this coordinator started.
pub fn take_over(parts: &BTreeMap<u32, PartFacts>, per_task: bool, silence_over: bool) -> TakeOver {
    let missing: BTreeMap<u32, &PartFacts> = parts
        .iter()
        .filter(|(_, f)| !f.reported && f.ended != Some(None))
        .map(|(p, f)| (*p, f))
        .collect();
    if missing.is_empty() {
        return TakeOver::Whole;
    }
    // With nothing running to take over, there is nothing to restore parts beside.
    if !per_task || !parts.values().any(|f| f.reported) {
        return TakeOver::Wait;
    }
    let lost: BTreeSet<u32> = missing
        .iter()
        .filter(|(_, f)| f.lost())
        .map(|(p, _)| *p)
        .collect();
    if lost.len() == missing.len() {
        return TakeOver::WithoutLost { lost };
    }
    if silence_over {
        let silent: BTreeSet<u32> = missing
            .iter()
            .filter(|(p, f)| !lost.contains(p) && f.host == Host::Alive)
            .map(|(p, _)| *p)
            .collect();
        if !silent.is_empty() {
            return TakeOver::WithoutSilent { silent, lost };
        }
    }
    TakeOver::Wait
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checkpoint_given_up_and_removed_is_numbered_past() {
        // Checkpoint 3 was given up when a worker was lost and its files removed; the store
        // holds 1 and 2. Numbering from 3 again would wait for tasks that ignore barrier 3.
        let facts = NumberingFacts {
            last_complete: Some(Epoch(2)),
            newest_in_store: Some(Epoch(2)),
            newest_given_up: Some(Epoch(3)),
        };
        assert_eq!(newest_begun(&facts), Epoch(3));
    }

    #[test]
    fn a_checkpoint_begun_in_the_store_or_an_older_one_given_up_changes_nothing() {
        let begun = NumberingFacts {
            last_complete: Some(Epoch(4)),
            newest_in_store: Some(Epoch(5)),
            newest_given_up: Some(Epoch(2)),
        };
        assert_eq!(newest_begun(&begun), Epoch(5));
        // Retention removed older checkpoints; the catalog's pointer is the last complete.
        let pointer = NumberingFacts {
            last_complete: Some(Epoch(7)),
            newest_in_store: None,
            newest_given_up: None,
        };
        assert_eq!(newest_begun(&pointer), Epoch(7));
    }

    #[test]
    fn nothing_begun_yet_is_epoch_zero() {
        assert_eq!(newest_begun(&NumberingFacts::default()), Epoch(0));
    }

    fn part(reported: bool, ended: Option<Option<&str>>, host: Host) -> PartFacts {
        PartFacts {
            reported,
            ended: ended.map(|e| e.map(String::from)),
            host,
        }
    }

    use Host::{Alive, Awaited, Dead};

    #[test]
    fn a_part_that_finished_while_no_coordinator_ran_is_not_waited_for() {
        // Its end was noted by the coordinator before (the catalog has it) or reported again.
        let parts = [
            (1, part(false, Some(None), Alive)),
            (2, part(true, None, Alive)),
        ]
        .into();
        assert_eq!(take_over(&parts, true, false), TakeOver::Whole);
        assert_eq!(take_over(&parts, false, false), TakeOver::Whole);
        // Every part finished: nothing is left to report.
        let done = [(1, part(false, Some(None), Alive))].into();
        assert_eq!(take_over(&done, true, true), TakeOver::Whole);
    }

    #[test]
    fn a_part_that_failed_or_lost_its_worker_is_restored_alone_once_the_others_are_there() {
        let parts: BTreeMap<u32, PartFacts> = [
            (1, part(false, Some(Some("disk full")), Alive)),
            (2, part(false, None, Dead)),
            (3, part(true, None, Alive)),
        ]
        .into();
        assert_eq!(
            take_over(&parts, true, false),
            TakeOver::WithoutLost {
                lost: [1, 2].into()
            }
        );
        // Without per-task recovery, they are waited for (and the attempt given up).
        assert_eq!(take_over(&parts, false, true), TakeOver::Wait);
        // With no part running, there is nothing to take over.
        let none: BTreeMap<u32, PartFacts> = [(1, part(false, None, Dead))].into();
        assert_eq!(take_over(&none, true, true), TakeOver::Wait);
    }

    #[test]
    fn a_part_silent_on_a_live_worker_is_waited_for_until_the_heartbeat_timeout() {
        let parts: BTreeMap<u32, PartFacts> = [
            (1, part(false, None, Alive)),
            (2, part(false, None, Dead)),
            (3, part(true, None, Alive)),
        ]
        .into();
        assert_eq!(take_over(&parts, true, false), TakeOver::Wait);
        assert_eq!(
            take_over(&parts, true, true),
            TakeOver::WithoutSilent {
                silent: [1].into(),
                lost: [2].into()
            }
        );
    }

    #[test]
    fn a_part_on_a_worker_not_back_yet_is_waited_for_until_the_worker_is_declared_dead() {
        // Its worker's heartbeat timeout ends with the silence's: it is lost, not silent.
        let awaited: BTreeMap<u32, PartFacts> = [
            (1, part(false, None, Awaited)),
            (2, part(true, None, Alive)),
        ]
        .into();
        assert_eq!(take_over(&awaited, true, true), TakeOver::Wait);
        let dead: BTreeMap<u32, PartFacts> =
            [(1, part(false, None, Dead)), (2, part(true, None, Alive))].into();
        assert_eq!(
            take_over(&dead, true, true),
            TakeOver::WithoutLost { lost: [1].into() }
        );
    }
}
