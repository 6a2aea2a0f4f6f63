//! One round: facts and the remembered state in, every operator's decision and the next state
//! out. Deterministic: no clock, no randomness, no I/O; the same inputs give the same round.

use std::collections::BTreeMap;

use super::config::AutoscaleConfig;
use super::decision::{OperatorDecision, Round};
use super::ds2::model;
use super::error::AutoscaleError;
use super::figures::{expected_rescale_ms, Observation};
use super::graph::topological;
use super::guards::guard;
use super::state::AutoscaleState;

/// A round's answer: the decisions, and the state to pass to the next round.
#[derive(Clone, Debug, PartialEq)]
#[must_use]
pub struct Decided {
    /// The decisions, with the figures they came from.
    pub round: Round,
    /// The state after this round.
    pub state: AutoscaleState,
}

/// Decides every operator of `observation`, given the `state` the previous round returned
/// (`AutoscaleState::default()` for the first). Refused as a whole (nothing decided, nothing
/// remembered) when the settings are invalid, the graph is malformed or cyclic, or the
/// observation is older than the last round.
pub fn decide(
    config: &AutoscaleConfig,
    state: &AutoscaleState,
    observation: &Observation,
) -> Result<Decided, AutoscaleError> {
    config.validate()?;
    if let Some(last_ms) = state.last_round_ms {
        if observation.at_ms < last_ms {
            return Err(AutoscaleError::TimeWentBack {
                at_ms: observation.at_ms,
                last_ms,
            });
        }
    }
    let ordered = topological(observation)?;
    check_names(config, observation)?;
    let expected = expected_rescale_ms(&observation.rescales, config.rescale_history);
    let models = model(config, &ordered, expected);
    let mut rescaled: BTreeMap<&str, u64> = BTreeMap::new();
    for r in &observation.rescales {
        let end = rescaled.entry(r.operator.as_str()).or_insert(0);
        *end = (*end).max(r.finished_at_ms);
    }
    let mut next = AutoscaleState {
        last_round_ms: Some(observation.at_ms),
        operators: BTreeMap::new(),
    };
    let mut decisions = Vec::with_capacity(ordered.len());
    for op in ordered {
        let memory = state.operators.get(&op.name).cloned().unwrap_or_default();
        let modelled = models
            .get(&op.name)
            .expect("the model answers for every operator it was given");
        let last_rescale = rescaled.get(op.name.as_str()).copied();
        let (decision, memory) = guard(
            config,
            op,
            modelled,
            &memory,
            last_rescale,
            observation.at_ms,
        );
        if !memory.is_empty() {
            next.operators.insert(op.name.clone(), memory);
        }
        decisions.push(OperatorDecision {
            operator: op.name.clone(),
            decision,
            estimate: modelled.estimate().cloned(),
            figures: op.figures.clone(),
        });
    }
    let round = Round {
        at_ms: observation.at_ms,
        expected_rescale_ms: expected,
        decisions,
    };
    tracing::debug!(
        at_ms = round.at_ms,
        operators = round.decisions.len(),
        changes = round.changes().len(),
        expected_rescale_ms = ?round.expected_rescale_ms,
        "autoscaler round decided"
    );
    Ok(Decided { round, state: next })
}

/// The settings name only operators of the graph (and configured rates only sources).
fn check_names(config: &AutoscaleConfig, observation: &Observation) -> Result<(), AutoscaleError> {
    let find = |name: &str| observation.operators.iter().find(|op| op.name == name);
    for name in config.bounds.keys() {
        if find(name).is_none() {
            return Err(AutoscaleError::UnknownConfiguredOperator {
                field: "bounds",
                operator: name.clone(),
            });
        }
    }
    for name in config.source_rates.keys() {
        if !find(name).is_some_and(|op| op.upstream.is_empty()) {
            return Err(AutoscaleError::UnknownConfiguredOperator {
                field: "source_rates",
                operator: name.clone(),
            });
        }
    }
    Ok(())
}
