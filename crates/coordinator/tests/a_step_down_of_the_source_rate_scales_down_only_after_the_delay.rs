//! Producers step down from 3000 to 500 rows/s. The `enrich` stage (five instances) could do
//! with one, but it goes down only after a lower parallelism was recommended for the whole
//! scale-down delay (1 hour by default), no more than 60 % of its instances at once, and a
//! single round of high load in between starts the delay again.

use anduin_coordinator::autoscale::{AutoscaleConfig, Decision, DownReason, HoldReason};

use crate::common::pipeline::{stage, Pipeline};

const MINUTE: u64 = 60_000;

#[test]
fn a_step_down_of_the_source_rate_scales_down_only_after_the_delay() {
    let chain = vec![
        stage("src", 1, 50_000.0),
        stage("enrich", 5, 1_000.0),
        stage("sink", 1, 50_000.0),
    ];
    let mut p = Pipeline::new(chain, AutoscaleConfig::default());
    for _ in 0..3 {
        let round = p.round(3_000.0);
        assert!(round.changes().is_empty(), "{round:#?}");
    }

    // The step down at minute 3; a burst back to 3000 rows/s at minute 33.
    let burst = 33;
    let mut since = 3 * MINUTE;
    let mut scaled = None;
    for n in 3..200 {
        let offered = if n == burst { 3_000.0 } else { 500.0 };
        let round = p.round(offered);
        let decision = round.decision("enrich").expect("decided").clone();
        match decision {
            Decision::Hold {
                reason:
                    HoldReason::ScaleDownDelay {
                        to,
                        since_ms,
                        until_ms,
                    },
                ..
            } => {
                assert_eq!(since_ms, since, "minute {n}");
                assert_eq!(until_ms, since + 60 * MINUTE);
                assert_eq!(to, 2, "5 × (1 - 0.6) = 2 at the least");
            }
            Decision::Keep { .. } if n == burst => since = (burst as u64 + 1) * MINUTE,
            Decision::ScaleDown {
                from,
                to,
                limited_by_max_factor,
                reason,
                ..
            } => {
                assert_eq!(
                    round.at_ms,
                    since + 60 * MINUTE,
                    "exactly when the delay has passed"
                );
                assert_eq!((from, to), (5, 2));
                assert!(limited_by_max_factor);
                assert_eq!(reason, DownReason::Underused);
                scaled = Some(n);
                break;
            }
            other => panic!("minute {n}: {other:?}"),
        }
    }
    assert_eq!(
        scaled,
        Some(burst + 1 + 60),
        "an hour after the burst, not after the step"
    );

    // The next step down (2 → 1) waits for the stabilisation window, then the delay again.
    let mut next = None;
    for _ in 0..120 {
        let round = p.round(500.0);
        if let Some(Decision::ScaleDown { from, to, .. }) = round.decision("enrich") {
            next = Some((round.at_ms, *from, *to));
            break;
        }
    }
    // The rescale took 10 s, so the window ends 5 min 10 s after it began: the first round
    // that may recommend a lower parallelism is 6 minutes after, and the delay runs from it.
    let first = (scaled.expect("scaled") as u64) * MINUTE;
    assert_eq!(next, Some((first + 6 * MINUTE + 60 * MINUTE, 2, 1)));
    assert_eq!(p.parallelism("src"), 1);
    p.log.replay().expect("the recorded rounds replay");
}
