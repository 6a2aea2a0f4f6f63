//! Helpers shared by the end-to-end tests: run the `anduin` binary, compare with golden files.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};

use sha2::{Digest, Sha256};

pub mod browser;
pub mod cluster;
pub mod etcd;
pub mod kafka;
pub mod killed;
/// The fake Kubernetes API of the scheduler's unit tests (pods and Leases), shared with them
/// (one file, compiled into each test crate).
#[path = "../../src/cluster/kubernetes/fake.rs"]
#[allow(dead_code, clippy::duplicate_mod)]
pub mod kube_fake;
pub mod kubelet;
pub mod nats;
pub mod redis;
pub mod s3;
pub mod slowed;
pub mod udfs;

/// The repository's root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository exists")
}

/// The golden files' folder.
pub fn golden() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// `anduin` with `args`, run in `dir`.
pub fn anduin(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_anduin"))
        .args(args)
        .current_dir(dir)
        .env_remove("RUST_LOG")
        .output()
        .expect("the anduin binary runs")
}

/// `anduin` with `args`, run in `dir`, which must succeed (exit 0); a failure shows the
/// arguments and stderr.
pub fn anduin_ok(dir: &Path, args: &[&str]) -> Output {
    let out = anduin(dir, args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "anduin {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Exit code, stderr and stdout as one text, for golden comparison.
pub fn transcript(out: &Output) -> String {
    format!(
        "exit: {}\n--- stderr\n{}--- stdout\n{}",
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    )
}

/// Compares `actual` with the golden file `path`; with `UPDATE_GOLDEN=1`, rewrites it.
pub fn assert_golden(path: &Path, actual: &str) {
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(path, actual).expect("golden file writable");
        return;
    }
    let expected = std::fs::read_to_string(path).unwrap_or_else(|_| {
        panic!(
            "missing golden file {}; run with UPDATE_GOLDEN=1 to create it, then review it",
            path.display()
        )
    });
    assert_eq!(
        actual,
        expected,
        "output differs from {} (UPDATE_GOLDEN=1 rewrites it)",
        path.display()
    );
}

/// The rows of a CSV file after its header, sorted.
pub fn sorted_rows(text: &str) -> Vec<String> {
    let mut rows: Vec<String> = text.lines().skip(1).map(str::to_string).collect();
    rows.sort();
    rows
}

/// A query that writes the first 100 000 benchmark events (as `gen_events.py`) to `${OUTPUT}`.
pub const GENERATE_100K: &str = r#"
type name = "Event" {
  column name = "ts", type = "int"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param count = 100000
  output name = "events", type = "Event"
}
operator name = "out", type = "writer" {
  input name = "events"
  param path = "${OUTPUT}"
}
"#;

/// Rows and sha256 prefix of an output, like `normalize.py`: `kinds` says per column
/// whether it is an int (`i`) or a double (`f`, printed with six decimals).
pub fn normalize(csv: &str, kinds: &str) -> (usize, String) {
    let mut lines: Vec<String> = csv
        .lines()
        .skip(1)
        .map(|l| {
            l.split(',')
                .zip(kinds.chars())
                .map(|(x, k)| match k {
                    'i' => x.parse::<i64>().expect("ints").to_string(),
                    _ => format!("{:.6}", x.parse::<f64>().expect("doubles")),
                })
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect();
    lines.sort();
    let mut h = Sha256::new();
    for l in &lines {
        h.update(l.as_bytes());
        h.update(b"\n");
    }
    let hex: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    (lines.len(), hex[..16].to_string())
}

/// The entries of the dead-letter file `path`, one JSON object per line.
pub fn dead_letters(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .expect("the dead-letter file")
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect()
}

/// The data rows of every file under `path` (a file or a directory of parts), sorted.
pub fn output_rows(path: &Path) -> Vec<String> {
    let mut files = vec![];
    if path.is_dir() {
        for e in std::fs::read_dir(path).expect("output dir") {
            let p = e.expect("entry").path();
            let name = p.file_name().expect("name").to_string_lossy().to_string();
            if !name.starts_with('.') {
                files.push(p);
            }
        }
    } else {
        files.push(path.to_path_buf());
    }
    let mut out: Vec<String> = files
        .iter()
        .flat_map(|f| {
            std::fs::read_to_string(f)
                .expect("part")
                .lines()
                // Each part, like the reference file, starts with a header line.
                .filter(|l| !l.starts_with(|c: char| c.is_ascii_alphabetic()))
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect();
    out.sort();
    out
}

/// How a completed checkpoint reads in the events of `anduin run --events -` (on stderr).
pub const CHECKPOINT_COMPLETED: &str = r#"{"event":"checkpoint_completed""#;

/// Lets the run (started with `--events -`) complete `checkpoints` more checkpoints and go on for `delay_ms` (to land
/// the kill anywhere in the checkpoint cycle: mid-batch, mid-barrier, between a checkpoint's
/// completion and its commit), then kills it with SIGKILL. Returns false if the run ended
/// first. The outcome must not depend on where the kill lands.
pub fn kill_after(mut child: Child, checkpoints: u64, delay_ms: u64) -> bool {
    let stderr = BufReader::new(child.stderr.take().expect("stderr"));
    let mut seen = 0;
    for line in stderr.lines() {
        let line = line.expect("a line");
        if line.contains(CHECKPOINT_COMPLETED) {
            seen += 1;
            if seen >= checkpoints {
                std::thread::sleep(std::time::Duration::from_millis(delay_ms));
                let _ = child.kill();
                let _ = child.wait();
                return true;
            }
        }
    }
    let _ = child.wait();
    false
}

/// A child process that is killed (by its PID, SIGKILL) and reaped when the guard drops, so
/// that a failing test leaves nothing running.
pub struct ChildGuard(pub Child);

impl ChildGuard {
    /// The child's PID.
    pub fn pid(&self) -> u32 {
        self.0.id()
    }

    /// Sends the child one SIGTERM and waits for it to end on that signal alone (`wait_until`
    /// fails the test if it does not); checks it ended as a stop on SIGTERM does (exit 143,
    /// no second signal needed, "stopped after" in its last words) and returns its stderr
    /// (piped). `what` names the run in failures.
    pub fn stop_on_one_sigterm(&mut self, what: &str) -> String {
        let status = std::process::Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success());
        let mut exited = None;
        wait_until(
            &format!("{what}: the run to stop on the first SIGTERM"),
            || {
                exited = self.0.try_wait().expect("waits");
                exited.is_some()
            },
        );
        let mut stderr = String::new();
        std::io::Read::read_to_string(self.0.stderr.as_mut().expect("stderr"), &mut stderr)
            .expect("reads");
        assert_eq!(exited.and_then(|s| s.code()), Some(143), "{what}: {stderr}");
        assert!(stderr.contains("stopping on SIGTERM"), "{what}: {stderr}");
        assert!(!stderr.contains("second signal"), "{what}: {stderr}");
        assert!(stderr.contains("stopped after"), "{what}: {stderr}");
        stderr
    }

    /// Waits for the child to end; what it wrote to stderr (piped) and how it ended.
    pub fn wait_output(mut self) -> Output {
        use std::io::Read;
        let mut stderr = Vec::new();
        if let Some(mut e) = self.0.stderr.take() {
            let _ = e.read_to_end(&mut stderr);
        }
        let status = self.0.wait().expect("waits");
        Output {
            status,
            stdout: Vec::new(),
            stderr,
        }
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Polls `condition` until it holds, for at most a minute (a generous bound for a slow,
/// shared machine: reaching it means the awaited event never came). Waits on an observable
/// fact, never on time alone.
pub fn wait_until(what: &str, condition: impl FnMut() -> bool) {
    wait_until_or_show(what, condition, String::new);
}

/// [`wait_until`], and what `show` gives (logs) in the failure.
pub fn wait_until_or_show(
    what: &str,
    mut condition: impl FnMut() -> bool,
    show: impl Fn() -> String,
) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !condition() {
        assert!(
            std::time::Instant::now() < deadline,
            "gave up waiting for {what}\n{}",
            show()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Synthetic readings at 50 rows a second, forever, into `${OUTPUT}`: a run that holds its
/// locks until it is stopped.
pub const SLOW_GENERATOR: &str = r#"
type name = "R" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param rate = 50
  output name = "raw", type = "R"
}
operator name = "out", type = "writer" {
  input name = "raw"
  param path = "${OUTPUT}"
}
"#;

/// `anduin ARGS` in `dir`, with `$TMPDIR` (where output locks live) at `dir/tmp`.
pub fn anduin_in_tmpdir(dir: &Path, tmp: &str, args: &[&str]) -> Command {
    let tmp = dir.join(tmp);
    std::fs::create_dir_all(&tmp).expect("tmpdir");
    let mut c = Command::new(env!("CARGO_BIN_EXE_anduin"));
    c.args(args)
        .current_dir(dir)
        .env("TMPDIR", tmp)
        .env_remove("RUST_LOG");
    c
}

/// The stdout of a command that must have succeeded (its stderr in the failure).
pub fn stdout_ok(out: &Output) -> String {
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Starts `anduin run` as `command` says (its stderr piped) and reads its stderr up to the
/// `api: http://ADDR` line: the run, guarded, with `ADDR` and the rest of its stderr.
pub fn start_with_api(
    mut command: Command,
) -> (ChildGuard, String, BufReader<std::process::ChildStderr>) {
    let mut child = command
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("anduin runs");
    let mut stderr = BufReader::new(child.stderr.take().expect("piped"));
    let guard = ChildGuard(child);
    let mut line = String::new();
    loop {
        line.clear();
        let n = stderr.read_line(&mut line).expect("reads stderr");
        assert!(n > 0, "the run ended before serving its API");
        if let Some(addr) = line.trim().strip_prefix("api: http://") {
            return (guard, addr.to_string(), stderr);
        }
    }
}

/// A generated stream of readings (`ts`, `sensor`, `value`) at `rate` rows a second,
/// filtered by `condition` into `out.csv`: a query whose filter changes while it runs.
pub fn generated_filtered(rate: u32, condition: &str) -> String {
    format!(
        r#"
type name = "R" {{
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}}
operator name = "gen", type = "generator" {{
  param profile = "events"
  param rate = {rate}
  output name = "raw", type = "R"
}}
operator name = "low", type = "filter" {{
  input name = "raw"
  param condition = "{condition}"
  output name = "low", type = "R"
}}
operator name = "out", type = "writer" {{
  input name = "low"
  param path = "out.csv"
}}
"#
    )
}

/// `anduin ctl ARGS` against the run whose API is at `api`, in `dir`.
pub fn ctl(dir: &Path, api: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_anduin"))
        .arg("ctl")
        .args(["--api", api])
        .args(args)
        .current_dir(dir)
        .env("USER", "tester")
        .env_remove("ANDUIN_API_TOKEN")
        .output()
        .expect("anduin runs")
}

/// How many rows the generator `gen` had produced at checkpoint `epoch` of `dir/ck`.
pub fn produced(dir: &Path, epoch: u64) -> u64 {
    let store = anduin_checkpoint::Store::open(dir.join("ck")).expect("opens");
    let manifest = store
        .manifest(anduin_types::Epoch(epoch))
        .expect("reads")
        .unwrap_or_else(|| panic!("checkpoint {epoch} is complete"));
    manifest.operators["gen"]
        .inline
        .as_ref()
        .expect("a position")["produced"]
        .as_u64()
        .expect("a count")
}

/// The data rows of `path` in order: a file, or a directory of parts (as a run with
/// checkpoints writes them) in the order of their names, without uncommitted (hidden) parts;
/// each file starts with a header line.
pub fn rows_in_order(path: &Path) -> Vec<String> {
    let mut files = vec![path.to_path_buf()];
    if path.is_dir() {
        files = std::fs::read_dir(path)
            .expect("a directory")
            .map(|e| e.expect("an entry").path())
            .filter(|p| {
                !p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with('.'))
            })
            .collect();
        files.sort();
    }
    files
        .iter()
        .flat_map(|f| {
            std::fs::read_to_string(f)
                .expect("an output")
                .lines()
                .skip(1)
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Folds changelog or upsert rows (`op,key,…`, in order, without a header) into the table
/// they describe, keyed by the first column: a `+I` or `+U` sets its key's row (in a
/// changelog, `upsert` false, the key must have none: its `-U` took it out), a `-U` or `-D`
/// removes it and must name that row.
pub fn fold_changes<'a>(
    lines: impl IntoIterator<Item = &'a str>,
    upsert: bool,
) -> std::collections::BTreeMap<String, String> {
    let mut table = std::collections::BTreeMap::new();
    for (i, line) in lines.into_iter().enumerate() {
        let (op, row) = line
            .split_once(',')
            .unwrap_or_else(|| panic!("line {i}: {line}"));
        let key = row.split(',').next().expect("a key").to_string();
        match op {
            "+I" | "+U" => {
                let old = table.insert(key, row.to_string());
                assert!(
                    upsert || old.is_none(),
                    "line {i}: {line} adds a row its key has: {old:?}"
                );
            }
            "-U" | "-D" => {
                let old = table.remove(&key);
                assert_eq!(
                    old.as_deref(),
                    Some(row),
                    "line {i}: {line} retracts another row"
                );
            }
            other => panic!("line {i}: unknown op {other}"),
        }
    }
    table
}

/// A small deterministic RNG (splitmix64), so that the seeded tests follow their seed.
pub struct Rng(pub u64);

impl Rng {
    /// A number below `below`.
    pub fn next(&mut self, below: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % below.max(1)
    }
}

/// `anduin run QUERY --var INPUT=input --var OUTPUT=out --no-api EXTRA…` from the repository's
/// root: how it ended, and the lines of `out` (header included), sorted — a window emits the
/// windows one watermark closes in no fixed order.
pub fn run_sorted(query: &Path, input: &str, out: &Path, extra: &[&str]) -> (Output, Vec<String>) {
    let mut args = vec![
        "run".to_string(),
        query.display().to_string(),
        "--var".into(),
        format!("INPUT={input}"),
        "--var".into(),
        format!("OUTPUT={}", out.display()),
        "--no-api".into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let output = anduin(&repo(), &args);
    let mut lines: Vec<String> = std::fs::read_to_string(out)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect();
    lines.sort();
    (output, lines)
}
