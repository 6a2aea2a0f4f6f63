//! The facts one autoscaler round decides on: the logical graph (operators and the operators
//! they read from), each operator's measured figures over a window, the rescales observed so
//! far, and the time of the observation. Plain data, serialisable, so that a round can be
//! recorded and replayed.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// An operator, by the name the query gives it (the catalog's parameters and control
/// history, and the runtime's figures, name operators the same way).
pub type OperatorName = String;

/// Everything one round looks at.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    /// When the figures were taken, in milliseconds since the Unix epoch. The only clock the
    /// autoscaler knows: it never reads one itself.
    pub at_ms: u64,
    /// The logical graph's operators, each with its figures. Any order; the model walks them
    /// from the sources.
    pub operators: Vec<OperatorFacts>,
    /// Rescales carried out so far (any operator), oldest first: their observed durations
    /// give the expected time of the next one.
    #[serde(default)]
    pub rescales: Vec<RescaleFact>,
}

/// One operator of the logical graph.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OperatorFacts {
    /// Its name.
    pub name: OperatorName,
    /// The operators it reads from (none: a source). A name listed twice counts once.
    #[serde(default)]
    pub upstream: Vec<OperatorName>,
    /// How many instances it runs now.
    pub parallelism: u32,
    /// Its figures over the last window; `None` when none were reported.
    pub figures: Option<Figures>,
}

/// What one operator's instances measured over a window, added up over its instances.
/// A figure the runtime does not measure is `None`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Figures {
    /// The window's length, in milliseconds.
    pub window_ms: u64,
    /// Rows that arrived (a source: rows it read).
    pub rows_in: u64,
    /// Rows sent to each consumer, by the consumer's name (on all edges between the two).
    #[serde(default)]
    pub rows_out: BTreeMap<OperatorName, u64>,
    /// Time spent processing, in nanoseconds, added up over the instances (not waiting for
    /// input, not blocked on a full output). Sources are not measured today.
    pub busy_ns: Option<u64>,
    /// The share of the window its instances were busy, 0 to 1 (busy time over window ×
    /// parallelism when not given).
    pub busy_ratio: Option<f64>,
    /// Rows waiting at its input (a source: rows not read yet, as a broker's lag).
    pub backlog: Option<u64>,
    /// Bytes of state, added up over its instances (reported, not decided on).
    pub state_bytes: Option<u64>,
}

impl Figures {
    /// The window in seconds, if it is not empty.
    pub(crate) fn window_s(&self) -> Option<f64> {
        (self.window_ms > 0).then(|| self.window_ms as f64 / 1000.0)
    }

    /// Rows that arrived per second over the window.
    pub fn arrival_rate(&self) -> Option<f64> {
        self.window_s().map(|w| self.rows_in as f64 / w)
    }

    /// DS2's true processing rate of one instance: rows processed per second of busy time;
    /// unknown without busy time, or without a row to divide.
    pub fn true_rate(&self) -> Option<f64> {
        let busy_s = self.busy_ns? as f64 / 1e9;
        (busy_s > 0.0 && self.rows_in > 0).then(|| self.rows_in as f64 / busy_s)
    }

    /// The busy ratio, as given or from busy time over the window's instance-seconds; `None`
    /// when unknown or not a number in `[0, 1]`.
    pub fn busy_ratio(&self, parallelism: u32) -> Option<f64> {
        // A ratio that is not a number counts as not given (JSON writes it as null).
        let ratio = match self.busy_ratio.filter(|r| r.is_finite()) {
            Some(r) => r,
            None => {
                let capacity_ns = self.window_ms as f64 * 1e6 * f64::from(parallelism);
                if capacity_ns <= 0.0 {
                    return None;
                }
                self.busy_ns? as f64 / capacity_ns
            }
        };
        (0.0..=1.0).contains(&ratio).then_some(ratio)
    }

    /// Rows out to `consumer` per row in (DS2's selectivity of that edge); `None` when the
    /// edge has no count or no row came in.
    pub fn selectivity(&self, consumer: &str) -> Option<f64> {
        let out = *self.rows_out.get(consumer)?;
        (self.rows_in > 0).then(|| out as f64 / self.rows_in as f64)
    }
}

/// A rescale that was carried out, as the runtime observed it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RescaleFact {
    /// The operator rescaled.
    pub operator: OperatorName,
    /// When it began (the decision was taken to carry it out), ms since the Unix epoch.
    pub started_at_ms: u64,
    /// When the new instances were processing rows, ms since the Unix epoch.
    pub finished_at_ms: u64,
}

impl RescaleFact {
    /// How long it took, in milliseconds.
    pub fn took_ms(&self) -> u64 {
        self.finished_at_ms.saturating_sub(self.started_at_ms)
    }
}

/// The expected duration of the next rescale: the longest of the `history` latest observed
/// ones (by when they finished); `None` before any was observed.
pub fn expected_rescale_ms(rescales: &[RescaleFact], history: u32) -> Option<u64> {
    let mut latest: Vec<&RescaleFact> = rescales.iter().collect();
    latest.sort_by_key(|r| r.finished_at_ms);
    let keep = usize::try_from(history).unwrap_or(usize::MAX);
    latest.iter().rev().take(keep).map(|r| r.took_ms()).max()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(rows_in: u64, busy_ns: Option<u64>) -> Figures {
        Figures {
            window_ms: 10_000,
            rows_in,
            rows_out: [("sink".to_string(), rows_in / 2)].into(),
            busy_ns,
            busy_ratio: None,
            backlog: None,
            state_bytes: None,
        }
    }

    #[test]
    fn the_true_rate_is_rows_per_busy_second_and_unknown_without_busy_time_or_rows() {
        let f = figures(1000, Some(500_000_000));
        assert_eq!(f.true_rate(), Some(2000.0));
        assert_eq!(f.arrival_rate(), Some(100.0));
        assert_eq!(figures(1000, Some(0)).true_rate(), None, "zero busy time");
        assert_eq!(figures(1000, None).true_rate(), None, "not measured");
        assert_eq!(figures(0, Some(5)).true_rate(), None, "zero rows");
    }

    #[test]
    fn the_busy_ratio_is_derived_from_busy_time_when_not_given_and_unknown_outside_0_to_1() {
        // 2 instances × 10 s = 20 s of capacity, 5 s busy.
        let f = figures(1000, Some(5_000_000_000));
        assert_eq!(f.busy_ratio(2), Some(0.25));
        let given = Figures {
            busy_ratio: Some(0.9),
            ..f.clone()
        };
        assert_eq!(given.busy_ratio(2), Some(0.9));
        let nan = Figures {
            busy_ratio: Some(f64::NAN),
            ..f.clone()
        };
        assert_eq!(nan.busy_ratio(2), Some(0.25), "as if not given");
        let above = Figures {
            busy_ratio: Some(1.5),
            ..f
        };
        assert_eq!(above.busy_ratio(2), None);
    }

    #[test]
    fn selectivity_is_per_consumer_edge() {
        let f = figures(1000, None);
        assert_eq!(f.selectivity("sink"), Some(0.5));
        assert_eq!(f.selectivity("other"), None);
        assert_eq!(figures(0, None).selectivity("sink"), None);
    }

    #[test]
    fn the_expected_rescale_time_is_the_longest_of_the_latest_observed() {
        let r = |start, end| RescaleFact {
            operator: "a".into(),
            started_at_ms: start,
            finished_at_ms: end,
        };
        assert_eq!(expected_rescale_ms(&[], 3), None);
        let seen = [r(0, 9_000), r(100_000, 102_000), r(200_000, 203_000)];
        assert_eq!(expected_rescale_ms(&seen, 3), Some(9_000));
        assert_eq!(
            expected_rescale_ms(&seen, 2),
            Some(3_000),
            "the oldest forgotten"
        );
    }
}
