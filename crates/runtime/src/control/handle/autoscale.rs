//! What the query's autoscaler did, as the control plane shows it.

use super::Control;
use crate::autoscaler::AutoscaleReport;
use crate::control::types::ControlFailure;

impl Control {
    /// The query runs an autoscaler: from now on `autoscale` answers with `report` (and what
    /// the autoscaler records after it).
    pub fn enable_autoscale(&self, report: AutoscaleReport) {
        *self
            .autoscale
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(report);
    }

    /// Updates the autoscaler's report (nothing, when the query runs none).
    pub(crate) fn record_autoscale(&self, f: impl FnOnce(&mut AutoscaleReport)) {
        if let Some(report) = self
            .autoscale
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_mut()
        {
            f(report);
        }
    }

    /// What the autoscaler did: its settings, its latest rounds with their figures, its
    /// rescales and failures. Refused when the query runs none.
    pub fn autoscale(&self) -> Result<AutoscaleReport, ControlFailure> {
        self.autoscale
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
            .ok_or_else(|| ControlFailure::NotAutoscaled {
                query: self.name.clone(),
            })
    }
}
