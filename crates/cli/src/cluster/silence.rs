//! Executors that went silent: every started executor sends, every second from a thread of its
//! own whatever its tasks do, its live figures (or `Alive` while it restores a checkpoint and
//! has none yet). An executor the coordinator has heard nothing from for `--executor-timeout`
//! while its worker heartbeats on is stopped or wedged (SIGSTOP, a process that no longer
//! runs): it is stuck, its worker kills it and its part is restored alone — without waiting for
//! a checkpoint to time out, and also for a query that takes no checkpoints by time. An
//! executor whose process runs but whose tasks hang is found through the checkpoint it holds
//! back (`--checkpoint-timeout`).

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

/// Why a part's executor is taken as stuck.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stuck {
    /// It held this checkpoint back past `--checkpoint-timeout`.
    HeldBack(u64),
    /// Nothing came from it for this long.
    Silent(Duration),
}

impl std::fmt::Display for Stuck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stuck::HeldBack(epoch) => write!(
                f,
                "it held checkpoint {epoch} back past --checkpoint-timeout: its executor is stuck"
            ),
            Stuck::Silent(d) => write!(
                f,
                "its executor sent nothing for {:.0?} (--executor-timeout) while its worker lived: it is stuck",
                d
            ),
        }
    }
}

/// The parts that held an expired checkpoint back, judged: those taken as stuck, and those
/// spared because they were restored since the last checkpoint completed and this is their
/// first expiry since (a restored executor starts, loads its state and catches up while the
/// next checkpoint runs: under a short `--checkpoint-timeout` it was taken as stuck and
/// restored again, and again). A spared part is judged as any other at the next expiry.
pub fn judge_held_back(held: &BTreeSet<u32>, fresh: &BTreeSet<u32>) -> Judged {
    let (spared, stuck) = held.iter().partition(|p| fresh.contains(p));
    Judged { stuck, spared }
}

/// What [`judge_held_back`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Judged {
    pub stuck: BTreeSet<u32>,
    pub spared: BTreeSet<u32>,
}

/// What is known of one part of a running attempt, for [`silent_parts`].
#[derive(Debug, Clone, Copy)]
pub struct PartFacts {
    pub part: u32,
    /// Its executor of the current incarnation is connected.
    pub running: bool,
    /// It ended, was given leave to end, or is already taken as stuck: not watched.
    pub settled: bool,
    /// Its host worker is alive (a dead worker's parts are lost another way).
    pub host_alive: bool,
    /// When its executor of the current incarnation last sent its figures or `Alive`, if it
    /// has: the clock starts with the first, sent as the executor is started.
    pub heard: Option<Instant>,
}

/// The parts whose executor has been silent for longer than `timeout` at `now`, with how long.
pub fn silent_parts(
    parts: impl IntoIterator<Item = PartFacts>,
    now: Instant,
    timeout: Duration,
) -> BTreeMap<u32, Duration> {
    parts
        .into_iter()
        .filter(|p| p.running && !p.settled && p.host_alive)
        .filter_map(|p| {
            let quiet = now.saturating_duration_since(p.heard?);
            (quiet > timeout).then_some((p.part, quiet))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(part: u32, heard: Option<Instant>) -> PartFacts {
        PartFacts {
            part,
            running: true,
            settled: false,
            host_alive: true,
            heard,
        }
    }

    #[test]
    fn only_a_running_unsettled_part_on_a_live_worker_silent_past_the_timeout_is_stuck() {
        let t0 = Instant::now();
        let now = t0 + Duration::from_secs(40);
        let timeout = Duration::from_secs(30);
        let recent = Some(t0 + Duration::from_secs(20));
        let parts = [
            part(0, Some(t0)),
            part(1, recent),
            PartFacts {
                running: false,
                ..part(2, Some(t0))
            },
            PartFacts {
                settled: true,
                ..part(3, Some(t0))
            },
            PartFacts {
                host_alive: false,
                ..part(4, Some(t0))
            },
            part(5, None),
        ];
        let stuck = silent_parts(parts, now, timeout);
        assert_eq!(
            stuck.into_iter().collect::<Vec<_>>(),
            [(0, Duration::from_secs(40))]
        );
        // Exactly at the timeout is not past it.
        assert!(silent_parts([part(0, Some(t0))], t0 + timeout, timeout).is_empty());
    }

    #[test]
    fn a_part_restored_since_the_last_checkpoint_is_spared_its_first_expiry_only() {
        let held: BTreeSet<u32> = [1, 2, 3].into();
        let mut fresh: BTreeSet<u32> = [2, 5].into();
        let first = judge_held_back(&held, &fresh);
        assert_eq!(first.stuck, [1, 3].into());
        assert_eq!(first.spared, [2].into());
        // The caller lets the spared go from the fresh parts: the next expiry judges them.
        fresh.retain(|p| !first.spared.contains(p));
        let second = judge_held_back(&[2].into(), &fresh);
        assert_eq!(second.stuck, [2].into());
        assert!(second.spared.is_empty());
    }

    #[test]
    fn the_reason_names_the_flag() {
        assert!(Stuck::HeldBack(7).to_string().contains("checkpoint 7"));
        let why = Stuck::Silent(Duration::from_secs(31)).to_string();
        assert!(why.contains("--executor-timeout"), "{why}");
    }
}
