//! Producers step up from 1000 to 3000 rows/s. The `enrich` stage (two instances of 1000 rows
//! per busy second) holds everything back: it alone scales up, first at once, then again
//! once its stabilisation window has passed, until it keeps up at the target utilisation.

use anduin_coordinator::autoscale::{AutoscaleConfig, Decision, KeepReason, UpReason};

use crate::common::pipeline::{stage, Pipeline};

#[test]
fn a_step_up_of_the_source_rate_scales_the_bottleneck_and_only_it_up() {
    let chain = vec![
        stage("src", 1, 50_000.0),
        stage("parse", 1, 20_000.0),
        stage("enrich", 2, 1_000.0),
        stage("sink", 1, 50_000.0),
    ];
    let mut p = Pipeline::new(chain, AutoscaleConfig::default());

    // At 1000 rows/s, enrich runs at 1000 / 2000 = 50 % < 70 %: nothing changes.
    for _ in 0..3 {
        let round = p.round(1_000.0);
        assert!(round.changes().is_empty(), "{round:#?}");
        assert_eq!(
            round.decision("enrich"),
            Some(&Decision::Keep {
                parallelism: 2,
                reason: KeepReason::OnTarget
            })
        );
    }

    // The step: the chain reads only 2000 rows/s, the rest piles up at the source.
    let step = p.round(3_000.0);
    assert_eq!(step.changes().len(), 1, "only the bottleneck: {step:#?}");
    let Some(Decision::ScaleUp {
        from: 2,
        to,
        reason: UpReason::Bottleneck,
        ..
    }) = step.decision("enrich")
    else {
        panic!("enrich scales up as the bottleneck: {step:#?}");
    };
    assert!(*to > 2);
    // The backlog at the source asks for catch-up; it reaches enrich through its target rate.
    let estimate = |name: &str| {
        step.decisions
            .iter()
            .find(|d| d.operator == name)
            .and_then(|d| d.estimate.clone())
            .expect("an estimate")
    };
    let (src, enrich) = (estimate("src"), estimate("enrich"));
    assert!(src.catch_up_rate > 0.0, "{src:?}");
    assert_eq!(enrich.target_rate, src.target_rate + src.catch_up_rate);
    assert!(enrich.bottleneck, "{enrich:?}");

    // Keep offering 3000 rows/s for an hour: enrich settles where 3000 rows/s is at most 70 %
    // of its capacity (⌈3000 / 700⌉ = 5), and nothing else ever changes.
    let mut last_change = step.at_ms;
    for _ in 0..60 {
        let round = p.round(3_000.0);
        for (name, _) in round.changes() {
            assert_eq!(name, "enrich", "{round:#?}");
            assert!(
                round.at_ms >= last_change + 5 * 60_000,
                "within the stabilisation window: {round:#?}"
            );
            last_change = round.at_ms;
        }
    }
    assert_eq!(p.parallelism("enrich"), 5);
    for other in ["src", "parse", "sink"] {
        assert_eq!(p.parallelism(other), 1, "{other}");
    }
    assert!(p.backlog < 1.0, "the backlog is drained: {}", p.backlog);
    p.log.replay().expect("the recorded rounds replay");
}
