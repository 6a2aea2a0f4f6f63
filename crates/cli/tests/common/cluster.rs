//! A coordinator and workers on loopback for the cluster tests, every process killed by its
//! PID when the test ends.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::{wait_until, ChildGuard};

/// A coordinator and its workers, with their directories.
pub struct LocalCluster {
    pub dir: tempfile::TempDir,
    pub addr: String,
    // Dropped last: the workers first, then the coordinator.
    pub workers: Vec<ChildGuard>,
    pub coordinator: ChildGuard,
}

/// A coordinator listening on `listen`, its state in `dir`.
fn coordinator(dir: &Path, listen: &str) -> ChildGuard {
    let addr_file = dir.join("addr");
    let _ = std::fs::remove_file(&addr_file);
    let child = ChildGuard(
        Command::new(env!("CARGO_BIN_EXE_anduin"))
            .args(["coordinator", "--listen", listen])
            .arg("--state-dir")
            .arg(dir.join("coordinator"))
            .arg("--checkpoint-store")
            .arg(dir.join("checkpoints"))
            .arg("--address-file")
            .arg(&addr_file)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the coordinator starts"),
    );
    wait_until("the coordinator's address", || addr_file.exists());
    child
}

impl LocalCluster {
    /// Kills the coordinator with SIGKILL and starts it again on the same address and state.
    pub fn restart_coordinator(&mut self) {
        let _ = self.coordinator.0.kill();
        let _ = self.coordinator.0.wait();
        self.coordinator = coordinator(self.dir.path(), &self.addr);
    }

    /// A coordinator on a port the system chooses and `workers` workers of `slots` slots.
    pub fn start(workers: usize, slots: u32) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let addr_file = dir.path().join("addr");
        let coordinator = coordinator(dir.path(), "127.0.0.1:0");
        let addr = std::fs::read_to_string(&addr_file)
            .expect("address")
            .trim()
            .to_string();
        let mut cluster = Self {
            dir,
            addr,
            workers: Vec::new(),
            coordinator,
        };
        for i in 0..workers {
            cluster.add_worker(&format!("w{i}"), slots);
        }
        let n = workers;
        wait_until("every worker registered", || cluster.workers_joined() == n);
        cluster
    }

    /// Starts one more worker.
    pub fn add_worker(&mut self, name: &str, slots: u32) {
        let worker = Command::new(env!("CARGO_BIN_EXE_anduin"))
            .args(["worker", "--coordinator", &self.addr, "--name", name])
            .args(["--slots", &slots.to_string()])
            .arg("--work-dir")
            .arg(self.dir.path().join(name))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
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

    /// `anduin status --json`: workers and queries.
    pub fn all(&self) -> serde_json::Value {
        let out = Command::new(env!("CARGO_BIN_EXE_anduin"))
            .args(["status", "--coordinator", &self.addr, "--json"])
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
            .output()
            .expect("status runs");
        serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null)
    }

    /// The query's checkpoint directory.
    pub fn checkpoints(&self, query: &str) -> PathBuf {
        self.dir.path().join("checkpoints").join(query)
    }
}

/// A keyed window over a rate-limited generator of readings, into `${OUTPUT}`: a query that
/// runs long enough (`count` rows at `rate` a second) to be hit mid-run, with state in every
/// checkpoint. `window` holds the window's kind params (`param kind = "tumbling"
/// param size = "100ms"`).
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
