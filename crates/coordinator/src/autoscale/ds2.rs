//! The DS2 model (Kalavri et al., OSDI 2018; the paper's §4.4 rate-based cost model): walk the
//! graph from the sources; an operator's target input rate is the sum of what its upstream
//! operators should send it (their target input rate × the selectivity of the edge), a
//! source's is its configured or observed arrival rate; its parallelism is the target rate
//! over (true rate per instance × target utilisation), rounded up. True rate = rows
//! processed per busy second, so waiting for input or on backpressure does not count.
//!
//! A backlog adds catch-up capacity: the rows waiting, and those that will arrive during the
//! expected rescale (the longest observed recently), drained within the catch-up window.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::config::AutoscaleConfig;
use super::figures::{Figures, OperatorFacts};

/// What the model derived for one operator, the figures its decision came from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// Rows per second that should arrive: a source's configured or observed arrival rate;
    /// another's, the sum of what its upstream operators should send it (while they drain
    /// their own backlogs too).
    pub target_rate: f64,
    /// Rows per second more, to drain its backlog (and what arrives during the expected
    /// rescale) within the catch-up window; 0 without a backlog.
    pub catch_up_rate: f64,
    /// Rows that did arrive per second over the window (less than the target behind a
    /// bottleneck).
    pub arrival_rate: Option<f64>,
    /// Rows one instance processes per busy second; unknown without busy time or rows.
    pub true_rate: Option<f64>,
    /// True rate × current parallelism.
    pub capacity: Option<f64>,
    /// Its capacity is below its target rate: it holds the query back.
    pub bottleneck: bool,
    /// The parallelism for target rate + catch-up at the target utilisation, before bounds
    /// and guards; unknown without a true rate (unless nothing should arrive: then 0).
    pub required: Option<u64>,
    /// The same without catch-up.
    pub required_without_catch_up: Option<u64>,
}

impl Estimate {
    /// Rows per second it should process: target plus catch-up.
    pub fn total_rate(&self) -> f64 {
        self.target_rate + self.catch_up_rate
    }
}

/// Which figure an operator lacks for a decision.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "missing", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Missing {
    /// No figures were reported for it.
    NoFigures,
    /// Its figures cover an empty window.
    EmptyWindow,
    /// Its true rate is unknown (busy time not measured, as for sources today, or zero while
    /// rows should arrive), so no parallelism follows.
    NoTrueRate {
        /// Rows that arrived in the window.
        rows_in: u64,
        /// Busy time in the window, if measured.
        busy_ns: Option<u64>,
    },
    /// An operator it reads from has no target rate, so neither has it.
    UpstreamUnknown {
        /// That operator.
        upstream: String,
    },
    /// An operator it reads from reported no rows sent to it, or had no row in, so what it
    /// should send is unknown.
    NoSelectivity {
        /// That operator.
        upstream: String,
    },
    /// Its busy ratio is unknown or not in `[0, 1]`, so the fully-busy guard cannot be
    /// checked before a scale-down.
    NoBusyRatio,
}

/// The model's answer for one operator.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Modelled {
    /// Its target rate is unknown: no estimate at all.
    Unknown(Missing),
    /// Its target rate is known; its required parallelism, or what is missing for one.
    Estimated {
        estimate: Estimate,
        required: Result<u64, Missing>,
    },
}

impl Modelled {
    /// The estimate, when the target rate is known.
    pub(crate) fn estimate(&self) -> Option<&Estimate> {
        match self {
            Modelled::Unknown(_) => None,
            Modelled::Estimated { estimate, .. } => Some(estimate),
        }
    }
}

/// DS2 over `ordered` (topological order), with the expected rescale time in milliseconds.
pub(crate) fn model(
    config: &AutoscaleConfig,
    ordered: &[&OperatorFacts],
    expected_rescale_ms: Option<u64>,
) -> BTreeMap<String, Modelled> {
    let mut out: BTreeMap<String, Modelled> = BTreeMap::new();
    let facts: BTreeMap<&str, &OperatorFacts> =
        ordered.iter().map(|op| (op.name.as_str(), *op)).collect();
    for op in ordered {
        let target = target_rate(config, op, &facts, &out);
        let modelled = match (target, op.figures.as_ref()) {
            (Err(missing), _) => Modelled::Unknown(missing),
            (Ok(target_rate), figures) => estimate(
                config,
                op,
                target_rate,
                figures,
                expected_rescale_ms.unwrap_or(0),
            ),
        };
        out.insert(op.name.clone(), modelled);
    }
    out
}

/// Rows per second that should arrive at `op`.
fn target_rate(
    config: &AutoscaleConfig,
    op: &OperatorFacts,
    facts: &BTreeMap<&str, &OperatorFacts>,
    done: &BTreeMap<String, Modelled>,
) -> Result<f64, Missing> {
    if op.upstream.is_empty() {
        if let Some(rate) = config.source_rates.get(&op.name) {
            return Ok(*rate);
        }
        let figures = op.figures.as_ref().ok_or(Missing::NoFigures)?;
        return figures.arrival_rate().ok_or(Missing::EmptyWindow);
    }
    let upstream: BTreeSet<&str> = op.upstream.iter().map(String::as_str).collect();
    let mut sum = 0.0;
    for u in upstream {
        let unknown = || Missing::UpstreamUnknown {
            upstream: u.to_string(),
        };
        let est = done
            .get(u)
            .and_then(Modelled::estimate)
            .ok_or_else(unknown)?;
        let total = est.total_rate();
        if total <= 0.0 {
            continue;
        }
        let selectivity = facts
            .get(u)
            .and_then(|f| f.figures.as_ref())
            .and_then(|f| f.selectivity(&op.name))
            .ok_or_else(|| Missing::NoSelectivity {
                upstream: u.to_string(),
            })?;
        sum += total * selectivity;
    }
    Ok(sum)
}

fn estimate(
    config: &AutoscaleConfig,
    op: &OperatorFacts,
    target_rate: f64,
    figures: Option<&Figures>,
    rescale_ms: u64,
) -> Modelled {
    let catch_up_rate = figures
        .and_then(|f| f.backlog)
        .filter(|b| *b > 0)
        .map_or(0.0, |backlog| {
            let rescale_s = rescale_ms as f64 / 1000.0;
            (backlog as f64 + target_rate * rescale_s) / config.catch_up.as_secs_f64()
        });
    let true_rate = figures.and_then(Figures::true_rate);
    let per_instance = true_rate.map(|r| r * config.target_utilisation);
    let required = |rate: f64| -> Option<u64> {
        if rate <= 0.0 {
            return Some(0);
        }
        // A hair below an integer stays that integer (floating-point sums).
        per_instance.map(|p| ((rate / p) - 1e-9).ceil().max(0.0) as u64)
    };
    let capacity = true_rate.map(|r| r * f64::from(op.parallelism));
    let estimate = Estimate {
        target_rate,
        catch_up_rate,
        arrival_rate: figures.and_then(Figures::arrival_rate),
        true_rate,
        capacity,
        bottleneck: capacity.is_some_and(|c| c < target_rate),
        required: required(target_rate + catch_up_rate),
        required_without_catch_up: required(target_rate),
    };
    let required = match figures {
        None => Err(Missing::NoFigures),
        Some(f) if f.window_ms == 0 => Err(Missing::EmptyWindow),
        Some(f) => estimate.required.ok_or(Missing::NoTrueRate {
            rows_in: f.rows_in,
            busy_ns: f.busy_ns,
        }),
    };
    Modelled::Estimated { estimate, required }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Figures over 10 s: `rows_in` rows, `busy_s` busy seconds, rows out to `to`.
    fn figures(rows_in: u64, busy_s: f64, to: &[(&str, u64)]) -> Figures {
        Figures {
            window_ms: 10_000,
            rows_in,
            rows_out: to.iter().map(|(n, r)| (n.to_string(), *r)).collect(),
            busy_ns: Some((busy_s * 1e9) as u64),
            busy_ratio: None,
            backlog: Some(0),
            state_bytes: None,
        }
    }

    fn op(name: &str, upstream: &[&str], parallelism: u32, f: Option<Figures>) -> OperatorFacts {
        OperatorFacts {
            name: name.into(),
            upstream: upstream.iter().map(|u| u.to_string()).collect(),
            parallelism,
            figures: f,
        }
    }

    fn run(ops: &[OperatorFacts], rescale_ms: Option<u64>) -> BTreeMap<String, Modelled> {
        let ordered: Vec<&OperatorFacts> = ops.iter().collect();
        model(&AutoscaleConfig::default(), &ordered, rescale_ms)
    }

    fn est<'a>(m: &'a BTreeMap<String, Modelled>, name: &str) -> &'a Estimate {
        m[name].estimate().expect("an estimate")
    }

    fn required(m: &BTreeMap<String, Modelled>, name: &str) -> Result<u64, Missing> {
        match &m[name] {
            Modelled::Unknown(missing) => Err(missing.clone()),
            Modelled::Estimated { required, .. } => required.clone(),
        }
    }

    #[test]
    fn target_rates_flow_from_the_source_through_selectivities() {
        // src reads 1000 rows/s; filter keeps half; map is 1:1 but slow: busy all the
        // window for 300 rows/s, so it lets through only 300 of the 500 it should get.
        let ops = [
            op(
                "src",
                &[],
                1,
                Some(figures(10_000, 1.0, &[("filter", 10_000)])),
            ),
            op(
                "filter",
                &["src"],
                1,
                Some(figures(10_000, 2.0, &[("map", 5_000)])),
            ),
            op(
                "map",
                &["filter"],
                1,
                Some(figures(3_000, 10.0, &[("sink", 3_000)])),
            ),
            op("sink", &["map"], 1, Some(figures(3_000, 0.3, &[]))),
        ];
        let m = run(&ops, None);
        assert_eq!(est(&m, "src").target_rate, 1000.0);
        assert_eq!(est(&m, "filter").target_rate, 1000.0);
        assert_eq!(est(&m, "map").target_rate, 500.0);
        // The sink's target is what map should send at its target rate, not the 300 it sees.
        assert_eq!(est(&m, "sink").target_rate, 500.0);
        let map = est(&m, "map");
        assert_eq!(map.arrival_rate, Some(300.0));
        assert_eq!(map.true_rate, Some(300.0));
        assert!(map.bottleneck, "{map:?}");
        // 500 / (300 × 0.7) = 2.38 → 3.
        assert_eq!(map.required, Some(3));
        // filter: 5000 rows per busy second; 1000 / 3500 → 1.
        assert!(!est(&m, "filter").bottleneck);
        assert_eq!(est(&m, "filter").required, Some(1));
    }

    #[test]
    fn a_join_sums_its_inputs_and_a_repeated_upstream_counts_once() {
        let ops = [
            op("a", &[], 1, Some(figures(1_000, 1.0, &[("j", 1_000)]))),
            op("b", &[], 1, Some(figures(2_000, 1.0, &[("j", 2_000)]))),
            op("j", &["a", "b", "b"], 1, Some(figures(3_000, 1.0, &[]))),
        ];
        assert_eq!(est(&run(&ops, None), "j").target_rate, 300.0);
    }

    #[test]
    fn missing_figures_hold_the_operator_and_everything_downstream_with_a_reason() {
        let ops = [
            op("src", &[], 1, Some(figures(1_000, 1.0, &[("a", 1_000)]))),
            op("a", &["src"], 1, None),
            op("b", &["a"], 1, Some(figures(1_000, 1.0, &[]))),
        ];
        let m = run(&ops, None);
        assert_eq!(required(&m, "a"), Err(Missing::NoFigures));
        assert_eq!(
            required(&m, "b"),
            Err(Missing::NoSelectivity {
                upstream: "a".into()
            })
        );
        assert_eq!(required(&m, "src"), Ok(1));
    }

    #[test]
    fn a_source_without_busy_time_still_gives_its_readers_a_target_rate() {
        let mut f = figures(1_000, 0.0, &[("a", 1_000)]);
        f.busy_ns = None;
        let ops = [
            op("src", &[], 1, Some(f)),
            op("a", &["src"], 1, Some(figures(1_000, 1.0, &[]))),
        ];
        let m = run(&ops, None);
        assert_eq!(
            required(&m, "src"),
            Err(Missing::NoTrueRate {
                rows_in: 1_000,
                busy_ns: None
            })
        );
        assert_eq!(est(&m, "a").target_rate, 100.0);
        assert_eq!(required(&m, "a"), Ok(1));
    }

    #[test]
    fn zero_rows_and_zero_busy_time_want_nothing_and_are_not_missing() {
        let ops = [
            op("src", &[], 3, Some(figures(0, 0.0, &[("a", 0)]))),
            op("a", &["src"], 3, Some(figures(0, 0.0, &[]))),
        ];
        let m = run(&ops, None);
        for name in ["src", "a"] {
            assert_eq!(est(&m, name).required, Some(0), "{name}");
            assert_eq!(required(&m, name), Ok(0), "{name}");
        }
    }

    #[test]
    fn a_backlog_adds_catch_up_and_the_rescale_time_adds_what_arrives_meanwhile() {
        let mut f = figures(10_000, 1.0, &[]);
        f.backlog = Some(60_000);
        let ops = [op("src", &[], 1, Some(f))];
        // 60 000 rows over the 300 s window: 200 rows/s more.
        assert_eq!(est(&run(&ops, None), "src").catch_up_rate, 200.0);
        // A rescale of 30 s lets 1000 × 30 rows more pile up: (60 000 + 30 000) / 300.
        assert_eq!(est(&run(&ops, Some(30_000)), "src").catch_up_rate, 300.0);
    }
}
