//! The autoscaler's pure decisions (paper §4.4, DS2): from the figures every operator reports,
//! which operators hold the query back and how many instances each should run, tempered by
//! the guards Flink's autoscaler users asked for.
//!
//! - [`figures`]: the facts a round takes: the logical graph, each operator's figures over
//!   a window, the rescales observed so far, the time.
//! - [`ds2`]: the model: target rates from the sources down, true processing rates,
//!   bottlenecks, catch-up capacity, the parallelism for a target utilisation.
//! - [`guards`]: stabilisation, scale-down delay and factor, fully busy, bounds.
//! - [`decide`]: one round; [`DecisionLog`]: rounds recorded and replayed.
//!
//! What is not here: gathering the figures, carrying out a rescale, a clock, a loop. The
//! round is a function of its inputs: time comes in with the observation, and what the guards
//! remember comes in and goes out as an [`AutoscaleState`]. The loop that runs it beside a
//! query (`anduin run … --autoscale`) is `anduin_runtime::autoscaler` (docs/autoscale.md).
//!
//! # Example
//!
//! A source reading 1000 rows/s into a map that processes 300 rows per busy second: the
//! map is the bottleneck and needs ⌈1000 / (300 × 0.7)⌉ = 5 instances.
//!
//! ```
//! use anduin_coordinator::autoscale::{
//!     decide, AutoscaleConfig, AutoscaleState, Decision, Figures, Observation, OperatorFacts,
//!     UpReason,
//! };
//!
//! let figures = |rows_in: u64, busy_s: u64, out: &[(&str, u64)]| Figures {
//!     window_ms: 10_000,
//!     rows_in,
//!     rows_out: out.iter().map(|(n, r)| (n.to_string(), *r)).collect(),
//!     busy_ns: Some(busy_s * 1_000_000_000),
//!     busy_ratio: None,
//!     backlog: Some(0),
//!     state_bytes: None,
//! };
//! let observation = Observation {
//!     at_ms: 1_700_000_000_000,
//!     operators: vec![
//!         OperatorFacts {
//!             name: "src".into(),
//!             upstream: vec![],
//!             parallelism: 1,
//!             figures: Some(figures(10_000, 1, &[("map", 10_000)])),
//!         },
//!         OperatorFacts {
//!             name: "map".into(),
//!             upstream: vec!["src".into()],
//!             parallelism: 1,
//!             figures: Some(figures(3_000, 10, &[])),
//!         },
//!     ],
//!     rescales: vec![],
//! };
//! let decided = decide(&AutoscaleConfig::default(), &AutoscaleState::default(), &observation)
//!     .expect("a valid observation");
//! assert_eq!(
//!     decided.round.decision("map"),
//!     Some(&Decision::ScaleUp { from: 1, to: 5, required: 5, reason: UpReason::Bottleneck })
//! );
//! // The next round starts from `decided.state`: map is stabilising for 5 minutes.
//! assert_eq!(decided.state.operators["map"].last_change_ms, Some(1_700_000_000_000));
//! ```

mod config;
mod decision;
pub mod ds2;
mod error;
pub mod figures;
mod graph;
pub mod guards;
mod log;
mod round;
mod state;
#[cfg(test)]
mod tests;

pub use config::{
    AutoscaleConfig, Bounds, ConfigError, DEFAULT_MAX_PARALLELISM, MAX_PARALLELISM_LIMIT,
    MAX_SOURCE_RATE,
};
pub use decision::{
    Decision, DownReason, HoldReason, KeepReason, OperatorDecision, Round, UpReason,
};
pub use ds2::{Estimate, Missing};
pub use error::AutoscaleError;
pub use figures::{
    expected_rescale_ms, Figures, Observation, OperatorFacts, OperatorName, RescaleFact,
};
pub use log::{DecisionLog, LoggedRound, ReplayError};
pub use round::{decide, Decided};
pub use state::{AutoscaleState, OperatorMemory, PendingScaleDown};
