//! The autoscaler wired to a running query: a keyed window run with `--autoscale` and
//! `--max-parallelism 4` follows its generator's rate, stepped up and down through the
//! control plane (`ctl set q gen rate …`): scaled up to its 4 instances while rows arrive,
//! down (at most half its instances at a time, after the scale-down delay) when none do,
//! and up again — and writes exactly what a run that was never rescaled writes. Asserted on
//! the autoscaler's decisions and on the changes it made, never on timing: the target
//! utilisation is set so low that any arrival needs every instance, whatever the machine's
//! speed, and no arrival needs one. The decision log fetched from the API replays.

use crate::a_killed_run_resumes_to_the_output_of_an_uninterrupted_one::WINDOWED;
use crate::common;

use anduin_coordinator::autoscale::Decision;
use common::{anduin, ctl, slowed, stdout_ok, wait_until};

/// The slowed query with `flags`, autoscaled every 300 ms with no stabilisation, at a target
/// utilisation so low that any arrival needs every instance it may have.
fn start_autoscaled(d: &std::path::Path, flags: &[&str]) -> (common::ChildGuard, String) {
    let autoscale = [
        "--autoscale",
        "--autoscale-interval",
        "300ms",
        "--autoscale-set",
        "target_utilisation=0.0000001",
        "--autoscale-set",
        "stabilisation=0ms",
    ];
    slowed::start(d, &[flags, &autoscale[..]].concat())
}

#[test]
fn an_autoscaled_window_follows_its_generator_s_rate_up_and_down() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let expected = slowed::prepare(d, WINDOWED);
    let (run, api) = start_autoscaled(
        d,
        &[
            "--parallelism",
            "1",
            "--max-parallelism",
            "4",
            "--autoscale-set",
            "scale_down_delay=2s",
            "--autoscale-set",
            "max_scale_down_factor=0.5",
        ],
    );
    let client = anduin_api::Client::new(&api, None).expect("an address");
    let parallelism = || slowed::owners(&client, "w");
    let scaled = || {
        client
            .history("q")
            .expect("the history")
            .into_iter()
            .filter(|r| r.from == "autoscaler")
            .map(|r| {
                assert_eq!(
                    (r.operator.as_str(), r.param.as_str()),
                    ("w", "parallelism")
                );
                format!("{}→{}", r.old, r.new)
            })
            .collect::<Vec<String>>()
    };

    // Rows arrive: every instance. No rows: down by half at most, then to one.
    wait_until("the window scaled up to 4", || {
        parallelism().as_deref() == Some("4")
    });
    stdout_ok(&ctl(d, &api, &["set", "q", "gen", "rate", "0.001"]));
    wait_until("the window scaled down to 1", || {
        parallelism().as_deref() == Some("1")
    });
    stdout_ok(&ctl(d, &api, &["set", "q", "gen", "rate", "2000"]));
    wait_until("the window scaled up again", || {
        parallelism().as_deref() == Some("4")
    });
    assert_eq!(scaled(), ["1→4", "4→2", "2→1", "1→4"]);

    // The decisions behind them, with their figures; the log replays.
    let report = client.autoscale("q").expect("the autoscaler's report");
    report.log.replay().expect("the decision log replays");
    let decisions: Vec<&Decision> = report
        .log
        .rounds
        .iter()
        .filter_map(|r| r.round.decision("w"))
        .filter(|d| d.is_change())
        .collect();
    assert!(
        decisions.iter().any(|d| matches!(
            d,
            Decision::ScaleDown {
                from: 4,
                to: 2,
                limited_by_max_factor: true,
                ..
            }
        )),
        "{decisions:?}"
    );
    assert!(
        matches!(
            decisions.last(),
            Some(Decision::ScaleUp { from: 1, to: 4, .. })
        ),
        "{decisions:?}"
    );
    assert!(report.rescales.len() >= 4, "{:?}", report.rescales);
    let state_seen = report.log.rounds.iter().any(|r| {
        r.observation.operators.iter().any(|o| {
            o.name == "w"
                && o.figures
                    .as_ref()
                    .and_then(|f| f.state_bytes)
                    .is_some_and(|b| b > 0)
        })
    });
    assert!(
        state_seen,
        "the window's state size is measured while it runs"
    );
    let shown = stdout_ok(&ctl(d, &api, &["autoscale", "q", "--rounds", "3"]));
    assert!(shown.contains("autoscaler of \"q\""), "{shown}");
    assert!(
        shown.contains("OPERATOR") && shown.contains("TRUE/S"),
        "{shown}"
    );

    slowed::finish(d, &api, run, &["gen"], &expected);
}

/// Run with `--max-parallelism 2` and bounds 1..4: the autoscaler scales the window beyond
/// the instances that run it (they start at the barrier), and the output is unchanged.
#[test]
fn an_autoscaled_window_grows_beyond_its_max_parallelism_within_its_bounds() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let expected = slowed::prepare(d, WINDOWED);
    let flags = ["--parallelism", "2", "--max-parallelism", "2"];
    let (run, api) = start_autoscaled(
        d,
        &[&flags[..], &["--autoscale-set", "bounds.w=1..4"]].concat(),
    );
    let client = anduin_api::Client::new(&api, None).expect("an address");
    wait_until("the window scaled up to 4", || {
        slowed::owners(&client, "w").as_deref() == Some("4")
    });
    let info = client.query("q").expect("the query");
    let w = info.operators.iter().find(|o| o.name == "w").expect("w");
    assert_eq!((w.parallelism, w.max_parallelism), (4, Some(4)), "{w:?}");
    slowed::finish(d, &api, run, &["gen"], &expected);
}

#[test]
fn autoscale_settings_that_cannot_work_are_refused_before_the_query_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    std::fs::write(d.join("q.flow"), WINDOWED).expect("query");
    let refused = |extra: &[&str], says: &str| {
        let mut args = vec!["run", "q.flow", "--var", "OUTPUT=out.csv", "--autoscale"];
        args.extend_from_slice(extra);
        let out = anduin(d, &args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{extra:?} must be refused");
        assert!(stderr.contains(says), "{extra:?}: {stderr}");
        assert!(!d.join("out.csv").exists(), "nothing ran");
    };
    refused(&[], "--autoscale needs --max-parallelism");
    refused(
        &["--max-parallelism", "1"],
        "no operator of the query can be rescaled",
    );
    let max = ["--max-parallelism", "4"];
    refused(
        &[&max[..], &["--autoscale-set", "warp=9"]].concat(),
        "no setting `warp`",
    );
    refused(
        &[&max[..], &["--autoscale-set", "target_utilisation=2"]].concat(),
        "more than 0 and at most 1",
    );
    refused(
        &[&max[..], &["--autoscale-set", "bounds.gen=1..2"]].concat(),
        "cannot be rescaled",
    );
    // Above --max-parallelism is fine (instances start while running), above one instance
    // per key group is not.
    refused(
        &[&max[..], &["--autoscale-set", "bounds.w=1..721"]].concat(),
        "maximum 721 is above the 720 instances `w` can have",
    );
    // With loopback workers (a cluster's data plane) no instance starts while running.
    refused(
        &[
            &max[..],
            &[
                "--loopback-workers",
                "2",
                "--autoscale-set",
                "bounds.w=5..6",
            ],
        ]
        .concat(),
        "--max-parallelism 5",
    );
    refused(
        &[&max[..], &["--autoscale-set", "bounds.nope=1..2"]].concat(),
        "no operator `nope`",
    );
    refused(
        &[&max[..], &["--autoscale-set", "source_rates.gen=1e308"]].concat(),
        "from 0 to 1e12",
    );
}
