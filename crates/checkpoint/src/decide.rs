//! The decisions of checkpointing, as pure functions of facts: when a checkpoint is complete,
//! which ones may be deleted, which one to restore, whether a snapshot is full or a changelog,
//! whether the last checkpoint is too old. No I/O, no clock: callers pass the facts.

use std::collections::{BTreeMap, BTreeSet};

use anduin_types::{Epoch, SnapshotKind};

/// Which kind of snapshot checkpoint number `n` (counted from 0 in this run, or since the
/// restored checkpoint) takes: a full one every `full_every` checkpoints and as the first of a
/// run, changes otherwise. `full_every` of 0 or 1 means always full.
pub fn snapshot_kind(n: u64, full_every: u64) -> SnapshotKind {
    if full_every <= 1 || n.is_multiple_of(full_every) {
        SnapshotKind::Full
    } else {
        SnapshotKind::Changes
    }
}

/// What became of an acknowledgement.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub enum AckOutcome {
    /// The checkpoint still waits for other tasks.
    Waiting,
    /// Every task has acknowledged: the checkpoint can be completed (its manifest written).
    Complete(Epoch),
    /// A task reported a failure: the checkpoint is abandoned; the query goes on.
    Failed {
        /// The checkpoint.
        epoch: Epoch,
        /// Why, from the task.
        reason: String,
    },
    /// The checkpoint is not pending (already completed, failed, or never begun): ignore.
    Unknown,
}

/// Tracks the checkpoints in flight: which tasks still owe an acknowledgement.
#[derive(Debug, Default)]
pub struct AckTracker {
    pending: BTreeMap<Epoch, BTreeSet<usize>>,
}

impl AckTracker {
    /// Checkpoint `epoch` begins; `tasks` must each acknowledge it.
    pub fn begin(&mut self, epoch: Epoch, tasks: impl IntoIterator<Item = usize>) {
        self.pending.insert(epoch, tasks.into_iter().collect());
    }

    /// Task `task` acknowledged `epoch`.
    pub fn ack(&mut self, epoch: Epoch, task: usize) -> AckOutcome {
        let Some(waiting) = self.pending.get_mut(&epoch) else {
            return AckOutcome::Unknown;
        };
        waiting.remove(&task);
        if waiting.is_empty() {
            self.pending.remove(&epoch);
            AckOutcome::Complete(epoch)
        } else {
            AckOutcome::Waiting
        }
    }

    /// Task `task` failed to snapshot `epoch`.
    pub fn fail(&mut self, epoch: Epoch, reason: String) -> AckOutcome {
        match self.pending.remove(&epoch) {
            Some(_) => AckOutcome::Failed { epoch, reason },
            None => AckOutcome::Unknown,
        }
    }

    /// Task `task` is gone for good without failing the query (a replica of a hot standby):
    /// no checkpoint waits for it any more. The checkpoints in flight that waited only for it
    /// can be completed now.
    pub fn forget(&mut self, task: usize) -> Vec<Epoch> {
        let mut complete = Vec::new();
        for (epoch, waiting) in &mut self.pending {
            if waiting.remove(&task) && waiting.is_empty() {
                complete.push(*epoch);
            }
        }
        for epoch in &complete {
            self.pending.remove(epoch);
        }
        complete
    }

    /// The tasks that have not acknowledged `epoch` yet (none when it is not in flight).
    pub fn waiting(&self, epoch: Epoch) -> Vec<usize> {
        self.pending
            .get(&epoch)
            .map(|w| w.iter().copied().collect())
            .unwrap_or_default()
    }

    /// How many checkpoints are in flight.
    pub fn in_flight(&self) -> usize {
        self.pending.len()
    }
}

/// What is known of one checkpoint directory, for retention.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointFacts {
    /// Its epoch.
    pub epoch: Epoch,
    /// Whether its manifest is present.
    pub complete: bool,
    /// Other checkpoints whose files it needs (its changelog chain).
    pub depends_on: Vec<Epoch>,
}

/// The checkpoints that may be deleted: keep the newest `keep` complete ones (at least one)
/// and everything they depend on; delete older complete ones, and incomplete ones older than
/// the newest complete (abandoned). Nothing newer than the newest complete checkpoint is
/// deleted: it may still be in progress.
pub fn to_delete(facts: &[CheckpointFacts], keep: usize) -> Vec<Epoch> {
    let mut complete: Vec<&CheckpointFacts> = facts.iter().filter(|f| f.complete).collect();
    complete.sort_by_key(|f| std::cmp::Reverse(f.epoch));
    let Some(newest) = complete.first().map(|f| f.epoch) else {
        return Vec::new();
    };
    let mut kept: BTreeSet<Epoch> = BTreeSet::new();
    for f in complete.iter().take(keep.max(1)) {
        kept.insert(f.epoch);
        kept.extend(f.depends_on.iter().copied());
    }
    let mut out: Vec<Epoch> = facts
        .iter()
        .filter(|f| f.epoch < newest && !kept.contains(&f.epoch))
        .map(|f| f.epoch)
        .collect();
    out.sort_unstable();
    out
}

/// Which checkpoint to restore.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub enum RestoreDecision {
    /// There is no complete checkpoint: start from the beginning.
    Fresh,
    /// Restore this checkpoint; the newer ones in `skipped` were unusable, for the reasons
    /// given (the caller says so).
    Restore {
        /// The checkpoint to restore.
        epoch: Epoch,
        /// Newer complete checkpoints that failed validation, newest first.
        skipped: Vec<(Epoch, String)>,
    },
    /// Complete checkpoints exist but none is usable: starting over needs the user's consent.
    NothingUsable {
        /// Every checkpoint and why it is unusable, newest first.
        problems: Vec<(Epoch, String)>,
    },
}

/// Chooses the newest complete checkpoint that validates. `candidates` are the complete
/// checkpoints with the outcome of their validation (files present, sizes and checksums).
pub fn choose_restore(candidates: &[(Epoch, Result<(), String>)]) -> RestoreDecision {
    let mut sorted: Vec<&(Epoch, Result<(), String>)> = candidates.iter().collect();
    sorted.sort_by_key(|(e, _)| std::cmp::Reverse(*e));
    let mut skipped = Vec::new();
    for (epoch, outcome) in sorted {
        match outcome {
            Ok(()) => {
                return RestoreDecision::Restore {
                    epoch: *epoch,
                    skipped,
                }
            }
            Err(why) => skipped.push((*epoch, why.clone())),
        }
    }
    if skipped.is_empty() {
        RestoreDecision::Fresh
    } else {
        RestoreDecision::NothingUsable { problems: skipped }
    }
}

/// Whether the last complete checkpoint is older than `threshold_ms` (or, before the first
/// one, whether the query has run that long without one).
pub fn is_stale(
    now_ms: u64,
    last_complete_ms: Option<u64>,
    started_ms: u64,
    threshold_ms: u64,
) -> bool {
    now_ms.saturating_sub(last_complete_ms.unwrap_or(started_ms)) > threshold_ms
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(epoch: u64, complete: bool, deps: &[u64]) -> CheckpointFacts {
        CheckpointFacts {
            epoch: Epoch(epoch),
            complete,
            depends_on: deps.iter().map(|&e| Epoch(e)).collect(),
        }
    }

    #[test]
    fn a_full_snapshot_comes_first_and_every_m_checkpoints() {
        let kinds: Vec<SnapshotKind> = (0..7).map(|n| snapshot_kind(n, 3)).collect();
        use SnapshotKind::*;
        assert_eq!(
            kinds,
            vec![Full, Changes, Changes, Full, Changes, Changes, Full]
        );
        assert!((0..5).all(|n| snapshot_kind(n, 1) == Full));
        assert!((0..5).all(|n| snapshot_kind(n, 0) == Full));
    }

    #[test]
    fn a_checkpoint_completes_when_the_last_task_acknowledges() {
        let mut t = AckTracker::default();
        t.begin(Epoch(1), [0, 1, 2]);
        assert_eq!(t.ack(Epoch(1), 0), AckOutcome::Waiting);
        assert_eq!(t.ack(Epoch(1), 2), AckOutcome::Waiting);
        assert_eq!(t.ack(Epoch(1), 1), AckOutcome::Complete(Epoch(1)));
        assert_eq!(t.ack(Epoch(1), 1), AckOutcome::Unknown);
        assert_eq!(t.in_flight(), 0);
    }

    #[test]
    fn a_failed_task_abandons_its_checkpoint_but_not_the_next() {
        let mut t = AckTracker::default();
        t.begin(Epoch(1), [0, 1]);
        t.begin(Epoch(2), [0, 1]);
        assert_eq!(
            t.fail(Epoch(1), "disk full".into()),
            AckOutcome::Failed {
                epoch: Epoch(1),
                reason: "disk full".into()
            }
        );
        assert_eq!(t.ack(Epoch(1), 1), AckOutcome::Unknown);
        assert_eq!(t.ack(Epoch(2), 0), AckOutcome::Waiting);
        assert_eq!(t.ack(Epoch(2), 1), AckOutcome::Complete(Epoch(2)));
    }

    #[test]
    fn retention_keeps_the_last_k_and_the_bases_they_need() {
        // 1 full, 2 and 3 changes on 1, 4 full, 5 changes on 4, 6 incomplete (in progress).
        let all = vec![
            facts(1, true, &[]),
            facts(2, true, &[1]),
            facts(3, true, &[1, 2]),
            facts(4, true, &[]),
            facts(5, true, &[4]),
            facts(6, false, &[]),
        ];
        // Keeping 3 keeps 5, 4, 3, and 3 needs 1 and 2: nothing goes.
        assert_eq!(to_delete(&all, 3), Vec::<Epoch>::new());
        // Keeping 2 keeps 5 and 4: 1, 2 and 3 go; 6 may be in progress and stays.
        assert_eq!(to_delete(&all, 2), vec![Epoch(1), Epoch(2), Epoch(3)]);
        // An abandoned incomplete checkpoint older than the newest complete one goes.
        let with_abandoned = vec![
            facts(1, true, &[]),
            facts(2, false, &[]),
            facts(3, true, &[]),
        ];
        assert_eq!(to_delete(&with_abandoned, 3), vec![Epoch(2)]);
        // Without a complete checkpoint nothing is deleted.
        assert_eq!(to_delete(&[facts(1, false, &[])], 1), Vec::<Epoch>::new());
    }

    #[test]
    fn restore_takes_the_newest_valid_checkpoint_and_says_what_it_skipped() {
        let c = vec![
            (Epoch(3), Ok(())),
            (Epoch(5), Err("op-x.state: checksum mismatch".to_string())),
            (Epoch(4), Ok(())),
        ];
        assert_eq!(
            choose_restore(&c),
            RestoreDecision::Restore {
                epoch: Epoch(4),
                skipped: vec![(Epoch(5), "op-x.state: checksum mismatch".into())]
            }
        );
        assert_eq!(choose_restore(&[]), RestoreDecision::Fresh);
        assert!(matches!(
            choose_restore(&[(Epoch(1), Err("missing".into()))]),
            RestoreDecision::NothingUsable { problems } if problems.len() == 1
        ));
    }

    #[test]
    fn a_checkpoint_older_than_the_threshold_is_stale() {
        assert!(!is_stale(10_000, Some(9_000), 0, 2_000));
        assert!(is_stale(12_000, Some(9_000), 0, 2_000));
        assert!(is_stale(5_000, None, 0, 2_000));
        assert!(!is_stale(1_000, None, 0, 2_000));
    }
}
