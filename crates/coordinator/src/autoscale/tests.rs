//! Properties of whole rounds over random graphs and random figures, simulated over several
//! rounds (each round's decisions carried out before the next).

use std::collections::BTreeMap;
use std::time::Duration;

use proptest::prelude::*;

use super::guards::lowest_after_scale_down;
use super::*;

const ROUND_MS: u64 = 60_000;
const WINDOW_MS: u64 = 60_000;

/// One operator's figures in one round, as drawn.
#[derive(Clone, Debug)]
struct Draw {
    rows_in: u64,
    busy: f64,
    selectivity: f64,
    backlog: u64,
    reported: bool,
}

fn draw() -> impl Strategy<Value = Draw> {
    (
        0u64..50_000,
        0.0f64..1.0,
        0.0f64..2.0,
        prop_oneof![Just(0u64), 0u64..200_000],
        prop::bool::weighted(0.9),
    )
        .prop_map(|(rows_in, busy, selectivity, backlog, reported)| Draw {
            rows_in,
            busy,
            selectivity,
            backlog,
            reported,
        })
}

/// Upstream indices of each operator (always earlier ones: a DAG), as drawn.
fn graph() -> impl Strategy<Value = Vec<Vec<usize>>> {
    prop::collection::vec(prop::collection::vec(0usize..6, 0..3), 1..6).prop_map(|ups| {
        ups.into_iter()
            .enumerate()
            .map(|(i, u)| u.into_iter().filter(|&j| j < i).collect())
            .collect()
    })
}

fn config() -> impl Strategy<Value = AutoscaleConfig> {
    (
        (0.1f64..=1.0, 0.05f64..=1.0, 0.5f64..=1.0),
        (0u64..4, 0u64..5, 1u64..600),
        16u32..100,
        prop::collection::btree_map(0usize..6, (1u32..8, 0u32..9), 0..3),
    )
        .prop_map(
            |((util, factor, busy), (stab, delay, catch_up), max, bounds)| AutoscaleConfig {
                target_utilisation: util,
                max_scale_down_factor: factor,
                fully_busy_ratio: busy,
                stabilisation: Duration::from_millis(stab * ROUND_MS),
                scale_down_delay: Duration::from_millis(delay * ROUND_MS),
                catch_up: Duration::from_secs(catch_up),
                max_parallelism: max,
                bounds: bounds
                    .into_iter()
                    .map(|(i, (min, extra))| {
                        (
                            name(i),
                            Bounds {
                                min,
                                max: min + extra,
                            },
                        )
                    })
                    .collect(),
                ..AutoscaleConfig::default()
            },
        )
}

fn name(i: usize) -> String {
    format!("op{i}")
}

fn observation(
    at_ms: u64,
    ups: &[Vec<usize>],
    parallelism: &[u32],
    draws: &[Draw],
    rescales: &[RescaleFact],
) -> Observation {
    let operators = ups
        .iter()
        .enumerate()
        .map(|(i, u)| {
            let d = &draws[i % draws.len()];
            let readers = (0..ups.len()).filter(|&j| ups[j].contains(&i));
            let p = parallelism[i % parallelism.len()];
            OperatorFacts {
                name: name(i),
                upstream: u.iter().map(|&j| name(j)).collect(),
                parallelism: p,
                figures: d.reported.then(|| Figures {
                    window_ms: WINDOW_MS,
                    rows_in: d.rows_in,
                    rows_out: readers
                        .map(|j| (name(j), (d.rows_in as f64 * d.selectivity) as u64))
                        .collect(),
                    busy_ns: Some((d.busy * WINDOW_MS as f64 * 1e6 * f64::from(p)) as u64),
                    busy_ratio: None,
                    backlog: Some(d.backlog),
                    state_bytes: Some(1 << 20),
                }),
            }
        })
        .collect();
    Observation {
        at_ms,
        operators,
        rescales: rescales.to_vec(),
    }
}

/// Runs `rounds` rounds, carrying out each decision before the next (with a rescale that
/// took `took_ms`), and returns the log.
fn simulate(
    config: &AutoscaleConfig,
    ups: &[Vec<usize>],
    start: &[u32],
    rounds: &[Vec<Draw>],
    took_ms: u64,
) -> DecisionLog {
    let mut parallelism: Vec<u32> = (0..ups.len()).map(|i| start[i % start.len()]).collect();
    let mut rescales = Vec::new();
    // Bounds only for operators the drawn graph has.
    let mut config = config.clone();
    let names: Vec<String> = (0..ups.len()).map(name).collect();
    config.bounds.retain(|op, _| names.contains(op));
    let mut log = DecisionLog::new(config, AutoscaleState::default());
    for (r, draws) in rounds.iter().enumerate() {
        let at = 1_700_000_000_000 + r as u64 * ROUND_MS;
        let obs = observation(at, ups, &parallelism, draws, &rescales);
        let round = log
            .record(obs)
            .expect("a valid observation of a DAG")
            .clone();
        for (i, p) in parallelism.iter_mut().enumerate() {
            let d = round.decision(&name(i)).expect("every operator decided");
            if d.is_change() {
                *p = d.parallelism_after();
                rescales.push(RescaleFact {
                    operator: name(i),
                    started_at_ms: at,
                    finished_at_ms: at + took_ms,
                });
            }
        }
    }
    log
}

fn rounds() -> impl Strategy<Value = Vec<Vec<Draw>>> {
    prop::collection::vec(prop::collection::vec(draw(), 1..6), 1..8)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn a_recommended_parallelism_always_lies_within_the_bounds(
        c in config(), ups in graph(), start in prop::collection::vec(1u32..24, 1..6),
        rs in rounds(), took in 0u64..120_000,
    ) {
        let log = simulate(&c, &ups, &start, &rs, took);
        for d in log.rounds.iter().flat_map(|r| &r.round.decisions) {
            if d.decision.is_change() {
                let b = c.bounds_of(&d.operator);
                let to = d.decision.parallelism_after();
                prop_assert!(b.min <= to && to <= b.max && to <= c.max_parallelism, "{d:?} outside {b:?}");
            }
        }
    }

    #[test]
    fn a_scale_down_never_removes_more_than_the_max_factor(
        c in config(), ups in graph(), start in prop::collection::vec(1u32..24, 1..6),
        rs in rounds(),
    ) {
        let log = simulate(&c, &ups, &start, &rs, 0);
        for d in log.rounds.iter().flat_map(|r| &r.round.decisions) {
            if let Decision::ScaleDown { from, to, reason: DownReason::Underused, .. } = d.decision {
                prop_assert!(to >= lowest_after_scale_down(from, c.max_scale_down_factor));
                prop_assert!(f64::from(from - to) <= f64::from(from) * c.max_scale_down_factor + 1e-9, "{d:?}");
            }
        }
    }

    #[test]
    fn no_operator_changes_within_its_stabilisation_window(
        c in config(), ups in graph(), start in prop::collection::vec(1u32..24, 1..6),
        rs in rounds(), took in 0u64..120_000,
    ) {
        let log = simulate(&c, &ups, &start, &rs, took);
        let window = u64::try_from(c.stabilisation.as_millis()).expect("small");
        let mut last: BTreeMap<&str, u64> = BTreeMap::new();
        for r in &log.rounds {
            for d in r.round.decisions.iter().filter(|d| d.decision.is_change()) {
                if let Some(t) = last.get(d.operator.as_str()) {
                    // The window runs from the end of the rescale decided at `t`.
                    prop_assert!(r.round.at_ms >= t + took + window, "{} changed at {} after {}", d.operator, r.round.at_ms, t);
                }
                last.insert(&d.operator, r.round.at_ms);
            }
        }
    }

    #[test]
    fn a_recorded_sequence_replays_to_the_same_decisions_also_read_back_from_json(
        c in config(), ups in graph(), start in prop::collection::vec(1u32..24, 1..6),
        rs in rounds(), took in 0u64..120_000, keep in 0usize..8,
    ) {
        let mut log = simulate(&c, &ups, &start, &rs, took);
        prop_assert!(log.replay().is_ok(), "{:?}", log.replay());
        let json = serde_json::to_string(&log).expect("serialisable");
        let back: DecisionLog = serde_json::from_str(&json).expect("read back");
        prop_assert!(back.replay().is_ok(), "{:?}", back.replay());
        prop_assert_eq!(serde_json::to_value(&back).expect("json"), serde_json::to_value(&log).expect("json"));
        log.keep_last(keep);
        prop_assert!(log.replay().is_ok(), "after keeping {keep}: {:?}", log.replay());
    }

    #[test]
    fn below_the_target_utilisation_without_backlog_nothing_scales_up(
        ups in graph(), start in prop::collection::vec(1u32..24, 1..6),
        source_rows in prop::collection::vec(0u64..100_000, 1..3),
        selectivity in prop::collection::vec(0.0f64..2.0, 6),
        load in prop::collection::vec(0.01f64..0.99, 6),
        util in 0.2f64..=1.0,
    ) {
        // Consistent flows: an operator's rows in are what its upstream sent it; each is busy
        // `load` × the target utilisation of its window.
        let n = ups.len();
        let mut rows_in = vec![0u64; n];
        let mut sent: Vec<u64> = vec![0; n];
        for i in 0..n {
            if ups[i].is_empty() {
                rows_in[i] = source_rows[i % source_rows.len()];
            } else {
                let mut seen = std::collections::BTreeSet::new();
                rows_in[i] = ups[i].iter().filter(|j| seen.insert(**j)).map(|&j| sent[j]).sum();
            }
            sent[i] = (rows_in[i] as f64 * selectivity[i]) as u64;
        }
        let operators = (0..n).map(|i| {
            let p = start[i % start.len()];
            let readers = (0..n).filter(|&j| ups[j].contains(&i));
            OperatorFacts {
                name: name(i),
                upstream: ups[i].iter().map(|&j| name(j)).collect(),
                parallelism: p,
                figures: Some(Figures {
                    window_ms: WINDOW_MS,
                    rows_in: rows_in[i],
                    rows_out: readers.map(|j| (name(j), sent[i])).collect(),
                    busy_ns: Some((load[i] * util * WINDOW_MS as f64 * 1e6 * f64::from(p)) as u64),
                    busy_ratio: None,
                    backlog: Some(0),
                    state_bytes: None,
                }),
            }
        }).collect();
        let obs = Observation { at_ms: 0, operators, rescales: vec![] };
        let c = AutoscaleConfig { target_utilisation: util, ..AutoscaleConfig::default() };
        let decided = decide(&c, &AutoscaleState::default(), &obs).expect("a DAG");
        for d in &decided.round.decisions {
            prop_assert!(!matches!(d.decision, Decision::ScaleUp { .. }), "{d:?}");
        }
    }
}

#[test]
fn the_same_inputs_decide_the_same_and_time_going_back_is_refused() {
    let ups = vec![vec![], vec![0], vec![1]];
    let draws = vec![Draw {
        rows_in: 30_000,
        busy: 0.9,
        selectivity: 1.0,
        backlog: 500,
        reported: true,
    }];
    let obs = observation(ROUND_MS * 10, &ups, &[2, 3, 1], &draws, &[]);
    let c = AutoscaleConfig::default();
    let first = decide(&c, &AutoscaleState::default(), &obs).expect("valid");
    let again = decide(&c, &AutoscaleState::default(), &obs).expect("valid");
    assert_eq!(first, again);
    let earlier = Observation {
        at_ms: ROUND_MS,
        ..obs
    };
    assert_eq!(
        decide(&c, &first.state, &earlier),
        Err(AutoscaleError::TimeWentBack {
            at_ms: ROUND_MS,
            last_ms: ROUND_MS * 10
        })
    );
}

#[test]
fn settings_naming_an_operator_the_query_lacks_are_refused() {
    let obs = observation(0, &[vec![], vec![0]], &[1], &[draw_one()], &[]);
    let mut c = AutoscaleConfig::default();
    c.source_rates.insert("op1".into(), 10.0);
    let err = decide(&c, &AutoscaleState::default(), &obs).expect_err("op1 is not a source");
    assert!(
        err.to_string()
            .contains("`source_rates` names operator `op1`"),
        "{err}"
    );
    let mut c = AutoscaleConfig::default();
    c.bounds.insert("ghost".into(), Bounds { min: 1, max: 2 });
    assert!(decide(&c, &AutoscaleState::default(), &obs).is_err());
    let invalid = AutoscaleConfig {
        target_utilisation: 0.0,
        ..AutoscaleConfig::default()
    };
    assert!(matches!(
        decide(&invalid, &AutoscaleState::default(), &obs),
        Err(AutoscaleError::Config(_))
    ));
}

#[test]
fn a_replay_with_other_settings_says_which_round_and_operator_diverged() {
    let ups = vec![vec![], vec![0]];
    let rounds = vec![vec![Draw {
        rows_in: 60_000,
        busy: 1.0,
        selectivity: 1.0,
        backlog: 0,
        reported: true,
    }]];
    let mut log = simulate(&AutoscaleConfig::default(), &ups, &[1], &rounds, 0);
    log.config.target_utilisation = 0.1;
    let err = log
        .replay()
        .expect_err("another utilisation decides otherwise");
    assert!(err.to_string().contains("round 0"), "{err}");
}

fn draw_one() -> Draw {
    Draw {
        rows_in: 1,
        busy: 0.5,
        selectivity: 1.0,
        backlog: 0,
        reported: true,
    }
}
