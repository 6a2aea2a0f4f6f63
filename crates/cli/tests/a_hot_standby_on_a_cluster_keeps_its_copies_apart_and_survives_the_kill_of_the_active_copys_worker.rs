//! Hot standby on a cluster: the two copies of a window that asks for hot standby are placed
//! on distinct workers (`anduin status` shows where each instance runs), and the worker that
//! runs the active copy is killed with SIGKILL at a seeded moment (after a seeded number of
//! checkpoints). The stream selector, on a worker of its own, goes on with the other copy at
//! once (it says so in its worker's log) while the lost worker's part is restored, its copy
//! among it, which then runs as the standby; the query is not rolled back as a whole and
//! writes exactly what an uninterrupted embedded run of the query without hot standby
//! writes. Seed 0 asks for hot standby with the window's params; seed 1 submits the query
//! without them and with the paper's hot-standby rule written by the user (`--rules FILE`,
//! a rule that reshapes the graph: applied by the coordinator and by each executor before the
//! query runs).

use crate::common;

use common::cluster::{kill_worker_after, pick, windowed_generator, LocalCluster, Setup};
use common::{anduin_ok, output_rows};

const HOT: &str = "param fault_tolerance = \"hot-standby\"\n  param replicas = 2\n  ";

/// The paper's rule (§4.2) for a window, as a user writes it.
const HOT_RULE: &str = "rule hot_window:
  a2 := any(f := window(a1 := any*))
    => a2(stream-selector(failover(writer(f(reader(multicast(a1))))) | @{p1} | @{p2}))
";

#[test]
fn a_hot_standby_on_a_cluster_keeps_its_copies_apart_and_survives_the_kill_of_the_active_copys_worker(
) {
    let plain = windowed_generator(
        23,
        60_000,
        10_000,
        r#"param kind = "tumbling" param size = "100ms""#,
    );
    let hot = plain.replacen(
        "param time = \"ts\"",
        &format!("{HOT}param time = \"ts\""),
        1,
    );
    assert_ne!(plain, hot, "the window asks for hot standby");
    let work = tempfile::tempdir().expect("tempdir");
    std::fs::write(work.path().join("plain.flow"), &plain).expect("query");
    std::fs::write(work.path().join("q.flow"), &hot).expect("query");
    let by_rule = work.path().join("by_rule");
    std::fs::create_dir(&by_rule).expect("dir");
    std::fs::write(by_rule.join("q.flow"), &plain).expect("query");
    std::fs::write(by_rule.join("hot.rules"), HOT_RULE).expect("rules");
    anduin_ok(
        work.path(),
        &["run", "plain.flow", "--var", "OUTPUT=reference.csv"],
    );
    let expected = output_rows(&work.path().join("reference.csv"));
    assert!(expected.len() > 1000, "{}", expected.len());

    for seed in 0..2 {
        let out = format!("out{seed}");
        // Four workers for four task instances: each on its own.
        let mut cluster = LocalCluster::start_with(
            4,
            8,
            Setup {
                worker_env: vec![("RUST_LOG".into(), "anduin_relational=info".into())],
                ..Setup::default()
            },
        );
        let (cwd, rules) = match seed {
            0 => (work.path(), &[][..]),
            _ => (by_rule.as_path(), &["--rules", "hot.rules"][..]),
        };
        let mut args = vec![
            "--var".to_string(),
            format!("OUTPUT={out}"),
            "--checkpoint-every".into(),
            "4000".into(),
        ];
        args.extend(rules.iter().map(|s| s.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let submit = cluster.submit(cwd, "q.flow", &args);
        common::wait_until("the query to run", || {
            cluster.status("q")["instances"]
                .as_object()
                .is_some_and(|i| !i.is_empty())
        });
        let instances = cluster.status("q")["instances"].clone();
        let (active, standby) = (&instances["w"], &instances["w_replica_1"]);
        let selector = &instances["stream-selector_1 -> out"];
        assert!(
            active.is_string() && standby.is_string() && active != standby,
            "the copies run on distinct workers: {instances}"
        );
        assert!(
            selector != active && selector != standby,
            "four instances on four workers: {instances}"
        );
        let victim: usize = active
            .as_str()
            .and_then(|w| w.strip_prefix('w'))
            .and_then(|i| i.parse().ok())
            .expect("a worker named wN");
        let after = 1 + pick(seed, 7, 3);
        let mid_run = kill_worker_after(&mut cluster, "q", victim, after);
        let done = submit.wait_output();
        assert!(
            done.status.success(),
            "seed {seed}: {}\n{}",
            String::from_utf8_lossy(&done.stderr),
            cluster.logs()
        );
        let got = output_rows(&cwd.join(&out));
        assert_eq!(
            got.len(),
            expected.len(),
            "seed {seed}: rows lost or duplicated\n{}",
            cluster.logs()
        );
        assert!(got == expected, "seed {seed}: the output differs");
        let status = cluster.status("q");
        assert!(
            !mid_run
                || status["attempt"] == 1
                || cluster.coordinator_log().contains("the query is finishing"),
            "seed {seed}: the kill rolled the whole query back: {status}\n{}",
            cluster.logs()
        );
        if mid_run {
            let log = std::fs::read_to_string(
                cluster
                    .dir
                    .path()
                    .join(format!("{}.log", selector.as_str().expect("a worker name"))),
            )
            .unwrap_or_default();
            assert!(
                log.contains("another copy takes over"),
                "seed {seed}: the selector switched to the live copy: {log}"
            );
        }
        eprintln!(
            "seed {seed}: worker {victim} (the active copy's) killed after checkpoint {after}{}",
            if mid_run {
                ""
            } else {
                ", after its part had ended"
            }
        );
    }
}
