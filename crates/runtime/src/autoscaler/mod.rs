//! The autoscaler wired to a running query (`anduin run … --autoscale`): a loop beside the
//! query that turns its live figures into the observations the autoscaler's pure decisions
//! take (`anduin_coordinator::autoscale`, DS2 with Flink's guards) and carries out the
//! rescales they decide, as live rescales of the operators that run spare instances
//! (`--max-parallelism`).
//!
//! - [`settings`](AutoscaleSettings): `--autoscale-set KEY=VALUE`, and the settings fitted
//!   to the query's graph (only operators that can be rescaled while they run ever change);
//! - [`observation`]: two snapshots of the live figures → one window's observation (pure);
//! - [`beside`]: a loop beside a running query that hands a [`Round`] each window's
//!   observation (the autoscaler's rounds, and the rules applied at run time);
//! - [`start`]: the autoscaler; its decision log, the rescales it carried out and its failures
//!   are the [`AutoscaleReport`] that `anduin ctl autoscale` and
//!   `GET /api/v1/queries/{query}/autoscale` show, and that replays
//!   ([`anduin_coordinator::autoscale::DecisionLog::replay`]).
//!
//! What is not here: the decisions themselves (the coordinator crate), the rescale (the
//! control plane and [`crate::rescale`]), the autoscaler of a cluster's query.

mod beside;
mod driver;
mod observe;
mod settings;

use anduin_coordinator::autoscale::{AutoscaleState, DecisionLog, RescaleFact};
use serde::{Deserialize, Serialize};

pub use beside::{beside, current_parallelism, Beside, Round};
pub use driver::{start, Autoscaler, FROM};
pub use observe::observation;
pub use settings::{
    apply_setting, fit, pin, AutoscaleSettings, Rescalable, SettingError, DEFAULT_INTERVAL,
    DEFAULT_KEEP_ROUNDS,
};

/// How many failures the report keeps (the latest).
pub const FAILURES_KEPT: usize = 20;

/// What a query's autoscaler has done: its settings and rounds (the decision log, which
/// replays), the rescales it carried out, and what failed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AutoscaleReport {
    /// The time between rounds, in milliseconds: the window each round's figures cover.
    pub interval_ms: u64,
    /// The settings (fitted to the query) and the latest rounds, each with its observation.
    pub log: DecisionLog,
    /// The rescales it carried out, latest last (as many as `rescale_history` keeps).
    #[serde(default)]
    pub rescales: Vec<RescaleFact>,
    /// What failed: a round refused, a rescale that did not go through (latest last).
    #[serde(default)]
    pub failures: Vec<AutoscaleFailure>,
}

impl AutoscaleReport {
    /// A report before the first round, for settings not fitted yet.
    pub fn new(settings: &AutoscaleSettings) -> Self {
        AutoscaleReport {
            interval_ms: u64::try_from(settings.interval.as_millis()).unwrap_or(u64::MAX),
            log: DecisionLog::new(settings.config.clone(), AutoscaleState::default()),
            rescales: Vec::new(),
            failures: Vec::new(),
        }
    }
}

/// Something the autoscaler could not do.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AutoscaleFailure {
    /// When, in milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// The operator it concerned, if one.
    pub operator: Option<String>,
    /// What happened.
    pub message: String,
}
