//! Running: every task has a slot and runs; no checkpoint is in flight.
//!
//! A due checkpoint injects its barriers. A lost task (failed, or on a dead worker) starts a
//! per-task recovery. A stop drains the query; the end of every task finishes it.

use super::{
    cancel, finish, lost, not_now, recover, Action, Input, Next, QueryLife, QueryState, Refusal,
    Step,
};

pub(super) fn on(life: &QueryLife, input: &Input) -> Result<Step, Refusal> {
    match input {
        Input::CheckpointStarted { epoch } => {
            if let Some(last) = life.last_epoch().filter(|last| *epoch <= *last) {
                return Err(Refusal::EpochNotAfter { last, got: *epoch });
            }
            let mut next = Next::from(life);
            let l = next.life();
            l.in_flight = Some(*epoch);
            l.last_started = Some(*epoch);
            next.to(QueryState::Checkpointing { epoch: *epoch })
                .act(Action::InjectBarrier { epoch: *epoch })
                .done()
        }
        Input::CheckpointCompleted { epoch } | Input::CheckpointFailed { epoch, .. } => {
            Err(Refusal::NotInFlight {
                in_flight: None,
                got: *epoch,
            })
        }
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
