//! A stand-in for the kubelet of the nodes behind the fake Kubernetes API
//! ([`super::kube_fake`]): it runs each pod the coordinator's scheduler creates there as a
//! local process, so that a scenario runs a whole coordinator on worker pods.
//!
//! A `Pending` pod's container command is run as it is written (`anduin worker
//! --coordinator ADDR --name POD --slots S --data-host $(POD_IP) --work-dir DIR`), with
//! `anduin` this build's binary, `$(POD_IP)` 127.0.0.1, the work directory one of its own and
//! the Secret's keys (given) as its environment; the pod is then `Running`. A pod deleted, or
//! made `Failed` by the test, has its process killed; a process that exits leaves its pod
//! `Failed`, as `restartPolicy: Never` does. Every process is killed when the kubelet drops.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{json, Value};

use super::kube_fake::{FakeApi, State};

/// How often it looks at the pods (as a kubelet watches them).
const EVERY: Duration = Duration::from_millis(50);

/// Runs the pods of a fake API; stops them on drop.
pub struct Kubelet {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// A pod's process.
struct Running {
    child: Child,
    /// The pod's creation time, which tells it from a pod created again under its name.
    created: Value,
}

impl Kubelet {
    /// Runs the pods of `fake`, their work directories and logs (`POD.log`) under `dir`,
    /// with `secret` (the keys of their Secret) as their environment.
    pub fn start(fake: &FakeApi, dir: &Path, secret: Vec<(String, String)>) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (state, stop, dir) = (fake.shared(), Arc::clone(&stop), dir.to_path_buf());
            std::thread::spawn(move || {
                let mut running: BTreeMap<String, Running> = BTreeMap::new();
                while !stop.load(Ordering::SeqCst) {
                    step(&state, &dir, &secret, &mut running);
                    std::thread::sleep(EVERY);
                }
                for (_, mut r) in running {
                    let _ = r.child.kill();
                    let _ = r.child.wait();
                }
            })
        };
        Self {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Kubelet {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// One look at the pods: starts the pending, stops those gone, fails those whose process
/// ended.
fn step(
    state: &Mutex<State>,
    dir: &Path,
    secret: &[(String, String)],
    running: &mut BTreeMap<String, Running>,
) {
    let mut state = state.lock().unwrap_or_else(|p| p.into_inner());
    // Gone, failed by the test, or created again under the same name: its process goes.
    running.retain(|name, r| {
        let kept = state.pods.get(name).is_some_and(|p| {
            p["metadata"]["creationTimestamp"] == r.created && p["status"]["phase"] == "Running"
        });
        if !kept {
            let _ = r.child.kill();
            let _ = r.child.wait();
        }
        kept
    });
    for (name, pod) in state.pods.iter_mut() {
        match running.get_mut(name) {
            Some(r) => {
                if matches!(r.child.try_wait(), Ok(Some(_))) {
                    pod["status"]["phase"] = json!("Failed");
                    running.remove(name);
                }
            }
            None if pod["status"]["phase"] == "Pending" => {
                if let Some(child) = run(pod, dir, secret) {
                    pod["status"]["phase"] = json!("Running");
                    running.insert(
                        name.clone(),
                        Running {
                            child,
                            created: pod["metadata"]["creationTimestamp"].clone(),
                        },
                    );
                }
            }
            None => {}
        }
    }
}

/// Starts the process of `pod`'s container; `None` (left pending) if it has no command.
fn run(pod: &Value, dir: &Path, secret: &[(String, String)]) -> Option<Child> {
    let name = pod["metadata"]["name"].as_str()?;
    let command: Vec<&str> = pod["spec"]["containers"][0]["command"]
        .as_array()?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let (program, args) = command.split_first()?;
    let work_dir: PathBuf = dir.join(name);
    let args = args
        .iter()
        .zip(std::iter::once(&"").chain(args.iter()))
        .map(|(a, before)| match (*before, *a) {
            ("--work-dir", _) => work_dir.display().to_string(),
            (_, "$(POD_IP)") => "127.0.0.1".to_string(),
            _ => a.to_string(),
        });
    let program = match *program {
        "anduin" => env!("CARGO_BIN_EXE_anduin"),
        other => other,
    };
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(format!("{name}.log")))
        .map_or_else(|_| Stdio::null(), Stdio::from);
    Command::new(program)
        .args(args)
        .env_clear()
        .envs(std::env::vars().filter(|(k, _)| k == "PATH" || k == "HOME" || k == "TMPDIR"))
        .envs(secret.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .ok()
}
