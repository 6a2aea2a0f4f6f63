//! The autoscaler's settings: the model's target utilisation, the guards' windows and limits,
//! and the bounds of each operator's parallelism. Defaults follow Flink's autoscaler where it
//! has the same setting; [`AutoscaleConfig::validate`] names the field and its allowed range.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::figures::OperatorName;

/// anduin's default number of key groups (`anduin_state::DEFAULT_MAX_KEY_GROUPS`): a keyed
/// operator cannot run more instances than it has key groups, so no operator is scaled above
/// it unless [`AutoscaleConfig::max_parallelism`] says otherwise.
pub const DEFAULT_MAX_PARALLELISM: u32 = 720;

/// The most instances one operator can be given: the most copies a rewrite rule makes
/// (`anduin_rewrite::MAX_COPIES`).
pub const MAX_PARALLELISM_LIMIT: u32 = 1024;

/// The highest source rate a setting may give, rows per second (a generator's highest rate):
/// far beyond any source, and small enough that rates times selectivities stay finite.
pub const MAX_SOURCE_RATE: f64 = 1e12;

/// The longest window a guard may wait (so that times in milliseconds never overflow).
const LONGEST: Duration = Duration::from_secs(30 * 24 * 3600);

/// How the autoscaler decides.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AutoscaleConfig {
    /// The share of its true processing rate an operator should run at: DS2's parallelism is
    /// the target input rate over (true rate per instance × this). In (0, 1]; default 0.7.
    pub target_utilisation: f64,
    /// After a change of an operator's parallelism, no decision for it for this long (from the
    /// decision, or from the end of the observed rescale if later). Default 5 minutes.
    pub stabilisation: Duration,
    /// A lower parallelism must be recommended continuously for this long before it is
    /// applied. Default 1 hour.
    pub scale_down_delay: Duration,
    /// The largest share of an operator's instances one scale-down removes. In (0, 1] (1: no
    /// limit); default 0.6, so 10 instances go down to 4 at the least.
    pub max_scale_down_factor: f64,
    /// An operator busy this share of the time or more is never scaled down. In (0, 1];
    /// default 0.95.
    pub fully_busy_ratio: f64,
    /// A backlog (and the rows that arrive during the rescale) is to be drained within this.
    /// More than 0; default 5 minutes.
    pub catch_up: Duration,
    /// How many of the latest observed rescales give the expected rescale time (their
    /// longest). 1 to 100; default 5.
    pub rescale_history: u32,
    /// No operator gets more instances than this. 1 to [`MAX_PARALLELISM_LIMIT`]; default
    /// [`DEFAULT_MAX_PARALLELISM`] (the query's key groups).
    pub max_parallelism: u32,
    /// Bounds of single operators' parallelism (others: 1 to `max_parallelism`).
    pub bounds: BTreeMap<OperatorName, Bounds>,
    /// Configured arrival rates of sources, rows per second, in place of their observed rates.
    pub source_rates: BTreeMap<OperatorName, f64>,
}

/// The parallelism one operator may have.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bounds {
    /// At least this many instances (at least 1).
    pub min: u32,
    /// At most this many (at most [`AutoscaleConfig::max_parallelism`]).
    pub max: u32,
}

impl Default for AutoscaleConfig {
    fn default() -> Self {
        AutoscaleConfig {
            target_utilisation: 0.7,
            stabilisation: Duration::from_secs(5 * 60),
            scale_down_delay: Duration::from_secs(60 * 60),
            max_scale_down_factor: 0.6,
            fully_busy_ratio: 0.95,
            catch_up: Duration::from_secs(5 * 60),
            rescale_history: 5,
            max_parallelism: DEFAULT_MAX_PARALLELISM,
            bounds: BTreeMap::new(),
            source_rates: BTreeMap::new(),
        }
    }
}

/// A setting that cannot work.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A setting lies outside its range.
    #[error("autoscale setting `{field}` is {value}; it must be {allowed}")]
    OutOfRange {
        /// The setting, as `bounds.agg.max`.
        field: String,
        /// Its value, as written.
        value: String,
        /// Its allowed range.
        allowed: String,
    },
    /// An operator's minimum parallelism is above its maximum.
    #[error("autoscale bounds of operator `{operator}`: min {min} is above max {max}; lower min or raise max")]
    MinAboveMax {
        /// The operator.
        operator: OperatorName,
        /// Its minimum.
        min: u32,
        /// Its maximum.
        max: u32,
    },
}

impl AutoscaleConfig {
    /// Every setting within its range, or the first that is not.
    pub fn validate(&self) -> Result<(), ConfigError> {
        share("target_utilisation", self.target_utilisation)?;
        share("max_scale_down_factor", self.max_scale_down_factor)?;
        share("fully_busy_ratio", self.fully_busy_ratio)?;
        window("stabilisation", self.stabilisation, Duration::ZERO)?;
        window("scale_down_delay", self.scale_down_delay, Duration::ZERO)?;
        window("catch_up", self.catch_up, Duration::from_millis(1))?;
        count("rescale_history", self.rescale_history, 100)?;
        count(
            "max_parallelism",
            self.max_parallelism,
            MAX_PARALLELISM_LIMIT,
        )?;
        for (operator, b) in &self.bounds {
            count(
                &format!("bounds.{operator}.min"),
                b.min,
                self.max_parallelism,
            )?;
            count(
                &format!("bounds.{operator}.max"),
                b.max,
                self.max_parallelism,
            )?;
            if b.min > b.max {
                return Err(ConfigError::MinAboveMax {
                    operator: operator.clone(),
                    min: b.min,
                    max: b.max,
                });
            }
        }
        for (operator, rate) in &self.source_rates {
            if !(rate.is_finite() && (0.0..=MAX_SOURCE_RATE).contains(rate)) {
                return Err(out_of_range(
                    &format!("source_rates.{operator}"),
                    rate,
                    "a number of rows per second, from 0 to 1e12",
                ));
            }
        }
        Ok(())
    }

    /// The bounds of `operator`: its own, else 1 to `max_parallelism`.
    pub fn bounds_of(&self, operator: &str) -> Bounds {
        self.bounds.get(operator).copied().unwrap_or(Bounds {
            min: 1,
            max: self.max_parallelism,
        })
    }
}

fn out_of_range(field: &str, value: impl std::fmt::Display, allowed: &str) -> ConfigError {
    ConfigError::OutOfRange {
        field: field.to_string(),
        value: value.to_string(),
        allowed: allowed.to_string(),
    }
}

fn share(field: &str, value: f64) -> Result<(), ConfigError> {
    if value > 0.0 && value <= 1.0 {
        Ok(())
    } else {
        Err(out_of_range(field, value, "more than 0 and at most 1"))
    }
}

fn window(field: &str, value: Duration, least: Duration) -> Result<(), ConfigError> {
    if value >= least && value <= LONGEST {
        Ok(())
    } else {
        let allowed = format!("from {least:?} to {LONGEST:?} (30 days)");
        Err(out_of_range(field, format!("{value:?}"), &allowed))
    }
}

fn count(field: &str, value: u32, most: u32) -> Result<(), ConfigError> {
    if (1..=most).contains(&value) {
        Ok(())
    } else {
        Err(out_of_range(field, value, &format!("from 1 to {most}")))
    }
}

/// A duration in milliseconds (validated durations fit).
pub(crate) fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_valid_and_those_of_the_docs() {
        let c = AutoscaleConfig::default();
        assert_eq!(c.validate(), Ok(()));
        assert_eq!(c.target_utilisation, 0.7);
        assert_eq!(c.max_parallelism, 720);
        assert_eq!(
            c.bounds_of("any"),
            Bounds {
                min: 1,
                max: DEFAULT_MAX_PARALLELISM
            }
        );
    }

    /// The coordinator does not depend on `anduin-state` or `anduin-rewrite` (one pulls in
    /// the LSM library), so the two limits are read from their sources: a change there must
    /// change the constants here.
    #[test]
    fn the_limits_are_those_of_the_key_groups_and_of_the_rewriter() {
        let state = include_str!("../../../state/src/key_group.rs");
        let rewrite = include_str!("../../../rewrite/src/rewriter.rs");
        let key_groups = format!(
            "pub const DEFAULT_MAX_KEY_GROUPS: NonZeroU16 = match NonZeroU16::new({DEFAULT_MAX_PARALLELISM})"
        );
        let copies = format!("pub const MAX_COPIES: u64 = {MAX_PARALLELISM_LIMIT};");
        assert!(
            state.contains(&key_groups),
            "anduin-state's key groups changed: update DEFAULT_MAX_PARALLELISM"
        );
        assert!(
            rewrite.contains(&copies),
            "anduin-rewrite's MAX_COPIES changed: update MAX_PARALLELISM_LIMIT"
        );
    }

    #[test]
    fn a_setting_out_of_range_is_refused_naming_field_and_range() {
        let bad = AutoscaleConfig {
            target_utilisation: 1.5,
            ..AutoscaleConfig::default()
        };
        let text = bad.validate().expect_err("1.5 > 1").to_string();
        assert!(
            text.contains("`target_utilisation` is 1.5") && text.contains("at most 1"),
            "{text}"
        );
        let nan = AutoscaleConfig {
            max_scale_down_factor: f64::NAN,
            ..AutoscaleConfig::default()
        };
        assert!(nan.validate().is_err());
        let zero = AutoscaleConfig {
            catch_up: Duration::ZERO,
            ..AutoscaleConfig::default()
        };
        let text = zero.validate().expect_err("no catch-up window").to_string();
        assert!(
            text.contains("`catch_up`") && text.contains("from 1ms"),
            "{text}"
        );
        let huge = AutoscaleConfig {
            max_parallelism: 5000,
            ..AutoscaleConfig::default()
        };
        let text = huge.validate().expect_err("above 1024").to_string();
        assert!(text.contains("from 1 to 1024"), "{text}");
    }

    #[test]
    fn operator_bounds_must_lie_within_the_global_maximum_and_min_not_above_max() {
        let mut c = AutoscaleConfig::default();
        c.bounds.insert("agg".into(), Bounds { min: 1, max: 800 });
        let text = c.validate().expect_err("800 > 720").to_string();
        assert!(text.contains("`bounds.agg.max` is 800"), "{text}");
        c.bounds.insert("agg".into(), Bounds { min: 4, max: 2 });
        assert_eq!(
            c.validate(),
            Err(ConfigError::MinAboveMax {
                operator: "agg".into(),
                min: 4,
                max: 2
            })
        );
        c.bounds.insert("agg".into(), Bounds { min: 0, max: 2 });
        assert!(c.validate().is_err(), "min 0");
    }

    #[test]
    fn a_configured_source_rate_must_be_a_finite_non_negative_number() {
        let mut c = AutoscaleConfig::default();
        c.source_rates.insert("gen".into(), -1.0);
        let text = c.validate().expect_err("negative").to_string();
        assert!(text.contains("`source_rates.gen`"), "{text}");
    }
}
