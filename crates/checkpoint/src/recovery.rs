//! How a run recovers, decided in one place as a pure [`RecoveryPlan`] from the facts on
//! disk: which checkpoint to restore, which later checkpoints go, or why none is usable. The
//! CLI (and later a coordinator) only carries the plan out and says what it decided.

use anduin_types::Epoch;

use crate::decide::{choose_restore, RestoreDecision};

/// What is known of a checkpoint directory when a run starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecoveryFacts {
    /// Every checkpoint directory present, complete or not.
    pub epochs: Vec<Epoch>,
    /// The complete checkpoints examined, newest first, with the outcome of their
    /// validation (files present, sizes and checksums), down to the first valid one.
    pub validated: Vec<(Epoch, Result<(), String>)>,
    /// Whether the newest valid checkpoint says the query finished.
    pub finished: bool,
    /// The newest complete checkpoint was written by a newer anduin (and why it cannot be
    /// read): nothing older may be restored, nothing removed.
    pub newer: Option<(Epoch, String)>,
    /// The user asked to start over (`--from-scratch`).
    pub from_scratch: bool,
}

/// What a starting run does with its checkpoint directory.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub enum RecoveryPlan {
    /// Start from the beginning, after removing `remove` (incomplete checkpoints, or every
    /// one when the user asked to start over).
    Fresh {
        /// The checkpoints to remove.
        remove: Vec<Epoch>,
        /// The user asked for it (`--from-scratch`), rather than there being none.
        asked: bool,
    },
    /// Resume from `epoch`, after removing the checkpoints after it (`remove`, taken after it
    /// or unusable).
    Restore {
        /// The checkpoint to restore.
        epoch: Epoch,
        /// Newer complete checkpoints that are unusable, newest first, and why.
        skipped: Vec<(Epoch, String)>,
        /// The checkpoints after `epoch`.
        remove: Vec<Epoch>,
    },
    /// The query finished at `epoch`: there is nothing to run (the checkpoints after it go).
    Finished {
        /// The checkpoint that finished.
        epoch: Epoch,
        /// The checkpoints after it.
        remove: Vec<Epoch>,
    },
    /// Complete checkpoints exist but none is usable: starting over needs the user's consent
    /// (`--from-scratch`); nothing is removed.
    Unusable {
        /// Every checkpoint and why it is unusable, newest first.
        problems: Vec<(Epoch, String)>,
    },
}

/// The plan for `facts`.
pub fn plan_recovery(facts: &RecoveryFacts) -> RecoveryPlan {
    if facts.from_scratch {
        return RecoveryPlan::Fresh {
            remove: facts.epochs.clone(),
            asked: true,
        };
    }
    if let Some(newer) = &facts.newer {
        return RecoveryPlan::Unusable {
            problems: vec![newer.clone()],
        };
    }
    match choose_restore(&facts.validated) {
        RestoreDecision::Fresh => RecoveryPlan::Fresh {
            remove: facts.epochs.clone(),
            asked: false,
        },
        RestoreDecision::Restore { epoch, skipped } => {
            let remove = facts
                .epochs
                .iter()
                .copied()
                .filter(|e| *e > epoch)
                .collect();
            if facts.finished {
                RecoveryPlan::Finished { epoch, remove }
            } else {
                RecoveryPlan::Restore {
                    epoch,
                    skipped,
                    remove,
                }
            }
        }
        RestoreDecision::NothingUsable { problems } => RecoveryPlan::Unusable { problems },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(epochs: &[u64], validated: &[(u64, bool)], finished: bool) -> RecoveryFacts {
        RecoveryFacts {
            epochs: epochs.iter().map(|e| Epoch(*e)).collect(),
            validated: validated
                .iter()
                .map(|(e, ok)| {
                    let outcome = if *ok {
                        Ok(())
                    } else {
                        Err(format!("chk {e} damaged"))
                    };
                    (Epoch(*e), outcome)
                })
                .collect(),
            finished,
            newer: None,
            from_scratch: false,
        }
    }

    fn epochs(e: &[u64]) -> Vec<Epoch> {
        e.iter().map(|e| Epoch(*e)).collect()
    }

    #[test]
    fn the_newest_valid_checkpoint_is_restored_and_everything_after_it_goes() {
        // 5 is in progress (no manifest), 4 damaged, 3 valid.
        let plan = plan_recovery(&facts(&[2, 3, 4, 5], &[(4, false), (3, true)], false));
        assert_eq!(
            plan,
            RecoveryPlan::Restore {
                epoch: Epoch(3),
                skipped: vec![(Epoch(4), "chk 4 damaged".into())],
                remove: epochs(&[4, 5]),
            }
        );
    }

    #[test]
    fn without_a_complete_checkpoint_a_run_starts_fresh_and_clears_the_directory() {
        assert_eq!(
            plan_recovery(&facts(&[1], &[], false)),
            RecoveryPlan::Fresh {
                remove: epochs(&[1]),
                asked: false
            }
        );
    }

    #[test]
    fn a_finished_query_has_nothing_to_run() {
        assert_eq!(
            plan_recovery(&facts(&[7, 8], &[(7, true)], true)),
            RecoveryPlan::Finished {
                epoch: Epoch(7),
                remove: epochs(&[8]),
            }
        );
    }

    #[test]
    fn no_usable_checkpoint_needs_consent_and_removes_nothing() {
        assert_eq!(
            plan_recovery(&facts(&[1, 2], &[(2, false), (1, false)], false)),
            RecoveryPlan::Unusable {
                problems: vec![
                    (Epoch(2), "chk 2 damaged".into()),
                    (Epoch(1), "chk 1 damaged".into())
                ]
            }
        );
    }

    #[test]
    fn from_scratch_removes_every_checkpoint_whatever_they_hold() {
        let mut f = facts(&[1, 2], &[(2, true)], true);
        f.from_scratch = true;
        assert_eq!(
            plan_recovery(&f),
            RecoveryPlan::Fresh {
                remove: epochs(&[1, 2]),
                asked: true
            }
        );
    }
}
