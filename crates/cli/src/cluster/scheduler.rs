//! Where a coordinator's workers come from: its [`Scheduler`]. The coordinator places task
//! instances on the slots of the live workers (the pure `anduin_coordinator::place`); the
//! scheduler decides which workers there are.
//!
//! - `static` ([`Static`]): workers started by whoever runs the cluster register themselves
//!   (`anduin worker --coordinator …`); the coordinator starts none.
//! - `process` ([`Processes`]): the coordinator starts N worker processes on its own machine
//!   (`local-0` … `local-{N-1}`, each with a work directory under the state directory) and
//!   starts a worker again once it is declared dead, so that the cluster gets its slots back
//!   after a loss. A restarted coordinator adopts the workers its predecessor started (they
//!   register again); it starts only those that do not come back. Its workers outlive a
//!   coordinator that is killed (they keep running its queries, as any worker does) and are
//!   stopped with it when it is stopped with SIGINT or SIGTERM. Each worker's PID is kept in
//!   `{name}.pid` beside its log, so that the workers of a predecessor are stopped or
//!   replaced as its own are (a PID is acted on only while its command line is that
//!   worker's: `anduin worker … --work-dir DIR/{name}`).
//!
//! - `kubernetes` ([`super::kubernetes::Kubernetes`]): the coordinator keeps N worker pods
//!   through the Kubernetes API, and replaces a pod that ended or whose worker it gave up.
//!
//! `process` and `kubernetes` also start workers (up to `--max-workers` in all) for instances
//! added while a query runs that find no free slot on the workers there are
//! ([`Scheduler::may_add`], [`Scheduler::add`]), and give them back, the last added first,
//! once a scale-down has retired what ran there and no query runs a part on them
//! ([`Scheduler::last_added`], [`Scheduler::release`]).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::coordinator::Link;

/// How long a worker process this scheduler started has to register before it is started
/// again.
const REGISTER_WITHIN: Duration = Duration::from_secs(30);
/// The most workers the process scheduler starts on one machine.
pub const MAX_LOCAL_WORKERS: u32 = 64;
/// The most worker processes started on one tick (the rest on the next ones), so that the
/// coordinator stays responsive (a SIGTERM waits for the tick).
const STARTS_PER_TICK: usize = 4;

/// Which workers a coordinator has.
pub trait Scheduler: Send {
    /// Its name, as `--scheduler` takes it.
    fn kind(&self) -> &'static str;
    /// Brings the workers it keeps to what it wants, given what the coordinator knows of the
    /// workers by name. Called on every tick of the coordinator's liveness watch.
    fn tend(&mut self, known: &BTreeMap<String, Link>);
    /// Stops the workers it started (the coordinator stops).
    fn stop(&mut self);
    /// How many more workers it may start for instances added while a query runs, and the
    /// slots of each; `None` when it starts none.
    fn may_add(&self) -> Option<(u32, u32)> {
        None
    }
    /// Starts `more` workers beyond those it keeps (kept as those, until given back or the
    /// coordinator stops); their names, once they are on their way (the coordinator waits for them to
    /// register). Its error says why it cannot (its bound, the refusal of whatever starts
    /// them): the rescale that asked is refused with it. The coordinator's liveness watch
    /// skips [`Scheduler::tend`] while this runs.
    fn add(&mut self, _more: u32) -> Result<Vec<String>, String> {
        Err(format!(
            "the {} scheduler starts no worker for them: start more with `anduin worker --coordinator …`, or give the workers more slots",
            self.kind()
        ))
    }
    /// The worker it started last for instances added while queries run, while it keeps one
    /// beyond those it was asked to keep: the first to give back.
    fn last_added(&self) -> Option<String> {
        None
    }
    /// Gives back worker `name`, its [`Scheduler::last_added`] (no query runs a part on it):
    /// stops it and keeps one fewer. Its error says why it could not (it is tried again on a
    /// later tick).
    fn release(&mut self, name: &str) -> Result<(), String> {
        Err(format!(
            "the {} scheduler started no worker {name} to give back",
            self.kind()
        ))
    }
}

/// Workers register themselves.
pub struct Static;

impl Scheduler for Static {
    fn kind(&self) -> &'static str {
        "static"
    }

    fn tend(&mut self, _known: &BTreeMap<String, Link>) {}

    fn stop(&mut self) {}
}

/// What to do about one worker a [`Processes`] scheduler keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tend {
    /// It is there, or may yet be (starting, or known from the catalog and reconnecting).
    Leave,
    /// No process of it runs: start one.
    Start,
    /// Its process runs but the coordinator has given it up (declared dead, or it never
    /// registered): kill that process and start another.
    Replace,
}

/// The process of a worker, as far as the scheduler knows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcessFacts {
    /// It has not exited.
    pub running: bool,
    /// How long ago it was started.
    pub age: Duration,
}

/// What to do about a worker the coordinator knows as `link` (`None`: never registered)
/// whose process, if this scheduler started one, is `process`.
pub fn tend(link: Option<Link>, process: Option<ProcessFacts>) -> Tend {
    let running = process.filter(|p| p.running);
    match (link, running) {
        (Some(Link::Alive | Link::Awaited), _) => Tend::Leave,
        // Started, registering: also under the name of the worker it replaces, which stays
        // dead until it registers (replaced again on every tick, it never would).
        (None | Some(Link::Dead), Some(p)) if p.age < REGISTER_WITHIN => Tend::Leave,
        (None | Some(Link::Dead), Some(_)) => Tend::Replace,
        (None | Some(Link::Dead), None) => Tend::Start,
    }
}

/// A worker process started by [`Processes`].
struct Started {
    child: Child,
    at: Instant,
}

/// Starts and keeps `workers` local worker processes.
pub struct Processes {
    exe: PathBuf,
    coordinator: SocketAddr,
    /// How many it keeps now: `--workers`, and those added for instances added while a
    /// query runs.
    workers: u32,
    /// How many it was asked to keep (`--workers`): those are never given back.
    asked: u32,
    /// The workers it gave back (not adopted again while they still show as registered).
    released: std::collections::BTreeSet<String>,
    /// How many it may keep in all when instances added while a query runs need room
    /// (`--max-workers`).
    max_workers: u32,
    slots: u32,
    /// Their work directories and logs go here.
    dir: PathBuf,
    /// The coordinator's `--cluster-secret-file`, given to every worker.
    secret_file: Option<PathBuf>,
    /// Its workers end with the coordinator, however it ends (`anduin cluster`'s).
    die_with_coordinator: bool,
    started: BTreeMap<String, Started>,
}

impl Processes {
    /// It may start up to `max` workers in all for instances added while queries run.
    pub fn at_most(mut self, max: u32) -> Self {
        self.max_workers = max.max(self.workers);
        self
    }

    /// A scheduler of `workers` workers of `slots` slots that reach the coordinator at
    /// `coordinator`, their directories under `dir`.
    pub fn new(
        coordinator: SocketAddr,
        workers: u32,
        slots: u32,
        dir: PathBuf,
        secret_file: Option<PathBuf>,
        die_with_coordinator: bool,
    ) -> std::io::Result<Self> {
        Ok(Self {
            exe: std::env::current_exe()?,
            coordinator,
            workers,
            asked: workers,
            released: std::collections::BTreeSet::new(),
            max_workers: workers,
            slots,
            dir,
            secret_file,
            die_with_coordinator,
            started: BTreeMap::new(),
        })
    }

    fn start(&mut self, name: &str) {
        let work_dir = self.dir.join(name);
        let log = std::fs::create_dir_all(&self.dir).and_then(|()| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(self.dir.join(format!("{name}.log")))
        });
        let mut command = Command::new(&self.exe);
        command
            .arg("worker")
            .arg("--coordinator")
            .arg(self.coordinator.to_string())
            .args(["--name", name])
            .args(["--slots", &self.slots.to_string()])
            .arg("--work-dir")
            .arg(&work_dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log.map_or_else(|_| Stdio::null(), Stdio::from));
        if let Some(f) = &self.secret_file {
            command.arg("--cluster-secret-file").arg(f);
        }
        if self.die_with_coordinator {
            die_with_parent(&mut command, libc::SIGKILL);
        }
        match command.spawn() {
            Ok(child) => {
                let _ =
                    std::fs::write(self.dir.join(format!("{name}.pid")), child.id().to_string());
                eprintln!(
                    "anduin: scheduler: started worker {name} (PID {}), its log in {}",
                    child.id(),
                    self.dir.join(format!("{name}.log")).display()
                );
                self.started.insert(
                    name.to_string(),
                    Started {
                        child,
                        at: Instant::now(),
                    },
                );
            }
            Err(e) => {
                tracing::warn!(worker = name, error = %e, "cannot start a worker process; trying again on the next tick");
            }
        }
    }

    /// Kills worker `name`'s process by its PID: the one this scheduler started, or else the
    /// one its PID file names (a predecessor's) while that PID is still that worker.
    fn kill(&mut self, name: &str) {
        if let Some(mut s) = self.started.remove(name) {
            let _ = s.child.kill();
            let _ = s.child.wait();
            return;
        }
        let Some(pid) = std::fs::read_to_string(self.dir.join(format!("{name}.pid")))
            .ok()
            .and_then(|p| p.trim().parse::<i32>().ok())
        else {
            return;
        };
        if !is_worker(pid, &self.dir.join(name)) {
            return;
        }
        eprintln!("anduin: scheduler: stopping worker {name} (PID {pid}), started by a coordinator before this one");
        // SAFETY: kill(2) on a PID whose command line was just checked to be this worker's.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
        // Not our child: it is gone once /proc says so (bounded: a zombie of another parent
        // keeps its entry).
        let deadline = Instant::now() + Duration::from_secs(2);
        while is_worker(pid, &self.dir.join(name)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Scheduler for Processes {
    fn kind(&self) -> &'static str {
        "process"
    }

    fn tend(&mut self, known: &BTreeMap<String, Link>) {
        // Workers a coordinator before it added for growth, registered again: kept as added,
        // so that they are given back once nothing runs on them.
        while self.workers < self.max_workers
            && known.get(&format!("local-{}", self.workers)) == Some(&Link::Alive)
            && !self.released.contains(&format!("local-{}", self.workers))
        {
            self.workers += 1;
        }
        let mut starts = 0;
        for i in 0..self.workers {
            if starts == STARTS_PER_TICK {
                break;
            }
            let name = format!("local-{i}");
            let process = self.started.get_mut(&name).map(|s| ProcessFacts {
                running: matches!(s.child.try_wait(), Ok(None)),
                age: s.at.elapsed(),
            });
            match tend(known.get(&name).copied(), process) {
                Tend::Leave => {}
                Tend::Start => {
                    // An exited process of it is reaped first; a predecessor's that was given
                    // up (paused, or reaching another address) is stopped.
                    self.kill(&name);
                    self.start(&name);
                    starts += 1;
                }
                Tend::Replace => {
                    eprintln!("anduin: scheduler: worker {name} was given up; starting it again");
                    self.kill(&name);
                    self.start(&name);
                    starts += 1;
                }
            }
        }
    }

    fn may_add(&self) -> Option<(u32, u32)> {
        let more = self.max_workers.saturating_sub(self.workers);
        (more > 0).then_some((more, self.slots))
    }

    fn add(&mut self, more: u32) -> Result<Vec<String>, String> {
        let to = self.workers.saturating_add(more);
        if to > self.max_workers {
            return Err(format!(
                "it would take {to} workers, and the coordinator starts at most {} (`--max-workers`)",
                self.max_workers
            ));
        }
        let names: Vec<String> = (self.workers..to).map(|i| format!("local-{i}")).collect();
        for name in &names {
            self.released.remove(name);
        }
        // Started on its next tick, as those it keeps.
        self.workers = to;
        Ok(names)
    }

    fn last_added(&self) -> Option<String> {
        (self.workers > self.asked).then(|| format!("local-{}", self.workers - 1))
    }

    fn release(&mut self, name: &str) -> Result<(), String> {
        if self.last_added().as_deref() != Some(name) {
            return Err(format!(
                "worker {name} is not the last one it added for instances added while a query runs"
            ));
        }
        self.workers -= 1;
        self.released.insert(name.to_string());
        eprintln!("anduin: scheduler: stopping worker {name}: it was started for instances added while a query runs, a scale-down retired them, and no query runs a part on it");
        self.kill(name);
        let _ = std::fs::remove_file(self.dir.join(format!("{name}.pid")));
        Ok(())
    }

    fn stop(&mut self) {
        // Its own, and those it adopted from a coordinator before it (those it may have added
        // too: a coordinator before it may have).
        for i in 0..self.max_workers.max(self.workers) {
            self.kill(&format!("local-{i}"));
        }
    }
}

impl Drop for Processes {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Makes the process `command` starts receive `signal` when this one ends, however it ends.
pub fn die_with_parent(command: &mut Command, signal: libc::c_int) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the child runs only async-signal-safe calls (prctl, getppid, raise) between
    // fork and exec.
    let parent = unsafe { libc::getpid() };
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, signal) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent may have ended before the request took effect.
            if libc::getppid() != parent {
                libc::raise(signal);
            }
            Ok(())
        });
    }
}

/// Whether process `pid` runs (not a zombie) as `anduin worker … --work-dir WORK_DIR`.
fn is_worker(pid: i32, work_dir: &std::path::Path) -> bool {
    let running = std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    });
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
    let dir = work_dir.as_os_str().as_encoded_bytes();
    running
        && args.iter().any(|a| *a == b"worker")
        && args
            .windows(2)
            .any(|w| w[0] == b"--work-dir" && w[1] == dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn process(running: bool, age_s: u64) -> Option<ProcessFacts> {
        Some(ProcessFacts {
            running,
            age: Duration::from_secs(age_s),
        })
    }

    #[test]
    fn a_worker_that_is_there_or_may_come_back_is_left_alone() {
        assert_eq!(tend(Some(Link::Alive), process(true, 100)), Tend::Leave);
        assert_eq!(tend(Some(Link::Alive), None), Tend::Leave);
        // Known from the catalog of the coordinator before: it may reconnect.
        assert_eq!(tend(Some(Link::Awaited), None), Tend::Leave);
        // Started, registering.
        assert_eq!(tend(None, process(true, 1)), Tend::Leave);
        // Started in place of one declared dead, registering.
        assert_eq!(tend(Some(Link::Dead), process(true, 1)), Tend::Leave);
    }

    #[test]
    fn a_worker_without_a_process_is_started() {
        assert_eq!(tend(None, None), Tend::Start);
        assert_eq!(tend(Some(Link::Dead), None), Tend::Start);
        assert_eq!(tend(Some(Link::Dead), process(false, 5)), Tend::Start);
        assert_eq!(tend(None, process(false, 1)), Tend::Start);
    }

    #[test]
    fn a_process_the_coordinator_gave_up_is_replaced() {
        // Declared dead while its process runs (paused, cut off).
        assert_eq!(tend(Some(Link::Dead), process(true, 100)), Tend::Replace);
        // Never registered within the time it had.
        assert_eq!(tend(None, process(true, 31)), Tend::Replace);
    }

    #[test]
    fn a_worker_a_predecessor_added_is_adopted_as_added_and_one_given_back_is_not_again() {
        let dir = tempfile::tempdir().expect("tempdir");
        let addr = SocketAddr::from(([127, 0, 0, 1], 1));
        let mut s = Processes::new(addr, 2, 3, dir.path().to_path_buf(), None, false)
            .expect("the executable")
            .at_most(4);
        let known = |names: &[&str]| -> BTreeMap<String, Link> {
            names.iter().map(|n| (n.to_string(), Link::Alive)).collect()
        };
        // local-2 and local-3 registered again after a restart (local-5 is not next).
        s.tend(&known(&[
            "local-0", "local-1", "local-2", "local-3", "local-5",
        ]));
        assert_eq!(s.last_added().as_deref(), Some("local-3"));
        assert_eq!(s.release("local-3"), Ok(()));
        // Still registered for a moment after it is stopped: not adopted again.
        s.tend(&known(&["local-0", "local-1", "local-2", "local-3"]));
        assert_eq!(s.last_added().as_deref(), Some("local-2"));
        // Added again for a later growth, it is kept again.
        assert_eq!(s.add(1), Ok(vec!["local-3".to_string()]));
        assert_eq!(s.last_added().as_deref(), Some("local-3"));
    }

    #[test]
    fn the_process_scheduler_adds_workers_up_to_its_most_and_the_static_one_none() {
        let dir = tempfile::tempdir().expect("tempdir");
        let addr = SocketAddr::from(([127, 0, 0, 1], 1));
        let mut s = Processes::new(addr, 2, 3, dir.path().to_path_buf(), None, false)
            .expect("the executable")
            .at_most(4);
        assert_eq!(s.may_add(), Some((2, 3)));
        assert!(s.add(3).is_err(), "5 workers is more than 4");
        assert_eq!(s.add(1), Ok(vec!["local-2".to_string()]));
        assert_eq!(s.may_add(), Some((1, 3)));
        assert_eq!(s.add(1), Ok(vec!["local-3".to_string()]));
        assert_eq!(s.may_add(), None);
        // Given back the last added first; those it was asked to keep never.
        assert_eq!(s.last_added().as_deref(), Some("local-3"));
        assert!(s.release("local-2").is_err(), "not the last added");
        assert_eq!(s.release("local-3"), Ok(()));
        assert_eq!(s.release("local-2"), Ok(()));
        assert_eq!(s.last_added(), None);
        assert!(s.release("local-1").is_err(), "one of its --workers");
        assert_eq!(s.may_add(), Some((2, 3)));
        assert_eq!(s.add(1), Ok(vec!["local-2".to_string()]));
        // Without --max-workers it keeps its --workers.
        let kept = Processes::new(addr, 2, 3, dir.path().to_path_buf(), None, false)
            .expect("the executable");
        assert_eq!(kept.may_add(), None);
        assert_eq!(kept.last_added(), None);
        assert_eq!(Static.may_add(), None);
        assert!(Static.release("w1").is_err());
        let why = Static.add(1).expect_err("the static scheduler starts none");
        assert!(why.contains("anduin worker --coordinator"), "{why}");
    }
}
