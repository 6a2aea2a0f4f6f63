//! Live rescaling on a cluster (issue 15): a keyed window submitted to a coordinator with two
//! workers at `--parallelism 2 --max-parallelism 4` runs its four instances on both workers;
//! `anduin ctl scale` against the coordinator's API rescales it 2 → 4 → 1 while it runs, the
//! instances handing the key groups they lose to their new owners across the processes (over
//! the data plane), and the query writes exactly what an unrescaled embedded run writes. The
//! coordinator records each rescale: the last checkpoint's plan says who owns the key groups.
//!
//! The variants kill a worker with SIGKILL after the rescale to 4, rescale to 1 once the query
//! has recovered, and still get the unrescaled run's output. Killed
//! - once a checkpoint after the rescale's own has completed: the worker's instances are
//!   restored alone (per-task recovery) with the four owners that checkpoint recorded;
//! - once the rescale's own checkpoint has completed (checkpoints only on demand): restored
//!   alone too, their state (from before the move) re-cut to the four owners;
//! - the first way with per-task recovery off: the query rolls back as a whole, and its new
//!   attempt keeps the four owners;
//! - when the rescale's checkpoint failed (injected): instances restored alone from the
//!   checkpoint before would hold key groups as before the rescale while the others hold them
//!   as after, so the query rolls back as a whole, to the two owners that checkpoint recorded.
//!
//! A coordinator killed right after recording a rescale (`--inject-exit-after
//! parameter-recorded`), before the rescale's checkpoint completed, is not taken over by the
//! restarted one, for the same reason: the query rolls back as a whole, undoing the rescale.
//! A rescale cut short by a worker killed before its barrier reached every instance is
//! answered as such, the query as being recovered (not failed).

use crate::a_killed_run_resumes_to_the_output_of_an_uninterrupted_one::WINDOWED;
use crate::common;

use std::collections::BTreeSet;
use std::path::Path;

use anduin_checkpoint::Store;
use common::cluster::{assert_submitted_output, kill_worker_after, LocalCluster, Setup};
use common::{anduin_ok, ctl, output_rows, stdout_ok, wait_until, wait_until_or_show, ChildGuard};

/// A query, the output of its unrescaled embedded run, and a coordinator with two workers
/// running it slowed down, rescalable up to 4 instances.
struct Rescaled {
    work: tempfile::TempDir,
    expected: Vec<String>,
    cluster: LocalCluster,
    api: String,
    submit: Option<ChildGuard>,
}

/// How a [`Rescaled`] query runs.
#[derive(Default)]
struct Options {
    /// More flags of the coordinator's (`--no-per-task-recovery`).
    coordinator: Vec<&'static str>,
    /// Checkpoints only when asked for (`ctl checkpoint`, a rescale, the end of the input),
    /// not every 300 ms.
    on_demand: bool,
    /// More flags of the submission's.
    submit: Vec<&'static str>,
    /// Files written beside the query before it is submitted: (name, text).
    files: Vec<(&'static str, &'static str)>,
    /// The window's instances started (`--max-parallelism`; 4 if not given).
    max_parallelism: Option<&'static str>,
    /// How many workers (2 if not given).
    workers: Option<usize>,
    /// Each worker's slots (8 if not given).
    slots: Option<u32>,
    /// How many workers the coordinator's scheduler starts (`--scheduler process`): the
    /// query is submitted once they have joined.
    scheduled: Option<usize>,
    /// More flags of the coordinator's, made at run time (a fake API's address).
    coordinator_made: Vec<String>,
    /// Variables of the environment of the coordinator, its workers and the clients.
    env: Vec<(String, String)>,
}

impl Rescaled {
    fn start(options: &Options) -> Self {
        let work = tempfile::tempdir().expect("tempdir");
        let d = work.path();
        std::fs::write(d.join("ref.flow"), WINDOWED).expect("query");
        anduin_ok(d, &["run", "ref.flow", "--var", "OUTPUT=reference.csv"]);
        let expected = output_rows(&d.join("reference.csv"));
        assert!(expected.len() > 10_000, "the query produces enough rows");
        // Slow: 60000 rows at 2000 a second would take 30 s; the rescales come well before.
        let slow = WINDOWED.replace("param rate = 40000", "param rate = 2000");
        std::fs::write(d.join("q.flow"), slow).expect("query");
        for (name, text) in &options.files {
            std::fs::write(d.join(name), text).expect("a file beside the query");
        }
        let cluster = LocalCluster::start_with(
            options.workers.unwrap_or(2),
            options.slots.unwrap_or(8),
            Setup {
                coordinator_flags: options
                    .coordinator
                    .iter()
                    .map(|f| f.to_string())
                    .chain(options.coordinator_made.iter().cloned())
                    .collect(),
                env: options.env.clone(),
                ..Setup::default()
            },
        );
        if let Some(n) = options.scheduled {
            wait_until("the scheduler's workers join", || {
                cluster.workers_joined() == n
            });
        }
        let api = cluster.api();
        let mut flags = vec![
            "--var",
            "OUTPUT=out",
            "--parallelism",
            "2",
            "--max-parallelism",
            options.max_parallelism.unwrap_or("4"),
            "--batch-size",
            "200",
            "--linger",
            "20ms",
            "--checkpoint-interval",
            if options.on_demand { "1h" } else { "300ms" },
            "--checkpoint-keep",
            "1000",
        ];
        flags.extend(&options.submit);
        let submit = cluster.submit(d, "q.flow", &flags);
        let s = Self {
            work,
            expected,
            cluster,
            api,
            submit: Some(submit),
        };
        wait_until("the query runs", || s.owners().is_some());
        if options.on_demand {
            stdout_ok(&ctl(s.dir(), &s.api, &["checkpoint", "q"]));
        }
        wait_until("the query runs with a checkpoint", || {
            s.cluster.status("q")["last_checkpoint"]
                .as_u64()
                .is_some_and(|e| e >= 1)
        });
        s
    }

    fn dir(&self) -> &Path {
        self.work.path()
    }

    /// The rows the window's instances have taken, as the coordinator gathers them.
    fn rows_in(&self) -> u64 {
        let client = anduin_api::Client::new(&self.api, None).expect("an address");
        client.metrics("q").map_or(0, |m| {
            m.instances
                .iter()
                .filter(|i| i.operator == "w")
                .map(|i| i.rows_in)
                .sum::<u64>()
        })
    }

    /// The workers that run the window's instances.
    fn window_workers(&self) -> BTreeSet<u32> {
        self.instances_of("w")
            .into_iter()
            .map(|(_, worker)| worker)
            .collect()
    }

    /// The instances of the task headed by `operator`, with their workers.
    fn instances_of(&self, operator: &str) -> Vec<(usize, u32)> {
        let client = anduin_api::Client::new(&self.api, None).expect("an address");
        let topology = client
            .topology("q")
            .expect("the coordinator serves the topology");
        topology
            .tasks
            .iter()
            .filter(|t| t.operators.first().is_some_and(|o| o == operator))
            .flat_map(|t| t.instances.iter().map(|i| (i.instance, i.worker)))
            .collect()
    }

    /// The workers that run any of the query's instances.
    fn query_workers(&self) -> BTreeSet<u32> {
        ["gen", "w", "out"]
            .iter()
            .flat_map(|op| self.instances_of(op))
            .map(|(_, w)| w)
            .collect()
    }

    /// The window's instances beyond its first two (those added while running), with their
    /// workers.
    fn added(&self) -> Vec<(usize, u32)> {
        self.instances_of("w")
            .into_iter()
            .filter(|(i, _)| *i >= 2)
            .collect()
    }

    /// Waits until each of the window's instances `instances` has taken rows, as the
    /// executors' figures say (the figures and the logs shown if they never do).
    fn await_rows_into(&self, instances: std::ops::Range<usize>) {
        let client = anduin_api::Client::new(&self.api, None).expect("an address");
        wait_until_or_show(
            "rows into every added instance",
            || {
                client.metrics("q").is_ok_and(|m| {
                    instances.clone().all(|j| {
                        m.instances
                            .iter()
                            .any(|i| i.operator == "w" && i.instance == j && i.rows_in > 0)
                    })
                })
            },
            || format!("{:?}\n{}", client.metrics("q"), self.cluster.logs()),
        );
    }

    /// Once the window has taken more rows, rescales it to `to` instances through the
    /// coordinator; the epoch it applied at.
    fn scale(&self, to: &str) -> u64 {
        let seen = self.rows_in();
        wait_until("more rows into the window", || self.rows_in() > seen + 1000);
        let applied = stdout_ok(&ctl(self.dir(), &self.api, &["scale", "q", "w", to]));
        applied
            .split("applied at epoch ")
            .nth(1)
            .and_then(|r| r.split(':').next())
            .and_then(|e| e.trim().parse().ok())
            .unwrap_or_else(|| panic!("an epoch in {applied:?}"))
    }

    /// How many instances own the window's key groups, as the coordinator's control plane
    /// says (`ctl params q w`); `None` while it serves no running attempt.
    fn owners(&self) -> Option<String> {
        let client = anduin_api::Client::new(&self.api, None).expect("an address");
        let params = client.params("q", "w").ok()?;
        params
            .iter()
            .find(|p| p.name == "parallelism")
            .map(|p| p.value.clone())
    }

    /// Lets the generator run at full speed to the end; asserts that the query finished and
    /// wrote exactly the unrescaled run's rows, and that its last checkpoint records
    /// `owners` owners of the window's key groups (if given). Its status at the end.
    fn finish(mut self, owners: Option<usize>) -> serde_json::Value {
        stdout_ok(&ctl(
            self.dir(),
            &self.api,
            &["set", "q", "gen", "rate", "1000000"],
        ));
        let submit = self.submit.take().expect("submitted");
        let out = self.dir().join("out");
        assert_submitted_output(&self.cluster, submit, &out, &self.expected);
        let status = self.cluster.status("q");
        let Some(owners) = owners else { return status };
        let last = self.cluster.status("q")["last_checkpoint"]
            .as_u64()
            .expect("a last checkpoint");
        let manifest = Store::open(self.cluster.checkpoints("q"))
            .expect("opens")
            .manifest(anduin_types::Epoch(last))
            .expect("reads")
            .unwrap_or_else(|| panic!("checkpoint {last} is complete"));
        let w = manifest
            .plan
            .operators
            .iter()
            .find(|o| o.name == "w")
            .expect("the window is in the plan");
        assert_eq!(
            w.parallelism, owners,
            "the last checkpoint records the last rescale"
        );
        status
    }
}

#[test]
fn a_keyed_window_rescaled_on_a_cluster_while_it_runs_writes_what_an_unrescaled_run_writes() {
    let q = Rescaled::start(&Options::default());
    assert_eq!(
        q.window_workers().len(),
        2,
        "the window's instances run on both workers"
    );
    for bad in ["0", "721"] {
        let out = ctl(q.dir(), &q.api, &["scale", "q", "w", bad]);
        assert_ne!(
            out.status.code(),
            Some(0),
            "{bad} instances must be refused"
        );
    }
    q.scale("4");
    assert_eq!(q.owners().as_deref(), Some("4"));
    q.scale("1");
    q.finish(Some(1));
}

/// Beyond `--max-parallelism` (issue 15): started with 2 instances of the window, one per
/// worker, a rescale to 4 starts two more while the query runs, one on each worker (each
/// built by the window's instance there), fed by the network from the producers on the
/// other worker and handed their key groups across it; down to 1, the added instances hand
/// theirs back. The output is the unrescaled run's; the listing shows 4 instances on both
/// workers, and the last checkpoint records one owner.
#[test]
fn a_keyed_window_on_a_cluster_grows_beyond_its_max_parallelism_while_it_runs() {
    let q = Rescaled::start(&Options {
        max_parallelism: Some("2"),
        ..Options::default()
    });
    let client = anduin_api::Client::new(&q.api, None).expect("an address");
    let params = client.params("q", "w").expect("the window's params");
    let doc = params
        .iter()
        .find(|p| p.name == "parallelism")
        .map(|p| p.doc.clone())
        .unwrap_or_default();
    assert!(
        doc.contains("(1 to 720)"),
        "the param says how far it goes: {doc}"
    );
    // Each added instance takes a slot of a worker that runs the window (8 each here).
    let crowded = ctl(q.dir(), &q.api, &["scale", "q", "w", "40"]);
    let why = String::from_utf8_lossy(&crowded.stderr);
    assert!(
        crowded.status.code() != Some(0)
            && why.contains("within their free slots (w")
            && why.contains("scale to at most"),
        "{why}"
    );
    let on = |status: serde_json::Value| -> u64 {
        status["placement"]
            .as_object()
            .map_or(0, |p| p.values().filter_map(|n| n.as_u64()).sum())
    };
    let tasks_on = || on(q.cluster.status("q"));
    let before = tasks_on();
    q.scale("4");
    assert_eq!(q.owners().as_deref(), Some("4"));
    // `anduin status` counts the added instances on their workers.
    assert_eq!(tasks_on(), before + 2);
    let topology = client.topology("q").expect("the topology");
    let window: Vec<(usize, u32)> = topology
        .tasks
        .iter()
        .filter(|t| t.operators.first().is_some_and(|o| o == "w"))
        .flat_map(|t| t.instances.iter().map(|i| (i.instance, i.worker)))
        .collect();
    assert_eq!(window.len(), 4, "{window:?}");
    assert_eq!(q.window_workers().len(), 2, "{window:?}");
    // The added instances take rows (over the network from the generator on the other
    // worker, for one of them), as their executors' figures say.
    q.await_rows_into(2..4);
    q.scale("1");
    // Down to 1, the added instances retire: the listings and `anduin status` drop them.
    wait_until("the added instances retire", || q.added().is_empty());
    wait_until("the status counts what runs", || tasks_on() == before);
    let status = q.finish(Some(1));
    assert_eq!(on(status.clone()), before, "{status}");
}

/// Beyond `--max-parallelism` on a worker that does not run the operator (issue 15): on
/// three workers, the generator, the window's two instances and the writer each go to the
/// least used worker in turn, so one worker runs the generator and the writer and none of
/// the window's. After a change of the window's params, a rescale to 5 puts each added
/// instance on the least loaded of the workers that run or read the window: one on each of
/// the window's workers (built by the window's instance there, which checks that its own
/// chain agrees with what the barriers brought), then the fifth on the writer's worker,
/// built by the writer there from what the barriers brought, fed from the generator and
/// handed its key groups over the network. The output is the unrescaled run's.
#[test]
fn a_keyed_window_on_a_cluster_grows_onto_a_worker_that_only_reads_it() {
    let q = Rescaled::start(&Options {
        max_parallelism: Some("2"),
        workers: Some(3),
        ..Options::default()
    });
    let window = q.window_workers();
    let readers: BTreeSet<u32> = q
        .instances_of("out")
        .into_iter()
        .map(|(_, w)| w)
        .filter(|w| !window.contains(w))
        .collect();
    assert_eq!(
        readers.len(),
        1,
        "one worker runs the writer and not the window: window {window:?}, writer {:?}",
        q.instances_of("out")
    );
    // The same lateness (none) written otherwise: a change each added instance copies.
    stdout_ok(&ctl(
        q.dir(),
        &q.api,
        &["set", "q", "w", "allowed_lateness", "0ms"],
    ));
    q.scale("5");
    assert_eq!(q.owners().as_deref(), Some("5"));
    let added = q.added();
    assert_eq!(added.len(), 3, "{added:?}");
    assert!(
        added.iter().any(|(_, w)| readers.contains(w)),
        "an added instance runs where only the writer ran: {added:?}, {readers:?}; {:?}",
        anduin_api::Client::new(&q.api, None)
            .expect("an address")
            .topology("q")
    );
    q.await_rows_into(2..5);
    q.scale("1");
    // Once retired, grown again: the instance added on the writer's worker takes its key
    // groups there, not in the retired one's inbox (an index taken again).
    wait_until("the added instances retire", || q.added().is_empty());
    q.scale("5");
    assert_eq!(q.added().len(), 3, "{:?}", q.added());
    q.await_rows_into(2..5);
    q.scale("1");
    q.finish(Some(1));
}

/// Beyond `--max-parallelism` on a worker that runs nothing of the query (issue 15): two
/// workers of two slots each run the generator, the window's two instances and the writer,
/// full; a third worker joins. A rescale to 4 places both added instances on it (the least
/// loaded, with room): the coordinator starts a part of the query there that runs none of
/// its planned instances, tells every other executor where it listens, and tells it the
/// barriers it sends, from which it builds the instances the rescale placed on it (nothing
/// there aligns the barrier). They take rows from the generator and key groups from the
/// window's instances over the network, and give them back at a rescale to 1; the output is
/// the unrescaled run's. A rescale beyond every worker's room is refused, saying so. Down to
/// 1, the added instances retire: the third worker's part ends, the listings drop them, and
/// the worker is free again — a second rescale to 4 starts a new part there, whose instances
/// take new numbers (their channels are not those of the retired ones).
#[test]
fn a_keyed_window_on_a_cluster_grows_onto_a_worker_that_ran_nothing_of_it() {
    let mut q = Rescaled::start(&Options {
        max_parallelism: Some("2"),
        slots: Some(2),
        ..Options::default()
    });
    let before = q.query_workers();
    assert_eq!(before.len(), 2, "the query runs on both workers");
    let crowded = ctl(q.dir(), &q.api, &["scale", "q", "w", "3"]);
    let why = String::from_utf8_lossy(&crowded.stderr);
    assert!(
        crowded.status.code() != Some(0) && why.contains("or add workers"),
        "no worker has room yet: {why}"
    );
    q.cluster.add_worker("w3", 2);
    wait_until("the third worker joins", || q.cluster.workers_joined() == 3);
    let crowded = ctl(q.dir(), &q.api, &["scale", "q", "w", "5"]);
    let why = String::from_utf8_lossy(&crowded.stderr);
    assert!(
        crowded.status.code() != Some(0) && why.contains("scale to at most 4"),
        "two instances fit on the third worker, not three: {why}"
    );
    q.scale("4");
    assert_eq!(q.owners().as_deref(), Some("4"));
    let added = q.added();
    assert_eq!(added.len(), 2, "{added:?}");
    assert!(
        added.iter().all(|(_, w)| !before.contains(w)),
        "the added instances run on the third worker: {added:?}, the query ran on {before:?}"
    );
    q.await_rows_into(2..4);
    q.scale("1");
    wait_until_or_show(
        "the third worker's part ends",
        || {
            q.cluster
                .coordinator_log()
                .contains("a scale-down retired them all: it ended")
        },
        || q.cluster.logs(),
    );
    assert!(q.added().is_empty(), "{:?}", q.added());
    assert_eq!(
        q.query_workers(),
        before,
        "nothing runs on the third worker"
    );
    q.scale("4");
    let again = q.added();
    assert_eq!(again.len(), 2, "{again:?}");
    assert!(
        again.iter().all(|(_, w)| !before.contains(w)),
        "grown onto the third worker again: {again:?}, the query ran on {before:?}"
    );
    q.await_rows_into(2..4);
    q.scale("1");
    q.finish(Some(1));
}

/// The autoscaler beyond `--max-parallelism` on a cluster (issue 15): its bounds (`1..5`) are
/// kept although no worker has room when the query starts; while none has, its rescales fail
/// saying why, and once a worker with 2 free slots joins, the next round asks for what fits
/// there (4, not the 5 it decided). The output is the unrescaled run's.
#[test]
fn an_autoscaled_window_on_a_cluster_grows_onto_a_worker_that_joins_later_as_far_as_it_fits() {
    let mut q = Rescaled::start(&Options {
        max_parallelism: Some("2"),
        slots: Some(2),
        submit: vec![
            "--autoscale",
            "--autoscale-interval",
            "1s",
            "--autoscale-set",
            "target_utilisation=0.0000001",
            "--autoscale-set",
            "stabilisation=0ms",
            "--autoscale-set",
            "scale_down_delay=1h",
            "--autoscale-set",
            "bounds.w=1..5",
        ],
        ..Options::default()
    });
    let client = anduin_api::Client::new(&q.api, None).expect("an address");
    wait_until("a rescale failed for want of room", || {
        client.autoscale("q").is_ok_and(|r| {
            r.failures
                .iter()
                .any(|f| f.message.contains("rescale to 5") && f.message.contains("or add workers"))
        })
    });
    assert_eq!(q.owners().as_deref(), Some("2"));
    let before = q.query_workers();
    q.cluster.add_worker("w3", 2);
    wait_until("the window grew onto the third worker", || {
        q.owners().as_deref() == Some("4")
    });
    let added = q.added();
    assert_eq!(added.len(), 2, "{added:?}");
    assert!(
        added.iter().all(|(_, w)| !before.contains(w)),
        "the added instances run on the third worker: {added:?}, the query ran on {before:?}"
    );
    let scaled: Vec<String> = client
        .history("q")
        .expect("the history")
        .into_iter()
        .filter(|r| r.from == "autoscaler")
        .map(|r| format!("{}→{}", r.old, r.new))
        .collect();
    assert_eq!(scaled, ["2→4"], "what fits, not the 5 decided");
    let listed = client.topology("q").expect("the topology").workers;
    assert!(
        added.iter().all(|(_, w)| listed.contains(w)),
        "the topology lists the third worker: {listed:?}"
    );
    q.await_rows_into(2..4);
    q.finish(Some(4));
}

/// Adds a third worker, w3 with 2 slots, on which no part of the query's first attempt can
/// start: a file holds the name of each part's directory there.
fn add_blocked_worker(q: &mut Rescaled) {
    let w3 = q.cluster.dir.path().join("w3");
    std::fs::create_dir_all(&w3).expect("the worker's directory");
    for part in 0..10 {
        std::fs::write(w3.join(format!("q-1-{part}")), "").expect("a file in the way");
    }
    q.cluster.add_worker("w3", 2);
    wait_until("the third worker joins", || q.cluster.workers_joined() == 3);
}

/// A rescale onto a worker that runs nothing of the query, whose part there cannot start
/// (its directory cannot be made: a file holds its name), is refused, saying why; the part is
/// forgotten, and the query runs on in the same attempt (no rollback) to the unrescaled
/// run's output.
#[test]
fn a_growth_whose_part_cannot_start_is_refused_and_the_query_runs_on() {
    let mut q = Rescaled::start(&Options {
        max_parallelism: Some("2"),
        slots: Some(2),
        ..Options::default()
    });
    add_blocked_worker(&mut q);
    let refused = ctl(q.dir(), &q.api, &["scale", "q", "w", "4"]);
    let why = String::from_utf8_lossy(&refused.stderr);
    assert!(
        refused.status.code() != Some(0) && why.contains("could be made ready"),
        "{why}"
    );
    assert_eq!(q.cluster.status("q")["attempt"], 1, "no rollback");
    assert_eq!(q.owners().as_deref(), Some("2"));
    q.finish(None);
}

/// A growth onto two workers that ran nothing of the query, refused because the part on one
/// cannot start (a file holds its directory's name): the part started on the other is
/// cancelled, and its end (a kill) is that of a part forgotten, not a failure of the part a
/// later growth starts there. The same growth again starts new parts on both (new
/// incarnations, in directories of their own), and the output is the unrescaled run's.
#[test]
fn a_growth_refused_for_a_part_that_cannot_start_leaves_both_workers_to_the_next_one() {
    let mut q = Rescaled::start(&Options {
        max_parallelism: Some("2"),
        slots: Some(2),
        ..Options::default()
    });
    add_blocked_worker(&mut q);
    q.cluster.add_worker("w4", 1);
    wait_until("the fourth worker joins", || {
        q.cluster.workers_joined() == 4
    });
    let before = q.query_workers();
    // Three added: two on w3 (the most free), one on w4.
    let refused = ctl(q.dir(), &q.api, &["scale", "q", "w", "5"]);
    let why = String::from_utf8_lossy(&refused.stderr);
    assert!(
        refused.status.code() != Some(0) && why.contains("could be made ready"),
        "{why}"
    );
    q.scale("5");
    let added = q.added();
    assert_eq!(added.len(), 3, "{added:?}");
    let onto: BTreeSet<u32> = added.iter().map(|(_, w)| *w).collect();
    assert_eq!(onto.len(), 2, "on both new workers: {added:?}");
    assert!(
        onto.is_disjoint(&before),
        "{added:?}, the query ran on {before:?}"
    );
    q.await_rows_into(2..5);
    q.scale("1");
    q.finish(Some(1));
}

/// Beyond `--max-parallelism` on a worker the coordinator's scheduler starts for it (issue
/// 15): `--scheduler process --workers 2 --max-workers 3 --slots 2` starts two full workers;
/// a rescale to 4 finds no free slot on them and none on another registered worker, so the
/// scheduler starts a third, and both added instances run there (as on any worker that ran
/// nothing of the query). The output is the unrescaled run's; a rescale beyond what even
/// the workers it may start could take is refused, saying so. Down to 1, the added instances
/// retire and the scheduler stops the third worker (gives it back).
#[test]
fn a_keyed_window_on_a_cluster_grows_onto_a_worker_its_scheduler_starts_for_it() {
    let q = Rescaled::start(&Options {
        max_parallelism: Some("2"),
        workers: Some(0),
        scheduled: Some(2),
        coordinator: vec![
            "--scheduler",
            "process",
            "--workers",
            "2",
            "--max-workers",
            "3",
            "--slots",
            "2",
            "--workers-die-with-coordinator",
        ],
        ..Options::default()
    });
    let before = q.query_workers();
    let crowded = ctl(q.dir(), &q.api, &["scale", "q", "w", "5"]);
    let why = String::from_utf8_lossy(&crowded.stderr);
    assert!(
        crowded.status.code() != Some(0)
            && why.contains("a worker the scheduler may start 2")
            && why.contains("scale to at most 4"),
        "one more worker of two slots at most: {why}"
    );
    assert_eq!(q.cluster.workers_joined(), 2, "a refusal starts no worker");
    q.scale("4");
    assert_eq!(
        q.cluster.workers_joined(),
        3,
        "the scheduler started a third"
    );
    let added = q.added();
    assert_eq!(added.len(), 2, "{added:?}");
    assert!(
        added.iter().all(|(_, w)| !before.contains(w)),
        "the added instances run on the new worker: {added:?}, the query ran on {before:?}"
    );
    q.scale("1");
    // Once its instances retired, the worker the scheduler started is stopped.
    wait_until_or_show(
        "the scheduler gives the third worker back",
        || {
            q.cluster.workers_joined() == 2
                && q.cluster
                    .coordinator_log()
                    .contains("stopping worker local-2")
        },
        || q.cluster.logs(),
    );
    q.finish(Some(1));
}

/// The same on Kubernetes (issue 15): `--scheduler kubernetes --workers 2 --max-workers 3
/// --slots 2` against a fake API server, whose pods a stand-in kubelet runs as local
/// processes (their container's command as the scheduler wrote it). The two pods it keeps
/// are full; a rescale to 4 while the namespace's ResourceQuota allows no more pods is
/// refused with the API's reason; once the quota allows one, the rescale creates a third pod
/// made as the other two, its worker registers, and both added instances run there. Down to
/// 1, they retire and the scheduler deletes the third pod (gives it back). The output is the
/// unrescaled run's; the pods go with the coordinator.
#[test]
fn a_keyed_window_on_kubernetes_grows_onto_a_pod_its_scheduler_creates_for_it() {
    let fake = common::kube_fake::FakeApi::start("streams");
    let pods = tempfile::tempdir().expect("tempdir");
    let secret = vec![(
        "ANDUIN_CLUSTER_SECRET".to_string(),
        "kubernetes-growth".to_string(),
    )];
    let _kubelet = common::kubelet::Kubelet::start(&fake, pods.path(), secret.clone());
    fake.state().pod_quota = Some(2);
    let q = Rescaled::start(&Options {
        max_parallelism: Some("2"),
        workers: Some(0),
        scheduled: Some(2),
        coordinator: vec![
            "--scheduler",
            "kubernetes",
            "--workers",
            "2",
            "--max-workers",
            "3",
            "--slots",
            "2",
            "--kube-namespace",
            "streams",
            "--kube-worker-image",
            "example.org/anduin:test",
            "--kube-worker-secret",
            "anduin",
        ],
        coordinator_made: vec!["--kube-api".into(), fake.url()],
        env: secret,
        ..Options::default()
    });
    let before = q.query_workers();
    let crowded = ctl(q.dir(), &q.api, &["scale", "q", "w", "5"]);
    let why = String::from_utf8_lossy(&crowded.stderr);
    assert!(
        crowded.status.code() != Some(0)
            && why.contains("a worker the scheduler may start 2")
            && why.contains("scale to at most 4"),
        "one more pod of two slots at most: {why}"
    );
    let quota = ctl(q.dir(), &q.api, &["scale", "q", "w", "4"]);
    let why = String::from_utf8_lossy(&quota.stderr);
    assert!(
        quota.status.code() != Some(0)
            && why.contains("cannot create pod anduin-worker-2 in namespace streams")
            && why.contains("exceeded quota")
            && why.contains("ResourceQuota"),
        "the API's refusal, named: {why}"
    );
    assert_eq!(q.owners().as_deref(), Some("2"));
    assert_eq!(fake.state().pods.len(), 2, "a refusal keeps no pod");
    fake.state().pod_quota = Some(3);
    q.scale("4");
    assert_eq!(
        q.cluster.workers_joined(),
        3,
        "the third pod's worker joined"
    );
    {
        let state = fake.state();
        let pod = &state.pods["anduin-worker-2"];
        let kept = &state.pods["anduin-worker-0"];
        assert_eq!(
            pod["metadata"]["labels"]["anduin.io/worker"],
            "anduin-worker-2"
        );
        assert_eq!(
            pod["metadata"]["labels"]["anduin.io/coordinator"],
            kept["metadata"]["labels"]["anduin.io/coordinator"]
        );
        assert_eq!(
            pod["spec"]["containers"][0]["image"],
            kept["spec"]["containers"][0]["image"]
        );
        assert_eq!(pod["spec"]["containers"][0]["command"][7], "2", "its slots");
    }
    let added = q.added();
    assert_eq!(added.len(), 2, "{added:?}");
    assert!(
        added.iter().all(|(_, w)| !before.contains(w)),
        "the added instances run on the new pod's worker: {added:?}, the query ran on {before:?}"
    );
    assert!(
        q.cluster
            .coordinator_log()
            .contains("created worker pod anduin-worker-2"),
        "{}",
        q.cluster.coordinator_log()
    );
    q.await_rows_into(2..4);
    q.scale("1");
    // The pod is gone from the API before the coordinator, answered, says it deleted it:
    // wait for both.
    wait_until_or_show(
        "the scheduler deletes the third pod",
        || {
            !fake.state().pods.contains_key("anduin-worker-2")
                && q.cluster
                    .coordinator_log()
                    .contains("deleted worker pod anduin-worker-2: created for instances added")
        },
        || q.cluster.logs(),
    );
    assert_eq!(fake.state().pods.len(), 2, "it keeps its --workers");
    q.finish(Some(1));
}

/// The autoscaler on a cluster (`submit … --autoscale`): its rounds read the figures the
/// executors send to the coordinator, and its rescales go through the coordinator's control
/// plane. A target utilisation so low that any arrival needs every instance (whatever the
/// machine's speed) scales the window up to 4 while rows arrive, and down to 1, half at most
/// at a time after the scale-down delay, when none do; the output is the unrescaled run's.
#[test]
fn an_autoscaled_window_on_a_cluster_follows_its_rate_up_and_down() {
    let q = Rescaled::start(&Options {
        submit: vec![
            "--autoscale",
            // The executors send their figures every second: a round each second, and a
            // scale-down delay that spans several of them.
            "--autoscale-interval",
            "1s",
            "--autoscale-set",
            "target_utilisation=0.0000001",
            "--autoscale-set",
            "stabilisation=0ms",
            "--autoscale-set",
            "scale_down_delay=3s",
            "--autoscale-set",
            "max_scale_down_factor=0.5",
        ],
        ..Options::default()
    });
    wait_until("the window scaled up to 4", || {
        q.owners().as_deref() == Some("4")
    });
    stdout_ok(&ctl(q.dir(), &q.api, &["set", "q", "gen", "rate", "0.001"]));
    wait_until("the window scaled down to 1", || {
        q.owners().as_deref() == Some("1")
    });
    let client = anduin_api::Client::new(&q.api, None).expect("an address");
    let scaled: Vec<String> = client
        .history("q")
        .expect("the history")
        .into_iter()
        .filter(|r| r.from == "autoscaler")
        .map(|r| format!("{}→{}", r.old, r.new))
        .collect();
    assert_eq!(scaled, ["2→4", "4→2", "2→1"]);
    let report = client.autoscale("q").expect("the autoscaler's report");
    report.log.replay().expect("the decision log replays");
    let shown = stdout_ok(&ctl(q.dir(), &q.api, &["autoscale", "q"]));
    assert!(shown.contains("autoscaler of \"q\""), "{shown}");
    // It may scale up again as the rest of the input arrives at full speed.
    q.finish(None);
}

/// Rules applied at run time on a cluster (`anduin submit … --rules FILE`): the rule file goes
/// with the submission, the coordinator matches it against the figures the executors send,
/// and its changes are live rescales, as embedded. The rules of the embedded scenario scale
/// the window to 3 while rows arrive and back to 1 when none do.
#[test]
fn a_run_time_rule_on_a_cluster_rescales_its_window_while_its_measured_rate_holds() {
    let q = Rescaled::start(&Options {
        submit: vec![
            "--rules",
            "scale.rules",
            // The executors send their figures every second.
            "--rules-interval",
            "1s",
        ],
        files: vec![(
            "scale.rules",
            crate::a_run_time_rule_rescales_a_window_while_its_measured_rate_holds::RULES,
        )],
        ..Options::default()
    });
    wait_until("the busy window rescaled to 3", || {
        q.owners().as_deref() == Some("3")
    });
    stdout_ok(&ctl(q.dir(), &q.api, &["set", "q", "gen", "rate", "0.001"]));
    wait_until("the idle window rescaled to 1", || {
        q.owners().as_deref() == Some("1")
    });
    let client = anduin_api::Client::new(&q.api, None).expect("an address");
    let by_rules: Vec<String> = client
        .history("q")
        .expect("the history")
        .into_iter()
        .filter(|r| r.from.starts_with("rule:"))
        .map(|r| format!("{} {}→{}", r.from, r.old, r.new))
        .collect();
    // From 2, or from 1 when the window looked idle before the rows came (a loaded machine
    // starts the generator late): the rule scaled it to 3 either way.
    assert!(
        by_rules
            .iter()
            .any(|r| r.starts_with("rule:scale_busy_window ") && r.ends_with("→3")),
        "{by_rules:?}"
    );
    assert!(
        by_rules.contains(&"rule:shrink_idle_window 3→1".to_string()),
        "{by_rules:?}"
    );
    q.finish(None);
}

/// A rule file that cannot run is refused at submit, at its FILE:LINE:COL, before anything
/// runs; one that cannot be read is refused by `anduin submit` itself.
#[test]
fn a_rule_file_that_cannot_run_is_refused_at_submit() {
    let cluster = LocalCluster::start_with(1, 2, Setup::default());
    let d = cluster.dir.path();
    std::fs::write(d.join("q.flow"), WINDOWED).expect("query");
    std::fs::write(
        d.join("bad.rules"),
        "\n w := window [rate(w) > 1] => merge(w)",
    )
    .expect("rules");
    let refused = |flags: &[&str], says: &str| {
        let mut args = vec![
            "submit",
            "q.flow",
            "--coordinator",
            &cluster.addr,
            "--var",
            "OUTPUT=out",
        ];
        args.extend_from_slice(flags);
        let out = common::anduin(d, &args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{flags:?} must be refused");
        assert!(stderr.contains(says), "{flags:?}: {stderr}");
    };
    refused(
        &["--rules", "bad.rules"],
        "bad.rules:2:2: rule bad.rules:2: it reads the figure `rate` and its right side makes a new `merge` operator",
    );
    refused(
        &["--rules", "missing.rules"],
        "cannot read rule file `missing.rules`",
    );
    refused(
        &["--rules-interval", "1s"],
        "--rules-interval needs --rules FILE",
    );
    assert!(cluster.status("q").is_null(), "nothing was submitted");
}

/// Kills worker `w1` once checkpoint `after` has completed; waits until the query runs again
/// without it (every instance on the live worker, and a checkpoint asked of the coordinator's
/// control plane completed since). The query's attempt then.
fn kill_and_recover(q: &mut Rescaled, after: u64) -> u64 {
    assert!(
        kill_worker_after(&mut q.cluster, "q", 1, after),
        "the kill must come mid-run"
    );
    let killed = q.cluster.status("q")["last_checkpoint"]
        .as_u64()
        .expect("a checkpoint before the kill");
    wait_until("the query running without the killed worker", || {
        let s = q.cluster.status("q");
        s["state"] == "running"
            && s["instances"]
                .as_object()
                .is_some_and(|m| !m.is_empty() && m.values().all(|w| w != "w1"))
    });
    let client = anduin_api::Client::new(&q.api, None).expect("an address");
    wait_until("a checkpoint after the recovery", || {
        client.checkpoint("q").is_ok_and(|e| e > killed)
    });
    q.cluster.status("q")["attempt"].as_u64().unwrap_or(0)
}

#[test]
fn a_keyed_window_rescaled_on_a_cluster_recovers_its_killed_workers_instances_with_the_new_owners()
{
    let mut q = Rescaled::start(&Options::default());
    let epoch = q.scale("4");
    let attempt = kill_and_recover(&mut q, epoch + 1);
    assert_eq!(attempt, 1, "per-task recovery\n{}", q.cluster.logs());
    assert_eq!(
        q.owners().as_deref(),
        Some("4"),
        "the recovery keeps the rescale\n{}",
        q.cluster.logs()
    );
    // The listing shows the restored instances where they run now: on the live worker.
    assert_eq!(q.window_workers().len(), 1, "{:?}", q.window_workers());
    q.scale("1");
    q.finish(Some(1));
}

/// A worker killed after the window grew beyond `--max-parallelism`: instances restored alone
/// would be planned without those added, so the query rolls back as a whole, to the
/// instances it starts with (its state re-cut to them); as soon as it runs, the coordinator
/// grows it again to the 4 instances its checkpoint recorded (all on the live worker, which
/// has the slots), and it still writes the unrescaled run's output.
#[test]
fn a_keyed_window_grown_on_a_cluster_and_killed_rolls_back_as_a_whole() {
    let mut q = Rescaled::start(&Options {
        max_parallelism: Some("2"),
        ..Options::default()
    });
    let epoch = q.scale("4");
    let attempt = kill_and_recover(&mut q, epoch + 1);
    assert_eq!(attempt, 2, "a whole rollback\n{}", q.cluster.logs());
    assert!(
        q.cluster
            .coordinator_log()
            .contains("instance(s) beyond those the run started with"),
        "the coordinator says why it rolls back\n{}",
        q.cluster.coordinator_log()
    );
    grown_again(&q);
    assert_eq!(q.window_workers().len(), 1, "{:?}", q.window_workers());
    // No process warns that the rescale is not kept (the coordinator grows it again).
    for i in 0..q.cluster.workers.len() {
        let log = std::fs::read_to_string(q.cluster.dir.path().join(format!("w{i}.log")))
            .unwrap_or_default();
        assert!(!log.contains("to keep the rescale"), "w{i}:\n{log}");
    }
    assert!(!q.cluster.coordinator_log().contains("to keep the rescale"));
    q.scale("1");
    q.finish(Some(1));
}

/// Waits until the coordinator has grown the window again to the 4 instances the checkpoint
/// of its rollback recorded (a rollback starts at the planned instances).
fn grown_again(q: &Rescaled) {
    // The coordinator says so once the growth has applied, after the params say 4: wait for
    // both.
    wait_until_or_show(
        "the window grown again to 4 instances",
        || {
            q.owners().as_deref() == Some("4")
                && q.cluster.coordinator_log().contains(
                    "operator \"w\" grown again to 4 instances after the rollback (or resume)",
                )
        },
        || q.cluster.logs(),
    );
    let log = q.cluster.coordinator_log();
    assert!(
        log.contains("operator \"w\" grown again to 4 instances after the rollback (or resume)"),
        "{log}"
    );
    let client = anduin_api::Client::new(&q.api, None).expect("an address");
    let history = client.history("q").expect("the history");
    assert!(
        history
            .iter()
            .any(|c| c.param == "parallelism" && c.new == "4" && c.from.contains("grown again")),
        "the history says who grew it again: {history:?}"
    );
}

/// A growth that cannot come back after the rollback (the live worker lacks the slots for
/// 6 more instances): the coordinator says so and the query runs at its planned instances,
/// though its checkpoints still record the rescale to 8; a coordinator restarted then takes
/// the attempt over (no instance was added in it) instead of rolling it back again.
#[test]
fn a_growth_that_could_not_come_back_does_not_keep_a_restarted_coordinator_from_taking_over() {
    let mut q = Rescaled::start(&Options {
        max_parallelism: Some("2"),
        ..Options::default()
    });
    let epoch = q.scale("8");
    // The API's event stream, read from now on: the refusal comes on it too.
    let client = anduin_api::Client::new(&q.api, None).expect("an address");
    let events = client.events(Some("q")).expect("the event stream");
    let (tx, refusals) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for e in events.flatten() {
            if e.event == "change_refused" && tx.send(e.data).is_err() {
                break;
            }
        }
    });
    let attempt = kill_and_recover(&mut q, epoch + 1);
    assert_eq!(attempt, 2, "a whole rollback\n{}", q.cluster.logs());
    wait_until_or_show(
        "the coordinator giving up the growth",
        || {
            q.cluster
                .coordinator_log()
                .contains("could not be grown again to the 8 instances")
        },
        || q.cluster.logs(),
    );
    let refusal = refusals
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("a change_refused event");
    assert!(
        refusal.contains("\"value\":\"8\"") && refusal.contains("grown again"),
        "{refusal}"
    );
    assert_eq!(q.owners().as_deref(), Some("2"));
    let now = client.checkpoint("q").expect("a checkpoint");
    common::cluster::restart_coordinator_after(&mut q.cluster, "q", now);
    q.api = q.cluster.api();
    // Its control plane serves the attempt's params just before it says that it took the
    // attempt over: wait for what it says (or for the attempt it rolled back to).
    wait_until_or_show(
        "the restarted coordinator taking the attempt over (or rolling it back)",
        || {
            q.cluster
                .coordinator_log()
                .contains("attempt 2: taken over, nothing restarted")
                || q.cluster.status("q")["attempt"]
                    .as_u64()
                    .is_some_and(|a| a > 2)
        },
        || q.cluster.logs(),
    );
    wait_until("the restarted coordinator runs the query", || {
        q.owners().is_some()
    });
    let log = q.cluster.coordinator_log();
    assert!(
        log.contains("attempt 2: taken over, nothing restarted"),
        "{log}"
    );
    assert!(!log.contains("does not take over"), "{log}");
    q.scale("1");
    q.finish(Some(1));
}

/// A worker lost before any growth, its part restored alone (per-task recovery): no instance
/// is added in that attempt (they would be wired beside a part restored alone), and the
/// refusal says so; `ctl params` no longer says the window grows; within its instances it
/// still rescales, and the output is the unrescaled run's.
#[test]
fn a_keyed_window_whose_worker_was_restored_alone_does_not_grow_in_that_attempt() {
    let mut q = Rescaled::start(&Options {
        max_parallelism: Some("2"),
        ..Options::default()
    });
    let client = anduin_api::Client::new(&q.api, None).expect("an address");
    let doc = || {
        client
            .params("q", "w")
            .expect("the window's params")
            .iter()
            .find(|p| p.name == "parallelism")
            .map(|p| p.doc.clone())
            .unwrap_or_default()
    };
    assert!(doc().contains("(1 to 720)"), "{}", doc());
    let attempt = kill_and_recover(&mut q, 2);
    assert_eq!(attempt, 1, "per-task recovery\n{}", q.cluster.logs());
    let refused = ctl(q.dir(), &q.api, &["scale", "q", "w", "4"]);
    let why = String::from_utf8_lossy(&refused.stderr);
    assert!(
        refused.status.code() != Some(0) && why.contains("not added in this attempt"),
        "{why}"
    );
    assert!(doc().contains("(1 to 2)"), "{}", doc());
    q.scale("1");
    q.finish(Some(1));
}

/// A coordinator restarted after the window grew beyond `--max-parallelism` (and a checkpoint
/// recorded it) does not take the attempt over: it would not know of the instances added.
/// The query rolls back as a whole, grows again to the recorded 4, and writes the unrescaled
/// run's output.
#[test]
fn a_keyed_window_grown_on_a_cluster_is_rolled_back_by_a_restarted_coordinator() {
    grown_then_coordinator_restarted(false);
}

/// The same, the coordinator killed as soon as the rescale is applied, its own checkpoint the
/// last complete one (it records the rescale, not yet the instances: the hostile probe's
/// HIGH, a take-over whose later checkpoints lacked the added instances' state).
#[test]
fn a_keyed_window_grown_on_a_cluster_is_rolled_back_by_a_coordinator_restarted_at_once() {
    grown_then_coordinator_restarted(true);
}

fn grown_then_coordinator_restarted(at_once: bool) {
    let mut q = Rescaled::start(&Options {
        max_parallelism: Some("2"),
        on_demand: at_once,
        ..Options::default()
    });
    let epoch = q.scale("4");
    if at_once {
        wait_until("the rescale's checkpoint", || {
            q.cluster.status("q")["last_checkpoint"]
                .as_u64()
                .is_some_and(|e| e >= epoch)
        });
        q.cluster.restart_coordinator();
    } else {
        common::cluster::restart_coordinator_after(&mut q.cluster, "q", epoch + 1);
    }
    q.api = q.cluster.api();
    wait_until("the new attempt", || {
        q.cluster.status("q")["attempt"]
            .as_u64()
            .is_some_and(|a| a >= 2)
    });
    wait_until("the new attempt runs", || q.owners().is_some());
    let log = q.cluster.coordinator_log();
    assert!(log.contains("beyond the 2 it started with"), "{log}");
    grown_again(&q);
    q.scale("1");
    q.finish(Some(1));
}

#[test]
fn a_keyed_window_killed_at_its_rescales_checkpoint_recovers_per_task_with_its_state_re_cut() {
    let mut q = Rescaled::start(&Options {
        on_demand: true,
        ..Options::default()
    });
    let epoch = q.scale("4");
    let attempt = kill_and_recover(&mut q, epoch);
    assert_eq!(attempt, 1, "per-task recovery\n{}", q.cluster.logs());
    assert_eq!(q.owners().as_deref(), Some("4"));
    q.scale("1");
    q.finish(Some(1));
}

#[test]
fn a_keyed_window_rescaled_on_a_cluster_rolled_back_as_a_whole_keeps_the_new_owners() {
    let mut q = Rescaled::start(&Options {
        coordinator: vec!["--no-per-task-recovery"],
        ..Options::default()
    });
    let epoch = q.scale("4");
    let attempt = kill_and_recover(&mut q, epoch + 1);
    assert_eq!(attempt, 2, "a whole rollback\n{}", q.cluster.logs());
    assert_eq!(
        q.owners().as_deref(),
        Some("4"),
        "the new attempt keeps the rescale its checkpoint recorded\n{}",
        q.cluster.logs()
    );
    q.scale("1");
    q.finish(Some(1));
}

#[test]
fn a_keyed_window_killed_after_a_rescale_no_checkpoint_covers_rolls_back_as_a_whole() {
    // Checkpoint 1 on demand, checkpoint 2 the rescale's: it fails.
    let mut q = Rescaled::start(&Options {
        on_demand: true,
        submit: vec!["--inject-checkpoint-failure", "2"],
        ..Options::default()
    });
    let epoch = q.scale("4");
    assert_eq!(epoch, 2, "the rescale rides on the checkpoint that fails");
    let attempt = kill_and_recover(&mut q, 1);
    assert_eq!(
        attempt,
        2,
        "instances restored alone would not hold the key groups the others expect\n{}",
        q.cluster.logs()
    );
    assert!(
        q.cluster
            .coordinator_log()
            .contains("was rescaled to 4 instances at epoch 2, after checkpoint 1"),
        "the coordinator says why it rolls back\n{}",
        q.cluster.coordinator_log()
    );
    assert_eq!(
        q.owners().as_deref(),
        Some("2"),
        "back to the assignment checkpoint 1 recorded"
    );
    q.scale("1");
    q.finish(Some(1));
}

#[test]
fn a_keyed_window_rescaled_just_before_its_coordinator_died_rolls_back_as_a_whole() {
    rescaled_before_the_coordinator_died("parameter-recorded").finish(Some(2));
}

/// The coordinator dies once every instance has moved its key groups and before it records
/// that they did (the hostile probe's HIGH finding: the next coordinator knew nothing of the
/// rescale, took the attempt over, and its checkpoints recorded the assignment from before,
/// so a later restore lost and invented rows). The rescale was recorded before its barrier
/// went out: the next coordinator rolls back. A third coordinator, restarted after that
/// rollback, takes the new attempt over rather than roll back again for the undone rescale.
#[test]
fn a_keyed_window_rescaled_as_its_coordinator_died_unrecorded_rolls_back_once() {
    let mut q = rescaled_before_the_coordinator_died("change-settled");
    let attempt = q.cluster.status("q")["attempt"].as_u64();
    q.cluster.restart_coordinator();
    q.api = q.cluster.api();
    // Its API serves the attempt's control plane a moment before the checkpoint coordinator
    // is attached to it (a checkpoint asked before then is refused): wait for the params it
    // serves once attached.
    wait_until_or_show(
        "the third coordinator to run the query",
        || q.owners().is_some(),
        || q.cluster.logs(),
    );
    stdout_ok(&ctl(q.dir(), &q.api, &["checkpoint", "q"]));
    assert_eq!(
        q.cluster.status("q")["attempt"].as_u64(),
        attempt,
        "taken over, not rolled back again\n{}",
        q.cluster.logs()
    );
    q.finish(Some(2));
}

/// Checkpoint 1 on demand; the rescale of `w` to 4 rides on checkpoint 2, and the coordinator
/// exits at `exit` (after the rescale is settled: before or after recording it), before
/// checkpoint 2 completes. The restarted coordinator rolls back, undoing the rescale.
fn rescaled_before_the_coordinator_died(exit: &'static str) -> Rescaled {
    let mut q = Rescaled::start(&Options {
        on_demand: true,
        coordinator: vec!["--inject-exit-after", exit],
        ..Options::default()
    });
    let seen = q.rows_in();
    wait_until("more rows into the window", || q.rows_in() > seen + 1000);
    let _ = ctl(q.dir(), &q.api, &["scale", "q", "w", "4"]);
    wait_until(
        "the coordinator to exit once the rescale is in its catalog",
        || matches!(q.cluster.coordinator.0.try_wait(), Ok(Some(_))),
    );
    q.cluster.setup.coordinator_flags.clear();
    q.cluster.restart_coordinator();
    q.api = q.cluster.api();
    // The running instances hold key groups as after the rescale, its last checkpoint as
    // before: the restarted coordinator does not take the attempt over.
    wait_until("the new attempt", || {
        q.cluster.status("q")["attempt"]
            .as_u64()
            .is_some_and(|a| a >= 2)
    });
    wait_until("the new attempt runs", || q.owners().is_some());
    assert_eq!(
        q.owners().as_deref(),
        Some("2"),
        "the rollback undoes the rescale\n{}",
        q.cluster.logs()
    );
    let log = q.cluster.coordinator_log();
    assert!(
        log.contains("rolls back as a whole, undoing the rescale"),
        "{log}"
    );
    q
}

/// A rescale cut short by a worker's loss: the executors of `w1` are stopped (the rescale's
/// barrier cannot reach its instances), `ctl scale` is asked, and once its barrier is out
/// `w1` is killed. The coordinator rolls the query back as a whole and runs it on; `ctl scale`
/// answers that the rescale was cut short by the worker's loss and that the query is being
/// recovered (not that it failed). The rollback undoes the rescale.
#[test]
fn a_rescale_cut_short_by_a_killed_worker_says_so_and_that_the_query_is_being_recovered() {
    let mut q = Rescaled::start(&Options {
        on_demand: true,
        ..Options::default()
    });
    let stopped: Vec<u32> = common::cluster::children(q.cluster.workers[1].pid());
    assert!(!stopped.is_empty(), "w1 runs an executor");
    for pid in &stopped {
        common::cluster::signal(*pid, libc::SIGSTOP);
    }
    let scale = {
        let (dir, api) = (q.dir().to_path_buf(), q.api.clone());
        std::thread::spawn(move || ctl(&dir, &api, &["scale", "q", "w", "4"]))
    };
    // Its barrier rides on checkpoint 2 (checkpoint 1 was asked for by `start`).
    let client = anduin_api::Client::new(&q.api, None).expect("an address");
    wait_until("the rescale's barrier is out", || {
        client
            .metrics("q")
            .ok()
            .and_then(|m| m.checkpoints)
            .is_some_and(|c| c.recent.iter().any(|r| r.epoch == 2))
    });
    let _ = q.cluster.workers[1].0.kill();
    let _ = q.cluster.workers[1].0.wait();
    for pid in &stopped {
        common::cluster::signal(*pid, libc::SIGKILL);
    }
    let out = scale.join().expect("ctl ends");
    let why = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "the rescale was not applied");
    assert!(
        why.contains("is recovering: the rescale of operator \"w\" was cut short")
            && why.contains("worker w1 died")
            && why.contains("being recovered from its last checkpoint"),
        "{why}\n{}",
        q.cluster.logs()
    );
    assert!(!why.contains("is failed"), "{why}");
    // Running again: the second attempt's operators are known (the params the first left
    // are known before they are).
    wait_until("the query running again", || {
        q.cluster.status("q")["attempt"]
            .as_u64()
            .is_some_and(|a| a >= 2)
            && q.owners().is_some()
            && client.query("q").is_ok_and(|i| {
                i.state == anduin_runtime::control::QueryState::Running
                    && i.operators.iter().any(|o| o.name == "gen")
            })
    });
    assert_eq!(
        q.owners().as_deref(),
        Some("2"),
        "the rollback undoes the rescale"
    );
    q.finish(Some(2));
}
