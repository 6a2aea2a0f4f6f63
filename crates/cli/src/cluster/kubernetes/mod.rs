//! The `kubernetes` [`Scheduler`]: the coordinator keeps `--workers N` worker pods in its
//! namespace, as the `process` scheduler keeps worker processes on its machine.
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
//! worker beyond `--workers` is deleted. A coordinator that restarts adopts the pods of its
//! predecessor of the same `--kube-name` (their workers register again). Stopping the
//! coordinator (SIGINT, SIGTERM: Kubernetes stopping its pod) deletes its pods; a killed one
//! leaves them running their queries, as any worker runs on without a coordinator.
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
use std::time::Duration;

use anyhow::Result;
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
    pub slots: u32,
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
    /// Its worker is beyond `--workers`.
    Unwanted,
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

/// Keeps `workers` worker pods.
pub struct Kubernetes {
    api: Api,
    settings: Settings,
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
            settings,
            told: BTreeMap::new(),
        })
    }

    fn worker_name(&self, i: u32) -> String {
        format!("{}-worker-{i}", self.settings.name)
    }

    fn create(&self, name: &str, events: &mut Vec<Event>) {
        let address = self.settings.coordinator_address.to_string();
        let manifest = WorkerPod {
            coordinator: &self.settings.name,
            name,
            image: &self.settings.image,
            coordinator_address: &address,
            slots: self.settings.slots,
            env_secret: &self.settings.env_secret,
        }
        .manifest();
        events.push(match self.api.create(name, &manifest) {
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

    /// Brings the pods to `--workers`, given what the coordinator knows of the workers by
    /// name, at `now`; what it did.
    pub fn tick(&mut self, known: &BTreeMap<String, Link>, now: DateTime<Utc>) -> Vec<Event> {
        let mut events = Vec::new();
        let pods = match self.api.list(&WorkerPod::selector(&self.settings.name)) {
            Ok(pods) => pods,
            Err(e) => return vec![Event::Failed(e)],
        };
        let mut pods: BTreeMap<String, PodFacts> =
            pods.into_iter().map(|p| (p.name.clone(), p)).collect();
        for i in 0..self.settings.workers {
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
        // Pods of workers beyond --workers (a coordinator restarted with fewer).
        for (name, pod) in pods {
            if !pod.terminating {
                self.delete(&name, Deleted::Unwanted, &mut events);
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

/// Tells what a tick did on the coordinator's standard error.
fn tell(events: Vec<Event>) {
    for event in events {
        match event {
            Event::Created { pod } => eprintln!("anduin: scheduler: created worker pod {pod}"),
            Event::Deleted { pod, why } => {
                let why = match why {
                    Deleted::Ended(phase) => format!("its worker ended ({phase:?})"),
                    Deleted::GivenUp => "the coordinator gave its worker up".to_string(),
                    Deleted::Unwanted => "its worker is beyond --workers".to_string(),
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

/// The `kubernetes` scheduler as the coordinator runs it: its ticks on a thread of their
/// own, so that an API that answers slowly (each call may take [`api::CALL_WITHIN`]) never
/// holds up the coordinator's liveness watch, whose ticks declare workers dead. A tick asked
/// for while one runs and another waits is skipped (the next one brings newer facts).
pub struct Background {
    to: Option<crossbeam_channel::Sender<BTreeMap<String, Link>>>,
    thread: Option<std::thread::JoinHandle<Kubernetes>>,
}

impl Background {
    /// Runs the ticks of `scheduler` on a thread.
    pub fn start(scheduler: Kubernetes) -> std::io::Result<Self> {
        let (to, from) = crossbeam_channel::bounded::<BTreeMap<String, Link>>(1);
        let thread = std::thread::Builder::new()
            .name("anduin-kubernetes".into())
            .spawn(move || {
                let mut scheduler = scheduler;
                for known in from {
                    tell(scheduler.tick(&known, Utc::now()));
                }
                scheduler
            })?;
        Ok(Self {
            to: Some(to),
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

    /// Waits for the tick under way, then deletes the pods.
    fn stop(&mut self) {
        drop(self.to.take());
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
