//! The guards between DS2's answer and a change, in the order they apply:
//!
//! 1. stabilisation: no decision within the stabilisation window after a change (from the
//!    decision, or from the end of the observed rescale if that is later);
//! 2. missing figures: no decision without the model's answer;
//! 3. bounds: the answer is clamped to the operator's `[min, max]`; an operator outside its
//!    bounds is brought inside them at once (bounds win over the guards below);
//! 4. never scale down a fully busy operator;
//! 5. the maximum scale-down factor: at most that share of the instances go in one step;
//! 6. the scale-down delay: a lower parallelism must be recommended in every round for the
//!    whole delay; then the operator goes to the highest of those recommended meanwhile.
//!
//! Scale-ups are not delayed: a bottleneck costs latency now.

use super::config::{ms, AutoscaleConfig};
use super::decision::{Decision, DownReason, HoldReason, KeepReason, UpReason};
use super::ds2::{Missing, Modelled};
use super::figures::OperatorFacts;
use super::state::{OperatorMemory, PendingScaleDown};

/// The guarded decision for `op` at `now_ms`, and what its guards remember after it.
/// `rescaled_ms`: when the last observed rescale of `op` finished.
pub(crate) fn guard(
    config: &AutoscaleConfig,
    op: &OperatorFacts,
    modelled: &Modelled,
    memory: &OperatorMemory,
    rescaled_ms: Option<u64>,
    now_ms: u64,
) -> (Decision, OperatorMemory) {
    let current = op.parallelism;
    let hold = |reason| Decision::Hold {
        parallelism: current,
        reason,
    };
    // A change, decided or observed, breaks any pending scale-down.
    let changed = memory.last_change_ms.max(rescaled_ms);
    let unchanged = OperatorMemory {
        last_change_ms: memory.last_change_ms,
        pending_down: None,
    };
    if let Some(changed) = changed {
        let until_ms = changed.saturating_add(ms(config.stabilisation));
        if now_ms < until_ms {
            return (hold(HoldReason::Stabilising { until_ms }), unchanged);
        }
    }
    let (estimate, required) = match modelled {
        Modelled::Estimated {
            estimate,
            required: Ok(required),
        } => (estimate, *required),
        Modelled::Unknown(missing)
        | Modelled::Estimated {
            required: Err(missing),
            ..
        } => {
            let missing = missing.clone();
            return (hold(HoldReason::MissingFigures { missing }), unchanged);
        }
    };
    let bounds = config.bounds_of(&op.name);
    let bounded = u32::try_from(required)
        .unwrap_or(u32::MAX)
        .clamp(bounds.min, bounds.max);
    let changed_now = OperatorMemory {
        last_change_ms: Some(now_ms),
        pending_down: None,
    };
    if bounded == current {
        let reason = if required > u64::from(bounds.max) {
            KeepReason::AtMaximum { required }
        } else if required < u64::from(bounds.min) {
            KeepReason::AtMinimum { required }
        } else {
            KeepReason::OnTarget
        };
        let keep = Decision::Keep {
            parallelism: current,
            reason,
        };
        return (keep, unchanged);
    }
    if bounded > current {
        let reason = if current < bounds.min {
            UpReason::BelowMinimum
        } else if estimate.bottleneck {
            UpReason::Bottleneck
        } else if estimate
            .required_without_catch_up
            .is_some_and(|r| r <= u64::from(current))
        {
            UpReason::CatchUp
        } else {
            UpReason::AboveUtilisation
        };
        let up = Decision::ScaleUp {
            from: current,
            to: bounded,
            required,
            reason,
        };
        return (up, changed_now);
    }
    if current > bounds.max {
        let down = Decision::ScaleDown {
            from: current,
            to: bounded,
            required,
            limited_by_max_factor: false,
            reason: DownReason::AboveMaximum,
        };
        return (down, changed_now);
    }
    scale_down(config, op, bounded, required, memory, now_ms)
}

/// `bounded` < current, within bounds: the fully-busy guard, the factor and the delay.
fn scale_down(
    config: &AutoscaleConfig,
    op: &OperatorFacts,
    bounded: u32,
    required: u64,
    memory: &OperatorMemory,
    now_ms: u64,
) -> (Decision, OperatorMemory) {
    let current = op.parallelism;
    let hold = |reason| Decision::Hold {
        parallelism: current,
        reason,
    };
    let unchanged = OperatorMemory {
        last_change_ms: memory.last_change_ms,
        pending_down: None,
    };
    let busy = op.figures.as_ref().and_then(|f| f.busy_ratio(current));
    let Some(busy_ratio) = busy else {
        let missing = Missing::NoBusyRatio;
        return (hold(HoldReason::MissingFigures { missing }), unchanged);
    };
    if busy_ratio >= config.fully_busy_ratio {
        let reason = HoldReason::FullyBusy {
            busy_ratio,
            wanted: bounded,
        };
        return (hold(reason), unchanged);
    }
    let floor = lowest_after_scale_down(current, config.max_scale_down_factor);
    let to = bounded.max(floor);
    let pending = match memory.pending_down {
        Some(p) if p.to < current => PendingScaleDown {
            since_ms: p.since_ms,
            to: p.to.max(to),
        },
        _ => PendingScaleDown {
            since_ms: now_ms,
            to,
        },
    };
    let until_ms = pending.since_ms.saturating_add(ms(config.scale_down_delay));
    if now_ms < until_ms {
        let reason = HoldReason::ScaleDownDelay {
            to: pending.to,
            since_ms: pending.since_ms,
            until_ms,
        };
        let waiting = OperatorMemory {
            last_change_ms: memory.last_change_ms,
            pending_down: Some(pending),
        };
        return (hold(reason), waiting);
    }
    let down = Decision::ScaleDown {
        from: current,
        to: pending.to,
        required,
        limited_by_max_factor: floor > bounded && pending.to == floor,
        reason: DownReason::Underused,
    };
    let changed_now = OperatorMemory {
        last_change_ms: Some(now_ms),
        pending_down: None,
    };
    (down, changed_now)
}

/// The fewest instances `current` may go down to in one step: at most `factor` of them go
/// (rounded so that at least one stays and no more than the factor go).
pub(crate) fn lowest_after_scale_down(current: u32, factor: f64) -> u32 {
    let keep = f64::from(current) * (1.0 - factor);
    ((keep - 1e-9).ceil().max(1.0) as u32).min(current)
}

#[cfg(test)]
mod tests {
    use super::super::ds2::Estimate;
    use super::super::figures::Figures;
    use super::*;
    use std::time::Duration;

    const MIN: u64 = 60_000;

    fn config() -> AutoscaleConfig {
        AutoscaleConfig {
            stabilisation: Duration::from_secs(5 * 60),
            scale_down_delay: Duration::from_secs(10 * 60),
            ..AutoscaleConfig::default()
        }
    }

    fn op(parallelism: u32, busy_ratio: f64) -> OperatorFacts {
        OperatorFacts {
            name: "agg".into(),
            upstream: vec!["src".into()],
            parallelism,
            figures: Some(Figures {
                window_ms: 60_000,
                rows_in: 1,
                rows_out: Default::default(),
                busy_ns: Some(1),
                busy_ratio: Some(busy_ratio),
                backlog: Some(0),
                state_bytes: None,
            }),
        }
    }

    fn wants(required: u64, bottleneck: bool) -> Modelled {
        Modelled::Estimated {
            estimate: Estimate {
                target_rate: 1.0,
                catch_up_rate: 0.0,
                arrival_rate: Some(1.0),
                true_rate: Some(1.0),
                capacity: Some(1.0),
                bottleneck,
                required: Some(required),
                required_without_catch_up: Some(required),
            },
            required: Ok(required),
        }
    }

    #[test]
    fn a_scale_up_is_immediate_and_starts_the_stabilisation_window() {
        let c = config();
        let (d, m) = guard(
            &c,
            &op(2, 1.0),
            &wants(5, true),
            &Default::default(),
            None,
            0,
        );
        assert!(matches!(
            d,
            Decision::ScaleUp {
                from: 2,
                to: 5,
                reason: UpReason::Bottleneck,
                ..
            }
        ));
        assert_eq!(m.last_change_ms, Some(0));
        let (d, _) = guard(&c, &op(5, 1.0), &wants(9, true), &m, None, 4 * MIN);
        assert_eq!(
            d,
            Decision::Hold {
                parallelism: 5,
                reason: HoldReason::Stabilising { until_ms: 5 * MIN }
            }
        );
        let (d, _) = guard(&c, &op(5, 1.0), &wants(9, true), &m, None, 5 * MIN);
        assert!(d.is_change(), "{d:?}");
    }

    #[test]
    fn stabilisation_runs_from_the_end_of_the_observed_rescale_when_later() {
        let memory = OperatorMemory {
            last_change_ms: Some(0),
            pending_down: None,
        };
        let (d, _) = guard(
            &config(),
            &op(5, 0.5),
            &wants(9, true),
            &memory,
            Some(2 * MIN),
            6 * MIN,
        );
        assert_eq!(
            d,
            Decision::Hold {
                parallelism: 5,
                reason: HoldReason::Stabilising { until_ms: 7 * MIN }
            }
        );
    }

    #[test]
    fn a_scale_down_waits_for_the_delay_and_goes_to_the_highest_recommended_meanwhile() {
        let c = config();
        let (d, m) = guard(
            &c,
            &op(8, 0.2),
            &wants(3, false),
            &Default::default(),
            None,
            0,
        );
        assert!(
            matches!(
                d,
                Decision::Hold {
                    reason: HoldReason::ScaleDownDelay {
                        to: 4,
                        since_ms: 0,
                        ..
                    },
                    ..
                }
            ),
            "{d:?}: 8 × (1 - 0.6) = 3.2 → 4 at the least"
        );
        let (d, m) = guard(&c, &op(8, 0.2), &wants(5, false), &m, None, 5 * MIN);
        assert!(matches!(d, Decision::Hold { .. }));
        let (d, m) = guard(&c, &op(8, 0.2), &wants(4, false), &m, None, 10 * MIN);
        assert_eq!(
            d,
            Decision::ScaleDown {
                from: 8,
                to: 5,
                required: 4,
                limited_by_max_factor: false,
                reason: DownReason::Underused
            }
        );
        assert_eq!(m.last_change_ms, Some(10 * MIN));
        assert_eq!(m.pending_down, None);
    }

    #[test]
    fn a_break_in_the_recommendation_restarts_the_delay() {
        let c = config();
        let (_, m) = guard(
            &c,
            &op(8, 0.2),
            &wants(4, false),
            &Default::default(),
            None,
            0,
        );
        let (d, m) = guard(&c, &op(8, 0.2), &wants(8, false), &m, None, 5 * MIN);
        assert!(matches!(d, Decision::Keep { .. }));
        assert_eq!(m.pending_down, None);
        let (d, _) = guard(&c, &op(8, 0.2), &wants(4, false), &m, None, 10 * MIN);
        assert!(matches!(
            d,
            Decision::Hold {
                reason: HoldReason::ScaleDownDelay { since_ms, .. },
                ..
            } if since_ms == 10 * MIN
        ));
    }

    #[test]
    fn a_fully_busy_operator_is_never_scaled_down() {
        let c = AutoscaleConfig {
            scale_down_delay: Duration::ZERO,
            ..config()
        };
        let (d, _) = guard(
            &c,
            &op(4, 0.97),
            &wants(1, false),
            &Default::default(),
            None,
            0,
        );
        assert_eq!(
            d,
            Decision::Hold {
                parallelism: 4,
                reason: HoldReason::FullyBusy {
                    busy_ratio: 0.97,
                    wanted: 1
                }
            }
        );
        let (d, _) = guard(
            &c,
            &op(4, 0.5),
            &wants(1, false),
            &Default::default(),
            None,
            0,
        );
        assert!(
            matches!(
                d,
                Decision::ScaleDown {
                    to: 2,
                    limited_by_max_factor: true,
                    ..
                }
            ),
            "{d:?}"
        );
    }

    #[test]
    fn bounds_clamp_the_answer_and_bring_an_operator_inside_them_at_once() {
        let mut c = config();
        c.bounds.insert(
            "agg".into(),
            super::super::config::Bounds { min: 2, max: 6 },
        );
        let (d, _) = guard(
            &c,
            &op(6, 1.0),
            &wants(40, true),
            &Default::default(),
            None,
            0,
        );
        assert_eq!(
            d,
            Decision::Keep {
                parallelism: 6,
                reason: KeepReason::AtMaximum { required: 40 }
            }
        );
        let (d, _) = guard(
            &c,
            &op(9, 1.0),
            &wants(40, true),
            &Default::default(),
            None,
            0,
        );
        assert!(matches!(
            d,
            Decision::ScaleDown {
                to: 6,
                reason: DownReason::AboveMaximum,
                ..
            }
        ));
        let (d, _) = guard(
            &c,
            &op(1, 0.0),
            &wants(0, false),
            &Default::default(),
            None,
            0,
        );
        assert!(matches!(
            d,
            Decision::ScaleUp {
                to: 2,
                reason: UpReason::BelowMinimum,
                ..
            }
        ));
    }

    #[test]
    fn the_floor_of_a_scale_down_keeps_at_least_one_and_removes_at_most_the_factor() {
        assert_eq!(lowest_after_scale_down(10, 0.6), 4);
        assert_eq!(lowest_after_scale_down(1, 0.6), 1);
        assert_eq!(lowest_after_scale_down(10, 1.0), 1);
        assert_eq!(lowest_after_scale_down(3, 0.5), 2);
    }
}
