//! The autoscaler's settings as a user gives them (`--autoscale-set KEY=VALUE`), and the
//! settings a query's graph allows: each operator's bounds fitted to what can be rescaled
//! while it runs (a keyed operator between 1 and the instances `--max-parallelism` runs; any
//! other stays at its parallelism).

use std::time::Duration;

use anduin_coordinator::autoscale::{
    AutoscaleConfig, Bounds, MAX_PARALLELISM_LIMIT, MAX_SOURCE_RATE,
};

/// How often a round is decided, by default: also the window its figures cover.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(10);

/// How many rounds the decision log keeps, by default (`anduin ctl autoscale` shows them).
pub const DEFAULT_KEEP_ROUNDS: usize = 100;

/// What the autoscaler of one query runs with.
#[derive(Clone, Debug, PartialEq)]
pub struct AutoscaleSettings {
    /// The time between rounds, and the window of figures each decides on.
    pub interval: Duration,
    /// How it decides.
    pub config: AutoscaleConfig,
    /// How many rounds its log keeps (the state before the oldest kept is kept too, so the
    /// log replays).
    pub keep_rounds: usize,
}

impl Default for AutoscaleSettings {
    fn default() -> Self {
        AutoscaleSettings {
            interval: DEFAULT_INTERVAL,
            config: AutoscaleConfig::default(),
            keep_rounds: DEFAULT_KEEP_ROUNDS,
        }
    }
}

/// A setting that cannot be taken.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SettingError {
    /// Not `KEY=VALUE`, or an unknown key.
    #[error(
        "autoscale setting `{given}`: {why}; the settings are target_utilisation, \
         stabilisation, scale_down_delay, max_scale_down_factor, fully_busy_ratio, catch_up, \
         rescale_history, bounds.OPERATOR=MIN..MAX and source_rates.OPERATOR=ROWS_PER_SECOND \
         (docs/autoscale.md)"
    )]
    Unknown {
        /// The setting as given.
        given: String,
        /// What is wrong with it.
        why: String,
    },
    /// A value that is not of the setting's kind, or out of its range.
    #[error("autoscale setting `{key}`: `{value}` is not {expected}")]
    BadValue {
        /// The setting.
        key: String,
        /// Its value, as given.
        value: String,
        /// What it must be.
        expected: String,
    },
    /// A setting out of its range.
    #[error(transparent)]
    Invalid(#[from] anduin_coordinator::autoscale::ConfigError),
    /// No operator of the query can be rescaled while it runs.
    #[error(
        "--autoscale: no operator of the query can be rescaled while it runs: only a keyed \
         window, join, pattern or GROUP BY can, when the query runs spare instances of it (start \
         it with --max-parallelism N, N at least 2)"
    )]
    NothingToRescale,
    /// The settings do not fit the query's graph.
    #[error("autoscale setting `{key}`: {why}")]
    DoesNotFit {
        /// The setting.
        key: String,
        /// Why, and what to do.
        why: String,
    },
}

/// Applies one `KEY=VALUE` to `config` (checked by [`AutoscaleConfig::validate`] when the
/// settings are fitted to a query).
pub fn apply_setting(config: &mut AutoscaleConfig, given: &str) -> Result<(), SettingError> {
    let Some((key, value)) = given.split_once('=') else {
        return Err(SettingError::Unknown {
            given: given.to_string(),
            why: "expected KEY=VALUE".to_string(),
        });
    };
    let (key, value) = (key.trim(), value.trim());
    let bad = |expected: &str| SettingError::BadValue {
        key: key.to_string(),
        value: value.to_string(),
        expected: expected.to_string(),
    };
    let share = || -> Result<f64, SettingError> {
        value
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v > 0.0 && *v <= 1.0)
            .ok_or_else(|| bad("a number more than 0 and at most 1"))
    };
    let duration = || -> Result<Duration, SettingError> {
        if value == "0" {
            return Ok(Duration::ZERO);
        }
        anduin_types::duration_ms(value)
            .map(Duration::from_millis)
            .map_err(|_| bad("a duration such as 500ms, 30s, 5m or 1h"))
    };
    match key {
        "target_utilisation" => config.target_utilisation = share()?,
        "max_scale_down_factor" => config.max_scale_down_factor = share()?,
        "fully_busy_ratio" => config.fully_busy_ratio = share()?,
        "stabilisation" => config.stabilisation = duration()?,
        "scale_down_delay" => config.scale_down_delay = duration()?,
        "catch_up" => config.catch_up = duration()?,
        "rescale_history" => {
            config.rescale_history = value
                .parse()
                .ok()
                .filter(|n| (1..=100).contains(n))
                .ok_or_else(|| bad("a whole number from 1 to 100"))?;
        }
        _ => {
            if let Some(operator) = key.strip_prefix("bounds.").filter(|o| !o.is_empty()) {
                let bounds = value
                    .split_once("..")
                    .and_then(|(min, max)| Some((min.parse().ok()?, max.parse().ok()?)))
                    .filter(|(min, max): &(u32, u32)| *min >= 1 && min <= max)
                    .map(|(min, max)| Bounds { min, max })
                    .ok_or_else(|| bad("MIN..MAX, two whole numbers with 1 ≤ MIN ≤ MAX"))?;
                config.bounds.insert(operator.to_string(), bounds);
            } else if let Some(operator) =
                key.strip_prefix("source_rates.").filter(|o| !o.is_empty())
            {
                let rate = value
                    .parse::<f64>()
                    .ok()
                    .filter(|r| (0.0..=MAX_SOURCE_RATE).contains(r))
                    .ok_or_else(|| bad("a rate of rows per second, from 0 to 1e12"))?;
                config.source_rates.insert(operator.to_string(), rate);
            } else {
                return Err(SettingError::Unknown {
                    given: given.to_string(),
                    why: format!("no setting `{key}`"),
                });
            }
        }
    }
    Ok(())
}

/// One operator of a query, as the autoscaler fits its settings to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rescalable {
    /// Its name.
    pub name: String,
    /// It reads no stream (a source).
    pub source: bool,
    /// The instances it can be rescaled between 1 and while it runs (those
    /// `--max-parallelism` runs); `None`: it cannot be.
    pub instances: Option<u32>,
    /// It can get more instances than run it while it runs (an embedded run's, `crate::grow`):
    /// bounds above `instances` are kept.
    pub grows: bool,
}

/// `config` fitted to the query's operators: an operator that can be rescaled keeps its
/// bounds, capped at the instances it runs (1 to those by default); bounds of an operator
/// that cannot be rescaled, or of one the query lacks, are refused, as is a source rate of an
/// operator that is not a source. The bounds of the operators that cannot be rescaled are
/// filled in per round ([`pin`]), at their parallelism then.
pub fn fit(
    config: &AutoscaleConfig,
    operators: &[Rescalable],
) -> Result<AutoscaleConfig, SettingError> {
    let mut fitted = config.clone();
    let find = |name: &str| operators.iter().find(|o| o.name == name);
    for (name, bounds) in &config.bounds {
        let key = format!("bounds.{name}");
        let Some(op) = find(name) else {
            return Err(SettingError::DoesNotFit {
                key,
                why: format!("the query has no operator `{name}`"),
            });
        };
        let Some(instances) = op.instances else {
            return Err(SettingError::DoesNotFit {
                key,
                why: format!(
                    "operator `{name}` cannot be rescaled while it runs (only a keyed window, \
                     join, pattern or GROUP BY at the head of its task can); remove its bounds"
                ),
            });
        };
        let groups = u32::from(anduin_state::DEFAULT_MAX_KEY_GROUPS.get());
        if op.grows && bounds.max > groups {
            return Err(SettingError::DoesNotFit {
                key,
                why: format!(
                    "its maximum {} is above the {groups} instances `{name}` can have (one key \
                     group each)",
                    bounds.max
                ),
            });
        }
        if bounds.min > instances && !op.grows {
            return Err(SettingError::DoesNotFit {
                key,
                why: format!(
                    "its minimum {} is above the {instances} instances the query runs of `{name}`; \
                     start it with --max-parallelism {} or more",
                    bounds.min, bounds.min
                ),
            });
        }
    }
    for name in config.source_rates.keys() {
        if !find(name).is_some_and(|o| o.source) {
            return Err(SettingError::DoesNotFit {
                key: format!("source_rates.{name}"),
                why: format!("the query has no source `{name}`"),
            });
        }
    }
    if !operators.iter().any(|o| o.instances.is_some()) {
        return Err(SettingError::NothingToRescale);
    }
    // An operator that grows may go as far as its bounds say.
    let most = operators
        .iter()
        .filter_map(|o| {
            let asked = config.bounds.get(&o.name).filter(|_| o.grows);
            o.instances.map(|i| asked.map_or(i, |b| b.max.max(i)))
        })
        .max()
        .unwrap_or(1)
        .min(MAX_PARALLELISM_LIMIT);
    fitted.max_parallelism = fitted.max_parallelism.min(most).max(1);
    for op in operators {
        if let Some(instances) = op.instances {
            let given = config.bounds.get(&op.name).copied().unwrap_or(Bounds {
                min: 1,
                max: instances,
            });
            let groups = u32::from(anduin_state::DEFAULT_MAX_KEY_GROUPS.get());
            let cap = if op.grows {
                given.max.min(groups)
            } else {
                instances
            };
            let max = given.max.min(cap).min(fitted.max_parallelism);
            fitted.bounds.insert(
                op.name.clone(),
                Bounds {
                    min: given.min.min(max),
                    max,
                },
            );
        }
    }
    fitted.validate()?;
    Ok(fitted)
}

/// `fitted` with the operators that cannot be rescaled held at `parallelism` (their bounds
/// both that): the model still reckons with them, but never changes them.
pub fn pin(
    fitted: &AutoscaleConfig,
    operators: &[Rescalable],
    parallelism: impl Fn(&str) -> u32,
) -> AutoscaleConfig {
    let mut pinned = fitted.clone();
    for op in operators.iter().filter(|o| o.instances.is_none()) {
        let p = parallelism(&op.name).clamp(1, pinned.max_parallelism.max(1));
        pinned
            .bounds
            .insert(op.name.clone(), Bounds { min: p, max: p });
    }
    pinned
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ops() -> Vec<Rescalable> {
        vec![
            Rescalable {
                name: "gen".into(),
                source: true,
                instances: None,
                grows: false,
            },
            Rescalable {
                name: "w".into(),
                source: false,
                instances: Some(4),
                grows: false,
            },
            Rescalable {
                name: "out".into(),
                source: false,
                instances: None,
                grows: false,
            },
        ]
    }

    fn set(settings: &[&str]) -> Result<AutoscaleConfig, SettingError> {
        let mut config = AutoscaleConfig::default();
        for s in settings {
            apply_setting(&mut config, s)?;
        }
        Ok(config)
    }

    #[test]
    fn settings_are_parsed_by_name_and_refused_with_their_range() {
        let c = set(&[
            "target_utilisation=0.5",
            "stabilisation=30s",
            "scale_down_delay=0ms",
            "bounds.w=2..3",
            "source_rates.gen=1000",
            "rescale_history = 7",
            "catch_up=0",
            "catch_up=1m",
        ])
        .expect("valid settings");
        assert_eq!(c.target_utilisation, 0.5);
        assert_eq!(c.stabilisation, Duration::from_secs(30));
        assert_eq!(c.scale_down_delay, Duration::ZERO);
        assert_eq!(c.bounds["w"], Bounds { min: 2, max: 3 });
        assert_eq!(c.source_rates["gen"], 1000.0);
        assert_eq!(c.rescale_history, 7);
        assert_eq!(
            c.catch_up,
            Duration::from_secs(60),
            "the last of a key given twice"
        );
        assert_eq!(
            set(&["stabilisation=0"])
                .expect("0 needs no unit")
                .stabilisation,
            Duration::ZERO
        );
        for bad in [
            "target_utilisation=0",
            "target_utilisation=1.5",
            "target_utilisation=NaN",
            "stabilisation=soon",
            "bounds.w=3..2",
            "bounds.w=0..2",
            "bounds.w=2",
            "source_rates.gen=-1",
            "source_rates.gen=1e308",
            "rescale_history=0",
        ] {
            let e = set(&[bad]).expect_err(bad);
            assert!(matches!(e, SettingError::BadValue { .. }), "{bad}: {e}");
        }
        for unknown in ["target", "warp=9", "bounds.=1..2"] {
            let e = set(&[unknown]).expect_err(unknown);
            assert!(e.to_string().contains("the settings are"), "{e}");
        }
    }

    #[test]
    fn bounds_are_capped_at_the_instances_run_and_other_operators_are_pinned() {
        let fitted = fit(&set(&[]).expect("none"), &ops()).expect("fits");
        assert_eq!(fitted.bounds["w"], Bounds { min: 1, max: 4 });
        assert_eq!(fitted.max_parallelism, 4);
        let capped = fit(&set(&["bounds.w=2..9"]).expect("set"), &ops()).expect("fits");
        assert_eq!(capped.bounds["w"], Bounds { min: 2, max: 4 });
        let pinned = pin(&fitted, &ops(), |name| if name == "gen" { 1 } else { 3 });
        assert_eq!(pinned.bounds["gen"], Bounds { min: 1, max: 1 });
        assert_eq!(pinned.bounds["out"], Bounds { min: 3, max: 3 });
        assert_eq!(pinned.bounds["w"], Bounds { min: 1, max: 4 });
    }

    #[test]
    fn settings_that_do_not_fit_the_query_are_refused_saying_what_to_do() {
        let refused = |settings: &[&str], ops: &[Rescalable]| {
            fit(&set(settings).expect("parses"), ops)
                .expect_err("refused")
                .to_string()
        };
        assert!(refused(&["bounds.nope=1..2"], &ops()).contains("no operator `nope`"));
        assert!(refused(&["bounds.out=1..2"], &ops()).contains("cannot be rescaled"));
        assert!(refused(&["bounds.w=5..6"], &ops()).contains("--max-parallelism 5"));
        assert!(refused(&["source_rates.w=5"], &ops()).contains("no source `w`"));
        let none: Vec<Rescalable> = ops()
            .into_iter()
            .map(|o| Rescalable {
                instances: None,
                ..o
            })
            .collect();
        assert!(refused(&[], &none).contains("--max-parallelism"));
    }

    #[test]
    fn an_operator_that_grows_keeps_bounds_above_the_instances_that_run_it() {
        let grows: Vec<Rescalable> = ops()
            .into_iter()
            .map(|o| Rescalable {
                grows: o.instances.is_some(),
                ..o
            })
            .collect();
        let fitted = fit(&set(&["bounds.w=5..8"]).expect("parses"), &grows).expect("fits");
        assert_eq!(fitted.bounds.get("w"), Some(&Bounds { min: 5, max: 8 }));
        assert_eq!(fitted.max_parallelism, 8);
        // Without bounds it stays within the instances that run it.
        let fitted = fit(&set(&[]).expect("parses"), &grows).expect("fits");
        assert_eq!(fitted.bounds.get("w"), Some(&Bounds { min: 1, max: 4 }));
    }
}
