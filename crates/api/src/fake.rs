//! A stand-in [`QueryControl`] for tests and examples of the API: a query `source → low →
//! out` whose filter `low` has one adjustable param, `condition` (`value < 40`), that takes
//! changes, checkpoints and a stop at once and reports fixed figures, and whose autoscaler has
//! decided no round yet. It runs nothing.

use std::sync::{Mutex, MutexGuard, PoisonError};

use anduin_runtime::control::{
    CheckpointMetrics, InstanceMetrics, OperatorInfo, QueryState, TaskInfo,
};

use crate::{
    ChangeRecord, ChangeRequest, CheckpointInfo, ControlFailure, ParamInfo, QueryControl,
    QueryInfo, QueryMetrics,
};

/// When every fake query started: 2026-01-01T00:00:00Z.
pub const STARTED_MS: i64 = 1_767_225_600_000;

/// A fake query; see the module's documentation.
#[derive(Debug)]
pub struct FakeQuery {
    name: String,
    checkpointing: bool,
    inner: Mutex<Inner>,
}

#[derive(Debug)]
struct Inner {
    state: QueryState,
    condition: String,
    epoch: u64,
    history: Vec<ChangeRecord>,
    checkpoints: Vec<CheckpointInfo>,
}

impl FakeQuery {
    /// A running fake query named `name`, taking checkpoints.
    pub fn new(name: &str) -> Self {
        Self {
            name: name.to_string(),
            checkpointing: true,
            inner: Mutex::new(Inner {
                state: QueryState::Running,
                condition: "value < 40".to_string(),
                epoch: 0,
                history: Vec::new(),
                checkpoints: Vec::new(),
            }),
        }
    }

    /// The same, without checkpoints (`checkpoints` and `checkpoint` are refused).
    pub fn without_checkpoints(name: &str) -> Self {
        Self {
            checkpointing: false,
            ..Self::new(name)
        }
    }

    /// Its state now (`Stopping` once asked to stop).
    pub fn state(&self) -> QueryState {
        self.lock().state
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn unknown(&self, operator: &str) -> ControlFailure {
        ControlFailure::UnknownOperator {
            query: self.name.clone(),
            operator: operator.to_string(),
            hint: " (its operators: source, low, out)".to_string(),
        }
    }

    fn running(&self, inner: &Inner, what: &str) -> Result<(), ControlFailure> {
        match inner.state {
            QueryState::Running => Ok(()),
            other => Err(ControlFailure::NotRunning {
                query: self.name.clone(),
                state: format!("{other:?}").to_lowercase(),
                what: what.to_string(),
            }),
        }
    }
}

fn operator(
    name: &str,
    kind: &str,
    inputs: &[&str],
    outputs: &[&str],
    adjustable: &[&str],
) -> OperatorInfo {
    let strings = |s: &[&str]| s.iter().map(|s| s.to_string()).collect();
    OperatorInfo {
        name: name.into(),
        kind: kind.into(),
        inputs: strings(inputs),
        outputs: strings(outputs),
        parallelism: 1,
        task: 0,
        stateful: false,
        adjustable: strings(adjustable),
        max_parallelism: None,
        owners: None,
    }
}

impl QueryControl for FakeQuery {
    fn info(&self) -> QueryInfo {
        QueryInfo {
            name: self.name.clone(),
            file: Some(format!("{}.flow", self.name)),
            started_ms: STARTED_MS,
            state: self.lock().state,
            checkpointing: self.checkpointing,
            operators: vec![
                operator("source", "reader", &[], &["readings"], &[]),
                operator("low", "filter", &["readings"], &["lows"], &["condition"]),
                operator("out", "writer", &["lows"], &[], &[]),
            ],
            tasks: vec![TaskInfo {
                id: 0,
                operators: vec!["source".into(), "low".into(), "out".into()],
                instances: 1,
            }],
            written: Vec::new(),
        }
    }

    fn params(&self, operator: &str) -> Result<Vec<ParamInfo>, ControlFailure> {
        match operator {
            "low" => Ok(vec![ParamInfo {
                name: "condition".into(),
                kind: "expression".into(),
                value: self.lock().condition.clone(),
                doc: "The rows that pass.".into(),
            }]),
            "source" | "out" => Ok(Vec::new()),
            other => Err(self.unknown(other)),
        }
    }

    fn set(&self, request: ChangeRequest) -> Result<ChangeRecord, ControlFailure> {
        if !["source", "low", "out"].contains(&request.operator.as_str()) {
            return Err(self.unknown(&request.operator));
        }
        if request.operator != "low" || request.param != "condition" {
            return Err(ControlFailure::NotAdjustable {
                operator: request.operator,
                param: request.param,
                adjustable: "low has `condition`; source and out have none".into(),
                can: Vec::new(),
                exists: false,
            });
        }
        if !request.value.contains(['<', '>', '=']) {
            return Err(ControlFailure::Invalid {
                operator: request.operator,
                param: request.param,
                message: format!(
                    "<value>:1:1: expected a condition such as `value < 30`, found `{}`",
                    request.value
                ),
            });
        }
        let mut inner = self.lock();
        self.running(&inner, "change a param")?;
        inner.epoch += 1;
        let record = ChangeRecord {
            seq: inner.history.len() as u64 + 1,
            time_ms: STARTED_MS + 1000 * inner.epoch as i64,
            epoch: inner.epoch,
            operator: request.operator,
            param: request.param,
            old: std::mem::replace(&mut inner.condition, request.value.clone()),
            new: request.value,
            from: request.from,
        };
        inner.history.push(record.clone());
        Ok(record)
    }

    fn history(&self) -> Vec<ChangeRecord> {
        self.lock().history.clone()
    }

    fn checkpoints(&self) -> Result<Vec<CheckpointInfo>, ControlFailure> {
        if !self.checkpointing {
            return Err(ControlFailure::NoCheckpoints {
                query: self.name.clone(),
            });
        }
        Ok(self.lock().checkpoints.clone())
    }

    fn checkpoint(&self) -> Result<u64, ControlFailure> {
        self.checkpoints()?;
        let mut inner = self.lock();
        self.running(&inner, "take a checkpoint")?;
        inner.epoch += 1;
        let c = CheckpointInfo {
            epoch: inner.epoch,
            time_ms: STARTED_MS + 1000 * inner.epoch as i64,
            finished: false,
            size_bytes: 1024,
        };
        inner.checkpoints.push(c);
        Ok(inner.epoch)
    }

    fn stop(&self) -> Result<(), ControlFailure> {
        let mut inner = self.lock();
        self.running(&inner, "stop")?;
        inner.state = QueryState::Stopping;
        Ok(())
    }

    /// An autoscaler with the default settings that has decided no round yet.
    fn autoscale(&self) -> Result<crate::AutoscaleReport, ControlFailure> {
        Ok(crate::AutoscaleReport::new(
            &anduin_runtime::autoscaler::AutoscaleSettings::default(),
        ))
    }

    fn metrics(&self) -> QueryMetrics {
        let inner = self.lock();
        let instance = |operator: &str, rows_in, rows_out| InstanceMetrics {
            operator: operator.into(),
            instance: 0,
            rows_in,
            rows_out,
            batches_in: Some(rows_in.div_ceil(100)),
            busy_ns: Some(2_000_000),
            ..InstanceMetrics::default()
        };
        QueryMetrics {
            instances: vec![
                instance("source", 0, 1000),
                instance("low", 1000, 400),
                instance("out", 400, 400),
            ],
            checkpoints: self.checkpointing.then(|| CheckpointMetrics {
                started: inner.checkpoints.len() as u64,
                completed: inner.checkpoints.len() as u64,
                last_epoch: inner.checkpoints.last().map(|c| c.epoch),
                last_completed_ms: inner.checkpoints.last().map(|c| c.time_ms),
                ..CheckpointMetrics::default()
            }),
            control_changes: inner.history.len() as u64,
            dead_letters: 0,
            dead_letters_by_operator: Default::default(),
            recent_rejects: Vec::new(),
            not_gathered: None,
        }
    }
}
