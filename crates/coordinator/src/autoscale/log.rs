//! The decision log: the settings, the state before the first recorded round, and each
//! round's observation, decisions and resulting state. Serialisable, so that `anduin ctl
//! autoscale` can show it and a recorded log can be checked by deciding it again
//! ([`DecisionLog::replay`]).

use serde::{Deserialize, Serialize};

use super::config::AutoscaleConfig;
use super::decision::Round;
use super::error::AutoscaleError;
use super::figures::Observation;
use super::round::decide;
use super::state::AutoscaleState;

/// Rounds decided one after another, each with what it was decided from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DecisionLog {
    /// The settings every round used.
    pub config: AutoscaleConfig,
    /// The state before the first round kept.
    pub initial: AutoscaleState,
    /// The rounds, oldest first.
    pub rounds: Vec<LoggedRound>,
}

/// One recorded round.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoggedRound {
    /// What it looked at.
    pub observation: Observation,
    /// What it decided.
    pub round: Round,
    /// The state it returned.
    pub state: AutoscaleState,
}

/// A recorded log that does not decide again as recorded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// A recorded round is refused now.
    #[error("round {round} of the decision log is refused on replay: {source}")]
    Refused {
        /// Its index in the log.
        round: usize,
        /// Why.
        source: AutoscaleError,
    },
    /// A round decides differently (or remembers differently) than recorded.
    #[error(
        "round {round} of the decision log (at {at_ms} ms) decides differently on replay: {what}"
    )]
    Diverged {
        /// Its index in the log.
        round: usize,
        /// Its time.
        at_ms: u64,
        /// The first difference: the operator, or the state.
        what: String,
    },
}

impl DecisionLog {
    /// An empty log that decides with `config`, starting from `initial`.
    pub fn new(config: AutoscaleConfig, initial: AutoscaleState) -> Self {
        DecisionLog {
            config,
            initial,
            rounds: Vec::new(),
        }
    }

    /// The state the next round starts from.
    pub fn state(&self) -> &AutoscaleState {
        self.rounds.last().map_or(&self.initial, |r| &r.state)
    }

    /// The last round recorded.
    pub fn last(&self) -> Option<&Round> {
        self.rounds.last().map(|r| &r.round)
    }

    /// Decides `observation` after the rounds recorded, records it and returns its round. A
    /// refused round is not recorded.
    pub fn record(&mut self, observation: Observation) -> Result<&Round, AutoscaleError> {
        let decided = decide(&self.config, self.state(), &observation)?;
        self.rounds.push(LoggedRound {
            observation,
            round: decided.round,
            state: decided.state,
        });
        Ok(&self.rounds.last().expect("just pushed").round)
    }

    /// Keeps only the latest `n` rounds; the state before the first kept becomes the initial
    /// state, so the log still replays.
    pub fn keep_last(&mut self, n: usize) {
        let drop = self.rounds.len().saturating_sub(n);
        if drop == 0 {
            return;
        }
        let dropped: Vec<LoggedRound> = self.rounds.drain(..drop).collect();
        if let Some(last) = dropped.into_iter().last() {
            self.initial = last.state;
        }
    }

    /// Decides every recorded observation again, from the initial state, and compares each
    /// round and state with the recorded one (as JSON, so a log read back from a file compares
    /// the same as one in memory).
    pub fn replay(&self) -> Result<(), ReplayError> {
        let mut state = self.initial.clone();
        for (i, logged) in self.rounds.iter().enumerate() {
            let decided = decide(&self.config, &state, &logged.observation)
                .map_err(|source| ReplayError::Refused { round: i, source })?;
            if let Some(what) = first_difference(&logged.round, &decided.round).or_else(|| {
                (json(&logged.state) != json(&decided.state)).then(|| "the state".to_string())
            }) {
                return Err(ReplayError::Diverged {
                    round: i,
                    at_ms: logged.round.at_ms,
                    what,
                });
            }
            state = decided.state;
        }
        Ok(())
    }
}

fn json<T: Serialize>(value: &T) -> serde_json::Value {
    serde_json::to_value(value).expect("autoscale records have string map keys: serialisable")
}

fn first_difference(recorded: &Round, replayed: &Round) -> Option<String> {
    for (r, p) in recorded.decisions.iter().zip(&replayed.decisions) {
        if r.operator != p.operator {
            return Some(format!(
                "operator `{}` recorded where `{}` is decided",
                r.operator, p.operator
            ));
        }
        if json(r) != json(p) {
            return Some(format!(
                "operator `{}`: recorded {}, replayed {}",
                r.operator,
                json(&r.decision),
                json(&p.decision)
            ));
        }
    }
    if json(recorded) != json(replayed) {
        return Some("the round's operators or expected rescale time".to_string());
    }
    None
}
