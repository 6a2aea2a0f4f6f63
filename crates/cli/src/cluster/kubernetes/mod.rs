//! The `kubernetes` [`Scheduler`]: the coordinator keeps `--workers N` worker pods in its
//! namespace, as the `process` scheduler keeps worker processes on its machine, and creates
//! more (up to `--max-workers` in all) for instances added while a query runs.
//!
//! Its pods are named `{kube-name}-worker-{i}` and labelled
//! `app.kubernetes.io/managed-by=anduin`, `anduin.io/coordinator={kube-name}` and
//! `anduin.io/worker={pod}`; each runs `anduin worker --coordinator ADDR --name POD --slots S
//! --data-host $(POD_IP)` with the keys of a Secret (`--kube-worker-secret`: the cluster
//! secret, AWS_* for a checkpoint store on S3) as its environment. On every tick of the
//! coordinator's liveness watch (on a thread of its own, [`Background`], so that a slow API
//! never delays that watch) the scheduler lists its pods by their labels and decides for
//! each worker ([`tend_pod`], pure): a missing pod is created; a pod whose worker ended
//! (`Failed`, `Succeeded`: its pods are never restarted in place) or that the coordinator
//! gave up (declared dead, or never registered) is deleted and created again; a pod of a
//! worker beyond `--max-workers` is deleted. A coordinator that restarts adopts the pods of
//! its predecessor of the same `--kube-name` (their workers register again), those it added
//! too while they run. Stopping the coordinator (SIGINT, SIGTERM: Kubernetes stopping its
//! pod) deletes its pods; a killed one leaves them running their queries, as any worker runs
//! on without a coordinator.
//!
//! Growth ([`Kubernetes::add`], issue 15): when instances added to a running query (`anduin
//! ctl scale` beyond `--max-parallelism`) find no free slot on the registered workers, the
//! coordinator asks for more workers: the scheduler creates the next pods of its naming at
//! once, as those it keeps (same manifest, labels and slots), and keeps them as those until
//! a scale-down retires what ran there and no query runs a part on them: then the coordinator
//! gives them back, the last created first ([`Kubernetes::release`]: the pod is deleted, and
//! it keeps one fewer). A pod the API refuses (a ResourceQuota, RBAC, a Pod Security
//! admission) refuses the rescale with the API's reason, and the pods created for it are
//! deleted again.
//!
//! It speaks the API in plain JSON over HTTPS ([`api`]: `ureq` with rustls, the CA of
//! `--kube-ca-file`, the bearer token of `--kube-token-file`, read again on every call as
//! Kubernetes rotates them), not through the `kube` and `k8s-openapi` crates: three calls on
//! one resource do not pay for their build (hundreds of generated API types and an async
//! stack, minutes on the two-core machines anduin is built on), and errors name the API, the
//! namespace and the pod with what to do (RBAC: the verbs [`api::VERBS`] on pods).
//!
//! Not here yet: watching pods (a list per tick, one call per second by default); a worker
//! pod template (resources, node selectors: the pod is [`pod::WorkerPod`]'s); pods labelled
//! by query and generation (a worker serves every query of its coordinator); standby
//! coordinators across pods (`--leader-election` takes only a local lock file).

mod api;
#[cfg(test)]
pub(crate) mod fake;
mod flags;
mod pod;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use chrono::{DateTime, Utc};

pub use api::{Api, ApiError, Endpoint};
pub use flags::KubeArgs;
pub use pod::{Phase, PodFacts};

use super::coordinator::Link;
use super::scheduler::Scheduler;
use pod::WorkerPod;

/// How long a running pod has, from its creation (its image pulled), for its worker to
/// register before it is replaced.
const REGISTER_WITHIN: Duration = Duration::from_secs(120);
/// The most workers the scheduler keeps.
pub const MAX_PODS: u32 = 1000;

/// What the `kubernetes` scheduler is given.
#[derive(Clone, Debug)]
pub struct Settings {
    pub endpoint: Endpoint,
    /// `--kube-name`.
    pub name: String,
    pub image: String,
    pub env_secret: String,
    pub coordinator_address: SocketAddr,
    pub workers: u32,
    /// How many it may keep in all when instances added while a query runs need room
    /// (`--max-workers`; `workers` unless [`Settings::at_most`]).
    pub max_workers: u32,
    pub slots: u32,
}

impl Settings {
    /// It may create up to `max` worker pods in all for instances added while queries run:
    /// at least those it keeps, at most [`MAX_PODS`].
    pub fn at_most(self, max: u32) -> Result<Self> {
        if max < self.workers {
            bail!(
                "--max-workers {max} is below --workers {}: the kubernetes scheduler keeps \
                 --workers pods, and creates more, up to --max-workers in all, only for \
                 instances added while a query runs; give at least {}",
                self.workers,
                self.workers
            );
        }
        if max > MAX_PODS {
            bail!("--max-workers {max}: the kubernetes scheduler keeps at most {MAX_PODS} pods; give each more --slots instead");
        }
        Ok(Self {
            max_workers: max,
            ..self
        })
    }
}

/// What to do about one worker the `kubernetes` scheduler keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PodTend {
    /// Its pod is there and its worker is, or may yet be (pulling its image, registering;
    /// known from the catalog and reconnecting; alive without a pod, until the coordinator
    /// declares it dead).
    Leave,
    /// It has no pod: create one.
    Create,
    /// Its pod ended, or the coordinator gave its worker up: delete the pod and create
    /// another.
    Replace,
    /// Its pod is being deleted: create another once it is gone.
    Wait,
}

/// What to do about a worker the coordinator knows as `link` (`None`: never registered)
/// whose pod, if there is one, is `pod`, at `now`.
///
/// Unlike a local process, a pod takes a while to start (scheduling, pulling the image) and
/// is only gone once Kubernetes has deleted it: a pending pod is left to start, a running one
/// has [`REGISTER_WITHIN`] from its creation to register (even when a worker of its name was
/// declared dead: that was its predecessor), and one being deleted is waited for.
pub fn tend_pod(link: Option<Link>, pod: Option<&PodFacts>, now: DateTime<Utc>) -> PodTend {
    let Some(pod) = pod else {
        return match link {
            Some(Link::Alive | Link::Awaited) => PodTend::Leave,
            None | Some(Link::Dead) => PodTend::Create,
        };
    };
    if pod.terminating {
        return PodTend::Wait;
    }
    match (pod.phase, link) {
        (Phase::Succeeded | Phase::Failed, _) => PodTend::Replace,
        (Phase::Pending, _) | (_, Some(Link::Alive | Link::Awaited)) => PodTend::Leave,
        (Phase::Running | Phase::Unknown, None | Some(Link::Dead)) => {
            let age = pod
                .created
                .and_then(|c| (now - c).to_std().ok())
                .unwrap_or_default();
            if age < REGISTER_WITHIN {
                PodTend::Leave
            } else {
                PodTend::Replace
            }
        }
    }
}

/// Why the scheduler deleted a pod.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Deleted {
    /// Its worker ended (the pod's phase).
    Ended(Phase),
    /// The coordinator gave its worker up (declared dead, or it never registered).
    GivenUp,
    /// Its worker is beyond those it may keep (`--max-workers`), or its name is not one of
    /// its naming.
    Unwanted,
    /// It was created for instances added while a query runs, and another pod for them was
    /// refused (so was the rescale).
    Withdrawn,
    /// It was created for instances added while a query runs, a scale-down retired them,
    /// and no query runs a part on it any more.
    GivenBack,
    /// The coordinator stops.
    Stopping,
}

/// What one tick of the scheduler did.
#[derive(Debug)]
#[non_exhaustive]
pub enum Event {
    /// It created the pod.
    Created { pod: String },
    /// It deleted the pod.
    Deleted { pod: String, why: Deleted },
    /// The pod's container cannot start (a wrong image, a missing Secret): told once.
    Stuck { pod: String, reason: String },
    /// A call failed; it is tried again on the next tick.
    Failed(ApiError),
}

/// Keeps `workers` worker pods, and those added for instances added while queries run.
pub struct Kubernetes {
    api: Api,
    settings: Settings,
    /// How many workers it keeps (`--workers`, then more as it adds them): read by the
    /// coordinator's [`Background::may_add`] while this runs on its thread.
    kept: Arc<AtomicU32>,
    /// The reason each stuck pod was told for, so that it is told once.
    told: BTreeMap<String, String>,
}

impl Kubernetes {
    /// A scheduler of `settings`, once a first listing of its pods shows the API can be
    /// reached, takes its token and allows it (RBAC) to list pods in its namespace.
    pub fn connect(settings: Settings) -> Result<Self> {
        let api = Api::new(settings.endpoint.clone())?;
        api.list(&WorkerPod::selector(&settings.name))?;
        Ok(Self {
            api,
            kept: Arc::new(AtomicU32::new(settings.workers)),
            settings,
            told: BTreeMap::new(),
        })
    }

    fn worker_name(&self, i: u32) -> String {
        format!("{}-worker-{i}", self.settings.name)
    }

    /// The number `i` of a pod named `{kube-name}-worker-{i}`.
    fn worker_number(&self, pod: &str) -> Option<u32> {
        pod.strip_prefix(&self.settings.name)?
            .strip_prefix("-worker-")?
            .parse()
            .ok()
    }

    /// How many workers it keeps now.
    pub fn kept(&self) -> u32 {
        self.kept.load(Ordering::SeqCst)
    }

    /// How many more workers it may create for instances added while a query runs, and the
    /// slots of each; `None` when it may create none (the coordinator asks
    /// [`Background::may_add`], which reads the same count).
    #[cfg(test)]
    pub fn may_add(&self) -> Option<(u32, u32)> {
        may_add(self.settings.max_workers, self.kept(), self.settings.slots)
    }

    /// Creates `more` worker pods beyond those it keeps, as those (the next numbers of its
    /// naming not taken by a pod there is: a predecessor's added pods are adopted), and keeps
    /// them until they are given back ([`Kubernetes::release`]) or the coordinator stops;
    /// their names. Refused beyond `--max-workers`, or when
    /// the API refuses one of them (its error says why: a ResourceQuota, RBAC, an admission
    /// policy): the pods created for them are deleted again, and it keeps what it kept.
    pub fn add(&mut self, more: u32, events: &mut Vec<Event>) -> Result<Vec<String>, String> {
        let there: BTreeMap<String, PodFacts> = self
            .api
            .list(&WorkerPod::selector(&self.settings.name))
            .map_err(|e| e.to_string())?
            .into_iter()
            .map(|p| (p.name.clone(), p))
            .collect();
        let kept = self.kept();
        let mut names = Vec::new();
        let mut next = kept;
        while names.len() < usize::try_from(more).unwrap_or(usize::MAX) {
            if next >= self.settings.max_workers {
                return Err(format!(
                    "it would take {more} more worker pod(s) beyond the {kept} it keeps{}, and the coordinator keeps at most {} (`--max-workers`)",
                    match next - kept - u32::try_from(names.len()).unwrap_or(0) {
                        0 => String::new(),
                        taken => format!(" and {taken} of its predecessor's it adopts"),
                    },
                    self.settings.max_workers
                ));
            }
            let name = self.worker_name(next);
            if !there.contains_key(&name) {
                names.push(name);
            }
            next += 1;
        }
        let mut created = Vec::new();
        for name in &names {
            match self.api.create(name, &self.manifest(name)) {
                Ok(()) => {
                    created.push(name.clone());
                    events.push(Event::Created { pod: name.clone() });
                }
                // Created since it listed them: it is there.
                Err(ApiError::AlreadyExists { .. }) => {}
                Err(e) => {
                    for pod in &created {
                        self.delete(pod, Deleted::Withdrawn, events);
                    }
                    return Err(e.to_string());
                }
            }
        }
        self.kept.store(next, Ordering::SeqCst);
        Ok(names)
    }

    /// The pod it created last for instances added while queries run, while it keeps one
    /// beyond `--workers`.
    pub fn last_added(&self) -> Option<String> {
        let kept = self.kept();
        (kept > self.settings.workers).then(|| self.worker_name(kept - 1))
    }

    /// Gives back pod `name`, its [`Kubernetes::last_added`]: deletes it and keeps one fewer
    /// (kept as it was when the API refuses: tried again later).
    pub fn release(&mut self, name: &str, events: &mut Vec<Event>) -> Result<(), String> {
        if self.last_added().as_deref() != Some(name) {
            return Err(format!(
                "pod {name} is not the last one it created for instances added while a query runs"
            ));
        }
        if !self.delete(name, Deleted::GivenBack, events) {
            return Err(format!(
                "the Kubernetes API did not delete pod {name} (see the log)"
            ));
        }
        self.kept.fetch_sub(1, Ordering::SeqCst);
        Ok(())
    }

    fn manifest(&self, name: &str) -> serde_json::Value {
        let address = self.settings.coordinator_address.to_string();
        WorkerPod {
            coordinator: &self.settings.name,
            name,
            image: &self.settings.image,
            coordinator_address: &address,
            slots: self.settings.slots,
            env_secret: &self.settings.env_secret,
        }
        .manifest()
    }

    fn create(&self, name: &str, events: &mut Vec<Event>) {
        events.push(match self.api.create(name, &self.manifest(name)) {
            Ok(()) => Event::Created {
                pod: name.to_string(),
            },
            Err(e) => Event::Failed(e),
        });
    }

    fn delete(&self, name: &str, why: Deleted, events: &mut Vec<Event>) -> bool {
        match self.api.delete(name) {
            Ok(()) => {
                events.push(Event::Deleted {
                    pod: name.to_string(),
                    why,
                });
                true
            }
            Err(e) => {
                events.push(Event::Failed(e));
                false
            }
        }
    }

    /// Brings the pods to those it keeps (`--workers`, and those it added), given what the
    /// coordinator knows of the workers by name, at `now`; what it did.
    pub fn tick(&mut self, known: &BTreeMap<String, Link>, now: DateTime<Utc>) -> Vec<Event> {
        let mut events = Vec::new();
        let pods = match self.api.list(&WorkerPod::selector(&self.settings.name)) {
            Ok(pods) => pods,
            Err(e) => return vec![Event::Failed(e)],
        };
        let mut pods: BTreeMap<String, PodFacts> =
            pods.into_iter().map(|p| (p.name.clone(), p)).collect();
        for i in 0..self.kept() {
            let name = self.worker_name(i);
            let pod = pods.remove(&name);
            match tend_pod(known.get(&name).copied(), pod.as_ref(), now) {
                PodTend::Leave | PodTend::Wait => {}
                PodTend::Create => self.create(&name, &mut events),
                PodTend::Replace => {
                    let why = match pod.as_ref().map(|p| p.phase) {
                        Some(phase @ (Phase::Failed | Phase::Succeeded)) => Deleted::Ended(phase),
                        _ => Deleted::GivenUp,
                    };
                    // Created at once: a pod deleted before it was running is gone already;
                    // another is created on a later tick (`AlreadyExists` meanwhile).
                    if self.delete(&name, why, &mut events) {
                        self.create(&name, &mut events);
                    }
                }
            }
            match pod.and_then(|p| p.stuck) {
                Some(reason) if self.told.get(&name) != Some(&reason) => {
                    self.told.insert(name.clone(), reason.clone());
                    events.push(Event::Stuck { pod: name, reason });
                }
                Some(_) => {}
                None => {
                    self.told.remove(&name);
                }
            }
        }
        // Pods beyond those it keeps: a predecessor's added ones are adopted while they run
        // (it may add them again), as the process scheduler adopts its workers — the next of
        // its naming, whose worker registered, is kept as added, so that it is given back
        // once nothing runs on it; those beyond --max-workers (a coordinator restarted with
        // fewer) go.
        loop {
            let next = self.kept();
            let name = self.worker_name(next);
            let running = pods.get(&name).is_some_and(|p| {
                !p.terminating && !matches!(p.phase, Phase::Failed | Phase::Succeeded)
            });
            if next >= self.settings.max_workers
                || !running
                || known.get(&name) != Some(&Link::Alive)
            {
                break;
            }
            pods.remove(&name);
            self.kept.store(next + 1, Ordering::SeqCst);
        }
        for (name, pod) in pods {
            let adopted = self
                .worker_number(&name)
                .is_some_and(|i| i < self.settings.max_workers);
            let why = match pod.phase {
                Phase::Failed | Phase::Succeeded if adopted => Deleted::Ended(pod.phase),
                _ if adopted => continue,
                _ => Deleted::Unwanted,
            };
            if !pod.terminating {
                self.delete(&name, why, &mut events);
            }
        }
        events
    }

    /// Deletes every pod this coordinator keeps; what it did.
    pub fn stop_pods(&mut self) -> Vec<Event> {
        let mut events = Vec::new();
        match self.api.list(&WorkerPod::selector(&self.settings.name)) {
            Ok(pods) => {
                for pod in pods.iter().filter(|p| !p.terminating) {
                    self.delete(&pod.name, Deleted::Stopping, &mut events);
                }
            }
            Err(e) => events.push(Event::Failed(e)),
        }
        events
    }
}

/// How many more of `max` workers may be created when `kept` are, with `slots` each.
fn may_add(max: u32, kept: u32, slots: u32) -> Option<(u32, u32)> {
    let more = max.saturating_sub(kept);
    (more > 0).then_some((more, slots))
}

/// Tells what a tick did on the coordinator's standard error.
fn tell(events: Vec<Event>) {
    for event in events {
        match event {
            Event::Created { pod } => eprintln!("anduin: scheduler: created worker pod {pod}"),
            Event::Deleted { pod, why } => {
                let why = match why {
                    Deleted::Ended(phase) => format!("its worker ended ({phase:?})"),
                    Deleted::GivenUp => "the coordinator gave its worker up".to_string(),
                    Deleted::Unwanted => {
                        "its worker is beyond those the coordinator keeps (--max-workers)"
                            .to_string()
                    }
                    Deleted::Withdrawn => {
                        "created for a rescale that another pod's refusal refused".to_string()
                    }
                    Deleted::GivenBack => "created for instances added while a query runs, which a scale-down retired; no query runs a part on it".to_string(),
                    Deleted::Stopping => "the coordinator stops".to_string(),
                };
                eprintln!("anduin: scheduler: deleted worker pod {pod}: {why}");
            }
            Event::Stuck { pod, reason } => {
                eprintln!("anduin: scheduler: worker pod {pod} cannot start: {reason}");
                tracing::warn!(pod = %pod, reason = %reason, "a worker pod cannot start");
            }
            Event::Failed(e @ ApiError::AlreadyExists { .. }) => {
                tracing::debug!(error = %e, "a worker pod is still being deleted");
            }
            Event::Failed(e) => {
                eprintln!("anduin: scheduler: {e}");
                tracing::warn!(error = %e, "a call of the Kubernetes API failed; trying again on the next tick");
            }
        }
    }
}

/// How long the coordinator waits for the scheduler's thread to create the pods it asks
/// for (the tick under way first: a few calls, each within [`api::CALL_WITHIN`]).
const ADD_WITHIN: Duration = Duration::from_secs(30);

/// Workers asked for while a query runs: their number, until when the asker waits, and
/// where the answer goes.
struct Add {
    more: u32,
    by: Instant,
    answer: crossbeam_channel::Sender<Result<Vec<String>, String>>,
}

/// How long a pod asked to be given back is not asked again while it is kept.
const RELEASE_AGAIN_AFTER: Duration = Duration::from_secs(30);

/// A pod to give back ([`Kubernetes::release`]), asked of the scheduler's thread.
struct Release {
    pod: String,
    answer: crossbeam_channel::Sender<Result<(), String>>,
}

/// The `kubernetes` scheduler as the coordinator runs it: its ticks on a thread of their
/// own, so that an API that answers slowly (each call may take [`api::CALL_WITHIN`]) never
/// holds up the coordinator's liveness watch, whose ticks declare workers dead. A tick asked
/// for while one runs and another waits is skipped (the next one brings newer facts). Pods
/// asked for while a query runs ([`Scheduler::add`]) are created on that thread too, between
/// ticks, and the asker waits for them. A pod given back is deleted there too, without the
/// asker waiting (it asks once per count of pods kept).
pub struct Background {
    to: Option<crossbeam_channel::Sender<BTreeMap<String, Link>>>,
    adds: Option<crossbeam_channel::Sender<Add>>,
    releases: Option<crossbeam_channel::Sender<Release>>,
    kept: Arc<AtomicU32>,
    /// `--workers`, and the name of its pods' naming.
    workers: u32,
    name: String,
    /// The pods kept when it last asked to give one back, and when (asked again after
    /// [`RELEASE_AGAIN_AFTER`] if the API refused).
    released_at: Option<(u32, Instant)>,
    max_workers: u32,
    slots: u32,
    thread: Option<std::thread::JoinHandle<Kubernetes>>,
}

impl Background {
    /// Runs the ticks of `scheduler` on a thread.
    pub fn start(scheduler: Kubernetes) -> std::io::Result<Self> {
        let (to, ticks) = crossbeam_channel::bounded::<BTreeMap<String, Link>>(1);
        let (adds, asked) = crossbeam_channel::unbounded::<Add>();
        let (releases, to_release) = crossbeam_channel::unbounded::<Release>();
        let kept = Arc::clone(&scheduler.kept);
        let (max_workers, slots) = (scheduler.settings.max_workers, scheduler.settings.slots);
        let (workers, name) = (scheduler.settings.workers, scheduler.settings.name.clone());
        let thread = std::thread::Builder::new()
            .name("anduin-kubernetes".into())
            .spawn(move || {
                let mut scheduler = scheduler;
                loop {
                    crossbeam_channel::select! {
                        recv(asked) -> add => {
                            let Ok(add) = add else { break };
                            // Given up by the asker: nothing is created for it.
                            if Instant::now() > add.by {
                                continue;
                            }
                            let mut events = Vec::new();
                            let answer = scheduler.add(add.more, &mut events);
                            tell(events);
                            let _ = add.answer.send(answer);
                        }
                        recv(ticks) -> known => {
                            let Ok(known) = known else { break };
                            tell(scheduler.tick(&known, Utc::now()));
                        }
                        recv(to_release) -> release => {
                            let Ok(release) = release else { break };
                            let mut events = Vec::new();
                            let answer = scheduler.release(&release.pod, &mut events);
                            tell(events);
                            if let Err(why) = &answer {
                                tracing::warn!(pod = %release.pod, why = %why, "cannot give the pod back; tried again later");
                            }
                            let _ = release.answer.send(answer);
                        }
                    }
                }
                scheduler
            })?;
        Ok(Self {
            to: Some(to),
            adds: Some(adds),
            releases: Some(releases),
            kept,
            workers,
            name,
            released_at: None,
            max_workers,
            slots,
            thread: Some(thread),
        })
    }
}

impl Scheduler for Background {
    fn kind(&self) -> &'static str {
        "kubernetes"
    }

    fn tend(&mut self, known: &BTreeMap<String, Link>) {
        if let Some(to) = &self.to {
            let _ = to.try_send(known.clone());
        }
    }

    fn may_add(&self) -> Option<(u32, u32)> {
        may_add(
            self.max_workers,
            self.kept.load(Ordering::SeqCst),
            self.slots,
        )
    }

    /// Has its thread create the pods, and waits for them to be created (not yet running:
    /// the coordinator waits for their workers to register).
    fn add(&mut self, more: u32) -> Result<Vec<String>, String> {
        let Some(adds) = &self.adds else {
            return Err("the coordinator stops".into());
        };
        let (answer, answered) = crossbeam_channel::bounded(1);
        let by = Instant::now() + ADD_WITHIN;
        adds.send(Add { more, by, answer })
            .map_err(|_| "the kubernetes scheduler's thread ended (a bug in anduin)".to_string())?;
        // The thread's last start, its listing, a create and perhaps a delete of each pod.
        match answered.recv_deadline(by + api::CALL_WITHIN * more.saturating_mul(2).saturating_add(1)) {
            Ok(answer) => answer,
            Err(_) => Err(format!(
                "the Kubernetes API did not let the scheduler create {more} worker pod(s) within {ADD_WITHIN:?} (it answers slowly, or not at all: see the coordinator's log)"
            )),
        }
    }

    fn last_added(&self) -> Option<String> {
        let kept = self.kept.load(Ordering::SeqCst);
        (kept > self.workers).then(|| format!("{}-worker-{}", self.name, kept - 1))
    }

    /// Has its thread delete the pod (the coordinator's liveness watch, which asks, does not
    /// wait for the API): asked once while it keeps as many pods (again after a while, should
    /// the API have refused).
    fn release(&mut self, name: &str) -> Result<(), String> {
        let kept = self.kept.load(Ordering::SeqCst);
        if self
            .released_at
            .is_some_and(|(k, at)| k == kept && at.elapsed() < RELEASE_AGAIN_AFTER)
        {
            return Ok(());
        }
        let Some(releases) = &self.releases else {
            return Err("the coordinator stops".into());
        };
        let (answer, _) = crossbeam_channel::bounded(1);
        releases
            .send(Release {
                pod: name.to_string(),
                answer,
            })
            .map_err(|_| "the kubernetes scheduler's thread ended (a bug in anduin)".to_string())?;
        self.released_at = Some((kept, Instant::now()));
        Ok(())
    }

    /// Waits for the tick under way, then deletes the pods.
    fn stop(&mut self) {
        drop(self.to.take());
        drop(self.adds.take());
        drop(self.releases.take());
        if let Some(thread) = self.thread.take() {
            match thread.join() {
                Ok(mut scheduler) => tell(scheduler.stop_pods()),
                Err(_) => eprintln!(
                    "anduin: scheduler: its thread panicked (a bug in anduin): the worker pods are left; delete them with `kubectl delete pods -l anduin.io/coordinator=NAME`"
                ),
            }
        }
    }
}
