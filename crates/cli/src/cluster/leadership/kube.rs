//! Leadership by a Kubernetes Lease (`--leader-election kubernetes://[NAMESPACE/]NAME`), as
//! client-go's leader election takes one: the coordinator whose identity the Lease's
//! `spec.holderIdentity` names leads, and renews `spec.renewTime` every third of
//! `spec.leaseDurationSeconds`, each write a replacement under optimistic concurrency (the
//! `resourceVersion` read; another's write in between is a 409, never overwritten).
//!
//! A standby reads the Lease every tenth of its duration. It never compares the Lease's
//! times with its own clock (theirs may differ): it notes *when it saw* the Lease's
//! `resourceVersion` change, and takes the Lease over once it has seen no change for a
//! whole duration — or at once when no one holds it (a leader let go of it, or none was
//! there: it is created). A take-over counts `spec.leaseTransitions` up; the term is one more
//! than that, and above the last term in the state directory and the catalog's (a Lease
//! deleted and made again counts from 0). A leader that cannot renew steps down before
//! `sent + duration` less a margin, as with etcd ([`super::lease`]), before any standby can
//! have seen the duration pass. What the coordinators share is the Lease's annotation
//! `anduin.io/shared`.
//!
//! The API is reached as `--scheduler kubernetes` reaches it (`--kube-api`,
//! `--kube-token-file`, `--kube-ca-file`, in a pod its service account's); the service
//! account needs the verbs get, create and update on leases (coordination.k8s.io).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use super::lease::{Lease, Renewal};
use super::Shared;
use crate::cluster::kubernetes::{Api, Endpoint, KubeArgs};

/// The annotation of the Lease that says what the coordinators share.
const SHARED: &str = "anduin.io/shared";

/// A Lease's namespace (the pod's when not given) and name, and the API that holds it.
#[derive(Debug, Clone)]
pub struct KubeLease {
    namespace: Option<String>,
    name: String,
    /// Filled by [`KubeLease::reach`] from the `--kube-*` flags.
    endpoint: Option<Endpoint>,
}

impl PartialEq for KubeLease {
    fn eq(&self, other: &Self) -> bool {
        (&self.namespace, &self.name) == (&other.namespace, &other.name)
    }
}

impl Eq for KubeLease {}

impl std::fmt::Display for KubeLease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "kubernetes://{ns}/{}", self.name),
            None => write!(f, "kubernetes://{}", self.name),
        }
    }
}

/// Whether `s` is a DNS label as Kubernetes names objects.
fn dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

impl KubeLease {
    /// Parses what follows `kubernetes://`: `NAME` or `NAMESPACE/NAME`.
    pub fn parse(rest: &str) -> Result<Self, String> {
        let (namespace, name) = match rest.trim_end_matches('/').split_once('/') {
            Some((ns, name)) => (Some(ns), name),
            None => (None, rest.trim_end_matches('/')),
        };
        for part in namespace.iter().chain(std::iter::once(&name)) {
            if !dns_label(part) {
                return Err(format!(
                    "`{part}` is not a Kubernetes name: give [NAMESPACE/]NAME, each at most 63 \
                     lowercase letters, digits and inner dashes"
                ));
            }
        }
        Ok(Self {
            namespace: namespace.map(str::to_string),
            name: name.to_string(),
            endpoint: None,
        })
    }

    /// Takes where the API is from `kube` (the flags of `--scheduler kubernetes` that reach
    /// it, with a pod's defaults).
    pub fn reach(&mut self, kube: &KubeArgs) -> Result<()> {
        self.endpoint =
            Some(kube.endpoint(self.namespace.as_deref(), "--leader-election kubernetes://")?);
        Ok(())
    }

    fn api(&self) -> Result<Api> {
        let Some(endpoint) = &self.endpoint else {
            bail!("{self}: the Kubernetes API to reach is not set (a bug in anduin)");
        };
        Api::new(endpoint.clone())
    }

    /// `NAMESPACE/NAME` (the namespace the API is reached in when not given).
    pub fn identity(&self) -> String {
        let namespace = self
            .namespace
            .clone()
            .or_else(|| self.endpoint.as_ref().map(|e| e.namespace.clone()))
            .unwrap_or_default();
        format!("{namespace}/{}", self.name)
    }

    /// Where the coordinators' shared note is, for messages.
    pub fn shared_note(&self) -> String {
        format!("the annotation {SHARED} of the Lease {}", self.name)
    }

    /// What the leaders of this election share, as the last one wrote it.
    pub fn shared(&self) -> Result<Option<String>> {
        let lease = self.api()?.get_lease(&self.name)?;
        Ok(lease.and_then(|l| {
            l["metadata"]["annotations"][SHARED]
                .as_str()
                .map(str::to_string)
        }))
    }

    /// Says what the leaders of this election share (the leader, which holds the Lease).
    pub fn put_shared(&self, value: &str) -> Result<()> {
        let api = self.api()?;
        for _ in 0..20 {
            let Some(mut lease) = api.get_lease(&self.name)? else {
                bail!("the Lease {} is gone: another deleted it", self.name);
            };
            lease["metadata"]["annotations"][SHARED] = json!(value);
            if api.replace_lease(&self.name, &lease)?.is_some() {
                return Ok(());
            }
        }
        bail!(
            "cannot annotate the Lease {}: it changes all the time",
            self.name
        )
    }

    /// Waits until this coordinator (`me`) holds the Lease for `ttl` (whole seconds);
    /// `standing_by` is told once, with the holder's identity, if another holds it at first.
    /// The Lease, renewed until the process ends (stepping down if it cannot be), and the
    /// term.
    pub(super) fn lead(
        &self,
        shared: &Shared,
        ttl: Duration,
        me: &str,
        standing_by: impl FnOnce(Option<String>),
    ) -> Result<(Lease, u64)> {
        let seconds = ttl.as_secs().max(1);
        let ttl = Duration::from_secs(seconds);
        let api = self.api()?;
        // The holder's identity is the lock itself: unique to this process (two replicas'
        // coordinators may both be `0.0.0.0:7400 (pid 1)`), with its pod's name when known.
        let me = &match std::env::var("HOSTNAME") {
            Ok(host) if !host.is_empty() => {
                format!("{host} {me} {:016x}", super::redlock::random())
            }
            _ => format!("{me} {:016x}", super::redlock::random()),
        };
        let poll = (ttl / 10).clamp(Duration::from_millis(50), Duration::from_millis(500));
        let mut told = Some(standing_by);
        let mut seen: Option<Seen> = None;
        let mut failing = 0u32;
        loop {
            let attempt = (|| -> Result<Option<(Value, Instant)>> {
                let lease = api.get_lease(&self.name)?;
                let facts = lease.as_ref().map(Facts::read);
                match decide(facts.as_ref(), &mut seen, Instant::now(), me) {
                    Move::Wait(holder) => {
                        if let Some(tell) = told.take() {
                            tell(holder);
                        }
                        Ok(None)
                    }
                    Move::Create => {
                        let sent = Instant::now();
                        let body = self.held(None, me, seconds, 0);
                        Ok(api.create_lease(&self.name, &body)?.map(|l| (l, sent)))
                    }
                    Move::TakeOver => {
                        let sent = Instant::now();
                        let (lease, facts) = lease.zip(facts).context("read above")?;
                        let body = self.held(Some(&lease), me, seconds, facts.transitions + 1);
                        Ok(api.replace_lease(&self.name, &body)?.map(|l| (l, sent)))
                    }
                }
            })();
            match attempt {
                Ok(Some((held, sent))) => {
                    let transitions = Facts::read(&held).transitions;
                    let term = super::file::next_term_at_least(&shared.state_dir, transitions + 1)?;
                    return Ok((self.keep(api, held, me, ttl, sent), term));
                }
                Ok(None) => failing = 0,
                Err(e) => {
                    failing += 1;
                    if failing == 1 || failing.is_multiple_of(60) {
                        eprintln!("anduin: coordinator cannot reach the Lease ({e:#}); trying on");
                    }
                }
            }
            std::thread::sleep(poll);
        }
    }

    /// The Lease held by `me` for `seconds`, after `lease` (none: a new one), with
    /// `transitions` take-overs so far.
    fn held(&self, lease: Option<&Value>, me: &str, seconds: u64, transitions: u64) -> Value {
        let now = micro_time();
        let mut body = lease.cloned().unwrap_or_else(|| {
            json!({
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.name},
            })
        });
        body["spec"] = json!({
            "holderIdentity": me,
            "leaseDurationSeconds": seconds,
            "acquireTime": now,
            "renewTime": now,
            "leaseTransitions": transitions,
        });
        body
    }

    /// Keeps the Lease `held` (granted by a write sent at `sent`): renewed every third of
    /// `ttl`, let go of (no holder, a duration of 1 s) at a clean stop.
    fn keep(&self, api: Api, held: Value, me: &str, ttl: Duration, sent: Instant) -> Lease {
        let (api, last) = (Arc::new(api), Arc::new(Mutex::new(held)));
        let (name, me) = (self.name.clone(), me.to_string());
        let renew = {
            let (api, last, name) = (Arc::clone(&api), Arc::clone(&last), name.clone());
            move || -> Result<Renewal> {
                let mut last = last.lock().unwrap_or_else(|p| p.into_inner());
                for _ in 0..3 {
                    let mut lease = last.clone();
                    lease["spec"]["renewTime"] = json!(micro_time());
                    if let Some(renewed) = api.replace_lease(&name, &lease)? {
                        *last = renewed;
                        return Ok(Renewal::For(ttl));
                    }
                    // Changed since: still this coordinator's (its shared note)?
                    match api.get_lease(&name)? {
                        Some(now) if Facts::read(&now).holder.as_deref() == Some(&me) => {
                            *last = now;
                        }
                        Some(now) => {
                            let holder = Facts::read(&now).holder.unwrap_or_default();
                            return Ok(Renewal::Lost(format!(
                                "the Lease {name} is held by {holder} now"
                            )));
                        }
                        None => return Ok(Renewal::Lost(format!("the Lease {name} was deleted"))),
                    }
                }
                bail!("the Lease {name} changes under every renewal")
            }
        };
        let release = move || {
            let mut lease = last.lock().unwrap_or_else(|p| p.into_inner()).clone();
            lease["spec"]["holderIdentity"] = Value::Null;
            lease["spec"]["leaseDurationSeconds"] = json!(1);
            lease["spec"]["renewTime"] = json!(micro_time());
            let _ = api.replace_lease(&name, &lease);
        };
        Lease::keep(self.to_string(), sent, ttl, renew, release)
    }
}

/// Now, as a Lease's MicroTime.
fn micro_time() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

/// What a candidate reads of a Lease.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Facts {
    /// Who holds it (`None`: no one, let go of).
    holder: Option<String>,
    version: String,
    duration: Duration,
    transitions: u64,
}

impl Facts {
    fn read(lease: &Value) -> Self {
        let spec = &lease["spec"];
        Facts {
            holder: spec["holderIdentity"]
                .as_str()
                .filter(|h| !h.is_empty())
                .map(str::to_string),
            version: lease["metadata"]["resourceVersion"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            duration: Duration::from_secs(spec["leaseDurationSeconds"].as_u64().unwrap_or(0)),
            transitions: spec["leaseTransitions"].as_u64().unwrap_or(0),
        }
    }
}

/// When a candidate saw a version of the Lease first.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    version: String,
    at: Instant,
}

/// What a candidate does about the Lease it read.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Move {
    /// There is none: create it, held.
    Create,
    /// No one holds it, or its holder has not renewed it for a whole duration: replace it.
    TakeOver,
    /// Another holds it (who).
    Wait(Option<String>),
}

/// What a candidate `me` does at `now` about `lease` as read (`None`: none), having seen a
/// version first at `seen` (updated here): by its own clock only.
fn decide(lease: Option<&Facts>, seen: &mut Option<Seen>, now: Instant, me: &str) -> Move {
    let Some(lease) = lease else {
        return Move::Create;
    };
    let holder = match &lease.holder {
        None => return Move::TakeOver,
        Some(h) if h == me => return Move::TakeOver,
        Some(h) => h.clone(),
    };
    match seen {
        Some(s) if s.version == lease.version => {
            if now.saturating_duration_since(s.at) >= lease.duration {
                Move::TakeOver
            } else {
                Move::Wait(Some(holder))
            }
        }
        _ => {
            *seen = Some(Seen {
                version: lease.version.clone(),
                at: now,
            });
            Move::Wait(Some(holder))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::kubernetes::fake::FakeApi;

    fn facts(holder: Option<&str>, version: &str) -> Facts {
        Facts {
            holder: holder.map(str::to_string),
            version: version.into(),
            duration: Duration::from_secs(10),
            transitions: 3,
        }
    }

    #[test]
    fn a_lease_is_taken_over_after_a_whole_duration_without_change_by_the_candidates_clock() {
        let t0 = Instant::now();
        let mut seen = None;
        assert_eq!(decide(None, &mut seen, t0, "me"), Move::Create);
        assert_eq!(
            decide(Some(&facts(None, "1")), &mut seen, t0, "me"),
            Move::TakeOver
        );
        let (held, renewed) = (facts(Some("a"), "5"), facts(Some("a"), "6"));
        let waits = Move::Wait(Some("a".into()));
        let mut at = |secs: u64, lease: &Facts| {
            decide(Some(lease), &mut seen, t0 + Duration::from_secs(secs), "me")
        };
        assert_eq!(at(0, &held), waits);
        assert_eq!(at(9, &held), waits);
        // Renewed meanwhile: the duration (10 s) counts from when that was seen.
        assert_eq!(at(11, &renewed), waits);
        assert_eq!(at(20, &renewed), waits);
        assert_eq!(at(21, &renewed), Move::TakeOver);
    }

    #[test]
    fn names_are_parsed_and_bad_ones_refused() {
        let l = KubeLease::parse("streams/anduin-leader").expect("parses");
        assert_eq!(l.to_string(), "kubernetes://streams/anduin-leader");
        assert_eq!(
            KubeLease::parse("anduin-leader")
                .expect("parses")
                .to_string(),
            "kubernetes://anduin-leader"
        );
        for bad in ["", "Leader", "a/b/c", "-x", "/x"] {
            assert!(KubeLease::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_standby_waits_for_the_lease_and_leads_at_the_next_term_once_it_is_let_go() {
        let fake = FakeApi::start("streams");
        let kube = KubeArgs {
            kube_api: Some(fake.url()),
            kube_namespace: Some("streams".into()),
            ..KubeArgs::default()
        };
        let mut election = KubeLease::parse("leader").expect("parses");
        election.reach(&kube).expect("reached");
        let dir = tempfile::tempdir().expect("tempdir");
        let shared = Shared::of(dir.path(), "s3://b/p", false).expect("shared");
        let ttl = Duration::from_secs(2);
        let (first, term) = election
            .lead(&shared, ttl, "first", |_| panic!("nobody leads"))
            .expect("leads");
        assert_eq!(term, 1);
        let (told_tx, told_rx) = std::sync::mpsc::channel();
        let standby = {
            let (election, shared) = (election.clone(), shared.clone());
            std::thread::spawn(move || {
                // The same address and PID as the leader's (two pods' `0.0.0.0:7400 (pid
                // 1)`): it stands by all the same.
                election.lead(&shared, ttl, "first", |holder| {
                    told_tx.send(holder).expect("the test waits");
                })
            })
        };
        let holder = told_rx.recv().expect("the standby says it stands by");
        assert!(
            holder.as_deref().is_some_and(|h| h.contains("first ")),
            "{holder:?}"
        );
        // Let go of (a clean stop): the standby takes it at once, one transition later.
        drop(first);
        let (second, term) = standby.join().expect("no panic").expect("leads");
        assert_eq!(term, 2);
        let lease = fake
            .state()
            .leases
            .get("leader")
            .cloned()
            .expect("the Lease");
        let holder = holder.expect("told");
        assert!(lease["spec"]["holderIdentity"]
            .as_str()
            .is_some_and(|h| h.contains("first ") && h != holder));
        assert_eq!(lease["spec"]["leaseTransitions"], 1);
        drop(second);
        let lease = fake
            .state()
            .leases
            .get("leader")
            .cloned()
            .expect("the Lease");
        assert!(
            lease["spec"]["holderIdentity"].is_null(),
            "let go of: {lease}"
        );
    }

    #[test]
    fn the_lease_is_created_held_annotated_and_taken_over_once_let_go() {
        let fake = FakeApi::start("streams");
        let kube = KubeArgs {
            kube_api: Some(fake.url()),
            kube_namespace: Some("streams".into()),
            ..KubeArgs::default()
        };
        let mut election = KubeLease::parse("leader").expect("parses");
        election.reach(&kube).expect("reached");
        let api = election.api().expect("a client");
        // First: no Lease, so created, held by "a", transitions 0.
        let body = election.held(None, "a", 10, 0);
        let created = api
            .create_lease("leader", &body)
            .expect("answers")
            .expect("created");
        assert_eq!(Facts::read(&created).holder.as_deref(), Some("a"));
        assert!(
            api.create_lease("leader", &body)
                .expect("answers")
                .is_none(),
            "exists"
        );
        election.put_shared("{\"x\":1}").expect("annotated");
        assert_eq!(
            election.shared().expect("read").as_deref(),
            Some("{\"x\":1}")
        );
        // A replacement with a stale version is refused, not written.
        let stale = election.held(Some(&created), "b", 10, 1);
        assert!(api
            .replace_lease("leader", &stale)
            .expect("answers")
            .is_none());
        // Read again, taken over by "b": one more transition; the annotation stays.
        let now = api.get_lease("leader").expect("answers").expect("there");
        let taken = election.held(Some(&now), "b", 10, 1);
        let taken = api
            .replace_lease("leader", &taken)
            .expect("answers")
            .expect("replaced");
        let facts = Facts::read(&taken);
        assert_eq!((facts.holder.as_deref(), facts.transitions), (Some("b"), 1));
        assert_eq!(
            election.shared().expect("read").as_deref(),
            Some("{\"x\":1}")
        );
        // RBAC that forbids it names what to grant.
        fake.state().forbid = Some("leases.coordination.k8s.io is forbidden".into());
        let e = api.get_lease("leader").expect_err("forbidden").to_string();
        assert!(
            e.contains("read the Lease leader")
                && e.contains("get, create and update on leases (coordination.k8s.io)"),
            "{e}"
        );
    }
}
