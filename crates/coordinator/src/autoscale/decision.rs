//! What a round answers for each operator, with the figures it came from: the record that
//! `anduin ctl autoscale` shows and that a replay must reproduce.

use serde::{Deserialize, Serialize};

use super::ds2::{Estimate, Missing};
use super::figures::{Figures, OperatorName};

/// The autoscaler's answer for one operator.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Decision {
    /// The parallelism is right (or as right as the bounds allow).
    Keep {
        /// The parallelism, unchanged.
        parallelism: u32,
        /// Why.
        reason: KeepReason,
    },
    /// Give it more instances.
    ScaleUp {
        /// Its parallelism now.
        from: u32,
        /// Its new parallelism (within its bounds).
        to: u32,
        /// What the model asked for, before bounds.
        required: u64,
        /// Why.
        reason: UpReason,
    },
    /// Take instances away.
    ScaleDown {
        /// Its parallelism now.
        from: u32,
        /// Its new parallelism (within its bounds; the highest recommended during the
        /// scale-down delay).
        to: u32,
        /// What the model asks for now, before bounds.
        required: u64,
        /// The maximum scale-down factor kept it from going lower.
        limited_by_max_factor: bool,
        /// Why.
        reason: DownReason,
    },
    /// A guard (or missing figures) keeps the parallelism for now, whatever the model says.
    Hold {
        /// The parallelism, unchanged.
        parallelism: u32,
        /// Which guard, or which figure is missing.
        reason: HoldReason,
    },
}

impl Decision {
    /// The parallelism the operator has after the decision is carried out.
    pub fn parallelism_after(&self) -> u32 {
        match self {
            Decision::Keep { parallelism, .. } | Decision::Hold { parallelism, .. } => *parallelism,
            Decision::ScaleUp { to, .. } | Decision::ScaleDown { to, .. } => *to,
        }
    }

    /// It changes the parallelism.
    pub fn is_change(&self) -> bool {
        matches!(self, Decision::ScaleUp { .. } | Decision::ScaleDown { .. })
    }
}

/// Why the parallelism stays.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum KeepReason {
    /// The model asks for the parallelism it has.
    OnTarget,
    /// It needs more than its maximum and already has the maximum.
    AtMaximum {
        /// What the model asked for.
        required: u64,
    },
    /// It needs fewer than its minimum and already has the minimum.
    AtMinimum {
        /// What the model asked for.
        required: u64,
    },
}

/// Why it scales up.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum UpReason {
    /// It runs fewer instances than its minimum.
    BelowMinimum,
    /// Its capacity is below its target rate: it holds the query back.
    Bottleneck,
    /// It keeps up, but above the target utilisation.
    AboveUtilisation,
    /// It keeps up at the target utilisation, but not while draining its backlog.
    CatchUp,
}

/// Why it scales down.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum DownReason {
    /// It runs more instances than its maximum (bounds win over the guards).
    AboveMaximum,
    /// Fewer instances keep up at the target utilisation (recommended for the whole
    /// scale-down delay).
    Underused,
}

/// Why a guard holds the parallelism.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum HoldReason {
    /// Its parallelism changed recently; no decision until the stabilisation window passes.
    Stabilising {
        /// When it passes, ms since the Unix epoch.
        until_ms: u64,
    },
    /// A lower parallelism is recommended, but not yet for the whole scale-down delay.
    ScaleDownDelay {
        /// The highest lower parallelism recommended since `since_ms`: what it will go to.
        to: u32,
        /// Since when a lower parallelism has been recommended.
        since_ms: u64,
        /// When the delay passes, if it is still recommended then.
        until_ms: u64,
    },
    /// A lower parallelism is recommended, but it is fully busy: never scaled down.
    FullyBusy {
        /// Its busy ratio.
        busy_ratio: f64,
        /// What the model would scale it down to.
        wanted: u32,
    },
    /// A figure the decision needs is missing.
    MissingFigures {
        /// Which.
        missing: Missing,
    },
}

/// One operator's decision and what it came from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OperatorDecision {
    /// The operator.
    pub operator: OperatorName,
    /// The decision.
    pub decision: Decision,
    /// What the model derived (`None` when its target rate is unknown).
    pub estimate: Option<Estimate>,
    /// The figures it measured (`None` when none were reported).
    pub figures: Option<Figures>,
}

/// One round's decisions, every operator in topological order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[must_use]
pub struct Round {
    /// The observation's time, ms since the Unix epoch.
    pub at_ms: u64,
    /// The expected rescale time catch-up counted with (the longest recently observed);
    /// `None` before any rescale was observed (then none is counted).
    pub expected_rescale_ms: Option<u64>,
    /// One per operator.
    pub decisions: Vec<OperatorDecision>,
}

impl Round {
    /// The decision for `operator`.
    pub fn decision(&self, operator: &str) -> Option<&Decision> {
        self.decisions
            .iter()
            .find(|d| d.operator == operator)
            .map(|d| &d.decision)
    }

    /// The operators whose parallelism changes, with their new parallelism.
    pub fn changes(&self) -> Vec<(&str, u32)> {
        self.decisions
            .iter()
            .filter(|d| d.decision.is_change())
            .map(|d| (d.operator.as_str(), d.decision.parallelism_after()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_decision_is_written_as_tagged_json_and_read_back() {
        let d = Decision::Hold {
            parallelism: 3,
            reason: HoldReason::MissingFigures {
                missing: Missing::NoTrueRate {
                    rows_in: 10,
                    busy_ns: None,
                },
            },
        };
        let json = serde_json::to_string(&d).expect("serialisable");
        assert_eq!(
            json,
            r#"{"decision":"hold","parallelism":3,"reason":{"kind":"missing-figures","missing":{"missing":"no-true-rate","rows_in":10,"busy_ns":null}}}"#
        );
        let back: Decision = serde_json::from_str(&json).expect("read back");
        assert_eq!(back, d);
        let up = Decision::ScaleUp {
            from: 1,
            to: 3,
            required: 3,
            reason: UpReason::Bottleneck,
        };
        assert_eq!(up.parallelism_after(), 3);
        assert!(up.is_change());
    }
}
