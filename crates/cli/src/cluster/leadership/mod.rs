//! Which of several coordinators leads (`anduin coordinator --leader-election URL`). The
//! others stand by — they listen, refusing every connection with
//! [`super::coordinators::STANDING_BY`] so that workers, executors and clients go on to the
//! next address of their `--coordinator` list — until they lead; the one that does opens the
//! catalog the leader kept in the shared `--state-dir` and takes the running queries over, as
//! a restarted coordinator does. Each leader has a term, larger than every earlier leader's;
//! workers refuse a coordinator of an older term than one they have seen.
//!
//! - `file:///PATH` ([`file`]): the coordinator that holds the operating system's lock on
//!   PATH leads, for coordinators on one machine (or a file system whose locks all see).
//! - `etcd://HOST:PORT[,HOST:PORT…][/PREFIX]` ([`etcd`]): the coordinator that holds the
//!   election key under a lease of etcd leads, for coordinators on several machines; it steps
//!   down (exits) before its lease could have expired at etcd when it cannot renew it.
//!
//! - `redlock://HOST:PORT,HOST:PORT,…[/PREFIX]` ([`redlock`]): the coordinator that holds
//!   the lock on a majority of independent Redis servers leads, stepping down likewise.
//! - `kubernetes://[NAMESPACE/]NAME` ([`kube`]): the coordinator that holds the Kubernetes
//!   Lease NAME leads, stepping down likewise.

mod etcd;
mod file;
mod kube;
mod lease;
mod redlock;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anduin_checkpoint::{Bucket, S3Settings, StoreLocation};
use anduin_coordinator::catalog::{Catalog, CATALOG_PREFIX};
use anyhow::{bail, Context, Result};

pub use etcd::Etcd;
pub use kube::KubeLease;
pub use lease::{act_or_step_down, let_go, never_step_down_for_tests, superseded};
pub use redlock::Redlock;

/// `--leader-election`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Election {
    /// The coordinator that holds the lock on this file leads.
    File(PathBuf),
    /// The coordinator that holds the election key of this etcd under a lease leads.
    Etcd(Etcd),
    /// The coordinator that holds the lock on a majority of these Redis servers leads.
    Redlock(Redlock),
    /// The coordinator that holds this Kubernetes Lease leads.
    Kubernetes(KubeLease),
}

impl Election {
    /// Whether the leader holds a lease that can run out while it lives (etcd, Redlock): it
    /// renews it, pings its workers, and takes the catalog over by term.
    pub fn by_lease(&self) -> bool {
        matches!(
            self,
            Election::Etcd(_) | Election::Redlock(_) | Election::Kubernetes(_)
        )
    }
}

impl Election {
    /// What names this election whatever its servers are called (their addresses may be
    /// spelt otherwise by each coordinator): its kind and its prefix, Lease or lock file. The
    /// catalog in an object store records it, and refuses another's coordinators.
    pub fn identity(&self) -> String {
        match self {
            Election::File(path) => format!("file:{}", path.display()),
            Election::Etcd(etcd) => format!("etcd:{}", etcd.prefix()),
            Election::Redlock(redlock) => format!("redlock:{}", redlock.prefix()),
            Election::Kubernetes(lease) => format!("kubernetes:{}", lease.identity()),
        }
    }
}

impl std::fmt::Display for Election {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Election::File(path) => write!(f, "file://{}", path.display()),
            Election::Etcd(etcd) => write!(f, "{etcd}"),
            Election::Redlock(redlock) => write!(f, "{redlock}"),
            Election::Kubernetes(lease) => write!(f, "{lease}"),
        }
    }
}

/// Parses `--leader-election`.
pub fn parse_election(s: &str) -> Result<Election, String> {
    if let Some(path) = s.strip_prefix("file://") {
        if !path.starts_with('/') {
            return Err(format!(
                "`{s}`: give an absolute path after file:// (file:///var/lib/anduin/leader.lock)"
            ));
        }
        return Ok(Election::File(PathBuf::from(path)));
    }
    if let Some(rest) = s.strip_prefix("etcd://") {
        return Etcd::parse(rest)
            .map(Election::Etcd)
            .map_err(|why| format!("`{s}`: {why}"));
    }
    if let Some(rest) = s.strip_prefix("kubernetes://") {
        return KubeLease::parse(rest)
            .map(Election::Kubernetes)
            .map_err(|why| format!("`{s}`: {why}"));
    }
    if let Some(rest) = s.strip_prefix("redlock://") {
        return Redlock::parse(rest)
            .map(Election::Redlock)
            .map_err(|why| format!("`{s}`: {why}"));
    }
    Err(format!(
        "`{s}` is not a leader election anduin knows: give etcd://HOST:PORT[,HOST:PORT...], \
         redlock://HOST:PORT,HOST:PORT,HOST:PORT (independent Redis servers), \
         kubernetes://[NAMESPACE/]NAME (a Lease) or file:///PATH (a lock file every \
         coordinator of the cluster reaches)"
    ))
}

/// The `HOST:PORT` list of a lock service's servers (`port` says which port, for an error),
/// each once: the same server twice would count twice toward a majority.
fn hosts(list: &str, port: &str, service: &str) -> Result<Vec<String>, String> {
    let mut hosts: Vec<String> = Vec::new();
    for host in list.split(',').map(str::trim) {
        match host.rsplit_once(':') {
            Some(_) if hosts.iter().any(|h| h == host) => {
                return Err(format!(
                    "`{host}` is given twice: give each of the {service} servers once (one \
                     server twice is no majority)"
                ))
            }
            Some((name, p)) if !name.is_empty() && p.parse::<u16>().is_ok() => {
                hosts.push(host.to_string());
            }
            _ => return Err(format!("`{host}` is not HOST:PORT ({port})")),
        }
    }
    Ok(hosts)
}

/// This coordinator's leadership: held as long as this value lives (and the process; a
/// coordinator that loses a lease exits).
#[derive(Debug)]
pub struct Leadership {
    _hold: Hold,
    /// Larger than every earlier leader's.
    pub term: u64,
}

/// What is held while leading: released when dropped.
#[derive(Debug)]
enum Hold {
    File { _lock: std::fs::File },
    Lease { _lease: lease::Lease },
}

/// Waits until this coordinator (`me`: its address and PID, told to the others), sharing
/// `shared`, leads by `election`, its leases `lease` long; `standing_by` is told once, with
/// what the leader said of itself, if another leads at first. Refuses what [`check`] refuses,
/// at once and again once it leads (the leader before it may have been another cluster's).
pub fn lead(
    election: &Election,
    shared: &Shared,
    lease: Duration,
    me: &str,
    standing_by: impl FnOnce(Option<String>),
) -> Result<Leadership> {
    check(election, shared)?;
    let (hold, term) = match election {
        Election::File(path) => {
            let (file, term) = file::lead(path, shared, me, standing_by)?;
            (Hold::File { _lock: file }, term)
        }
        Election::Etcd(etcd) => {
            let (lease, term) = etcd.lead(shared, lease, me, standing_by)?;
            (Hold::Lease { _lease: lease }, term)
        }
        Election::Redlock(redlock) => {
            let (lease, term) = redlock.lead(shared, lease, me, standing_by)?;
            (Hold::Lease { _lease: lease }, term)
        }
        Election::Kubernetes(kube) => {
            let (lease, term) = kube.lead(shared, lease, me, standing_by)?;
            (Hold::Lease { _lease: lease }, term)
        }
    };
    let term = term.max(shared.term_floor(election)?);
    // Checked again now that it leads, before it says what it shares: two coordinators of
    // different state started at once on a new election both passed the first check, and
    // only the first to lead may say what the cluster shares.
    check(election, shared)?;
    let said = serde_json::to_string(shared)?;
    match election {
        Election::File(path) => {
            let note = state_note(path);
            std::fs::write(&note, &said)
                .with_context(|| format!("cannot write `{}`", note.display()))?;
        }
        Election::Etcd(etcd) => etcd.put_shared(&said)?,
        Election::Redlock(redlock) => redlock.put_shared(&said),
        Election::Kubernetes(kube) => kube.put_shared(&said)?,
    }
    let theirs = shared.state_dir.join(LOCK_NOTE);
    std::fs::write(&theirs, election.to_string())
        .with_context(|| format!("cannot write `{}`", theirs.display()))?;
    Ok(Leadership { _hold: hold, term })
}

/// The file beside the lock in which the leader says what its standbys must share with it.
fn state_note(lock: &Path) -> PathBuf {
    let mut name = lock.file_name().unwrap_or_default().to_os_string();
    name.push(".state-dir");
    lock.with_file_name(name)
}

/// The file in the state directory that names the lock its coordinators elect by.
const LOCK_NOTE: &str = "leader-lock";

/// What every coordinator electing by one lock shares with the leader: the catalog a standby
/// takes the queries over from, and the checkpoints it restores them from. Coordinators
/// elected by a lease (etcd, Redlock) with an object store for checkpoints keep the catalog
/// there, under [`CATALOG_PREFIX`] (each one's state directory is then its own: they need no
/// shared file system); the others keep it in their shared state directory.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Shared {
    /// Where the catalog is: `--state-dir` (canonical), or `s3://bucket/prefix/.catalog`.
    #[serde(alias = "state_dir")]
    pub catalog: String,
    /// `--checkpoint-store`, a local one as a canonical path.
    pub checkpoint_store: String,
    /// This coordinator's `--state-dir`, canonical.
    #[serde(skip)]
    pub state_dir: PathBuf,
    /// The catalog's objects, when it is in the object store.
    #[serde(skip)]
    pub catalog_objects: Option<Bucket>,
}

impl PartialEq for Shared {
    fn eq(&self, other: &Self) -> bool {
        (&self.catalog, &self.checkpoint_store) == (&other.catalog, &other.checkpoint_store)
    }
}

impl Shared {
    /// What a coordinator with `state_dir` (which exists) and `checkpoint_store` shares;
    /// `by_lease`: it is elected by a lease. Makes no request.
    pub fn of(state_dir: &Path, checkpoint_store: &str, by_lease: bool) -> Result<Self> {
        let state_dir = state_dir.canonicalize().with_context(|| {
            format!("cannot find the state directory `{}`", state_dir.display())
        })?;
        let catalog_objects = if by_lease {
            catalog_objects(checkpoint_store)?
        } else {
            None
        };
        let catalog = match &catalog_objects {
            Some(objects) => objects.url().to_string(),
            None => state_dir.display().to_string(),
        };
        let local = match checkpoint_store.split_once("://") {
            None => Some(checkpoint_store),
            Some(("file", path)) => Some(path),
            Some(_) => None,
        };
        let checkpoint_store = match local.map(Path::new) {
            Some(p) => p
                .canonicalize()
                .or_else(|_| std::path::absolute(p))
                .map_or_else(
                    |_| checkpoint_store.to_string(),
                    |p| p.display().to_string(),
                ),
            // `s3://b/p/` and `s3://b/p` are one store.
            None => StoreLocation::parse(checkpoint_store)
                .map_or_else(|_| checkpoint_store.to_string(), |l| l.to_string()),
        };
        Ok(Self {
            catalog,
            checkpoint_store,
            state_dir,
            catalog_objects,
        })
    }

    /// The least term this coordinator may lead with: after the last leader's that took the
    /// catalog in the object store over (an election service that lost its data counts from
    /// 1 again); 0 for a catalog in the state directory (whose own note of terms counts).
    /// Refused when another election's coordinators keep that catalog (two clusters on one
    /// checkpoint store).
    fn term_floor(&self, election: &Election) -> Result<u64> {
        let Some(objects) = &self.catalog_objects else {
            return Ok(0);
        };
        let last = Catalog::last_leader(objects.clone())
            .with_context(|| format!("cannot read the catalog at {}", objects.url()))?;
        let Some((term, theirs)) = last else {
            return Ok(0);
        };
        let mine = election.identity();
        if !theirs.is_empty() && theirs != mine {
            bail!(
                "the catalog at {} is kept by the coordinators elected by `{theirs}`, this one \
                 is elected by `{mine}`: give every coordinator of a cluster the same election, \
                 and each cluster a checkpoint store of its own",
                objects.url()
            );
        }
        Ok(term + 1)
    }
}

/// Refuses, before anything is started, a coordinator that would take over what it cannot:
/// one whose state directory or checkpoint store is not the leader's, or whose state
/// directory's coordinators elect by another lock. Nothing is refused on a first start.
pub fn check(election: &Election, shared: &Shared) -> Result<()> {
    shared.term_floor(election)?;
    let (theirs, note) = match election {
        Election::File(lock) => {
            let note = state_note(lock);
            let text = std::fs::read_to_string(&note).ok();
            (text, note.display().to_string())
        }
        Election::Etcd(etcd) => (etcd.shared()?, format!("the key {}", etcd.shared_key())),
        Election::Redlock(redlock) => (
            redlock.shared()?,
            format!("the key {} of every Redis server", redlock.shared_key()),
        ),
        Election::Kubernetes(kube) => (kube.shared()?, kube.shared_note()),
    };
    if let Some(text) = theirs {
        let theirs: Option<Shared> = serde_json::from_str(&text).ok();
        if theirs.as_ref() != Some(shared) {
            let (dir, store) = theirs.map_or_else(
                || ("?".to_string(), "?".to_string()),
                |t| (t.catalog, t.checkpoint_store),
            );
            bail!(
                "the coordinators electing a leader by `{election}` keep their catalog in \
                 `{dir}` and their checkpoints in `{store}`, this one in `{}` and `{}`: give \
                 every coordinator of the cluster the same --state-dir and --checkpoint-store \
                 (a standby takes the running queries over from the leader's catalog and \
                 checkpoints; with an object store and an election by lease the catalog is in \
                 the store, and only --checkpoint-store must be the same), or remove {note} if \
                 that cluster is gone for good",
                shared.catalog,
                shared.checkpoint_store,
            );
        }
    }
    let theirs = shared.state_dir.join(LOCK_NOTE);
    if let Ok(other) = std::fs::read_to_string(&theirs) {
        // Written as a bare path before there was more than one kind of election.
        let other = match other.trim() {
            path if path.starts_with('/') => format!("file://{path}"),
            url => url.to_string(),
        };
        if other != election.to_string() {
            bail!(
                "the coordinators of the state directory `{}` elect their leader by `{other}`, \
                 this one by `{election}`: give it the same --leader-election (or remove `{}` \
                 if no coordinator elects by that any more)",
                shared.state_dir.display(),
                theirs.display()
            );
        }
    }
    Ok(())
}

/// Where coordinators elected by a lease keep their catalog when `checkpoint_store` is an
/// object store: its [`CATALOG_PREFIX`] (`None` for a directory). Makes no request.
fn catalog_objects(checkpoint_store: &str) -> Result<Option<Bucket>> {
    let StoreLocation::S3 { bucket, prefix } = StoreLocation::parse(checkpoint_store)? else {
        return Ok(None);
    };
    let url = StoreLocation::S3 {
        bucket: bucket.clone(),
        prefix: prefix.clone(),
    }
    .to_string();
    Bucket::s3(&bucket, &prefix, &S3Settings::from_env(), url)
        .and_then(|b| b.child(CATALOG_PREFIX))
        .map(Some)
        .with_context(|| format!("cannot use the checkpoint store {checkpoint_store}"))
}

/// Refuses a coordinator started without `--leader-election` on the state directory of
/// coordinators that elect their leader (noted in it), or on an object store where elected
/// coordinators keep their catalog: it would lead beside the elected one.
pub fn check_unelected(state_dir: &Path, checkpoint_store: &str) -> Result<()> {
    if let Some(objects) = catalog_objects(checkpoint_store)? {
        // A store that cannot be listed is named by the store's own check, which follows.
        let names = objects.list().unwrap_or_default();
        if !names.is_empty() {
            bail!(
                "the coordinators of the checkpoint store {checkpoint_store} elect their leader \
                 and keep their catalog in {}: give this one the same --leader-election (or \
                 another store; remove {} only if that cluster is gone for good)",
                objects.url(),
                objects.url()
            );
        }
    }
    let note = state_dir.join(LOCK_NOTE);
    if let Ok(theirs) = std::fs::read_to_string(&note) {
        bail!(
            "the coordinators of the state directory `{}` elect their leader by `{}`: give \
             this one the same --leader-election (or remove `{}` if none elects any more)",
            state_dir.display(),
            theirs.trim(),
            note.display()
        );
    }
    Ok(())
}

/// Whether a worker that has seen a coordinator of term `seen` refuses one of term `offered`
/// (a coordinator that led before and no longer does; one without elections has none).
pub fn older_term(seen: Option<u64>, offered: Option<u64>) -> bool {
    matches!((seen, offered), (Some(s), Some(o)) if o < s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_file_and_etcd_elect_and_the_others_say_so() {
        assert_eq!(
            parse_election("file:///tmp/l"),
            Ok(Election::File("/tmp/l".into()))
        );
        assert!(parse_election("file://rel/l")
            .expect_err("refused")
            .contains("absolute"));
        assert!(matches!(
            parse_election("etcd://127.0.0.1:2379"),
            Ok(Election::Etcd(_))
        ));
        assert!(matches!(
            parse_election("redlock://a:6379,b:6379,c:6379"),
            Ok(Election::Redlock(_))
        ));
        assert!(parse_election("zk://x")
            .expect_err("refused")
            .contains("not a leader"));
    }

    /// The lease of the tests' elections (a lock file has none).
    const LEASE: Duration = Duration::from_secs(2);

    /// What a coordinator with the state directory `dir` and checkpoints in `dir/ck` shares.
    fn shared(dir: &Path) -> Shared {
        Shared::of(dir, &dir.join("ck").display().to_string(), false).expect("the directory exists")
    }

    #[test]
    fn each_leader_has_the_term_after_the_last() {
        let dir = tempfile::tempdir().expect("tempdir");
        let lock = Election::File(dir.path().join("lock"));
        let first = lead(&lock, &shared(dir.path()), LEASE, "me", |_| {
            panic!("nobody leads")
        })
        .expect("leads");
        assert_eq!(first.term, 1);
        drop(first);
        let second = lead(&lock, &shared(dir.path()), LEASE, "me", |_| {
            panic!("nobody leads")
        })
        .expect("leads");
        assert_eq!(second.term, 2);
    }

    #[test]
    fn a_leader_counts_its_term_on_from_the_last_that_took_the_catalog_in_the_store_over() {
        // An election service that lost its data counts from 1 again; the catalog in the
        // object store remembers term 41.
        let objects = Bucket::in_memory("memory://store")
            .and_then(|b| b.child(CATALOG_PREFIX))
            .expect("a bucket");
        let dir = tempfile::tempdir().expect("tempdir");
        let lock = Election::File(dir.path().join("lock"));
        let take_over = |term, election: &Election| {
            Catalog::take_over_objects(
                objects.clone(),
                term,
                &election.identity(),
                anduin_coordinator::catalog::CatalogOptions::in_object_store(),
                std::time::Instant::now(),
                &|| (),
            )
        };
        drop(take_over(41, &lock).expect("term 41"));
        let shared = Shared {
            catalog_objects: Some(objects.clone()),
            ..shared(dir.path())
        };
        let leader = lead(&lock, &shared, LEASE, "me", |_| panic!("nobody leads")).expect("leads");
        assert_eq!(leader.term, 42);
        drop(leader);
        // Another cluster's coordinators on that store are refused before they lead.
        let theirs = Election::File(dir.path().join("their.lock"));
        let other = tempfile::tempdir().expect("tempdir");
        let shared = Shared {
            catalog_objects: Some(objects.clone()),
            ..self::shared(other.path())
        };
        let e = lead(&theirs, &shared, LEASE, "them", |_| {
            panic!("refused before")
        })
        .expect_err("another election's catalog");
        assert!(
            format!("{e:#}").contains("give every coordinator of a cluster the same election"),
            "{e:#}"
        );
    }

    #[test]
    fn a_standby_waits_for_the_lock_and_leads_when_it_is_let_go() {
        let dir = tempfile::tempdir().expect("tempdir");
        let lock = Election::File(dir.path().join("lock"));
        let first = lead(&lock, &shared(dir.path()), LEASE, "me", |_| {
            panic!("nobody leads")
        })
        .expect("leads");
        let (told_tx, told_rx) = std::sync::mpsc::channel();
        let standby = {
            let (lock, state) = (lock.clone(), shared(dir.path()));
            std::thread::spawn(move || {
                lead(&lock, &state, LEASE, "the standby", |holder| {
                    told_tx.send(holder).expect("the test waits");
                })
            })
        };
        // It said who leads before it waited for the lock.
        let holder = told_rx.recv().expect("the standby says it stands by");
        assert_eq!(holder.as_deref(), Some("me"));
        drop(first);
        let second = standby.join().expect("no panic").expect("leads");
        assert_eq!(second.term, 2);
    }

    #[test]
    fn a_coordinator_with_another_state_directory_or_store_or_lock_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::create_dir_all(&a).expect("a");
        std::fs::create_dir_all(&b).expect("b");
        let lock = Election::File(dir.path().join("lock"));
        let _first =
            lead(&lock, &shared(&a), LEASE, "me", |_| panic!("nobody leads")).expect("leads");
        let refused = |e: anyhow::Error, what: &str| {
            let e = format!("{e:#}");
            assert!(e.contains(what), "{e}");
        };
        let e = lead(&lock, &shared(&b), LEASE, "me", |_| {
            panic!("refused before")
        })
        .expect_err("another dir");
        refused(e, "same --state-dir and --checkpoint-store");
        // The same state directory, checkpoints elsewhere.
        let elsewhere = Shared::of(&a, "s3://bucket/ck", false).expect("a exists");
        let slashed = Shared::of(&a, "s3://bucket/ck/", false).expect("a exists");
        assert_eq!(slashed, elsewhere, "one store, however spelt");
        let e = lead(&lock, &elsewhere, LEASE, "me", |_| panic!("refused before"))
            .expect_err("another store");
        refused(e, "s3://bucket/ck");
        // Its state directory's coordinators elect by another lock: refused before it leads
        // by its own (which would cost a term).
        let other = Election::File(dir.path().join("other.lock"));
        let e = lead(&other, &shared(&a), LEASE, "me", |_| {
            panic!("refused before")
        })
        .expect_err("another lock");
        refused(e, "same --leader-election");
        assert_eq!(
            std::fs::read_to_string(a.join(file::TERM_FILE))
                .expect("a term")
                .trim(),
            "1"
        );
    }

    #[test]
    fn a_worker_refuses_a_coordinator_of_an_older_term() {
        assert!(older_term(Some(3), Some(2)));
        assert!(!older_term(Some(3), Some(3)));
        assert!(!older_term(Some(3), Some(4)));
        assert!(!older_term(None, Some(1)));
        assert!(!older_term(Some(3), None));
    }
}
