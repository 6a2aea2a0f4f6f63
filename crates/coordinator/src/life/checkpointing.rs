//! Checkpointing: running, with one checkpoint's barriers in flight.
//!
//! Its completion is committed (recorded as the last checkpoint, sinks commit, producers trim),
//! its failure aborted; either way the query runs on. One checkpoint at a time: another start
//! is refused, as is a report about another epoch. A lost task aborts the checkpoint and starts
//! a recovery. A stop drains the query and lets the checkpoint in flight end.

use super::{
    cancel, finish, lost, not_now, recover, Action, Input, LifeEvent, Next, QueryLife, QueryState,
    Refusal, Step,
};

pub(super) fn on(life: &QueryLife, input: &Input) -> Result<Step, Refusal> {
    match input {
        Input::CheckpointCompleted { epoch } => {
            check_in_flight(life, *epoch)?;
            let mut next = Next::from(life);
            let l = next.life();
            l.in_flight = None;
            l.last_completed = Some(*epoch);
            next.to(QueryState::Running)
                .act(Action::CommitCheckpoint { epoch: *epoch })
                .done()
        }
        Input::CheckpointFailed { epoch, cause } => {
            check_in_flight(life, *epoch)?;
            let mut next = Next::from(life);
            next.life().in_flight = None;
            next.to(QueryState::Running)
                .act(Action::AbortCheckpoint { epoch: *epoch })
                .log(LifeEvent::CheckpointAborted {
                    epoch: *epoch,
                    why: cause.clone(),
                })
                .done()
        }
        Input::CheckpointStarted { epoch } => Err(Refusal::CheckpointInFlight {
            in_flight: life.in_flight.unwrap_or(*epoch),
            got: *epoch,
        }),
        Input::TaskFailed { .. } | Input::WorkerDead { .. } => match lost(life, input)? {
            Some((tasks, reason)) => recover(life, tasks, reason),
            None => not_now(life, input),
        },
        Input::AllTasksFinished => finish(life),
        Input::StopRequested => Next::from(life)
            .to(QueryState::Stopping)
            .act(Action::Drain)
            .done(),
        Input::CancelRequested => cancel(life),
        _ => not_now(life, input),
    }
}

/// `epoch` must be the checkpoint in flight.
pub(super) fn check_in_flight(life: &QueryLife, epoch: anduin_types::Epoch) -> Result<(), Refusal> {
    if life.in_flight == Some(epoch) {
        Ok(())
    } else {
        Err(Refusal::NotInFlight {
            in_flight: life.in_flight,
            got: epoch,
        })
    }
}
