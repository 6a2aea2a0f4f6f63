//! Scheduling: the query's tasks await slots.
//!
//! Once every task has one, the tasks start from scratch and the query runs. If they cannot all
//! be placed, the query fails, naming the slots it needed and found. Nothing runs yet, so a
//! worker dying changes nothing here (the placement is chosen over live workers), and a stop
//! is a cancel.

use super::{
    cancel, check_covers, fail, lost, not_now, recover, Action, FailureReason, Input, Next,
    QueryLife, QueryState, Refusal, Step,
};

pub(super) fn on(life: &QueryLife, input: &Input) -> Result<Step, Refusal> {
    match input {
        Input::Placed { placement } => {
            check_covers(life, placement)?;
            let mut next = Next::from(life);
            let l = next.life();
            l.placement = placement.clone();
            l.awaiting.clear();
            next.to(QueryState::Running)
                .act(Action::StartTasks {
                    placement: placement.clone(),
                })
                .done()
        }
        Input::PlacementImpossible { needed, free, why } => fail(
            life,
            FailureReason::CannotPlace {
                needed: *needed,
                free: *free,
                why: why.clone(),
            },
        ),
        // No task is placed yet: a task failure is stale, a dead worker holds none of ours.
        Input::TaskFailed { .. } | Input::WorkerDead { .. } => match lost(life, input)? {
            Some((tasks, reason)) => recover(life, tasks, reason),
            None => not_now(life, input),
        },
        Input::CancelRequested | Input::StopRequested => cancel(life),
        _ => not_now(life, input),
    }
}
