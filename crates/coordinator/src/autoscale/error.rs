//! Why a round cannot decide at all. (A single operator's missing or odd figures are not
//! errors: that operator gets [`super::HoldReason::MissingFigures`] and the others are decided.)

use super::config::ConfigError;
use super::figures::OperatorName;

/// A round refused as a whole: nothing is decided and the state is unchanged.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum AutoscaleError {
    /// The settings cannot work.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Two operators of the observation share a name.
    #[error(
        "the observation lists operator `{operator}` twice; each operator must be listed once"
    )]
    DuplicateOperator {
        /// The name.
        operator: OperatorName,
    },
    /// An operator reads from one the observation does not list.
    #[error("operator `{operator}` reads from `{upstream}`, which the observation does not list; list every operator of the logical graph")]
    UnknownUpstream {
        /// The reader.
        operator: OperatorName,
        /// The missing operator.
        upstream: OperatorName,
    },
    /// The graph has a cycle: there is no order from the sources, so the model does not apply.
    #[error("the graph has a cycle through or after {}: the autoscaler's rate model needs an acyclic graph, so it cannot decide for this query", operators.join(", "))]
    Cycle {
        /// The operators on a cycle or downstream of one.
        operators: Vec<OperatorName>,
    },
    /// An operator runs no instance: the observation is not of a running query.
    #[error(
        "operator `{operator}` runs 0 instances; the autoscaler decides for running operators only"
    )]
    ZeroParallelism {
        /// The operator.
        operator: OperatorName,
    },
    /// The settings name an operator the graph does not have.
    #[error("autoscale setting `{field}` names operator `{operator}`, which the query does not have; remove it or fix the name")]
    UnknownConfiguredOperator {
        /// The setting.
        field: &'static str,
        /// The name.
        operator: OperatorName,
    },
    /// The observation is older than the last round's: rounds must come in time order.
    #[error("the observation at {at_ms} ms is older than the last round's at {last_ms} ms; rounds must be decided in time order")]
    TimeWentBack {
        /// This observation's time.
        at_ms: u64,
        /// The last round's time.
        last_ms: u64,
    },
}
