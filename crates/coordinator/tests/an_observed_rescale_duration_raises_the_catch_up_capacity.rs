//! The same figures (a backlog of 120 000 rows at the source, 2000 rows/s arriving) decided
//! twice: once before any rescale was observed, once after rescales that took 90 seconds.
//! The rows that arrive during a rescale must be drained too, so the observed duration (not
//! a configured one) raises the catch-up rate and the parallelism asked for.

use anduin_coordinator::autoscale::{
    decide, AutoscaleConfig, AutoscaleState, Decision, Observation, RescaleFact, UpReason,
};

use crate::common::pipeline::{stage, Pipeline};

fn observation() -> Observation {
    let mut p = Pipeline::new(
        vec![
            stage("src", 1, 50_000.0),
            stage("enrich", 2, 1_000.0),
            stage("sink", 1, 50_000.0),
        ],
        AutoscaleConfig::default(),
    );
    p.backlog = 120_000.0;
    let mut obs = p.observe(2_000.0);
    assert_eq!(p.backlog, 120_000.0, "as many rows read as arrived");
    obs.at_ms = 10 * 3_600_000;
    obs
}

/// The expected rescale time, the source's catch-up rate, enrich's target rate and decision.
fn decided_after(rescales: Vec<RescaleFact>) -> (Option<u64>, f64, f64, Decision) {
    let obs = Observation {
        rescales,
        ..observation()
    };
    let decided = decide(
        &AutoscaleConfig::default(),
        &AutoscaleState::default(),
        &obs,
    )
    .expect("a valid observation");
    let of = |name: &str| {
        decided
            .round
            .decisions
            .iter()
            .find(|d| d.operator == name)
            .expect("decided")
            .clone()
    };
    let (src, enrich) = (of("src"), of("enrich"));
    let src_estimate = src.estimate.expect("an estimate");
    let enrich_estimate = enrich.estimate.expect("an estimate");
    (
        decided.round.expected_rescale_ms,
        src_estimate.catch_up_rate,
        enrich_estimate.target_rate,
        enrich.decision,
    )
}

#[test]
fn an_observed_rescale_duration_raises_the_catch_up_capacity() {
    // Never rescaled: drain 120 000 rows in 5 minutes, 400 rows/s more.
    let (expected, catch_up, target, decision) = decided_after(Vec::new());
    assert_eq!(expected, None);
    assert_eq!(catch_up, 400.0);
    assert_eq!(target, 2_400.0, "the source's catch-up flows on to enrich");
    // enrich (2 × 1000 rows/s) keeps up with the 2000 rows/s arriving, but not with the 2400
    // the source sends while it catches up: a bottleneck, needing ⌈2400 / 700⌉ = 4.
    assert_eq!(
        decision,
        Decision::ScaleUp {
            from: 2,
            to: 4,
            required: 4,
            reason: UpReason::Bottleneck
        }
    );

    // Rescales hours ago (long out of their stabilisation windows) took 90 s and 20 s: the
    // longest counts. 90 s × 2000 rows/s more to drain: (120 000 + 180 000) / 300 s.
    let hour = 3_600_000;
    let rescales = vec![
        RescaleFact {
            operator: "enrich".into(),
            started_at_ms: 2 * hour,
            finished_at_ms: 2 * hour + 90_000,
        },
        RescaleFact {
            operator: "sink".into(),
            started_at_ms: 3 * hour,
            finished_at_ms: 3 * hour + 20_000,
        },
    ];
    let (expected, catch_up, target, decision) = decided_after(rescales);
    assert_eq!(expected, Some(90_000));
    assert_eq!(catch_up, 1_000.0);
    assert_eq!(target, 3_000.0);
    assert_eq!(
        decision,
        Decision::ScaleUp {
            from: 2,
            to: 5,
            required: 5,
            reason: UpReason::Bottleneck
        }
    );
}
