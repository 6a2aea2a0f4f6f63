//! Submitted: the query is in the catalog and nothing of it runs yet.
//!
//! Its submission being durable, its tasks go to be placed. Cancelled or stopped now, it simply
//! ends: nothing ran, so there is nothing to drain.

use super::{cancel, not_now, Action, Input, Next, QueryLife, QueryState, Refusal, Step};

pub(super) fn on(life: &QueryLife, input: &Input) -> Result<Step, Refusal> {
    match input {
        Input::Submitted => {
            let mut next = Next::from(life);
            let tasks = next.life().tasks.clone();
            next.life().awaiting = tasks.clone();
            next.to(QueryState::Scheduling)
                .act(Action::PlaceTasks { tasks })
                .done()
        }
        Input::CancelRequested | Input::StopRequested => cancel(life),
        _ => not_now(life, input),
    }
}
