//! Pipelining while the query runs, on a cluster (issue 15): a coordinator with two workers
//! runs `gen -> f -> m` (one instance), a keyed window `w` fused with a map `late` (two
//! instances, one on each worker) and a writer. `anduin ctl set q late pipeline split`
//! against the coordinator splits `late` from the window in both executors at one barrier,
//! then `… m pipeline split` cuts the map from the filter in the source's executor. Each split
//! task runs in the executor of the task it split from (on the same worker). The new tasks
//! are numbered alike everywhere, from the plan and the order of the changes: `late`'s is
//! task 3 (instances 4 and 5, after the plan's four), `m`'s task 4 (instance 6); the
//! coordinator's listing shows them, each instance on the worker of the instance it split
//! from. The output is the rows of an uninterrupted embedded run.

use crate::a_chain_split_while_it_runs_writes_what_an_unsplit_run_writes::{tasks, CHAIN};
use crate::common;

use std::path::Path;

use common::cluster::{assert_submitted_output, LocalCluster, Setup};
use common::{anduin_ok, ctl, output_rows, stdout_ok, wait_until, ChildGuard};

/// [`CHAIN`] with a map after the window, fused with it at two instances.
pub(crate) fn query() -> String {
    CHAIN.replace(
        r#"operator name = "out", type = "writer" {
  input name = "counts""#,
        r#"operator name = "late", type = "map" {
  input name = "counts"
  param columns = "window_start, window_end, sensor, n, total + hi AS total_hi"
  param parallelism = 2
  output name = "summed"
}
operator name = "out", type = "writer" {
  input name = "summed""#,
    )
}

/// A query split twice while it runs on a two-worker cluster, and what an uninterrupted
/// embedded run of it writes.
pub(crate) struct SplitOnCluster {
    pub work: tempfile::TempDir,
    pub expected: Vec<String>,
    pub cluster: LocalCluster,
    pub api: String,
    pub submit: Option<ChildGuard>,
    /// The epoch of the barrier that carried the last split.
    pub split_at: u64,
}

fn sorted(tasks: &[&[&str]]) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = tasks
        .iter()
        .map(|t| t.iter().map(|s| s.to_string()).collect())
        .collect();
    out.sort();
    out
}

/// The epoch `ctl set` says a change applied at.
fn epoch_of(applied: &str) -> u64 {
    applied
        .split("applied at epoch ")
        .nth(1)
        .and_then(|rest| rest.split(':').next())
        .and_then(|e| e.trim().parse().ok())
        .unwrap_or_else(|| panic!("no epoch in {applied:?}"))
}

impl SplitOnCluster {
    /// Runs the reference, submits the query slowed down to a coordinator with two workers
    /// (parallelism 2, a checkpoint every 300 ms), splits `late` and then `m` while it runs,
    /// and checks the listing after each. The cluster's processes start as `setup` says.
    pub(crate) fn start(setup: Setup) -> Self {
        let s = Self::submitted(setup, &["--checkpoint-interval", "300ms"]);
        let client = anduin_api::Client::new(&s.api, None).expect("an address");
        assert_eq!(
            tasks(&client),
            sorted(&[&["gen", "f", "m"], &["out"], &["w", "late"]])
        );
        let mut s = s;
        s.split("late");
        // Answered once every instance has split: the listing shows it by then.
        assert_eq!(
            tasks(&client),
            sorted(&[&["gen", "f", "m"], &["late"], &["out"], &["w"]]),
            "the coordinator's listing once `ctl set` answered"
        );
        s.split("m");
        assert_eq!(
            tasks(&client),
            sorted(&[&["gen", "f"], &["late"], &["m"], &["out"], &["w"]])
        );
        s
    }

    /// `ctl set q OP pipeline split`, answered as applied; notes the epoch it applied at.
    pub(crate) fn split(&mut self, op: &str) {
        let applied = stdout_ok(&ctl(
            self.dir(),
            &self.api,
            &["set", "q", op, "pipeline", "split"],
        ));
        assert!(applied.contains("applied at epoch"), "{applied}");
        self.split_at = epoch_of(&applied);
    }

    /// Runs the reference, submits the query slowed down to a coordinator with two workers
    /// at parallelism 2 with `more` flags, and waits for its first checkpoint (asking for it
    /// with `ctl checkpoint` when `more` takes checkpoints only on demand).
    pub(crate) fn submitted(setup: Setup, more: &[&str]) -> Self {
        let work = tempfile::tempdir().expect("tempdir");
        let d = work.path();
        std::fs::write(d.join("ref.flow"), query()).expect("query");
        anduin_ok(d, &["run", "ref.flow", "--var", "OUTPUT=reference.csv"]);
        let expected = output_rows(&d.join("reference.csv"));
        assert!(expected.len() > 10_000, "the query produces enough rows");
        // 60000 rows at 2000 a second would take 30 s: the splits come well before.
        let slow = query().replace("param rate = 40000", "param rate = 2000");
        std::fs::write(d.join("q.flow"), slow).expect("query");
        let cluster = LocalCluster::start_with(2, 8, setup);
        let api = cluster.api();
        let submit = cluster.submit(
            d,
            "q.flow",
            &[
                "--var",
                "OUTPUT=out",
                "--parallelism",
                "2",
                "--batch-size",
                "200",
                "--linger",
                "20ms",
                "--checkpoint-keep",
                "1000",
            ]
            .iter()
            .chain(more)
            .copied()
            .collect::<Vec<_>>(),
        );
        if more.contains(&"1h") {
            wait_until("the query runs", || {
                anduin_api::Client::new(&api, None)
                    .and_then(|c| c.query("q"))
                    .is_ok_and(|q| q.state == anduin_runtime::control::QueryState::Running)
            });
            stdout_ok(&ctl(d, &api, &["checkpoint", "q"]));
        }
        wait_until("the query runs with a checkpoint", || {
            cluster.status("q")["last_checkpoint"]
                .as_u64()
                .is_some_and(|e| e >= 1)
        });
        Self {
            work,
            expected,
            cluster,
            api,
            submit: Some(submit),
            split_at: 0,
        }
    }

    pub(crate) fn dir(&self) -> &Path {
        self.work.path()
    }

    /// Lets the rest of the input run at full speed; asserts that the submission succeeded
    /// and that the output is the reference's. The coordinator's and workers' logs.
    pub(crate) fn finish(&mut self) -> String {
        stdout_ok(&ctl(
            self.dir(),
            &self.api,
            &["set", "q", "gen", "rate", "1000000"],
        ));
        let submit = self.submit.take().expect("submitted");
        let out = self.dir().join("out");
        assert_submitted_output(&self.cluster, submit, &out, &self.expected)
    }
}

#[test]
fn a_chain_split_on_a_cluster_while_it_runs_writes_what_an_unsplit_run_writes() {
    let mut s = SplitOnCluster::start(Setup::default());
    let client = anduin_api::Client::new(&s.api, None).expect("an address");
    let topology = client
        .topology("q")
        .expect("the coordinator serves the topology");
    let task = |head: &str| {
        topology
            .tasks
            .iter()
            .find(|t| t.operators.first().is_some_and(|o| o == head))
            .unwrap_or_else(|| panic!("a task headed by {head}: {topology:?}"))
    };
    // Numbered from the plan (tasks 0 to 2, instances 0 to 3) and the changes' order.
    let (late, m) = (task("late"), task("m"));
    assert_eq!((late.id, m.id), (3, 4), "{topology:?}");
    let mut ids: Vec<(usize, usize)> = late
        .instances
        .iter()
        .chain(&m.instances)
        .map(|i| (i.instance, i.id))
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, [(0, 4), (0, 6), (1, 5)], "{topology:?}");
    // Each instance on the worker of the instance it split from: `late`'s on both.
    for (split, from) in [(late, task("w")), (m, task("gen"))] {
        for i in &split.instances {
            let parent = from
                .instances
                .iter()
                .find(|p| p.instance == i.instance)
                .expect("the instance it split from");
            assert_eq!(i.worker, parent.worker, "{topology:?}");
        }
    }
    let workers: std::collections::BTreeSet<u32> =
        late.instances.iter().map(|i| i.worker).collect();
    assert_eq!(workers.len(), 2, "late's instances run on both workers");
    // `anduin status` names them, each on the worker of the instance it split from (the
    // plan's instances keep their names).
    let status = s.cluster.status("q");
    let on = |name: &str| {
        status["instances"][name]
            .as_str()
            .unwrap_or_else(|| panic!("no instance {name:?} in {status}"))
            .to_string()
    };
    assert_eq!(on("late #0"), on("w -> late #0"), "{status}");
    assert_eq!(on("late #1"), on("w -> late #1"), "{status}");
    assert_eq!(on("m"), on("gen -> f -> m"), "{status}");
    // A checkpoint after the splits waits for the new tasks' shares, and completes.
    let after = s.split_at + 1;
    wait_until("a checkpoint after the splits", || {
        s.cluster.status("q")["last_checkpoint"]
            .as_u64()
            .is_some_and(|e| e >= after)
    });
    s.finish();
}
