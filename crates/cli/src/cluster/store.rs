//! Where a cluster's queries keep their checkpoints (`anduin coordinator --checkpoint-store`),
//! as the coordinator sees it ([`ClusterStore`]) and as an executor does ([`Share`]).
//!
//! A directory every worker and the coordinator reach at the same path (a shared file system):
//! query `Q`'s checkpoints are in `DIR/Q`; its tasks write their files there and the
//! coordinator writes each manifest there, as `anduin run` does.
//!
//! An object store (`s3://bucket/prefix`): query `Q`'s checkpoints are under
//! `s3://bucket/prefix/Q`, with the layout, checksums and commit protocol of `anduin run
//! --checkpoint-store s3://…`. Each executor's tasks write their files into a staging
//! directory of its own, on its worker; the executor uploads a task's share of a checkpoint
//! (each file checked against its checksum and created only if absent) before it passes the
//! task's acknowledgement on. Once every task has acknowledged, the coordinator checks that
//! the files are there and creates the manifest, last and only if absent. A restore fetches
//! the checkpoint's files into the executor's staging directory, checking each. Every process
//! reaches the store with the credentials and endpoint of its own environment (the `AWS_*`
//! variables): each worker needs them, and passes them on to its executors.

use std::path::{Path, PathBuf};

use anduin_checkpoint::{CheckpointDir, FileEntry, S3Settings, Store, StoreLocation};
use anduin_runtime::{CheckpointSettings, Event};
use anduin_types::Epoch;
use anyhow::{bail, Context, Result};
use crossbeam_channel::{Receiver, Sender};

use super::proto::Deployment;
use crate::cmd::run::{checkpoint_settings, RunArgs};

/// Where a coordinator's queries keep their checkpoints.
#[derive(Debug, Clone)]
pub enum ClusterStore {
    /// A directory every worker and the coordinator reach at the same path.
    Shared(PathBuf),
    /// A bucket and prefix of an S3-compatible object store; the coordinator keeps a copy of
    /// the manifests it writes under `cache`.
    Objects {
        bucket: String,
        prefix: String,
        cache: PathBuf,
    },
}

impl ClusterStore {
    /// The store `given` names (`--checkpoint-store`: a directory, `file:///path` or
    /// `s3://bucket/prefix`), the manifests of an object store cached under `state_dir`.
    /// Checked before anything runs: a directory is made; an object store is listed and
    /// written to, with the settings of this process's environment, the error naming it.
    pub fn new(given: &str, state_dir: &Path) -> Result<Self> {
        let location = StoreLocation::parse(given)?;
        match &location {
            StoreLocation::Local(dir) => {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("cannot create `{}`", dir.display()))?;
                Ok(ClusterStore::Shared(dir.clone()))
            }
            StoreLocation::S3 { bucket, prefix } => {
                let cache = state_dir.join("checkpoint-cache");
                crate::store::open_checked(&location, &cache, true)?;
                Ok(ClusterStore::Objects {
                    bucket: bucket.clone(),
                    prefix: prefix.clone(),
                    cache,
                })
            }
            other => bail!("not supported for a cluster: checkpoint store {other}"),
        }
    }

    /// The directory of query `query`'s checkpoints on the coordinator: the store itself, or
    /// the cache of the manifests it writes to the object store.
    pub fn dir(&self, query: &str) -> PathBuf {
        match self {
            ClusterStore::Shared(dir) => dir.join(query),
            ClusterStore::Objects { cache, .. } => cache.join(query),
        }
    }

    /// Where query `query`'s checkpoints are, for messages and the catalog: the directory,
    /// or `s3://bucket/prefix/QUERY`.
    pub fn location(&self, query: &str) -> String {
        match self {
            ClusterStore::Shared(dir) => dir.join(query).display().to_string(),
            ClusterStore::Objects { bucket, prefix, .. } => StoreLocation::S3 {
                bucket: bucket.clone(),
                prefix: join(prefix, query),
            }
            .to_string(),
        }
    }

    /// What the executors of query `query` are told of an object store (its URL); `None`
    /// for a directory, which they reach at the path of the deployment.
    pub fn for_executors(&self, query: &str) -> Option<String> {
        matches!(self, ClusterStore::Objects { .. }).then(|| self.location(query))
    }

    /// Query `query`'s checkpoints as the coordinator writes them: the directory, or the
    /// object store whose files the executors upload (the coordinator writes the manifests).
    /// Makes no request.
    pub fn store(&self, query: &str) -> Result<Store> {
        let store = match self {
            ClusterStore::Shared(_) => Store::open(self.dir(query)),
            ClusterStore::Objects { bucket, prefix, .. } => Store::open_s3(
                bucket,
                &join(prefix, query),
                &S3Settings::from_env(),
                &self.dir(query),
            )
            .map(Store::files_uploaded_by_writers),
        };
        store.with_context(|| format!("cannot use the checkpoint store {}", self.location(query)))
    }
}

/// `prefix/name`, or `name` under an empty prefix.
fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}/{name}")
    }
}

/// An executor's share of its query's checkpoints: the store, and the directory its tasks
/// write their files into — the shared directory, or (with an object store) a staging
/// directory of the executor's own, removed when the part ends (a new attempt fetches what it
/// restores from the store).
pub struct Share {
    store: Store,
    /// The staging directory, when the checkpoints go to an object store.
    staging: Option<PathBuf>,
}

impl Share {
    /// The checkpoints of deployment `d`, read from the file `deployment`: its directory, or
    /// the object store it names, reached with the settings of this process's environment and
    /// checked before anything runs (listed and written to; the error names the store and
    /// says what failed), staged in `checkpoints` beside the deployment.
    pub fn open(d: &Deployment, deployment: &Path) -> Result<Self> {
        let Some(url) = &d.checkpoint_store else {
            let store = Store::open(&d.checkpoint_dir).with_context(|| {
                format!(
                    "cannot use the checkpoint directory `{}`",
                    d.checkpoint_dir.display()
                )
            })?;
            return Ok(Share {
                store,
                staging: None,
            });
        };
        let location = StoreLocation::parse(url)?;
        let staging = deployment.with_file_name("checkpoints");
        let store = Store::open_location(&location, &staging)
            .with_context(|| format!("cannot use the checkpoint store {location}"))?;
        // Removes the staging directory on every way out, this one included.
        let share = Share {
            store,
            staging: Some(staging),
        };
        share.store.preflight(true).map_err(|e| {
            anyhow::anyhow!(
                "{e} (as this executor reaches it: every worker needs the store's settings in \
                 its environment, which its executors inherit)"
            )
        })?;
        Ok(share)
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The directory the tasks write their files into.
    pub fn dir(&self) -> &Path {
        self.store.dir().root()
    }

    /// How the executor's tasks take checkpoints, from the run's flags.
    pub fn settings(&self, args: &RunArgs) -> CheckpointSettings {
        CheckpointSettings {
            store: Some(self.store.clone()),
            ..checkpoint_settings(args, self.dir())
        }
    }

    /// The tasks' checkpoint events from `events`, to send to the coordinator: with an
    /// object store, each acknowledgement once the task's files are uploaded (then removed
    /// from the staging directory), a share that cannot be uploaded becoming the task's
    /// failure of that checkpoint, naming the store and the file (the checkpoint fails, the
    /// query goes on). The events keep their order. With a directory they pass as they are.
    pub fn upload_before_acks(&self, events: Receiver<Event>) -> Result<Receiver<Event>> {
        if self.staging.is_none() {
            return Ok(events);
        }
        let (tx, rx) = crossbeam_channel::unbounded();
        let store = self.store.clone();
        std::thread::Builder::new()
            .name("anduin-uploads".into())
            .spawn(move || upload_acks(&store, &events, &tx))
            .context("cannot start the executor's uploads")?;
        Ok(rx)
    }
}

impl Drop for Share {
    fn drop(&mut self) {
        if let Some(dir) = &self.staging {
            if let Err(e) = std::fs::remove_dir_all(dir) {
                if e.kind() != std::io::ErrorKind::NotFound {
                    tracing::warn!(dir = %dir.display(), error = %e, "cannot remove the executor's checkpoint staging directory");
                }
            }
        }
    }
}

/// Passes `events` on to `out`, uploading the files of each acknowledgement first.
fn upload_acks(store: &Store, events: &Receiver<Event>, out: &Sender<Event>) {
    for e in events {
        let e = match e {
            Event::Ack {
                epoch,
                task,
                states,
                files,
            } => match store.upload_share(epoch, &files) {
                Ok(()) => {
                    if !files.is_empty() {
                        let_go(store.dir(), epoch, &files);
                    }
                    Event::Ack {
                        epoch,
                        task,
                        states,
                        files,
                    }
                }
                Err(err) => {
                    tracing::warn!(epoch = epoch.0, task, error = %err, "cannot upload a task's share of a checkpoint");
                    Event::Failed {
                        epoch,
                        task,
                        reason: format!("cannot upload its share of checkpoint {}: {err}", epoch.0),
                    }
                }
            },
            other => other,
        };
        if out.send(e).is_err() {
            return;
        }
    }
}

/// Removes the staged `files` of checkpoint `epoch`, uploaded now, and the directories of
/// earlier checkpoints left empty (the current one stays: other tasks may still write into
/// it; a restored checkpoint's files stay until the part ends).
fn let_go(dir: &CheckpointDir, epoch: Epoch, files: &[FileEntry]) {
    for f in files {
        let _ = std::fs::remove_file(dir.file(epoch, &f.name));
    }
    let Ok(entries) = std::fs::read_dir(dir.root()) else {
        return;
    };
    for entry in entries.flatten() {
        let earlier = entry
            .file_name()
            .to_str()
            .and_then(CheckpointDir::parse_epoch_dir)
            .is_some_and(|e| e < epoch);
        if earlier {
            // Fails, and is meant to, when the directory is not empty.
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_s_checkpoints_sit_under_the_cluster_s_prefix() {
        let s3 = ClusterStore::Objects {
            bucket: "b".into(),
            prefix: "team/ck".into(),
            cache: "/st/checkpoint-cache".into(),
        };
        assert_eq!(s3.location("q2"), "s3://b/team/ck/q2");
        assert_eq!(s3.for_executors("q2").as_deref(), Some("s3://b/team/ck/q2"));
        assert_eq!(s3.dir("q2"), PathBuf::from("/st/checkpoint-cache/q2"));
        let root = ClusterStore::Objects {
            bucket: "b".into(),
            prefix: String::new(),
            cache: "/c".into(),
        };
        assert_eq!(root.location("q2"), "s3://b/q2");
        let shared = ClusterStore::Shared("/shared/ck".into());
        assert_eq!(shared.location("q2"), "/shared/ck/q2");
        assert_eq!(shared.for_executors("q2"), None);
        assert_eq!(shared.dir("q2"), PathBuf::from("/shared/ck/q2"));
    }

    #[test]
    fn uploaded_files_and_the_empty_directories_of_earlier_checkpoints_are_let_go() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = CheckpointDir::staging(tmp.path());
        for epoch in [1, 2, 3] {
            dir.prepare_epoch(Epoch(epoch));
        }
        std::fs::write(dir.file(Epoch(1), "restored.full"), b"r").expect("writes");
        std::fs::write(dir.file(Epoch(3), "a.full"), b"a").expect("writes");
        std::fs::write(dir.file(Epoch(3), "b.full"), b"b").expect("writes");
        let a = FileEntry {
            name: "a.full".into(),
            size: 1,
            crc32: 0,
        };
        let_go(&dir, Epoch(3), &[a]);
        assert!(!dir.file(Epoch(3), "a.full").exists());
        assert!(dir.file(Epoch(3), "b.full").exists(), "another task's");
        assert!(!dir.epoch_dir(Epoch(2)).exists(), "empty and earlier");
        assert!(dir.file(Epoch(1), "restored.full").exists());
    }
}
