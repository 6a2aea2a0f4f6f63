//! The checkpoint directory as a store: begin a checkpoint, write its manifest, list, validate,
//! delete. The I/O shell around [`crate::decide`].
//!
//! A store is a local directory, or an object store with a local directory that stages and
//! caches its files (as Flink does with RocksDB's): a checkpoint's files are written to the
//! directory, uploaded once every task has written its own, and the manifest is created in
//! the object store last, only if absent. A restore fetches the chosen checkpoint's files into
//! the directory, checking each file's size and CRC32 as it arrives, and restores from there.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use anduin_types::Epoch;

use crate::decide::{choose_restore, to_delete, CheckpointFacts, RestoreDecision};
use crate::error::CheckpointError;
use crate::files::write_file_atomically;
use crate::layout::{CheckpointDir, LINEAGE_NAME, MANIFEST_NAME};
use crate::lineage::{valid_lineage, KeptLineage, LineageDecision, LineageStart, TakenLineage};
use crate::location::{S3Settings, StoreLocation};
use crate::manifest::{Manifest, MANIFEST_FORMAT, READ_FORMATS};
use crate::objects::{cached, Fetch, Objects};
use crate::recovery::{plan_recovery, RecoveryFacts, RecoveryPlan};

/// The start of a manifest's last line, which holds the CRC32 of the lines before it.
const CRC_PREFIX: &str = "crc32 ";

/// Asked just before each act that changes what the store holds committed — `"checkpoint
/// begin"` (which clears the checkpoint's directory), `"checkpoint deletion"`, `"checkpoint
/// commit"` (the manifest's write): `Err(why)` if the writer may no longer act on the store
/// (a coordinator that a later leader superseded, which would clear a checkpoint the later
/// one committed).
pub type CommitGuard = Arc<dyn Fn(&str) -> Result<(), String> + Send + Sync>;

/// The checkpoints of one query, in one directory or in an object store.
#[derive(Clone)]
pub struct Store {
    /// The store itself, or the staging and cache directory of `remote`.
    dir: CheckpointDir,
    /// `None`: the directory is the store. Otherwise the object store, which holds the
    /// checkpoints (the directory stages and caches them).
    remote: Option<Arc<Objects>>,
    /// Who uploads a checkpoint's files to the object store.
    uploads: Uploads,
    /// Asked before each checkpoint is begun, deleted or committed.
    guard: Option<CommitGuard>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("dir", &self.dir)
            .field("remote", &self.remote)
            .field("uploads", &self.uploads)
            .field("guard", &self.guard.is_some())
            .finish()
    }
}

/// Who uploads the files of a checkpoint to an object store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Uploads {
    /// The store that completes the checkpoint, from its own directory, where every task
    /// wrote its files (`anduin run`).
    AtCompletion,
    /// Each writer, from a staging directory of its own, before it acknowledges its share
    /// ([`Store::upload_share`]: a cluster's executors); the store that completes the
    /// checkpoint finds the files there and writes the manifest.
    ByWriters,
}

/// A checkpoint's state as `anduin checkpoints list` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckpointStatus {
    /// The manifest is there and every file checks out.
    Complete,
    /// No manifest: in progress, abandoned, or failed.
    Incomplete,
    /// A manifest, but something is wrong: why.
    Corrupt(String),
}

/// One line of a listing.
#[derive(Debug, Clone)]
pub struct CheckpointListing {
    /// The epoch.
    pub epoch: Epoch,
    /// Complete, incomplete or corrupt.
    pub status: CheckpointStatus,
    /// Bytes of all its files.
    pub size: u64,
    /// When its directory was last modified.
    pub modified: Option<SystemTime>,
    /// Whether the query had finished at this checkpoint.
    pub finished: bool,
}

/// A checkpoint that passed validation, with its manifest.
#[derive(Debug, Clone)]
pub struct Validated {
    /// The manifest.
    pub manifest: Manifest,
}

impl Store {
    /// The store under `root`, created if missing.
    pub fn open(root: impl Into<PathBuf>) -> Result<Self, CheckpointError> {
        let dir = CheckpointDir::new(root);
        std::fs::create_dir_all(dir.root()).map_err(|e| CheckpointError::io(dir.root(), e))?;
        Ok(Self {
            dir,
            remote: None,
            uploads: Uploads::AtCompletion,
            guard: None,
        })
    }

    /// The store at `location`: a local directory, or an object store reached with the
    /// settings in the environment ([`S3Settings::from_env`]), staged and cached in `cache`
    /// (created if missing). Makes no request: see [`Store::preflight`].
    pub fn open_location(location: &StoreLocation, cache: &Path) -> Result<Self, CheckpointError> {
        match location {
            StoreLocation::Local(dir) => Self::open(dir),
            StoreLocation::S3 { bucket, prefix } => {
                Self::open_s3(bucket, prefix, &S3Settings::from_env(), cache)
            }
        }
    }

    /// The checkpoints under `prefix` in the S3-compatible `bucket`, reached with `settings`,
    /// staged and cached in `cache`. Makes no request: see [`Store::preflight`].
    pub fn open_s3(
        bucket: &str,
        prefix: &str,
        settings: &S3Settings,
        cache: &Path,
    ) -> Result<Self, CheckpointError> {
        let url = StoreLocation::S3 {
            bucket: bucket.to_string(),
            prefix: prefix.to_string(),
        }
        .to_string();
        let objects = Objects::s3(bucket, prefix, settings, url)?;
        Self::with_objects(objects, cache)
    }

    /// The checkpoints under `prefix` in any object store (`url` names it in messages),
    /// staged and cached in `cache`.
    pub fn open_object_store(
        store: Arc<dyn object_store::ObjectStore>,
        prefix: &str,
        url: &str,
        cache: &Path,
    ) -> Result<Self, CheckpointError> {
        Self::with_objects(Objects::new(store, prefix, url.to_string())?, cache)
    }

    fn with_objects(objects: Objects, cache: &Path) -> Result<Self, CheckpointError> {
        let mut store = Self::open(cache)?;
        store.dir = CheckpointDir::staging(cache);
        store.remote = Some(Arc::new(objects));
        Ok(store)
    }

    /// This store, completing checkpoints whose files their writers uploaded themselves, each
    /// from a staging directory of its own ([`Store::upload_share`]), as a cluster's executors
    /// do: [`Store::complete`] checks that every file of the manifest is in the object store
    /// with its size, and writes the manifest (last, only if absent), and
    /// [`Store::validate`] checks the files there without keeping them. A local directory
    /// is the same store either way (its writers write into it).
    pub fn files_uploaded_by_writers(mut self) -> Self {
        self.uploads = Uploads::ByWriters;
        self
    }

    /// This store, asking `guard` just before it begins, deletes or commits a checkpoint: a
    /// checkpoint `guard` refuses is not completed ([`CheckpointError::NotCommitted`]), and
    /// one it refuses to begin or delete is left as it is ([`CheckpointError::Fenced`]). A
    /// cluster's coordinator asks whether a later leader superseded it.
    pub fn with_commit_guard(mut self, guard: CommitGuard) -> Self {
        self.guard = Some(guard);
        self
    }

    /// Asks the guard, if any, whether `act` on checkpoint `epoch` may be done.
    fn guarded(&self, act: &str, epoch: u64) -> Result<(), CheckpointError> {
        match &self.guard {
            Some(guard) => guard(act).map_err(|why| CheckpointError::Fenced {
                act: act.to_string(),
                epoch,
                why,
            }),
            None => Ok(()),
        }
    }

    /// Uploads one writer's files of checkpoint `epoch` (`files`, as it acknowledges them)
    /// from this store's directory, where it wrote them, each checked against its entry and
    /// created only if absent; the store that completes the checkpoint writes the manifest
    /// ([`Store::files_uploaded_by_writers`]). A file that is there already fails this share
    /// of the checkpoint, naming it, and is not overwritten. Nothing to do in a local
    /// directory, which is the store.
    pub fn upload_share(
        &self,
        epoch: Epoch,
        files: &[crate::FileEntry],
    ) -> Result<(), CheckpointError> {
        let Some(r) = self.remote.as_ref().filter(|_| !files.is_empty()) else {
            return Ok(());
        };
        let files: Vec<(String, u64, u32)> = files
            .iter()
            .map(|f| (f.name.clone(), f.size, f.crc32))
            .collect();
        r.upload_share(epoch, &files, &self.dir)
    }

    /// Checks that the store can be used before anything runs: a directory was made by
    /// [`Store::open`]; an object store is listed and, with `write`, an object is written
    /// to it and removed. The error names the store and what failed.
    pub fn preflight(&self, write: bool) -> Result<(), CheckpointError> {
        match &self.remote {
            None => Ok(()),
            Some(r) => r.preflight(write),
        }
    }

    /// Where the checkpoints are, for messages: the directory, or `s3://bucket/prefix`.
    pub fn location(&self) -> String {
        match &self.remote {
            None => self.dir.root().display().to_string(),
            Some(r) => r.url().to_string(),
        }
    }

    /// Whether the checkpoints live in an object store ([`Store::dir`] stages and caches them).
    pub fn is_remote(&self) -> bool {
        self.remote.is_some()
    }

    /// The layout of the directory: the store, or the staging and cache directory of an
    /// object store.
    pub fn dir(&self) -> &CheckpointDir {
        &self.dir
    }

    /// Epochs of every checkpoint (complete or not), ascending: the directories, and with an
    /// object store the checkpoints there too.
    pub fn epochs(&self) -> Result<Vec<Epoch>, CheckpointError> {
        let mut out = self.local_epochs()?;
        if let Some(r) = &self.remote {
            out.extend(r.epochs()?);
            out.sort_unstable();
            out.dedup();
        }
        Ok(out)
    }

    /// Epochs of every checkpoint directory, ascending.
    fn local_epochs(&self) -> Result<Vec<Epoch>, CheckpointError> {
        let root = self.dir.root();
        let mut out = Vec::new();
        let entries = std::fs::read_dir(root).map_err(|e| CheckpointError::io(root, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| CheckpointError::io(root, e))?;
            if let Some(epoch) = entry
                .file_name()
                .to_str()
                .and_then(CheckpointDir::parse_epoch_dir)
            {
                out.push(epoch);
            }
        }
        out.sort_unstable();
        Ok(out)
    }

    /// Creates the directory of checkpoint `epoch`, empty (leftovers of an earlier attempt at
    /// the same epoch are removed).
    pub fn begin(&self, epoch: Epoch) -> Result<PathBuf, CheckpointError> {
        self.guarded("checkpoint begin", epoch.0)?;
        if let Some(r) = &self.remote {
            r.check_fence()?;
        }
        let d = self.dir.epoch_dir(epoch);
        if d.exists() {
            std::fs::remove_dir_all(&d).map_err(|e| CheckpointError::io(&d, e))?;
        }
        std::fs::create_dir_all(&d).map_err(|e| CheckpointError::io(&d, e))?;
        Ok(d)
    }

    /// Writes the manifest: from now on the checkpoint is complete. With an object store,
    /// uploads every file of the checkpoint first (each checked against its entry; or, when
    /// its writers uploaded them, [`Store::files_uploaded_by_writers`], checks that each is
    /// there), then creates the manifest there only if absent (another run's checkpoint of
    /// the same epoch is refused, never overwritten: [`CheckpointError::AlreadyCommitted`]),
    /// then keeps a copy of it in the cache.
    pub fn complete(&self, manifest: &Manifest) -> Result<(), CheckpointError> {
        let mut bytes =
            serde_json::to_vec_pretty(manifest).map_err(|e| CheckpointError::BadManifest {
                epoch: manifest.epoch,
                path: self.dir.manifest(Epoch(manifest.epoch)),
                message: e.to_string(),
            })?;
        // The manifest checks itself: its last line is the CRC32 of everything before it.
        let crc = crc32fast::hash(&bytes);
        bytes.extend_from_slice(format!("\n{CRC_PREFIX}{crc:08x}\n").as_bytes());
        if let Some(guard) = &self.guard {
            guard("checkpoint commit").map_err(|why| CheckpointError::NotCommitted {
                epoch: manifest.epoch,
                why,
            })?;
        }
        let local = self.dir.manifest(Epoch(manifest.epoch));
        let Some(r) = &self.remote else {
            return write_file_atomically(&local, &bytes).map(|_| ());
        };
        let files: Vec<(String, u64, u32)> = manifest
            .files
            .iter()
            .map(|f| (f.name.clone(), f.size, f.crc32))
            .collect();
        match self.uploads {
            Uploads::AtCompletion => {
                r.commit(Epoch(manifest.epoch), &files, bytes.clone(), &self.dir)?
            }
            Uploads::ByWriters => {
                r.commit_uploaded(Epoch(manifest.epoch), &files, bytes.clone())?
            }
        }
        // The cache's copy serves whoever lists the directory during the run; the object
        // store's is the one that counts.
        if let Err(e) = write_file_atomically(&local, &bytes) {
            tracing::warn!(epoch = manifest.epoch, error = %e, "cannot keep a copy of the manifest in the checkpoint cache");
        }
        Ok(())
    }

    /// Reads checkpoint `epoch`'s manifest; `None` if there is none (incomplete).
    pub fn manifest(&self, epoch: Epoch) -> Result<Option<Manifest>, CheckpointError> {
        let (path, bytes) = match &self.remote {
            None => {
                let path = self.dir.manifest(epoch);
                match std::fs::read(&path) {
                    Ok(b) => (path, b),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                    Err(e) => return Err(CheckpointError::io(&path, e)),
                }
            }
            Some(r) => match r.manifest(epoch)? {
                None => return Ok(None),
                Some(b) => (
                    PathBuf::from(format!(
                        "{}/{}/{MANIFEST_NAME}",
                        r.url(),
                        CheckpointDir::new("").epoch_dir(epoch).display()
                    )),
                    b,
                ),
            },
        };
        let bad = |message: String| CheckpointError::BadManifest {
            epoch: epoch.0,
            path: path.clone(),
            message,
        };
        let text = std::str::from_utf8(&bytes).map_err(|_| bad("not UTF-8".into()))?;
        let (json, crc_line) = text
            .trim_end_matches('\n')
            .rsplit_once('\n')
            .ok_or_else(|| bad("truncated: no checksum line".into()))?;
        let expected = crc_line
            .strip_prefix(CRC_PREFIX)
            .and_then(|h| u32::from_str_radix(h, 16).ok())
            .ok_or_else(|| bad("truncated: no checksum line".into()))?;
        let actual = crc32fast::hash(json.as_bytes());
        if actual != expected {
            return Err(bad(format!(
                "checksum mismatch (crc32 {actual:08x}, its last line says {expected:08x})"
            )));
        }
        // The format first: a manifest of another format may not even parse as this one.
        #[derive(serde::Deserialize)]
        struct Format {
            format: u32,
        }
        let format: Format = serde_json::from_str(json).map_err(|e| bad(e.to_string()))?;
        if !READ_FORMATS.contains(&format.format) {
            return Err(CheckpointError::OtherFormat {
                epoch: epoch.0,
                path,
                found: format.format,
                expected: MANIFEST_FORMAT,
            });
        }
        let m: Manifest = serde_json::from_str(json).map_err(|e| bad(e.to_string()))?;
        if m.epoch != epoch.0 {
            return Err(CheckpointError::BadManifest {
                epoch: epoch.0,
                path,
                message: format!("epoch {} (expected epoch {})", m.epoch, epoch.0),
            });
        }
        Ok(Some(m))
    }

    /// Checks every file checkpoint `epoch` needs: its own (size and CRC32 as in its
    /// manifest) and those of the checkpoints its changelog chains start in. With an object
    /// store, fetches those not yet in the cache into it (checked as they arrive), so that
    /// the checkpoint can be restored from the directory — except in a store whose writers
    /// upload the files ([`Store::files_uploaded_by_writers`]), which restores nothing
    /// itself: there each file is checked as it arrives and not kept.
    pub fn validate(&self, epoch: Epoch) -> Result<Validated, CheckpointError> {
        let fetch = match self.uploads {
            Uploads::AtCompletion => Fetch::IntoCache,
            Uploads::ByWriters => Fetch::Verify,
        };
        self.validate_with(epoch, fetch)
    }

    fn validate_with(&self, epoch: Epoch, fetch: Fetch) -> Result<Validated, CheckpointError> {
        let manifest = self
            .manifest(epoch)?
            .ok_or_else(|| CheckpointError::BadFile {
                epoch,
                file: MANIFEST_NAME.into(),
                problem: "missing".into(),
            })?;
        self.check_files(&manifest, fetch)?;
        for dep in manifest.depends_on() {
            let dep_manifest =
                self.manifest(Epoch(dep))?
                    .ok_or_else(|| CheckpointError::BadFile {
                        epoch: Epoch(dep),
                        file: MANIFEST_NAME.into(),
                        problem: format!("missing, but checkpoint {} needs its files", epoch.0),
                    })?;
            let needed: Vec<&str> = manifest
                .operators
                .values()
                .flat_map(|o| o.files.iter())
                .filter(|f| f.epoch == dep)
                .map(|f| f.file.as_str())
                .collect();
            for name in needed {
                let entry = dep_manifest
                    .files
                    .iter()
                    .find(|f| f.name == name)
                    .ok_or_else(|| CheckpointError::BadFile {
                        epoch: Epoch(dep),
                        file: name.to_string(),
                        problem: "not listed in its manifest".into(),
                    })?;
                self.check_file(Epoch(dep), &entry.name, (entry.size, entry.crc32), fetch)?;
            }
        }
        Ok(Validated { manifest })
    }

    fn check_files(&self, m: &Manifest, fetch: Fetch) -> Result<(), CheckpointError> {
        for f in &m.files {
            self.check_file(Epoch(m.epoch), &f.name, (f.size, f.crc32), fetch)?;
        }
        Ok(())
    }

    /// Checks one file against its size and CRC32: in the directory, or in the object store
    /// (a copy already in the cache that checks out is not fetched again to restore).
    fn check_file(
        &self,
        epoch: Epoch,
        name: &str,
        expected: (u64, u32),
        fetch: Fetch,
    ) -> Result<(), CheckpointError> {
        match &self.remote {
            None => self.check_local_file(epoch, name, expected),
            Some(_)
                if fetch == Fetch::IntoCache && cached(&self.dir.file(epoch, name), expected) =>
            {
                Ok(())
            }
            Some(r) => r.fetch(epoch, name, expected, fetch, &self.dir),
        }
    }

    fn check_local_file(
        &self,
        epoch: Epoch,
        name: &str,
        (size, crc32): (u64, u32),
    ) -> Result<(), CheckpointError> {
        let path = self.dir.file(epoch, name);
        let bad = |problem: String| CheckpointError::BadFile {
            epoch,
            file: name.to_string(),
            problem,
        };
        let mut file = match std::fs::File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(bad("missing".into()))
            }
            Err(e) => return Err(CheckpointError::io(&path, e)),
        };
        let mut hasher = crc32fast::Hasher::new();
        let mut len = 0u64;
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = file
                .read(&mut buf)
                .map_err(|e| CheckpointError::io(&path, e))?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
            len += n as u64;
        }
        if len != size {
            return Err(bad(format!(
                "{len} bytes, the manifest says {size} (truncated?)"
            )));
        }
        let actual = hasher.finalize();
        if actual != crc32 {
            return Err(bad(format!(
                "checksum mismatch (crc32 {actual:08x}, the manifest says {crc32:08x})"
            )));
        }
        Ok(())
    }

    /// Every checkpoint, ascending, with its status, size and age. Every file of an object
    /// store's checkpoints is read to check it (and not kept).
    pub fn list(&self) -> Result<Vec<CheckpointListing>, CheckpointError> {
        let mut out = Vec::new();
        for epoch in self.epochs()? {
            let (status, finished) = match self.validate_with(epoch, Fetch::Verify) {
                Ok(v) => (CheckpointStatus::Complete, v.manifest.finished),
                Err(CheckpointError::BadFile { file, problem, .. })
                    if file == MANIFEST_NAME
                        && problem == "missing"
                        && self.manifest_absent(epoch) =>
                {
                    (CheckpointStatus::Incomplete, false)
                }
                Err(e) => (CheckpointStatus::Corrupt(e.to_string()), false),
            };
            let (size, modified) = match &self.remote {
                Some(r) => r.stats(epoch)?,
                None => {
                    let d = self.dir.epoch_dir(epoch);
                    let mut size = 0;
                    if let Ok(entries) = std::fs::read_dir(&d) {
                        for e in entries.flatten() {
                            size += e.metadata().map(|m| m.len()).unwrap_or(0);
                        }
                    }
                    (size, std::fs::metadata(&d).and_then(|m| m.modified()).ok())
                }
            };
            out.push(CheckpointListing {
                epoch,
                status,
                size,
                modified,
                finished,
            });
        }
        Ok(out)
    }

    /// Decides which checkpoint to restore, validating the complete ones from the newest.
    pub fn choose_restore(&self) -> Result<(RestoreDecision, Option<Validated>), CheckpointError> {
        let examined = self.validate_newest(&self.epochs()?);
        if let Some(newer) = examined.newer {
            let problems = vec![newer];
            return Ok((RestoreDecision::NothingUsable { problems }, None));
        }
        Ok((choose_restore(&examined.validated), examined.chosen))
    }

    /// Validates the complete checkpoints among `epochs`, newest first, down to the first
    /// valid one: each outcome, and that one.
    fn validate_newest(&self, epochs: &[Epoch]) -> Examined {
        let mut examined = Examined::default();
        for epoch in epochs.iter().rev().copied() {
            if self.manifest_absent(epoch) {
                continue;
            }
            match self.validate(epoch) {
                Ok(v) => {
                    examined.validated.push((epoch, Ok(())));
                    examined.chosen = Some(v);
                    return examined;
                }
                Err(
                    e @ CheckpointError::OtherFormat {
                        found, expected, ..
                    },
                ) if found > expected => {
                    // A newer anduin's checkpoint: the older ones may be usable, but falling
                    // back would drop what the newer one holds.
                    examined.newer = Some((epoch, e.to_string()));
                    examined.validated.push((epoch, Err(e.to_string())));
                    return examined;
                }
                Err(e) => examined.validated.push((epoch, Err(e.to_string()))),
            }
        }
        examined
    }

    /// The facts of the directory for [`crate::recovery::plan_recovery`], and its plan, with
    /// the checkpoint to restore (validated) if the plan restores or finds the query finished.
    pub fn recovery(
        &self,
        from_scratch: bool,
    ) -> Result<(RecoveryPlan, Option<Validated>), CheckpointError> {
        let epochs = self.epochs()?;
        let examined = if from_scratch {
            Examined::default()
        } else {
            self.validate_newest(&epochs)
        };
        let facts = RecoveryFacts {
            epochs,
            validated: examined.validated,
            finished: examined
                .chosen
                .as_ref()
                .is_some_and(|v| v.manifest.finished),
            newer: examined.newer,
            from_scratch,
        };
        Ok((plan_recovery(&facts), examined.chosen))
    }

    /// Deletes the directories of checkpoints `epochs`.
    pub fn remove(&self, epochs: &[Epoch]) -> Result<(), CheckpointError> {
        epochs.iter().try_for_each(|e| self.delete(*e))
    }

    /// Deletes checkpoint `epoch`'s directory, and with an object store the checkpoint there
    /// (its manifest first; nothing there once another run was found writing to it).
    pub fn delete(&self, epoch: Epoch) -> Result<(), CheckpointError> {
        self.guarded("checkpoint deletion", epoch.0)?;
        if let Some(r) = &self.remote {
            r.delete(epoch)?;
        }
        let d = self.dir.epoch_dir(epoch);
        match std::fs::remove_dir_all(&d) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(CheckpointError::io(&d, e)),
        }
    }

    /// Applies retention: deletes what [`to_delete`] allows, keeping the newest `keep`
    /// complete checkpoints. Returns the deleted epochs.
    pub fn retain(&self, keep: usize) -> Result<Vec<Epoch>, CheckpointError> {
        let mut facts = Vec::new();
        for epoch in self.epochs()? {
            let manifest = self.manifest(epoch).ok().flatten();
            facts.push(CheckpointFacts {
                epoch,
                complete: manifest.is_some(),
                depends_on: manifest
                    .map(|m| m.depends_on().into_iter().map(Epoch).collect())
                    .unwrap_or_default(),
            });
        }
        let doomed = to_delete(&facts, keep);
        for e in &doomed {
            self.delete(*e)?;
        }
        Ok(doomed)
    }

    /// Deletes every checkpoint (to start over), and their lineage: the next run draws
    /// another.
    pub fn clear(&self) -> Result<(), CheckpointError> {
        for e in self.epochs()? {
            self.delete(e)?;
        }
        let path = self.dir.root().join(LINEAGE_NAME);
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(CheckpointError::io(&path, e)),
        }
        if let Some(r) = &self.remote {
            r.delete_lineage()?;
        }
        Ok(())
    }

    /// The lineage of the checkpoints here, for a run of the query of digest `query`
    /// ([`crate::plan::PlanFingerprint::lineage_digest`]) that starts as `start` says: the one
    /// kept beside them, or `draw()`'s when [`crate::lineage::decide`] says so (none kept, a
    /// deliberate start over, or a start, fresh or resumed, of another query than the kept one
    /// was drawn for), kept with `query` (a local file written whole and synced, or an object written)
    /// before it is returned. A run with checkpoints takes it when it starts: a run of the same
    /// query started again here before its first checkpoint completed finds the lineage of the
    /// run it repeats; an edited query, and runs with checkpoints elsewhere, have others.
    /// A lineage is 1 to 64 ASCII letters and digits; a file holding anything else is refused,
    /// naming it.
    pub fn lineage(
        &self,
        start: LineageStart,
        query: &str,
        draw: impl FnOnce() -> String,
    ) -> Result<TakenLineage, CheckpointError> {
        let path = self.dir.root().join(LINEAGE_NAME);
        let kept = if start == LineageStart::StartOver {
            None
        } else {
            let read = match &self.remote {
                None => match std::fs::read(&path) {
                    Ok(b) => Some((b, path.display().to_string())),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                    Err(e) => return Err(CheckpointError::io(&path, e)),
                },
                Some(r) => r.lineage()?,
            };
            match read {
                None => None,
                Some((bytes, at)) => {
                    let text = String::from_utf8_lossy(&bytes).trim().to_string();
                    let Some(k) = KeptLineage::parse(&text) else {
                        return Err(CheckpointError::BadLineage {
                            at,
                            found: text.chars().take(80).collect(),
                        });
                    };
                    Some(k)
                }
            }
        };
        let decision = crate::lineage::decide(kept.as_ref(), start, query);
        if let (LineageDecision::Keep, Some(k)) = (decision, kept) {
            return Ok(TakenLineage {
                lineage: k.lineage,
                decision,
            });
        }
        let drawn = draw();
        if !valid_lineage(&drawn) {
            return Err(CheckpointError::BadLineage {
                at: "the lineage drawn".into(),
                found: drawn,
            });
        }
        let text = KeptLineage {
            lineage: drawn.clone(),
            query: Some(query.to_string()),
        }
        .to_text();
        match &self.remote {
            None => {
                write_file_atomically(&path, text.as_bytes())?;
            }
            Some(r) => r.put_lineage(&text)?,
        }
        Ok(TakenLineage {
            lineage: drawn,
            decision,
        })
    }

    /// Keeps fact `fact` = `value` of operator `operator` for lineage `lineage` beside the
    /// checkpoints, unless one is kept already ([`crate::lineage::decide_fact`]): a fresh
    /// start sees whether what it reads is what the earlier run of its lineage read (a run
    /// killed before its first checkpoint, started again). The operator's file (or object),
    /// under [`crate::LINEAGE_FACTS_DIR`], is written whole and synced; one operator instance
    /// keeps its facts (another writing the same file would overwrite them).
    pub fn keep_lineage_fact(
        &self,
        lineage: &str,
        operator: &str,
        fact: &str,
        value: &str,
    ) -> Result<crate::lineage::FactCheck, CheckpointError> {
        use crate::lineage::{
            decide_fact, valid_fact_name, valid_fact_value, FactCheck, FactDecision, KeptFacts,
        };
        if !valid_fact_name(fact) || !valid_fact_value(value) {
            return Err(CheckpointError::BadLineageFact {
                operator: operator.to_string(),
                fact: fact.to_string(),
                value: value.to_string(),
            });
        }
        let path = self
            .dir
            .root()
            .join(crate::LINEAGE_FACTS_DIR)
            .join(crate::lineage::facts_file_name(operator));
        let read = match &self.remote {
            None => match std::fs::read(&path) {
                Ok(b) => Some((b, path.display().to_string())),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => return Err(CheckpointError::io(&path, e)),
            },
            Some(r) => r.lineage_facts(operator)?,
        };
        let kept = match read {
            None => None,
            Some((bytes, at)) => {
                let text = String::from_utf8_lossy(&bytes).trim().to_string();
                let Some(k) = KeptFacts::parse(&text) else {
                    return Err(CheckpointError::BadLineageFacts {
                        operator: operator.to_string(),
                        at,
                        found: text.chars().take(80).collect(),
                    });
                };
                Some(k)
            }
        };
        match decide_fact(kept.as_ref(), lineage, fact, value) {
            FactDecision::Same => Ok(FactCheck::Same),
            FactDecision::Differs { kept } => Ok(FactCheck::Differs { kept }),
            FactDecision::Keep(facts) => {
                let text = facts.to_text();
                match &self.remote {
                    None => {
                        if let Some(dir) = path.parent() {
                            std::fs::create_dir_all(dir)
                                .map_err(|e| CheckpointError::io(dir, e))?;
                        }
                        write_file_atomically(&path, text.as_bytes())?;
                    }
                    Some(r) => r.put_lineage_facts(operator, &text)?,
                }
                Ok(FactCheck::New)
            }
        }
    }
}

/// A new lineage for [`Store::lineage`]: 16 hex digits from the OS's random source (the
/// clock and the process id when it has none).
pub fn draw_lineage() -> String {
    let mut bytes = [0u8; 8];
    if getrandom::fill(&mut bytes).is_err() {
        let nanos = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let mixed = (nanos as u64) ^ (u64::from(std::process::id()) << 32);
        bytes = mixed.to_le_bytes();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A checkpoint and the outcome of its validation (why it is unusable).
type Validation = (Epoch, Result<(), String>);

/// What [`Store::validate_newest`] found, newest checkpoint first.
#[derive(Default)]
struct Examined {
    validated: Vec<Validation>,
    /// The checkpoint to restore.
    chosen: Option<Validated>,
    /// A checkpoint written by a newer anduin, and why this one cannot read it.
    newer: Option<(Epoch, String)>,
}

impl Store {
    /// Whether checkpoint `epoch` has no manifest (is incomplete).
    fn manifest_absent(&self, epoch: Epoch) -> bool {
        match &self.remote {
            None => !self.dir.manifest(epoch).exists(),
            Some(r) => !r.has_manifest(epoch),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::manifest::{FileEntry, OperatorState, StateFileRef};
    use crate::plan::PlanFingerprint;
    use crate::recovery::RecoveryPlan;

    fn complete(store: &Store, epoch: u64, files: &[(&str, &[u8])], chain: &[(u64, &str)]) {
        store.begin(Epoch(epoch)).expect("begins");
        let mut entries: Vec<FileEntry> = Vec::new();
        for (name, bytes) in files {
            entries.push(
                write_file_atomically(&store.dir().file(Epoch(epoch), name), bytes)
                    .expect("writes"),
            );
        }
        let mut operators = BTreeMap::new();
        operators.insert(
            "op".to_string(),
            OperatorState {
                inline: Some(serde_json::json!({"offset": epoch * 10})),
                files: chain
                    .iter()
                    .map(|(e, f)| StateFileRef {
                        epoch: *e,
                        file: f.to_string(),
                    })
                    .collect(),
            },
        );
        store
            .complete(&Manifest {
                format: MANIFEST_FORMAT,
                epoch,
                created_unix_ms: 0,
                finished: false,
                plan: PlanFingerprint::default(),
                files: entries,
                operators,
                controls: Vec::new(),
            })
            .expect("completes");
    }

    #[test]
    fn a_flipped_byte_a_truncation_or_a_missing_base_makes_restore_fall_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("opens");
        complete(&store, 1, &[("op.full", b"full state")], &[(1, "op.full")]);
        complete(
            &store,
            2,
            &[("op.changes", b"delta")],
            &[(1, "op.full"), (2, "op.changes")],
        );
        complete(&store, 3, &[("op.full", b"full again")], &[(3, "op.full")]);
        store.begin(Epoch(4)).expect("an incomplete one");

        let (d, v) = store.choose_restore().expect("lists");
        assert_eq!(
            d,
            RestoreDecision::Restore {
                epoch: Epoch(3),
                skipped: vec![]
            }
        );
        assert_eq!(
            v.expect("validated").manifest.operators["op"].inline,
            Some(serde_json::json!({"offset": 30}))
        );

        // Flip a byte in checkpoint 3: restore falls back to 2 (which needs 1's file).
        let p = store.dir().file(Epoch(3), "op.full");
        let mut bytes = std::fs::read(&p).expect("reads");
        bytes[0] ^= 1;
        std::fs::write(&p, bytes).expect("writes");
        let (d, _) = store.choose_restore().expect("lists");
        let RestoreDecision::Restore { epoch, skipped } = d else {
            panic!("{d:?}")
        };
        assert_eq!(epoch, Epoch(2));
        assert!(skipped[0].1.contains("checksum mismatch"), "{skipped:?}");

        // Truncate the base that 2 needs: 2 is unusable too, and so is 1.
        std::fs::write(store.dir().file(Epoch(1), "op.full"), b"full").expect("truncates");
        let (d, _) = store.choose_restore().expect("lists");
        let RestoreDecision::NothingUsable { problems } = d else {
            panic!("{d:?}")
        };
        assert_eq!(problems.len(), 3);
        assert!(problems[1].1.contains("truncated"), "{problems:?}");
    }

    #[test]
    fn a_flipped_byte_in_a_manifest_is_detected() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("opens");
        complete(&store, 1, &[("a", b"1")], &[]);
        complete(&store, 2, &[("a", b"2")], &[]);
        let path = store.dir().manifest(Epoch(2));
        let text = std::fs::read_to_string(&path).expect("reads");
        // Change a digit inside the JSON: still valid JSON, but not what was written.
        std::fs::write(&path, text.replacen("\"offset\": 20", "\"offset\": 21", 1))
            .expect("writes");
        let err = store.validate(Epoch(2)).expect_err("detected");
        assert!(err.to_string().contains("checksum mismatch"), "{err}");
        let (d, _) = store.choose_restore().expect("lists");
        let RestoreDecision::Restore { epoch, skipped } = d else {
            panic!("{d:?}")
        };
        assert_eq!((epoch, skipped.len()), (Epoch(1), 1));
    }

    #[test]
    fn a_manifest_its_guard_refuses_is_not_written() {
        let dir = tempfile::tempdir().expect("tempdir");
        let refuse = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let store = Store::open(dir.path()).expect("opens").with_commit_guard({
            let refuse = std::sync::Arc::clone(&refuse);
            std::sync::Arc::new(move |act: &str| {
                if refuse.load(std::sync::atomic::Ordering::Relaxed) {
                    Err(format!(
                        "{act}: a later leader (term 7) took the catalog over"
                    ))
                } else {
                    Ok(())
                }
            })
        });
        complete(&store, 1, &[("a", b"1")], &[]);
        refuse.store(true, std::sync::atomic::Ordering::Relaxed);
        let err = store
            .complete(&manifest_of(2, Vec::new()))
            .expect_err("refused");
        assert!(
            matches!(&err, CheckpointError::NotCommitted { epoch: 2, why } if why.contains("term 7")),
            "{err}"
        );
        assert!(!store.dir().manifest(Epoch(2)).exists());
        assert!(store.dir().manifest(Epoch(1)).exists());
        // Nor is a committed checkpoint cleared by a new begin of its epoch, or deleted: a
        // superseded leader would clear what the later one committed.
        let err = store.begin(Epoch(1)).expect_err("refused");
        assert!(
            matches!(&err, CheckpointError::Fenced { act, epoch: 1, .. } if act == "checkpoint begin"),
            "{err}"
        );
        let err = store.delete(Epoch(1)).expect_err("refused");
        assert!(
            matches!(&err, CheckpointError::Fenced { act, epoch: 1, .. } if act == "checkpoint deletion"),
            "{err}"
        );
        assert!(store.dir().manifest(Epoch(1)).exists());
    }

    #[test]
    fn a_deleted_manifest_makes_a_checkpoint_incomplete() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("opens");
        complete(&store, 1, &[("a", b"1")], &[]);
        complete(&store, 2, &[("a", b"2")], &[]);
        std::fs::remove_file(store.dir().manifest(Epoch(2))).expect("removes");
        let listing = store.list().expect("lists");
        assert_eq!(listing[0].status, CheckpointStatus::Complete);
        assert_eq!(listing[1].status, CheckpointStatus::Incomplete);
        let (d, _) = store.choose_restore().expect("lists");
        assert_eq!(
            d,
            RestoreDecision::Restore {
                epoch: Epoch(1),
                skipped: vec![]
            }
        );
    }

    #[test]
    fn retention_deletes_old_checkpoints_but_not_a_base_still_needed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("opens");
        complete(&store, 1, &[("f", b"1")], &[(1, "f")]);
        complete(&store, 2, &[("c", b"2")], &[(1, "f"), (2, "c")]);
        complete(&store, 3, &[("c", b"3")], &[(1, "f"), (2, "c"), (3, "c")]);
        complete(&store, 4, &[("f", b"4")], &[(4, "f")]);
        assert_eq!(
            store.retain(1).expect("retains"),
            vec![Epoch(1), Epoch(2), Epoch(3)]
        );
        assert_eq!(store.epochs().expect("lists"), vec![Epoch(4)]);
    }

    /// A store in `memory` (an object store) under `prefix`, cached in `cache`.
    fn in_memory(memory: &Arc<object_store::memory::InMemory>, cache: &Path) -> Store {
        let objects: Arc<dyn object_store::ObjectStore> = Arc::clone(memory) as _;
        Store::open_object_store(objects, "q/1", "mem://test/q/1", cache).expect("opens")
    }

    fn put(memory: &object_store::memory::InMemory, key: &str, bytes: &'static [u8]) {
        use object_store::ObjectStoreExt;
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        rt.block_on(memory.put(
            &object_store::path::Path::from(key),
            object_store::PutPayload::from_static(bytes),
        ))
        .expect("puts");
    }

    #[test]
    fn an_object_store_holds_the_checkpoints_and_a_fresh_cache_restores_from_it() {
        let memory = Arc::new(object_store::memory::InMemory::new());
        let (a, b) = (
            tempfile::tempdir().expect("tmp"),
            tempfile::tempdir().expect("tmp"),
        );
        let store = in_memory(&memory, a.path());
        store.preflight(true).expect("usable");
        complete(&store, 1, &[("op.full", b"full")], &[(1, "op.full")]);
        complete(
            &store,
            2,
            &[("op.changes", b"delta")],
            &[(1, "op.full"), (2, "op.changes")],
        );
        store
            .begin(Epoch(3))
            .expect("an incomplete one, staged only");
        assert_eq!(store.location(), "mem://test/q/1");

        // Another machine: nothing in its cache.
        let other = in_memory(&memory, b.path());
        assert_eq!(other.epochs().expect("lists"), vec![Epoch(1), Epoch(2)]);
        let listing = other.list().expect("lists");
        assert_eq!(listing.len(), 2);
        assert!(listing
            .iter()
            .all(|l| l.status == CheckpointStatus::Complete));
        assert!(
            listing[0].size > 4 && listing[0].modified.is_some(),
            "{listing:?}"
        );
        assert!(
            !other.dir().epoch_dir(Epoch(1)).exists(),
            "listing fetches nothing into the cache"
        );
        let (plan, chosen) = other.recovery(false).expect("plans");
        assert!(
            matches!(
                plan,
                RecoveryPlan::Restore {
                    epoch: Epoch(2),
                    ..
                }
            ),
            "{plan:?}"
        );
        assert_eq!(chosen.expect("validated").manifest.epoch, 2);
        // The chain's files are in the cache, to restore from.
        assert_eq!(
            std::fs::read(other.dir().file(Epoch(1), "op.full")).expect("cached"),
            b"full"
        );
        assert_eq!(
            std::fs::read(other.dir().file(Epoch(2), "op.changes")).expect("cached"),
            b"delta"
        );

        // Retention deletes in the object store too.
        complete(&store, 3, &[("op.full", b"full 3")], &[(3, "op.full")]);
        assert_eq!(store.retain(1).expect("retains"), vec![Epoch(1), Epoch(2)]);
        let c = tempfile::tempdir().expect("tmp");
        assert_eq!(
            in_memory(&memory, c.path()).epochs().expect("lists"),
            vec![Epoch(3)]
        );
    }

    #[test]
    fn a_second_writer_of_an_epoch_is_refused_and_overwrites_nothing() {
        let memory = Arc::new(object_store::memory::InMemory::new());
        let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().expect("tmp")).collect();
        let first = in_memory(&memory, dirs[0].path());
        let second = in_memory(&memory, dirs[1].path());
        // Two runs take checkpoint 1 with different state.
        first.begin(Epoch(1)).expect("begins");
        second.begin(Epoch(1)).expect("begins");
        let mine = write_file_atomically(&first.dir().file(Epoch(1), "op.full"), b"first")
            .expect("writes");
        let theirs = write_file_atomically(&second.dir().file(Epoch(1), "op.full"), b"second!")
            .expect("writes");
        let manifest = |entry: FileEntry| Manifest {
            format: MANIFEST_FORMAT,
            epoch: 1,
            created_unix_ms: 0,
            finished: false,
            plan: PlanFingerprint::default(),
            files: vec![entry],
            operators: BTreeMap::from([(
                "op".to_string(),
                OperatorState {
                    inline: None,
                    files: vec![StateFileRef {
                        epoch: 1,
                        file: "op.full".into(),
                    }],
                },
            )]),
            controls: Vec::new(),
        };
        first.complete(&manifest(mine)).expect("the first commits");
        let e = second.complete(&manifest(theirs)).expect_err("refused");
        assert!(
            matches!(e, CheckpointError::AlreadyCommitted { epoch: 1, .. }),
            "{e}"
        );
        assert!(
            e.to_string().contains("mem://test/q/1") && e.to_string().contains("another run"),
            "{e}"
        );
        // The refused run writes and deletes nothing there any more.
        assert!(second.begin(Epoch(2)).is_err());
        second
            .delete(Epoch(1))
            .expect("deletes its own staging only");
        let third = in_memory(&memory, dirs[2].path());
        let v = third
            .validate(Epoch(1))
            .expect("the first run's checkpoint is intact");
        assert_eq!(v.manifest.files[0].size, 5);
        assert_eq!(
            std::fs::read(third.dir().file(Epoch(1), "op.full")).expect("cached"),
            b"first"
        );

        // A checkpoint without files: the manifest itself is created only if absent.
        let empty = |store: &Store| {
            store.begin(Epoch(5)).expect("begins");
            store.complete(&Manifest {
                format: MANIFEST_FORMAT,
                epoch: 5,
                created_unix_ms: 0,
                finished: false,
                plan: PlanFingerprint::default(),
                files: Vec::new(),
                operators: BTreeMap::new(),
                controls: Vec::new(),
            })
        };
        empty(&first).expect("the first commits");
        let again = tempfile::tempdir().expect("tmp");
        let e = empty(&in_memory(&memory, again.path())).expect_err("refused");
        assert!(e.to_string().contains("chk-00000005/MANIFEST.json"), "{e}");
    }

    /// A manifest of checkpoint `epoch` with `files`, each an operator's full snapshot.
    fn manifest_of(epoch: u64, files: Vec<FileEntry>) -> Manifest {
        Manifest {
            format: MANIFEST_FORMAT,
            epoch,
            created_unix_ms: 0,
            finished: false,
            plan: PlanFingerprint::default(),
            operators: files
                .iter()
                .map(|f| {
                    (
                        f.name.clone(),
                        OperatorState {
                            inline: None,
                            files: vec![StateFileRef {
                                epoch,
                                file: f.name.clone(),
                            }],
                        },
                    )
                })
                .collect(),
            files,
            controls: Vec::new(),
        }
    }

    /// Writer `store` writes `name` of checkpoint `epoch` into its staging directory (made
    /// as a task makes it) and uploads its share.
    fn share(store: &Store, epoch: u64, name: &str, bytes: &[u8]) -> FileEntry {
        let dir = store.dir().prepare_epoch(Epoch(epoch));
        let entry = write_file_atomically(&dir.join(name), bytes).expect("writes");
        store
            .upload_share(Epoch(epoch), std::slice::from_ref(&entry))
            .expect("uploads its share");
        entry
    }

    #[test]
    fn writers_upload_their_shares_and_the_completing_store_writes_only_the_manifest() {
        let memory = Arc::new(object_store::memory::InMemory::new());
        let dirs: Vec<_> = (0..4).map(|_| tempfile::tempdir().expect("tmp")).collect();
        // Two executors on two machines, and the coordinator, which has no file of its own.
        let (a, b) = (
            in_memory(&memory, dirs[0].path()),
            in_memory(&memory, dirs[1].path()),
        );
        let coordinator = in_memory(&memory, dirs[2].path()).files_uploaded_by_writers();
        coordinator.begin(Epoch(1)).expect("begins");
        let files = vec![
            share(&a, 1, "001-w-0.full", b"state of a"),
            share(&b, 1, "001-w-1.full", b"state of b"),
        ];
        coordinator
            .complete(&manifest_of(1, files.clone()))
            .expect("completes");
        assert!(
            !coordinator.dir().file(Epoch(1), "001-w-0.full").exists(),
            "the coordinator holds no file"
        );

        // Validated from the coordinator: checked, not kept; from a fresh machine: fetched.
        coordinator.validate(Epoch(1)).expect("valid");
        assert!(!coordinator.dir().file(Epoch(1), "001-w-1.full").exists());
        let other = in_memory(&memory, dirs[3].path());
        let (plan, chosen) = other.recovery(false).expect("plans");
        assert!(
            matches!(
                plan,
                RecoveryPlan::Restore {
                    epoch: Epoch(1),
                    ..
                }
            ),
            "{plan:?}"
        );
        assert_eq!(chosen.expect("validated").manifest.files, files);
        assert_eq!(
            std::fs::read(other.dir().file(Epoch(1), "001-w-1.full")).expect("fetched"),
            b"state of b"
        );

        // A file nobody uploaded: no manifest, and the message names the object.
        coordinator.begin(Epoch(2)).expect("begins");
        let mut files = vec![share(&a, 2, "001-w-0.full", b"a again")];
        files.push(FileEntry {
            name: "001-w-1.full".into(),
            size: 3,
            crc32: 0,
        });
        let e = coordinator
            .complete(&manifest_of(2, files))
            .expect_err("a file is missing");
        assert!(
            e.to_string()
                .contains("missing in mem://test/q/1/chk-00000002/001-w-1.full"),
            "{e}"
        );
        assert!(coordinator.manifest(Epoch(2)).expect("reads").is_none());

        // A share that finds its object there already (an earlier attempt's) is refused and
        // overwrites nothing; the writer goes on with the next checkpoint.
        b.dir().prepare_epoch(Epoch(2));
        let entry = write_file_atomically(&b.dir().file(Epoch(2), "001-w-0.full"), b"other")
            .expect("writes");
        let e = b
            .upload_share(Epoch(2), &[entry])
            .expect_err("exists already");
        assert!(e.to_string().contains("exists already"), "{e}");
        share(&b, 3, "001-w-1.full", b"b at 3");
    }

    #[test]
    fn a_corrupt_object_is_detected_and_the_restore_falls_back() {
        let memory = Arc::new(object_store::memory::InMemory::new());
        let (a, b) = (
            tempfile::tempdir().expect("tmp"),
            tempfile::tempdir().expect("tmp"),
        );
        let store = in_memory(&memory, a.path());
        complete(&store, 1, &[("op.full", b"one")], &[(1, "op.full")]);
        complete(&store, 2, &[("op.full", b"two")], &[(2, "op.full")]);
        put(&memory, "q/1/chk-00000002/op.full", b"tw0");
        let other = in_memory(&memory, b.path());
        let (d, chosen) = other.choose_restore().expect("examines");
        let RestoreDecision::Restore { epoch, skipped } = d else {
            panic!("{d:?}")
        };
        assert_eq!(epoch, Epoch(1));
        assert_eq!(chosen.expect("validated").manifest.epoch, 1);
        assert!(
            skipped[0]
                .1
                .contains("checksum mismatch in mem://test/q/1/chk-00000002/op.full"),
            "{skipped:?}"
        );
        assert!(
            !other.dir().file(Epoch(2), "op.full").exists(),
            "a file that does not check out is not kept"
        );
        let listing = other.list().expect("lists");
        assert!(
            matches!(&listing[1].status, CheckpointStatus::Corrupt(why) if why.contains("checksum"))
        );
        // Truncated, and gone (seen from a third machine: the second's cache holds a good copy).
        put(&memory, "q/1/chk-00000001/op.full", b"on");
        let c = tempfile::tempdir().expect("tmp");
        let other = in_memory(&memory, c.path());
        assert!(other
            .validate(Epoch(1))
            .expect_err("truncated")
            .to_string()
            .contains("truncated"));
        let key = object_store::path::Path::from("q/1/chk-00000001/op.full");
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("rt");
        use object_store::ObjectStoreExt;
        rt.block_on(memory.delete(&key)).expect("deletes");
        let e = other.validate(Epoch(1)).expect_err("missing").to_string();
        assert!(
            e.contains("missing in mem://test/q/1/chk-00000001/op.full"),
            "{e}"
        );
    }

    #[test]
    fn a_lineage_is_kept_found_again_drawn_anew_on_a_start_over_and_cleared() {
        use crate::lineage::{DrawReason, LineageDecision, LineageStart};
        let local = tempfile::tempdir().expect("tempdir");
        let memory = Arc::new(object_store::memory::InMemory::new());
        let cache = tempfile::tempdir().expect("tempdir");
        let (fresh, resume, over) = (
            LineageStart::Fresh,
            LineageStart::Resume,
            LineageStart::StartOver,
        );
        for store in [
            Store::open(local.path()).expect("opens"),
            in_memory(&memory, cache.path()),
        ] {
            let first = store.lineage(fresh, "0c5b", draw_lineage).expect("drawn");
            assert_eq!(first.lineage.len(), 16);
            assert_eq!(first.decision, LineageDecision::Draw(DrawReason::NoneKept));
            let again = store
                .lineage(fresh, "0c5b", || unreachable!("kept"))
                .expect("found");
            assert_eq!(again.lineage, first.lineage, "{}", store.location());
            assert_eq!(again.decision, LineageDecision::Keep);
            let anew = store.lineage(over, "0c5b", || "b2".into()).expect("drawn");
            assert_eq!(anew.lineage, "b2");
            assert_eq!(
                store
                    .lineage(fresh, "0c5b", draw_lineage)
                    .expect("found")
                    .lineage,
                "b2"
            );
            store.clear().expect("clears");
            let c3 = store.lineage(fresh, "0c5b", || "c3".into()).expect("drawn");
            assert_eq!(c3.lineage, "c3");

            // The query edited before its first checkpoint: a new lineage, kept for it.
            let edited = store.lineage(fresh, "9d7e", || "d4".into()).expect("drawn");
            assert_eq!(
                edited,
                TakenLineage {
                    lineage: "d4".into(),
                    decision: LineageDecision::Draw(DrawReason::QueryChanged)
                }
            );
            assert_eq!(
                store
                    .lineage(fresh, "9d7e", || unreachable!("kept"))
                    .expect("found")
                    .lineage,
                "d4"
            );
            // A resumed run keeps the lineage of its own query, and draws another for another.
            let resumed = store
                .lineage(resume, "9d7e", || unreachable!("kept"))
                .expect("found");
            assert_eq!(resumed.lineage, "d4");
            let resumed = store
                .lineage(resume, "0c5b", || "e4".into())
                .expect("drawn");
            assert_eq!(
                resumed.decision,
                LineageDecision::Draw(DrawReason::QueryChanged)
            );
            assert_eq!(resumed.lineage, "e4");
        }
        let path = local.path().join(LINEAGE_NAME);
        assert_eq!(
            std::fs::read_to_string(&path).expect("reads"),
            "e4\nquery 0c5b\n",
            "the lineage and the query it was drawn for"
        );

        // A lineage kept by an older anduin, alone: no start can tell whether it was drawn
        // for its query, and each draws another.
        for store in [
            Store::open(local.path()).expect("opens"),
            in_memory(&memory, cache.path()),
        ] {
            match &store.remote {
                None => std::fs::write(&path, "e5\n").expect("writes"),
                Some(r) => r.put_lineage("e5\n").expect("writes"),
            }
            let resumed = store
                .lineage(resume, "9d7e", || "e6".into())
                .expect("drawn");
            assert_eq!(
                resumed.decision,
                LineageDecision::Draw(DrawReason::QueryUnknown)
            );
            assert_eq!(resumed.lineage, "e6");
            match &store.remote {
                None => std::fs::write(&path, "e5\n").expect("writes"),
                Some(r) => r.put_lineage("e5\n").expect("writes"),
            }
            let started = store.lineage(fresh, "9d7e", || "f6".into()).expect("drawn");
            assert_eq!(
                started.decision,
                LineageDecision::Draw(DrawReason::QueryUnknown)
            );
            assert_eq!(started.lineage, "f6");
        }

        std::fs::write(&path, "not/a lineage\n").expect("writes");
        let e = Store::open(local.path())
            .expect("opens")
            .lineage(fresh, "0c5b", draw_lineage)
            .expect_err("refused")
            .to_string();
        assert!(e.contains("holds `not/a lineage`"), "{e}");
    }

    #[test]
    fn an_operators_fact_is_kept_for_its_lineage_and_compared_by_a_fresh_start() {
        use crate::lineage::FactCheck;
        let local = tempfile::tempdir().expect("tempdir");
        let memory = Arc::new(object_store::memory::InMemory::new());
        let cache = tempfile::tempdir().expect("tempdir");
        for store in [
            Store::open(local.path()).expect("opens"),
            in_memory(&memory, cache.path()),
        ] {
            let keep = |lineage: &str, value: &str| {
                store
                    .keep_lineage_fact(lineage, "in put", "stream.created", value)
                    .expect("kept")
            };
            assert_eq!(keep("3f9c", "t1"), FactCheck::New);
            assert_eq!(keep("3f9c", "t1"), FactCheck::Same);
            assert_eq!(keep("3f9c", "t2"), FactCheck::Differs { kept: "t1".into() });
            assert_eq!(keep("3f9c", "t1"), FactCheck::Same, "the kept one stays");
            assert_eq!(keep("77aa", "t2"), FactCheck::New, "another lineage's");
            assert_eq!(keep("77aa", "t2"), FactCheck::Same);
            let e = store
                .keep_lineage_fact("77aa", "in", "stream.created", "two\nlines")
                .expect_err("refused")
                .to_string();
            assert!(e.contains("a bug in anduin"), "{e}");
        }
        let path = local
            .path()
            .join(crate::LINEAGE_FACTS_DIR)
            .join("=696e20707574");
        assert_eq!(
            std::fs::read_to_string(&path).expect("reads"),
            "lineage 77aa\nstream.created t2\n"
        );
        std::fs::write(&path, "garbage").expect("writes");
        let e = Store::open(local.path())
            .expect("opens")
            .keep_lineage_fact("77aa", "in put", "stream.created", "t2")
            .expect_err("refused")
            .to_string();
        assert!(
            e.contains(r#"operator "in put" kept"#) && e.contains("`garbage`"),
            "{e}"
        );
    }
}
