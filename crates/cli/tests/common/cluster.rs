//! A coordinator and workers on loopback for the cluster tests, every process killed by its
//! PID when the test ends.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::{output_rows, repo, stdout_ok, wait_until, ChildGuard};

/// A coordinator and its workers, with their directories.
pub struct LocalCluster {
    pub dir: tempfile::TempDir,
    pub addr: String,
    /// How its processes are started.
    pub setup: Setup,
    // Dropped last: the workers first, then the coordinators.
    pub workers: Vec<ChildGuard>,
    /// With [`Setup::standby`]: the coordinator that stands by (`addr` lists both).
    pub standby: Option<ChildGuard>,
    pub coordinator: ChildGuard,
}

/// How a [`LocalCluster`]'s processes are started, beyond the defaults.
#[derive(Debug, Clone, Default)]
pub struct Setup {
    /// The coordinator's `--checkpoint-store` (default: `checkpoints` in the cluster's
    /// directory).
    pub checkpoint_store: Option<String>,
    /// Variables of every process's environment (the coordinator's, the workers', and those
    /// of `status` and `submit`).
    pub env: Vec<(String, String)>,
    /// Variables of the workers' environment, set after `env`.
    pub worker_env: Vec<(String, String)>,
    /// More flags of the coordinator's (`--no-per-task-recovery`).
    pub coordinator_flags: Vec<String>,
    /// A second coordinator, standing by: both elect their leader by a lock file
    /// (`--leader-election`), or by [`Setup::election`], the first leads; every process is
    /// given both addresses.
    pub standby: bool,
    /// The `--leader-election` of a [`Setup::standby`] cluster, if not its lock file.
    pub election: Option<String>,
    /// The standby's `--state-dir` is its own (`standby-state`), not the leader's: the
    /// coordinators share no file system.
    pub standby_state_of_its_own: bool,
}

/// How the coordinators of a [`Setup::standby`] cluster in `dir` elect: by
/// [`Setup::election`], or a lock file.
fn leader_election(dir: &Path, setup: &Setup) -> String {
    setup
        .election
        .clone()
        .unwrap_or_else(|| format!("file://{}", dir.join("leader.lock").display()))
}

/// A coordinator listening on `listen`, its state in `dir`.
fn coordinator(dir: &Path, listen: &str, setup: &Setup) -> ChildGuard {
    coordinator_named(dir, "coordinator", listen, setup)
}

/// A coordinator called `name` (its address in `dir/NAME.addr`, but `dir/addr` for
/// "coordinator", its log in `dir/NAME.log`) listening on `listen`, its state in `dir`. With
/// [`Setup::standby`], waits until it says whether it leads or stands by.
fn coordinator_named(dir: &Path, name: &str, listen: &str, setup: &Setup) -> ChildGuard {
    let addr_file = match name {
        "coordinator" => dir.join("addr"),
        _ => dir.join(format!("{name}.addr")),
    };
    let _ = std::fs::remove_file(&addr_file);
    let store = setup
        .checkpoint_store
        .clone()
        .unwrap_or_else(|| dir.join("checkpoints").display().to_string());
    let child = ChildGuard(
        Command::new(env!("CARGO_BIN_EXE_anduin"))
            .args(["coordinator", "--listen", listen])
            .arg("--state-dir")
            .arg(match name {
                "standby" if setup.standby_state_of_its_own => dir.join("standby-state"),
                _ => dir.join("coordinator"),
            })
            .args(["--checkpoint-store", &store])
            .arg("--address-file")
            .arg(&addr_file)
            .args(quick_restarts(setup))
            .args(&setup.coordinator_flags)
            .args(
                setup
                    .standby
                    .then(|| ["--leader-election".to_string(), leader_election(dir, setup)])
                    .into_iter()
                    .flatten(),
            )
            .envs(setup.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log(dir, &format!("{name}.log")))
            .spawn()
            .expect("the coordinator starts"),
    );
    wait_until("the coordinator's address", || addr_file.exists());
    if setup.standby {
        let log = dir.join(format!("{name}.log"));
        wait_until("the coordinator leading or standing by", || {
            std::fs::read_to_string(&log)
                .is_ok_and(|l| l.contains(" leads (term") || l.contains("standing by"))
        });
    }
    child
}

/// Writes `q.sql` into `work`, a query whose every attempt fails as its part starts: a file
/// `out` stands where its writer, with checkpoints, makes a directory of part files.
pub fn failing_at_start(work: &Path) {
    std::fs::write(
        work.join("q.sql"),
        format!(
            "CREATE TABLE orders (ts TIMESTAMP, customer STRING, amount BIGINT)
WITH (connector = 'file', path = '{}', event_time = 'ts');
CREATE TABLE out WITH (connector = 'file', path = 'out');
INSERT INTO out SELECT customer, amount FROM orders;",
            repo().join("data/orders.csv").display()
        ),
    )
    .expect("query");
    std::fs::write(work.join("out"), "").expect("a file in the way");
}

/// Every coordinator of the tests waits only 20 ms before a failed query's next attempt
/// (doubled after each further failure, up to 100 ms), unless the test gives its own
/// `--restart-backoff`: the tests were written for attempts back to back, and a query given
/// up after its 10 failed attempts would wait about two minutes with the defaults.
fn quick_restarts(setup: &Setup) -> Vec<&'static str> {
    if setup
        .coordinator_flags
        .iter()
        .any(|f| f == "--restart-backoff")
    {
        return Vec::new();
    }
    vec![
        "--restart-backoff",
        "20ms",
        "--restart-max-backoff",
        "100ms",
    ]
}

/// A log file in `dir` that a process's stderr is appended to (kept with the cluster's
/// directory, and quoted by [`LocalCluster::logs`] when a test fails).
fn log(dir: &Path, name: &str) -> Stdio {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(name))
        .map_or_else(|_| Stdio::null(), Stdio::from)
}

impl LocalCluster {
    /// What the coordinator wrote on stderr.
    pub fn coordinator_log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("coordinator.log")).unwrap_or_default()
    }

    /// What the standby coordinator wrote on stderr (with [`Setup::standby`]).
    pub fn standby_log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("standby.log")).unwrap_or_default()
    }

    /// Kills the leading coordinator with SIGKILL (with [`Setup::standby`]): the standby
    /// takes over.
    pub fn kill_leader(&mut self) {
        let _ = self.coordinator.0.kill();
        let _ = self.coordinator.0.wait();
    }

    /// Waits for the first coordinator to step down, and asserts it exited with status 75
    /// (the logs otherwise).
    pub fn assert_coordinator_steps_down(&mut self) {
        let mut ended = None;
        super::wait_until("the coordinator stepping down", || {
            ended = self.coordinator.0.try_wait().expect("its status");
            ended.is_some()
        });
        assert_eq!(
            ended.expect("read above").code(),
            Some(75),
            "{}",
            self.logs()
        );
    }

    /// Kills the standby coordinator (or the leader it became) with SIGKILL (with
    /// [`Setup::standby`]).
    pub fn kill_standby(&mut self) {
        if let Some(standby) = self.standby.as_mut() {
            let _ = standby.0.kill();
            let _ = standby.0.wait();
        }
    }

    /// The standby coordinator's address (with [`Setup::standby`]).
    pub fn standby_addr(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("standby.addr"))
            .expect("the standby's address")
            .trim()
            .to_string()
    }

    /// Starts the standby coordinator again, on the address it had (with [`Setup::standby`]).
    pub fn start_standby_again(&mut self) {
        let at = self.standby_addr();
        self.kill_standby();
        self.standby = Some(coordinator_named(
            self.dir.path(),
            "standby",
            &at,
            &self.setup,
        ));
    }

    /// The last lines the coordinator and the workers wrote on stderr, for a failure's message.
    pub fn logs(&self) -> String {
        let mut out = String::new();
        let mut names: Vec<String> = vec!["coordinator.log".into()];
        if self.standby.is_some() {
            names.push("standby.log".into());
        }
        names.extend((0..self.workers.len()).map(|i| format!("w{i}.log")));
        for name in names {
            let text = std::fs::read_to_string(self.dir.path().join(&name)).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            out.push_str(&format!("--- {name}\n"));
            for l in &lines[lines.len().saturating_sub(30)..] {
                out.push_str(l);
                out.push('\n');
            }
        }
        out
    }

    /// The address of the coordinator's API (`127.0.0.1:PORT`), as its latest start wrote it.
    pub fn api(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("coordinator/api.url"))
            .expect("the coordinator wrote its API's URL")
            .trim()
            .trim_start_matches("http://")
            .to_string()
    }

    /// Kills the coordinator with SIGKILL and starts it again on the same address and state.
    pub fn restart_coordinator(&mut self) {
        let _ = self.coordinator.0.kill();
        let _ = self.coordinator.0.wait();
        self.coordinator = coordinator(self.dir.path(), &self.addr, &self.setup);
    }

    /// A coordinator on a port the system chooses and `workers` workers of `slots` slots.
    pub fn start(workers: usize, slots: u32) -> Self {
        Self::start_with(workers, slots, Setup::default())
    }

    /// [`LocalCluster::start`], its processes started as `setup` says.
    pub fn start_with(workers: usize, slots: u32, setup: Setup) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let addr_file = dir.path().join("addr");
        let coordinator = coordinator(dir.path(), "127.0.0.1:0", &setup);
        let mut addr = std::fs::read_to_string(&addr_file)
            .expect("address")
            .trim()
            .to_string();
        let standby = setup.standby.then(|| {
            let standby = coordinator_named(dir.path(), "standby", "127.0.0.1:0", &setup);
            let at = std::fs::read_to_string(dir.path().join("standby.addr")).expect("address");
            addr = format!("{addr},{}", at.trim());
            standby
        });
        let mut cluster = Self {
            dir,
            addr,
            setup,
            workers: Vec::new(),
            standby,
            coordinator,
        };
        for i in 0..workers {
            cluster.add_worker(&format!("w{i}"), slots);
        }
        let n = workers;
        // (A coordinator that starts workers itself may have more.)
        wait_until("every worker registered", || cluster.workers_joined() >= n);
        cluster
    }

    /// Starts one more worker.
    pub fn add_worker(&mut self, name: &str, slots: u32) {
        let worker = Command::new(env!("CARGO_BIN_EXE_anduin"))
            .args(["worker", "--coordinator", &self.addr, "--name", name])
            .args(["--slots", &slots.to_string()])
            .arg("--work-dir")
            .arg(self.dir.path().join(name))
            .envs(self.setup.env.iter().map(|(k, v)| (k, v)))
            .envs(self.setup.worker_env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log(self.dir.path(), &format!("{name}.log")))
            .spawn()
            .expect("a worker starts");
        self.workers.push(ChildGuard(worker));
    }

    /// How many live workers the coordinator has.
    pub fn workers_joined(&self) -> usize {
        let all = self.all();
        all["workers"]
            .as_array()
            .map_or(0, |w| w.iter().filter(|w| w["alive"] == true).count())
    }

    /// `anduin submit q.flow … --wait` of the windowed query of [`windowed_reference`] in
    /// `work`, at parallelism 2 with a checkpoint every 4000 rows, into `out`.
    pub fn submit_windowed(&self, work: &Path) -> ChildGuard {
        self.submit(
            work,
            "q.flow",
            &[
                "--var",
                "OUTPUT=out",
                "--parallelism",
                "2",
                "--checkpoint-every",
                "4000",
            ],
        )
    }

    /// `anduin status --json`: workers and queries.
    pub fn all(&self) -> serde_json::Value {
        let out = Command::new(env!("CARGO_BIN_EXE_anduin"))
            .args(["status", "--coordinator", &self.addr, "--json"])
            .envs(self.setup.env.iter().map(|(k, v)| (k, v)))
            .output()
            .expect("status runs");
        serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null)
    }

    /// `anduin submit … --wait` of `file` with `args`, run from `cwd`, as a child process.
    pub fn submit(&self, cwd: &Path, file: &str, args: &[&str]) -> ChildGuard {
        ChildGuard(
            Command::new(env!("CARGO_BIN_EXE_anduin"))
                .args(["submit", file, "--coordinator", &self.addr, "--wait"])
                .args(args)
                .envs(self.setup.env.iter().map(|(k, v)| (k, v)))
                .current_dir(cwd)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("submit starts"),
        )
    }

    /// The status of `query` as `anduin status --json` gives it (null while the coordinator
    /// does not know it).
    pub fn status(&self, query: &str) -> serde_json::Value {
        let out = Command::new(env!("CARGO_BIN_EXE_anduin"))
            .args(["status", query, "--coordinator", &self.addr, "--json"])
            .envs(self.setup.env.iter().map(|(k, v)| (k, v)))
            .output()
            .expect("status runs");
        serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null)
    }

    /// The typed events of the queries' lives the coordinators wrote so far
    /// (`STATE_DIR/events.jsonl`), one JSON value each.
    pub fn life_events(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(self.dir.path().join("coordinator/events.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("each line of events.jsonl is JSON"))
            .collect()
    }

    /// The query's checkpoint directory.
    pub fn checkpoints(&self, query: &str) -> PathBuf {
        self.dir.path().join("checkpoints").join(query)
    }
}

impl Drop for LocalCluster {
    /// The workers a coordinator started itself (`--scheduler process`) are its children:
    /// killed by their PIDs before the coordinator is (they would outlive it).
    fn drop(&mut self) {
        if matches!(self.coordinator.0.try_wait(), Ok(None)) {
            for pid in children(self.coordinator.pid()) {
                signal(pid, libc::SIGKILL);
            }
        }
    }
}

/// A number below `below` that follows `seed` and `salt` (splitmix64): the seeded moments of
/// the fault tests.
pub fn pick(seed: u64, salt: u64, below: u64) -> u64 {
    let mut z = seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(salt.wrapping_mul(0xBF58_476D_1CE4_E5B9));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)) % below
}

/// Kills worker `victim` of `cluster` with SIGKILL once query `query` has completed
/// checkpoint `after`, or has finished; whether the worker's executor still ran its part then
/// (the query must recover from the kill). A worker whose part had ended — the query was
/// finishing — costs nothing: its part's end is reported already.
pub fn kill_worker_after(
    cluster: &mut LocalCluster,
    query: &str,
    victim: usize,
    after: u64,
) -> bool {
    kill_worker_at(cluster, query, victim, &Moment::at_checkpoint(after)).mid_part
}

/// A seeded moment of a fault in a paced run: once checkpoint `after` has completed, and
/// `rows` rows later at the run's pace (`rate` rows a second, all its sources together).
/// `rows` below a checkpoint's spacing lands the fault anywhere in the cycle: right after a
/// checkpoint, while the next one's barriers are in flight, between its completion and its
/// commit. The pause is no synchronisation — the outcome must not depend on where the fault
/// lands, and a slow machine only moves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Moment {
    pub after: u64,
    pub rows: u64,
    pub rate: u64,
}

impl Moment {
    /// Right as checkpoint `after` completes.
    pub fn at_checkpoint(after: u64) -> Self {
        Self {
            after,
            rows: 0,
            rate: 1,
        }
    }

    /// The moment of `seed` (`salt` tells the draws of one test from another's): after a
    /// checkpoint in `1..=checkpoints`, then fewer rows than `spacing` (the rows between two
    /// checkpoints) at `rate` rows a second.
    pub fn seeded(seed: u64, salt: u64, checkpoints: u64, spacing: u64, rate: u64) -> Self {
        Self {
            after: 1 + pick(seed, salt, checkpoints),
            rows: pick(seed, salt.wrapping_add(1), spacing),
            rate: rate.max(1),
        }
    }

    /// The pause after the checkpoint: `rows` at `rate`.
    pub fn pause(&self) -> std::time::Duration {
        std::time::Duration::from_micros(self.rows.saturating_mul(1_000_000) / self.rate.max(1))
    }
}

impl std::fmt::Display for Moment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "after checkpoint {}", self.after)?;
        if self.rows > 0 {
            write!(f, " and {} rows more ({:?})", self.rows, self.pause())?;
        }
        Ok(())
    }
}

/// What a kill of [`kill_worker_at`] found.
#[derive(Debug, Clone)]
pub struct Kill {
    /// Whether the victim's executor still ran its part (the query must recover from the
    /// kill); not when the query was finishing and its part had ended.
    pub mid_part: bool,
    /// The PIDs of the executors that ran on the other workers at the kill.
    pub others: Vec<u32>,
    /// The query's status that ended the wait for the moment's checkpoint.
    pub status: serde_json::Value,
}

/// Kills worker `victim` of `cluster` with SIGKILL at `moment` of query `query` (or once it
/// has finished): what ran then.
pub fn kill_worker_at(
    cluster: &mut LocalCluster,
    query: &str,
    victim: usize,
    moment: &Moment,
) -> Kill {
    let mut status = serde_json::Value::Null;
    wait_until("the checkpoints before the kill", || {
        status = cluster.status(query);
        status["last_checkpoint"]
            .as_u64()
            .is_some_and(|e| e >= moment.after)
            || status["state"] == "finished"
    });
    std::thread::sleep(moment.pause());
    let others = executors(cluster, Some(victim));
    let pid = cluster.workers[victim].pid();
    let mid_part = children(pid).into_iter().any(running);
    let _ = cluster.workers[victim].0.kill();
    let _ = cluster.workers[victim].0.wait();
    Kill {
        mid_part,
        others,
        status,
    }
}

/// The PIDs of the executors running on the workers of `cluster` (but `except`).
pub fn executors(cluster: &LocalCluster, except: Option<usize>) -> Vec<u32> {
    let mut pids: Vec<u32> = (0..cluster.workers.len())
        .filter(|w| Some(*w) != except)
        .flat_map(|w| children(cluster.workers[w].pid()))
        .filter(|p| running(*p))
        .collect();
    pids.sort_unstable();
    pids
}

/// Asserts that every executor of `pids` still runs (none was restarted); `what` says which
/// run and when, for the failure's message.
pub fn assert_still_running(cluster: &LocalCluster, pids: &[u32], what: &str) {
    let gone: Vec<u32> = pids.iter().copied().filter(|p| !running(*p)).collect();
    assert!(
        gone.is_empty(),
        "{what}: the executors {gone:?} (of {pids:?}) no longer run: a task was restarted\n{}",
        cluster.logs()
    );
}

/// Whether executor `pid` was stopped by its worker (a worker logs each executor it cancels
/// or kills, at the `info` level) — rather than ending with its part.
pub fn stopped_by_its_worker(cluster: &LocalCluster, pid: u32) -> bool {
    let pid = format!("pid={pid}");
    (0..cluster.workers.len()).any(|w| {
        std::fs::read_to_string(cluster.dir.path().join(format!("w{w}.log")))
            .unwrap_or_default()
            .lines()
            .any(|l| {
                (l.contains("cancelling an executor") || l.contains("killing a stuck executor"))
                    && l.split_whitespace().any(|f| f == pid)
            })
    })
}

/// Waits for `submit` (to `cluster`) to end; asserts that it succeeded and that its output
/// `out` holds exactly the rows `expected` (sorted), naming the first that differs. The
/// cluster's logs.
pub fn assert_submitted_output(
    cluster: &LocalCluster,
    submit: ChildGuard,
    out: &Path,
    expected: &[String],
) -> String {
    let done = submit.wait_output();
    let logs = cluster.logs();
    assert!(
        done.status.success(),
        "{}\n{logs}",
        String::from_utf8_lossy(&done.stderr)
    );
    let got = output_rows(out);
    assert_eq!(got.len(), expected.len(), "rows lost or duplicated\n{logs}");
    if let Some(i) = (0..got.len()).find(|&i| got[i] != expected[i]) {
        panic!(
            "the output differs from the uninterrupted run at sorted row {i}: {:?} instead of {:?}",
            got[i], expected[i]
        );
    }
    logs
}

/// Kills the coordinator of `cluster` with SIGKILL once query `query` has completed
/// checkpoint `after` — before the query finished — and starts it again on the same address
/// and state.
pub fn restart_coordinator_after(cluster: &mut LocalCluster, query: &str, after: u64) {
    wait_until("the checkpoints before the kill", || {
        cluster.status(query)["last_checkpoint"]
            .as_u64()
            .is_some_and(|e| e >= after)
    });
    assert_ne!(
        cluster.status(query)["state"],
        "finished",
        "the kill must come mid-run"
    );
    cluster.restart_coordinator();
}

/// Writes the first million benchmark events to `events.csv` in `dir` and runs Q2 of the
/// benchmark (`examples/q2.flow`) embedded over them: its output's rows, sorted.
pub fn q2_reference(dir: &Path) -> Vec<String> {
    std::fs::write(dir.join("events.flow"), EVENTS_1M).expect("query");
    super::anduin_ok(dir, &["run", "events.flow"]);
    let q2 = repo().join("examples/q2.flow");
    super::anduin_ok(
        dir,
        &[
            "run",
            q2.to_str().expect("utf-8 path"),
            "--var",
            "INPUT=events.csv",
            "--var",
            "OUTPUT=embedded.csv",
        ],
    );
    let expected = output_rows(&dir.join("embedded.csv"));
    assert!(expected.len() > 100_000, "Q2 writes enough rows");
    expected
}

/// Q2 of the benchmark (`examples/q2.flow`) reading no faster than `rate` rows a second: the
/// same output, over a run long enough to be hit mid-way.
pub fn q2_paced(rate: u64) -> String {
    let q2 = std::fs::read_to_string(repo().join("examples/q2.flow")).expect("examples/q2.flow");
    let reader = "param path = \"${INPUT}\"";
    assert!(q2.contains(reader), "Q2 reads ${{INPUT}}");
    q2.replacen(reader, &format!("{reader}\n  param rate = {rate}"), 1)
}

/// The first million benchmark events (as `gen_events.py`), into `events.csv`.
const EVENTS_1M: &str = r#"
type name = "Event" {
  column name = "ts", type = "int"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param count = 1000000
  output name = "events", type = "Event"
}
operator name = "out", type = "writer" {
  input name = "events"
  param path = "events.csv"
}
"#;

/// The status of `query` as the coordinator at `addr` alone gives it (null when it does not
/// answer: a paused coordinator's kernel accepts connections nobody answers).
pub fn status_at(addr: &str, query: &str) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_anduin"))
        .args(["status", query, "--coordinator", addr, "--json"])
        .output()
        .expect("status runs");
    serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null)
}

/// The term a coordinator's log says it leads at (the last, if it led several times).
pub fn leader_term(log: &str) -> Option<u64> {
    let rest = log
        .rsplit(" leads (term ")
        .next()
        .filter(|r| r.len() < log.len())?;
    rest.split(')').next()?.parse().ok()
}

/// A keyed window over a rate-limited generator of readings, into `${OUTPUT}`: a query that
/// runs long enough (`count` rows at `rate` a second) to be hit mid-run, with state in every
/// checkpoint. `window` holds the window's kind params (`param kind = "tumbling"
/// param size = "100ms"`).
/// Writes `q.flow` into `work`, a keyed tumbling window of 100 ms over `count` rows generated
/// from `seed` at `rate` a second ([`windowed_generator`]), and returns the rows an
/// uninterrupted embedded run of it writes (the output a cluster's run must equal).
pub fn windowed_reference(work: &Path, seed: u64, count: u64, rate: u64) -> Vec<String> {
    std::fs::write(
        work.join("q.flow"),
        windowed_generator(
            seed,
            count,
            rate,
            r#"param kind = "tumbling" param size = "100ms""#,
        ),
    )
    .expect("query");
    super::anduin_ok(work, &["run", "q.flow", "--var", "OUTPUT=reference.csv"]);
    output_rows(&work.join("reference.csv"))
}

pub fn windowed_generator(seed: u64, count: u64, rate: u64, window: &str) -> String {
    format!(
        r#"
type name = "Event" {{
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}}
operator name = "gen", type = "generator" {{
  param profile = "events"
  param seed = {seed}
  param count = {count}
  param rate = {rate}
  param event_time = "ts"
  output name = "events", type = "Event"
}}
operator name = "w", type = "window" {{
  input name = "events"
  {window}
  param time = "ts"
  param keys = "sensor"
  param aggregates = "COUNT(*) AS n, SUM(value) AS total, MAX(value) AS hi"
  output name = "counts"
}}
operator name = "out", type = "writer" {{
  input name = "counts"
  param path = "${{OUTPUT}}"
}}
"#
    )
}

/// The PIDs of the processes whose parent is `parent` (a worker's executors), from /proc.
pub fn children(parent: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid …: comm may hold spaces, so read after the last ')'.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(parent) {
            out.push(pid);
        }
    }
    out
}

/// The socket inodes `pid` holds.
pub fn socket_inodes(pid: u32) -> std::collections::BTreeSet<String> {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return std::collections::BTreeSet::new();
    };
    fds.flatten()
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .filter_map(|l| {
            l.to_string_lossy()
                .strip_prefix("socket:[")
                .and_then(|s| s.strip_suffix(']'))
                .map(str::to_string)
        })
        .collect()
}

/// `/proc/net/tcp`'s rows: local port, remote port, state, inode.
pub fn tcp() -> Vec<(u16, u16, String, String)> {
    let text = std::fs::read_to_string("/proc/net/tcp").expect("/proc/net/tcp");
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let port = |a: &str| u16::from_str_radix(a.rsplit_once(':')?.1, 16).ok();
            Some((
                port(f.get(1)?)?,
                port(f.get(2)?)?,
                f.get(3)?.to_string(),
                f.get(9)?.to_string(),
            ))
        })
        .collect()
}

/// The port `pid` listens on (its data listener), once it does.
pub fn listening_port(pid: u32) -> Option<u16> {
    let inodes = socket_inodes(pid);
    tcp()
        .into_iter()
        .find(|(_, _, state, inode)| state == "0A" && inodes.contains(inode))
        .map(|(local, ..)| local)
}

/// Whether `pid` runs (exists and is not a zombie waiting to be reaped).
pub fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    })
}

/// A query, an uninterrupted embedded run's output of it, and a cluster with per-task
/// recovery to run it on under faults: what the per-task recovery tests share.
pub struct PerTask {
    /// Where the query, the reference and the cluster's output are.
    pub work: tempfile::TempDir,
    /// What the embedded run wrote, sorted.
    pub expected: Vec<String>,
    pub cluster: LocalCluster,
}

impl PerTask {
    /// Writes `query` to `q.flow`, runs it embedded, and starts a coordinator (per-task
    /// recovery is its default) and three workers.
    pub fn start(query: &str) -> Self {
        Self::start_with(query, &[])
    }

    /// [`PerTask::start`], the coordinator given `flags` too.
    pub fn start_with(query: &str, flags: &[&str]) -> Self {
        let work = tempfile::tempdir().expect("tempdir");
        std::fs::write(work.path().join("q.flow"), query).expect("query");
        super::anduin_ok(
            work.path(),
            &["run", "q.flow", "--var", "OUTPUT=reference.csv"],
        );
        let expected = output_rows(&work.path().join("reference.csv"));
        let cluster = LocalCluster::start_with(
            3,
            8,
            Setup {
                coordinator_flags: flags.iter().copied().map(String::from).collect(),
                ..Setup::default()
            },
        );
        Self {
            work,
            expected,
            cluster,
        }
    }

    /// Submits the query as query `q` on three instances per operator, a checkpoint every
    /// 4000 rows, with `more` flags; then waits for its first checkpoint.
    pub fn submit(&self, more: &[&str]) -> ChildGuard {
        let mut args = vec![
            "--var",
            "OUTPUT=out",
            "--parallelism",
            "3",
            "--checkpoint-every",
            "4000",
        ];
        args.extend(more);
        let submit = self.cluster.submit(self.work.path(), "q.flow", &args);
        wait_until("the first checkpoint", || {
            self.cluster.status("q")["last_checkpoint"]
                .as_u64()
                .is_some_and(|e| e >= 1)
        });
        submit
    }

    /// Waits for the submission to end; asserts that it succeeded, that the output equals the
    /// embedded run's, and that the query is still at its first attempt (nothing rolled back
    /// as a whole). The coordinator's log.
    pub fn assert_same_output_at_attempt_1(&self, submit: ChildGuard) -> String {
        let logs = assert_submitted_output(
            &self.cluster,
            submit,
            &self.work.path().join("out"),
            &self.expected,
        );
        let status = self.cluster.status("q");
        assert_eq!(
            status["attempt"], 1,
            "the query rolled back as a whole: {status}\n{logs}"
        );
        let events = self.cluster.life_events();
        assert!(
            !events.iter().any(|e| e["event"] == "whole_query_rollback"),
            "the coordinator's typed events say the query rolled back as a whole: {events:?}"
        );
        self.cluster.coordinator_log()
    }

    /// Kills worker `victim` with SIGKILL once query `q` has completed checkpoint `after`,
    /// asserting that its part still ran then.
    pub fn kill_mid_run(&mut self, victim: usize, after: u64) {
        assert!(
            kill_worker_after(&mut self.cluster, "q", victim, after),
            "the kill must come mid-run"
        );
    }
}

/// The windowed query most per-task recovery tests run: `count` generated rows at 20 000 a
/// second (seeded by `seed`) counted in tumbling windows of 100 ms.
pub fn tumbling_generator(seed: u64, count: u64) -> String {
    windowed_generator(
        seed,
        count,
        20_000,
        r#"param kind = "tumbling" param size = "100ms""#,
    )
}

/// The index in `cluster.workers` of the worker that runs instance `0#0` (the source) of query
/// `q`'s first attempt, read from the coordinator's catalog (whether or not the coordinator
/// still runs).
pub fn worker_of_the_source(cluster: &LocalCluster) -> usize {
    let catalog = cluster.dir.path().join("coordinator").join("catalog");
    let text = || -> String {
        std::fs::read_dir(&catalog)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| std::fs::read(e.path()).ok())
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .collect()
    };
    let mut id = None;
    wait_until("the deployment in the catalog", || {
        id = text()
            .split("\"attempt_deployed\"")
            .nth(1)
            .and_then(|d| d.split("\"0#0\":").nth(1))
            .map(|rest| {
                rest.chars()
                    .take_while(char::is_ascii_digit)
                    .collect::<String>()
            })
            .and_then(|n| n.parse::<u64>().ok());
        id.is_some()
    });
    let id = id.expect("found above");
    // The worker's registration names it.
    let registered = format!("\"worker_registered\",\"worker\":{id},\"address\":\"");
    let all = text();
    let name = all
        .split(&registered)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("no registration of worker {id} in the catalog"));
    name.trim_start_matches('w')
        .parse()
        .unwrap_or_else(|_| panic!("a worker named {name}"))
}

/// Sends `signal` to `pid` (a process a test started, or its worker did).
pub fn signal(pid: u32, signal: libc::c_int) {
    let pid = libc::pid_t::try_from(pid).expect("a pid");
    // SAFETY: kill(2) with a PID of a process of the test's own cluster.
    unsafe {
        libc::kill(pid, signal);
    }
}

/// `count` generated readings at 3 000 a second, the filter `low` (`value < 42`) and a writer
/// into `${OUTPUT}`: a query a param change can be seen in, row by row.
pub fn paced_filter(count: u64) -> String {
    format!(
        r#"
type name = "R" {{
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}}
operator name = "gen", type = "generator" {{
  param profile = "events"
  param count = {count}
  param rate = 3000
  output name = "raw", type = "R"
}}
operator name = "low", type = "filter" {{
  input name = "raw"
  param condition = "value < 42"
  output name = "kept", type = "R"
}}
operator name = "out", type = "writer" {{
  input name = "kept"
  param path = "${{OUTPUT}}"
}}
"#
    )
}

/// The generator of [`paced_filter`], unpaced, every row into `all.csv`.
pub fn all_generated(count: u64) -> String {
    format!(
        r#"
type name = "R" {{
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}}
operator name = "gen", type = "generator" {{
  param profile = "events"
  param count = {count}
  output name = "raw", type = "R"
}}
operator name = "out", type = "writer" {{
  input name = "raw"
  param path = "all.csv"
}}
"#
    )
}

/// Waits until `operator` of query `query` has sent rows, by the figures its executors send
/// the coordinator (a checkpoint asked for before then would hold none of its rows).
pub fn wait_for_rows(cluster: &LocalCluster, query: &str, operator: &str) {
    wait_until(&format!("rows out of {operator}"), || {
        cluster.status(query)["operators"]
            .as_array()
            .is_some_and(|ops| {
                ops.iter().any(|o| {
                    o["operator"] == operator && o["rows_out"].as_u64().is_some_and(|n| n > 0)
                })
            })
    });
}

/// A coordinator of three workers running a windowed query (seed `seed`) exits at
/// `--inject-exit-after exit_point` (logged as `exiting after {logged}`, once `waiting`) and
/// is started again without it: the next one completes the query's last checkpoint, marked
/// finished, without restarting a task, and the output is the embedded run's.
pub fn the_next_coordinator_completes_the_last_checkpoint(
    seed: u64,
    exit_point: &str,
    logged: &str,
    waiting: &str,
) {
    let work = tempfile::tempdir().expect("tempdir");
    let expected = windowed_reference(work.path(), seed, 40_000, 20_000);
    assert!(expected.len() > 1_000, "the query writes enough rows");

    let mut cluster = LocalCluster::start_with(
        3,
        8,
        Setup {
            coordinator_flags: vec!["--inject-exit-after".into(), exit_point.into()],
            ..Setup::default()
        },
    );
    let submit = cluster.submit(
        work.path(),
        "q.flow",
        &[
            "--var",
            "OUTPUT=out",
            "--parallelism",
            "3",
            "--checkpoint-every",
            "10000",
        ],
    );
    wait_until(&format!("the coordinator to exit {waiting}"), || {
        cluster.coordinator.0.try_wait().is_ok_and(|s| s.is_some())
    });
    let first = cluster.coordinator_log();
    assert!(
        first.contains(&format!("exiting after {logged}")),
        "{first}\n{}",
        cluster.logs()
    );
    cluster.setup.coordinator_flags.clear();
    cluster.restart_coordinator();

    let out = submit.wait_output();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let logs = cluster.logs();
    assert!(out.status.success(), "{stderr}\n{logs}");
    let got = output_rows(&work.path().join("out"));
    assert_eq!(got.len(), expected.len(), "rows lost or duplicated\n{logs}");
    assert!(
        got == expected,
        "the output differs from the embedded run's"
    );
    let status = cluster.status("q");
    assert_eq!(status["state"], "finished", "{status}");
    assert_eq!(
        status["attempt"], 1,
        "a task was restarted: {status}\n{logs}"
    );
    let log = cluster.coordinator_log();
    assert!(
        !log[first.len()..].contains("its last checkpoint failed"),
        "{log}\n{logs}"
    );

    let listed = std::process::Command::new(env!("CARGO_BIN_EXE_anduin"))
        .arg("checkpoints")
        .arg("list")
        .arg(cluster.checkpoints("q"))
        .output()
        .expect("anduin runs");
    let listing = stdout_ok(&listed);
    let finished = listing
        .lines()
        .find(|l| l.contains("complete (finished)"))
        .unwrap_or_else(|| panic!("no finished checkpoint:\n{listing}\n{logs}"));
    let last = status["last_checkpoint"]
        .as_u64()
        .expect("a last checkpoint");
    assert_eq!(
        finished.split_whitespace().next(),
        Some(last.to_string().as_str()),
        "the last checkpoint of the status is the finished one:\n{listing}"
    );
}
