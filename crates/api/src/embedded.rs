//! The runtime's handle of an embedded run serves as a [`QueryControl`].

use anduin_runtime::control::Control;

use crate::{
    AutoscaleReport, ChangeRecord, ChangeRequest, CheckpointInfo, ControlFailure, ParamInfo,
    QueryControl, QueryInfo, QueryMetrics, TopologyInfo,
};

impl QueryControl for Control {
    fn info(&self) -> QueryInfo {
        Control::info(self)
    }

    fn params(&self, operator: &str) -> Result<Vec<ParamInfo>, ControlFailure> {
        Control::params(self, operator)
    }

    fn set(&self, request: ChangeRequest) -> Result<ChangeRecord, ControlFailure> {
        Control::set(self, request)
    }

    fn history(&self) -> Vec<ChangeRecord> {
        Control::history(self)
    }

    fn checkpoints(&self) -> Result<Vec<CheckpointInfo>, ControlFailure> {
        Control::checkpoints(self)
    }

    fn checkpoint(&self) -> Result<u64, ControlFailure> {
        Control::checkpoint(self)
    }

    fn stop(&self) -> Result<(), ControlFailure> {
        Control::stop(self)
    }

    fn metrics(&self) -> QueryMetrics {
        Control::metrics(self)
    }

    fn autoscale(&self) -> Result<AutoscaleReport, ControlFailure> {
        Control::autoscale(self)
    }

    fn topology(&self) -> TopologyInfo {
        Control::topology(self)
    }
}
