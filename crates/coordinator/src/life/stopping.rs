//! Stopping: the sources were told to stop; the tasks finish what they hold.
//!
//! When every task has ended, the query is finished. A final checkpoint may still start,
//! complete or fail meanwhile. A lost task interrupts the stop: the query recovers and runs
//! again, and the stop must be asked for again (the event says so). A cancel ends it at once.

use super::checkpointing::check_in_flight;
use super::{
    cancel, finish, lost, not_now, recover, Action, Input, LifeEvent, Next, QueryLife, Refusal,
    Step,
};

pub(super) fn on(life: &QueryLife, input: &Input) -> Result<Step, Refusal> {
    match input {
        Input::AllTasksFinished => finish(life),
        Input::CheckpointStarted { epoch } => {
            if let Some(in_flight) = life.in_flight {
                return Err(Refusal::CheckpointInFlight {
                    in_flight,
                    got: *epoch,
                });
            }
            if let Some(last) = life.last_epoch().filter(|last| *epoch <= *last) {
                return Err(Refusal::EpochNotAfter { last, got: *epoch });
            }
            let mut next = Next::from(life);
            let l = next.life();
            l.in_flight = Some(*epoch);
            l.last_started = Some(*epoch);
            next.act(Action::InjectBarrier { epoch: *epoch }).done()
        }
        Input::CheckpointCompleted { epoch } => {
            check_in_flight(life, *epoch)?;
            let mut next = Next::from(life);
            let l = next.life();
            l.in_flight = None;
            l.last_completed = Some(*epoch);
            next.act(Action::CommitCheckpoint { epoch: *epoch }).done()
        }
        Input::CheckpointFailed { epoch, cause } => {
            check_in_flight(life, *epoch)?;
            let mut next = Next::from(life);
            next.life().in_flight = None;
            next.act(Action::AbortCheckpoint { epoch: *epoch })
                .log(LifeEvent::CheckpointAborted {
                    epoch: *epoch,
                    why: cause.clone(),
                })
                .done()
        }
        Input::TaskFailed { .. } | Input::WorkerDead { .. } => match lost(life, input)? {
            Some((tasks, reason)) => recover(life, tasks, reason),
            None => not_now(life, input),
        },
        Input::CancelRequested => cancel(life),
        _ => not_now(life, input),
    }
}
