//! Live pipelining as the control plane sees it: the checks of a `pipeline` change, and the
//! tasks a split adds (see `crate::pipelining`).

use std::collections::BTreeMap;

use super::Control;
use crate::control::types::{
    ChangeRequest, ControlFailure, ExchangeInfo, InstancePlacement, TaskInfo, TaskPlacement,
};
use crate::pipelining::SPLIT;

/// One instance of a task split while the query runs (a cluster's executor tells the control
/// plane at its coordinator, [`crate::Event::TaskSplit`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TaskSplit {
    /// The task it split from.
    pub from_task: usize,
    /// The operator (or source) before the cut, which feeds the new task.
    pub from_operator: String,
    /// The new task.
    pub task: usize,
    /// Which of its instances this is (the instance of `from_task` of the same number feeds
    /// it).
    pub instance: usize,
    /// How many instances the new task has.
    pub instances: usize,
    /// The instance's number in the run.
    pub id: usize,
    /// The operators it took, head first.
    pub operators: Vec<String>,
}

impl Control {
    /// A live `pipeline` change is refused with `why` (`None`: it is taken): a run that
    /// cannot split its tasks while they run (a cluster's) says so instead.
    pub(crate) fn refuse_live_pipelining(&self, why: Option<String>) {
        *self
            .pipelining_refused
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = why;
    }

    /// Live `pipeline` changes of `operators` are refused with `why`.
    pub(crate) fn refuse_pipelining_of(&self, operators: Vec<String>, why: &str) {
        let mut refused = self
            .pipelining_refused_for
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for o in operators {
            refused.insert(o, why.to_string());
        }
    }

    /// Checks a `pipeline` change: only `split`, only where the run can split, only once, and
    /// never back (`earlier`: the values the changes sent so far gave the operator's params).
    pub(super) fn check_pipeline(
        &self,
        request: &ChangeRequest,
        earlier: &BTreeMap<String, String>,
    ) -> Result<(), ControlFailure> {
        let invalid = |message: String| ControlFailure::Invalid {
            operator: request.operator.clone(),
            param: request.param.clone(),
            message,
        };
        let refused = self
            .pipelining_refused
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        if let Some(why) = refused {
            return Err(invalid(format!("operator \"{}\": {why}", request.operator)));
        }
        let refused_here = self
            .pipelining_refused_for
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&request.operator)
            .cloned();
        if let Some(why) = refused_here {
            return Err(invalid(format!("operator \"{}\": {why}", request.operator)));
        }
        let split = earlier.get(&request.param).is_some_and(|v| v == SPLIT);
        if request.value == SPLIT && split {
            // Nothing would move: no barrier, no history entry (as a rescale to the
            // instances it has).
            return Err(invalid(format!(
                "operator \"{}\" is split already (`pipeline = \"split\"` was asked for \
                 before, in this run or in the run its checkpoint is from); nothing changed",
                request.operator
            )));
        }
        if request.value == SPLIT {
            return Ok(());
        }
        // Going back: a value the plan takes for an operator not split.
        let back = ["fused", "chain", "none", ""].contains(&request.value.as_str());
        if split && back {
            return Err(invalid(format!(
                "operator \"{}\" was split from the operators before it while the query ran; \
                 fusing it with them again (`pipeline = {:?}`) is not supported while running: \
                 a split is one way (a run resumed from a later checkpoint keeps it; a run \
                 started afresh fuses the chain again)",
                request.operator, request.value
            )));
        }
        Err(invalid(format!(
            "{:?} is not a value `pipeline` takes while the query runs: the only one is \
             \"split\" (the operator and the operators after it in its task run as a task of \
             their own from the barrier that carries the change; going back to fused is not \
             supported while running)",
            request.value
        )))
    }

    /// An instance of a task split while the query runs: the tasks and the topology show it,
    /// the instance on the worker of the instance it split from. Told again (a part restored
    /// from a checkpoint taken before the split splits again), it changes nothing.
    pub(crate) fn task_split(&self, split: &TaskSplit) {
        self.report(crate::protocol::Event::TaskSplit(split.clone()));
        // No growth from now on: a rollback would restart the query split, and a run that
        // resumes split does not grow (it would lose the rescale).
        self.stop_growing(crate::grow::SPLIT_WHILE_RUNNING);
        let mut inner = self.lock();
        let moved = |name: &String| split.operators.contains(name);
        for t in inner.tasks.iter_mut().filter(|t| t.id == split.from_task) {
            t.operators.retain(|o| !moved(o));
        }
        if !inner.tasks.iter().any(|t| t.id == split.task) {
            inner.tasks.push(TaskInfo {
                id: split.task,
                operators: split.operators.clone(),
                instances: split.instances,
            });
        }
        for o in inner.operators.iter_mut().filter(|o| moved(&o.name)) {
            o.task = split.task;
        }
        let topology = &mut inner.topology;
        for t in topology
            .tasks
            .iter_mut()
            .filter(|t| t.id == split.from_task)
        {
            t.operators.retain(|o| !moved(o));
        }
        let worker = topology
            .tasks
            .iter()
            .find(|t| t.id == split.from_task)
            .and_then(|t| t.instances.iter().find(|i| i.instance == split.instance))
            .map_or(0, |i| i.worker);
        let placement = InstancePlacement {
            instance: split.instance,
            id: split.id,
            worker,
        };
        let known = topology
            .tasks
            .iter()
            .find(|t| t.id == split.task)
            .is_some_and(|t| t.instances.iter().any(|i| i.instance == split.instance));
        if known {
            return;
        }
        match topology.tasks.iter_mut().find(|t| t.id == split.task) {
            Some(t) => t.instances.push(placement),
            None => topology.tasks.push(TaskPlacement {
                id: split.task,
                operators: split.operators.clone(),
                instances: vec![placement],
            }),
        }
        // The exchanges the moved operators feed are theirs now.
        for e in topology
            .exchanges
            .iter_mut()
            .filter(|e| e.from_task == split.from_task && moved(&e.from_operator))
        {
            e.from_task = split.task;
        }
        let to = split.operators.first().cloned().unwrap_or_default();
        match topology
            .exchanges
            .iter_mut()
            .find(|e| e.to_task == split.task && e.from_task == split.from_task)
        {
            Some(e) => e.channels += 1,
            None => topology.exchanges.push(ExchangeInfo {
                from_task: split.from_task,
                from_operator: split.from_operator.clone(),
                to_task: split.task,
                to_operator: to,
                to_input: 0,
                partitioning: "forward".into(),
                keys: Vec::new(),
                channels: 1,
                remote_channels: 0,
            }),
        }
    }
}
