//! Recovering: some tasks lost their slot; the others keep theirs and keep running.
//!
//! The lost tasks get new slots, then are restored from the last completed checkpoint. More
//! losses meanwhile join the recovery (its reason stays the first). When told per-task recovery
//! cannot apply, the whole query rolls back to the last completed checkpoint, once every task
//! has a slot. Once the restores are done the query runs again. No checkpoint starts and no stop
//! is taken while recovering; a cancel ends it all.

use super::{
    cancel, check_covers, fail, finish, lost, not_now, recover, Action, FailureReason, Input,
    LifeEvent, Next, QueryLife, QueryState, Refusal, Step,
};

pub(super) fn on(life: &QueryLife, input: &Input) -> Result<Step, Refusal> {
    match input {
        // A placement when none awaits is a duplicate.
        Input::Placed { .. } if life.awaiting.is_empty() => not_now(life, input),
        Input::Placed { placement } => {
            check_covers(life, placement)?;
            let mut next = Next::from(life);
            let l = next.life();
            l.placement.extend(placement.iter().map(|(t, w)| (*t, *w)));
            l.awaiting.clear();
            let from = l.last_completed;
            if l.rollback_pending {
                l.rollback_pending = false;
                let whole = l.placement.clone();
                next.act(Action::RollBack {
                    placement: whole,
                    to: from,
                })
                .done()
            } else {
                next.act(Action::RestoreTasks {
                    placement: placement.clone(),
                    from,
                })
                .done()
            }
        }
        Input::PlacementImpossible { needed, free, why } => fail(
            life,
            FailureReason::CannotPlace {
                needed: *needed,
                free: *free,
                why: why.clone(),
            },
        ),
        Input::TaskFailed { .. } | Input::WorkerDead { .. } => match lost(life, input)? {
            Some((tasks, reason)) => recover(life, tasks, reason),
            None => not_now(life, input),
        },
        Input::PerTaskRecoveryImpossible { why } => {
            let to = life.last_completed;
            let mut next = Next::from(life).log(LifeEvent::WholeQueryRollback {
                to,
                why: why.clone(),
            });
            if life.awaiting.is_empty() {
                let whole = life.placement.clone();
                next = next.act(Action::RollBack {
                    placement: whole,
                    to,
                });
            } else {
                // Rolled back once every task has a slot again.
                next.life().rollback_pending = true;
            }
            next.done()
        }
        Input::RecoveryDone => {
            if !life.awaiting.is_empty() || life.rollback_pending {
                return Err(Refusal::StillPlacing {
                    tasks: life.awaiting.iter().copied().collect(),
                });
            }
            Next::from(life).to(QueryState::Running).done()
        }
        Input::RecoveryFailed { why } => {
            fail(life, FailureReason::RecoveryFailed { why: why.clone() })
        }
        Input::CheckpointCompleted { epoch } | Input::CheckpointFailed { epoch, .. } => {
            Err(Refusal::NotInFlight {
                in_flight: None,
                got: *epoch,
            })
        }
        Input::CancelRequested => cancel(life),
        // Every part of the attempt ended well (the driver says so only then): nothing is
        // left to restore, whatever still awaited a slot.
        Input::AllTasksFinished => finish(life),
        _ => not_now(life, input),
    }
}
