//! What the autoscaler remembers between rounds, as a value: passed in to each round and
//! returned by it, never kept inside. The shell stores it (and may record it with the round),
//! so a round replayed from the same state and observation decides the same.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::figures::OperatorName;

/// The memory of the rounds so far.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AutoscaleState {
    /// The last round's time, ms since the Unix epoch (`None`: no round yet).
    pub last_round_ms: Option<u64>,
    /// Per operator, what there is to remember (operators with nothing are left out).
    pub operators: BTreeMap<OperatorName, OperatorMemory>,
}

/// What one operator's guards remember.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperatorMemory {
    /// When a round last decided to change its parallelism, ms since the Unix epoch. The
    /// returned state assumes every change decided is carried out; a shell that could not
    /// carry one out passes the state from before that round instead.
    pub last_change_ms: Option<u64>,
    /// A lower parallelism recommended in every round since some time.
    pub pending_down: Option<PendingScaleDown>,
}

impl OperatorMemory {
    /// Nothing to remember.
    pub(crate) fn is_empty(&self) -> bool {
        *self == OperatorMemory::default()
    }
}

/// A scale-down waiting for its delay.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingScaleDown {
    /// Since when a lower parallelism has been recommended without a break.
    pub since_ms: u64,
    /// The highest of the lower parallelisms recommended since then: what it scales to.
    pub to: u32,
}
