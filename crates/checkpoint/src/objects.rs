//! The object-store side of a checkpoint store: the few requests a [`crate::Store`] makes
//! (list the checkpoints, read a manifest, fetch a file checking its size and CRC32, create an
//! object only if absent, delete a checkpoint), made synchronous.
//!
//! `object_store` is async and this crate is not: the requests run on a small runtime of the
//! store's own (one worker thread), and a caller waits for each on a channel, so that any
//! thread may call, including a tokio worker of another runtime (which waits inside
//! `block_in_place`).

use std::future::Future;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use anduin_types::Epoch;
use futures_util::{StreamExt, TryStreamExt};
use object_store::path::Path as Key;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};

use crate::error::CheckpointError;
use crate::files::PendingFile;
use crate::layout::{CheckpointDir, ObjectLayout};
use crate::location::S3Settings;

/// How many files of a checkpoint are uploaded at once.
const UPLOADS_AT_ONCE: usize = 8;

/// A checkpoint store's bucket and prefix, and the runtime its requests run on.
pub(crate) struct Objects {
    store: Arc<dyn ObjectStore>,
    layout: ObjectLayout,
    /// `s3://bucket/prefix`, for messages.
    url: String,
    /// Taken when dropped (shut down in the background: dropping may happen on a thread that
    /// must not block).
    runtime: Option<tokio::runtime::Runtime>,
    /// The first checkpoint found committed by another run: from then on this store neither
    /// writes nor deletes anything in the object store.
    fenced: Mutex<Option<(u64, String)>>,
}

impl std::fmt::Debug for Objects {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Objects").field("url", &self.url).finish()
    }
}

impl Drop for Objects {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

/// Whether a file fetched from the store is kept in the local cache or only checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fetch {
    /// Checked and written to the cache (to restore from it).
    IntoCache,
    /// Checked only (to list).
    Verify,
}

impl Objects {
    /// An S3-compatible store's `bucket`, checkpoints under `prefix`, reached with
    /// `settings`. Makes no request.
    pub(crate) fn s3(
        bucket: &str,
        prefix: &str,
        settings: &S3Settings,
        url: String,
    ) -> Result<Self, CheckpointError> {
        let refuse = |cause: String| CheckpointError::Remote {
            url: url.clone(),
            operation: "connect".into(),
            cause,
        };
        if let Some(missing) = settings.missing_credentials() {
            return Err(refuse(missing));
        }
        let mut b = object_store::aws::AmazonS3Builder::new()
            .with_bucket_name(bucket)
            .with_region(&settings.region)
            .with_allow_http(settings.allow_http)
            .with_retry(object_store::RetryConfig {
                backoff: object_store::BackoffConfig::default(),
                max_retries: 3,
                retry_timeout: Duration::from_secs(30),
            })
            .with_client_options(
                object_store::ClientOptions::new()
                    .with_connect_timeout(Duration::from_secs(5))
                    .with_timeout(Duration::from_secs(120))
                    .with_allow_http(settings.allow_http),
            );
        if let (Some(id), Some(secret)) = (&settings.access_key_id, &settings.secret_access_key) {
            b = b.with_access_key_id(id).with_secret_access_key(secret);
        }
        if let Some(token) = &settings.session_token {
            b = b.with_token(token);
        }
        if let Some(endpoint) = &settings.endpoint {
            b = b.with_endpoint(endpoint);
        }
        let store = b.build().map_err(|e| refuse(e.to_string()))?;
        Self::new(Arc::new(store), prefix, url)
    }

    /// Checkpoints under `prefix` of `store` (any object store: tests use an in-memory one).
    pub(crate) fn new(
        store: Arc<dyn ObjectStore>,
        prefix: &str,
        url: String,
    ) -> Result<Self, CheckpointError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("anduin-object-store")
            .enable_all()
            .build()
            .map_err(|e| CheckpointError::Remote {
                url: url.clone(),
                operation: "start its I/O thread".into(),
                cause: e.to_string(),
            })?;
        Ok(Self {
            store,
            layout: ObjectLayout::new(prefix),
            url,
            runtime: Some(runtime),
            fenced: Mutex::new(None),
        })
    }

    /// The connection, for a request of a caller's own.
    pub(crate) fn store(&self) -> Arc<dyn ObjectStore> {
        Arc::clone(&self.store)
    }

    /// The prefix.
    pub(crate) fn root(&self) -> &Key {
        self.layout.root()
    }

    /// `s3://bucket/prefix`.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// The key of `key` as messages show it: `s3://bucket/prefix/chk-…/file`.
    pub(crate) fn show(&self, key: &Key) -> String {
        let prefix = self.layout.root().as_ref();
        let rel = key
            .as_ref()
            .strip_prefix(prefix)
            .unwrap_or(key.as_ref())
            .trim_start_matches('/');
        format!("{}/{rel}", self.url)
    }

    /// The error of `operation` failing with `cause`.
    pub(crate) fn failed(
        &self,
        operation: impl Into<String>,
        cause: impl ToString,
    ) -> CheckpointError {
        CheckpointError::Remote {
            url: self.url.clone(),
            operation: operation.into(),
            cause: cause.to_string(),
        }
    }

    /// Runs `fut` on the store's runtime and waits for it (see the module's docs).
    pub(crate) fn block<T: Send + 'static>(
        &self,
        fut: impl Future<Output = T> + Send + 'static,
    ) -> Result<T, CheckpointError> {
        let Some(runtime) = &self.runtime else {
            return Err(self.failed("reach it", "its I/O thread has stopped"));
        };
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        runtime.spawn(async move {
            // The caller waits for this unless it panicked: nobody to tell otherwise.
            let _ = tx.send(fut.await);
        });
        let wait = move || rx.recv();
        let got = match tokio::runtime::Handle::try_current() {
            Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(wait)
            }
            _ => wait(),
        };
        got.map_err(|_| self.failed("reach it", "its I/O thread stopped mid-request"))
    }

    /// Refuses to write once another run's checkpoint was found here.
    pub(crate) fn check_fence(&self) -> Result<(), CheckpointError> {
        let fenced = self
            .fenced
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match &*fenced {
            None => Ok(()),
            Some((epoch, what)) => Err(CheckpointError::AlreadyCommitted {
                epoch: *epoch,
                url: self.url.clone(),
                what: what.clone(),
            }),
        }
    }

    /// Whether this store stopped writing (another run writes here).
    pub(crate) fn is_fenced(&self) -> bool {
        self.check_fence().is_err()
    }

    /// Checks that the store answers, the bucket exists and the credentials are accepted: a
    /// listing, and with `write` an object written and removed.
    pub(crate) fn preflight(&self, write: bool) -> Result<(), CheckpointError> {
        let store = Arc::clone(&self.store);
        let root = self.layout.root().clone();
        let hint = "check the bucket, the credentials (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY), \
                    the region (AWS_REGION) and, for another store than AWS's, AWS_ENDPOINT_URL";
        self.block(async move { store.list_with_delimiter(Some(&root)).await })?
            .map_err(|e| self.failed("list its checkpoints", format!("{e}; {hint}")))?;
        if write {
            let tag = format!(
                "{}-{}",
                std::process::id(),
                SystemTime::now()
                    .duration_since(SystemTime::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos())
            );
            let probe = self.layout.probe(&tag);
            let store = Arc::clone(&self.store);
            let shown = self.show(&probe);
            self.block(async move {
                store
                    .put(&probe, PutPayload::from_static(b"anduin preflight\n"))
                    .await?;
                store.delete(&probe).await
            })?
            .map_err(|e| {
                self.failed(format!("write and remove {shown}"), format!("{e}; {hint}"))
            })?;
        }
        Ok(())
    }

    /// The epochs of the checkpoints in the store (complete or not), unsorted.
    pub(crate) fn epochs(&self) -> Result<Vec<Epoch>, CheckpointError> {
        let store = Arc::clone(&self.store);
        let root = self.layout.root().clone();
        let listed = self
            .block(async move { store.list_with_delimiter(Some(&root)).await })?
            .map_err(|e| self.failed("list its checkpoints", e))?;
        Ok(listed
            .common_prefixes
            .iter()
            .filter_map(|p| p.filename().and_then(CheckpointDir::parse_epoch_dir))
            .collect())
    }

    /// The bytes of checkpoint `epoch`'s manifest; `None` if there is none.
    pub(crate) fn manifest(&self, epoch: Epoch) -> Result<Option<Vec<u8>>, CheckpointError> {
        let key = self.layout.manifest(epoch);
        let shown = self.show(&key);
        let store = Arc::clone(&self.store);
        let got = self.block(async move {
            match store.get(&key).await {
                Ok(r) => r.bytes().await.map(Some),
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(e) => Err(e),
            }
        })?;
        got.map(|b| b.map(|b| b.to_vec()))
            .map_err(|e| self.failed(format!("read {shown}"), e))
    }

    /// The bytes of the lineage object, and its key as messages show it; `None` if there is
    /// none.
    pub(crate) fn lineage(&self) -> Result<Option<(Vec<u8>, String)>, CheckpointError> {
        let key = self.layout.lineage();
        self.get_small(key)
    }

    /// Writes the lineage object, `text` (over the one there, if any).
    pub(crate) fn put_lineage(&self, text: &str) -> Result<(), CheckpointError> {
        self.check_fence()?;
        let key = self.layout.lineage();
        self.put_small(key, text)
    }

    /// The bytes of operator `operator`'s facts object
    /// ([`crate::layout::LINEAGE_FACTS_DIR`]), and its key as messages show it; `None` if there
    /// is none.
    pub(crate) fn lineage_facts(
        &self,
        operator: &str,
    ) -> Result<Option<(Vec<u8>, String)>, CheckpointError> {
        let key = self.layout.lineage_facts(operator);
        self.get_small(key)
    }

    /// Writes operator `operator`'s facts object, `text` (over the one there, if any).
    pub(crate) fn put_lineage_facts(
        &self,
        operator: &str,
        text: &str,
    ) -> Result<(), CheckpointError> {
        self.check_fence()?;
        let key = self.layout.lineage_facts(operator);
        self.put_small(key, text)
    }

    /// The bytes of the small object at `key` (the lineage, an operator's facts), and its key
    /// as messages show it; `None` if there is none.
    fn get_small(&self, key: Key) -> Result<Option<(Vec<u8>, String)>, CheckpointError> {
        let shown = self.show(&key);
        let store = Arc::clone(&self.store);
        let got = self.block(async move {
            match store.get(&key).await {
                Ok(r) => r.bytes().await.map(Some),
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(e) => Err(e),
            }
        })?;
        got.map(|b| b.map(|b| (b.to_vec(), shown.clone())))
            .map_err(|e| self.failed(format!("read {shown}"), e))
    }

    /// Writes `text` to the small object at `key` (over the one there, if any).
    fn put_small(&self, key: Key, text: &str) -> Result<(), CheckpointError> {
        let shown = self.show(&key);
        let store = Arc::clone(&self.store);
        let payload = PutPayload::from(text.as_bytes().to_vec());
        self.block(async move { store.put(&key, payload).await })?
            .map(drop)
            .map_err(|e| self.failed(format!("write {shown}"), e))
    }

    /// Removes the lineage object, if any.
    pub(crate) fn delete_lineage(&self) -> Result<(), CheckpointError> {
        let key = self.layout.lineage();
        let shown = self.show(&key);
        let store = Arc::clone(&self.store);
        match self.block(async move { store.delete(&key).await })? {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.failed(format!("remove {shown}"), e)),
        }
    }

    /// Whether checkpoint `epoch` has a manifest (an error counts as yes: reading it says why).
    pub(crate) fn has_manifest(&self, epoch: Epoch) -> bool {
        let key = self.layout.manifest(epoch);
        let store = Arc::clone(&self.store);
        !matches!(
            self.block(async move { store.head(&key).await }),
            Ok(Err(object_store::Error::NotFound { .. }))
        )
    }

    /// The bytes of every object of checkpoint `epoch`, and when the last was written.
    pub(crate) fn stats(&self, epoch: Epoch) -> Result<(u64, Option<SystemTime>), CheckpointError> {
        let store = Arc::clone(&self.store);
        let dir = self.layout.epoch_dir(epoch);
        let metas = self
            .block(async move { store.list(Some(&dir)).try_collect::<Vec<_>>().await })?
            .map_err(|e| self.failed(format!("list checkpoint {}", epoch.0), e))?;
        let size = metas.iter().map(|m| m.size).sum();
        let modified = metas
            .iter()
            .map(|m| SystemTime::from(m.last_modified))
            .max();
        Ok((size, modified))
    }

    /// Fetches file `name` of checkpoint `epoch`, checking its size and CRC32 as it arrives;
    /// with [`Fetch::IntoCache`] writes it to `cache` (committed only if it checks out).
    pub(crate) fn fetch(
        &self,
        epoch: Epoch,
        name: &str,
        (size, crc32): (u64, u32),
        fetch: Fetch,
        cache: &CheckpointDir,
    ) -> Result<(), CheckpointError> {
        let key = self.layout.file(epoch, name);
        let shown = self.show(&key);
        let bad = |problem: String| CheckpointError::BadFile {
            epoch,
            file: name.to_string(),
            problem,
        };
        let mut pending = match fetch {
            Fetch::Verify => None,
            Fetch::IntoCache => {
                let dir = cache.epoch_dir(epoch);
                std::fs::create_dir_all(&dir).map_err(|e| CheckpointError::io(&dir, e))?;
                Some(PendingFile::create(&cache.file(epoch, name))?)
            }
        };
        let store = Arc::clone(&self.store);
        // The body comes back to this thread chunk by chunk: the cache is written here.
        let (tx, rx) = std::sync::mpsc::sync_channel::<Result<Option<bytes::Bytes>, String>>(4);
        let reader = async move {
            let send = |m| tx.send(m).is_ok();
            match store.get(&key).await {
                Err(object_store::Error::NotFound { .. }) => {
                    send(Ok(None));
                }
                Err(e) => {
                    send(Err(e.to_string()));
                }
                Ok(r) => {
                    let mut body = r.into_stream();
                    while let Some(chunk) = body.next().await {
                        let more = match chunk {
                            Ok(c) => send(Ok(Some(c))),
                            Err(e) => {
                                send(Err(e.to_string()));
                                false
                            }
                        };
                        if !more {
                            return;
                        }
                    }
                }
            }
        };
        let Some(runtime) = &self.runtime else {
            return Err(self.failed("reach it", "its I/O thread has stopped"));
        };
        runtime.spawn(reader);
        let mut hasher = crc32fast::Hasher::new();
        let mut len = 0u64;
        let mut seen_any = false;
        let recv = || match tokio::runtime::Handle::try_current() {
            Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(|| rx.recv())
            }
            _ => rx.recv(),
        };
        while let Ok(msg) = recv() {
            match msg {
                Ok(None) if !seen_any => return Err(bad(format!("missing in {shown}"))),
                Ok(None) => break,
                Ok(Some(c)) => {
                    seen_any = true;
                    hasher.update(&c);
                    len += c.len() as u64;
                    if len > size {
                        break;
                    }
                    if let Some(p) = pending.as_mut() {
                        p.writer()
                            .write_all(&c)
                            .map_err(|e| CheckpointError::io(cache.file(epoch, name), e))?;
                    }
                }
                Err(cause) => return Err(self.failed(format!("read {shown}"), cause)),
            }
        }
        if len != size {
            return Err(bad(format!(
                "{len}{} bytes in {shown}, the manifest says {size} (truncated?)",
                if len > size { "+" } else { "" }
            )));
        }
        let actual = hasher.finalize();
        if actual != crc32 {
            return Err(bad(format!(
                "checksum mismatch in {shown} (crc32 {actual:08x}, the manifest says {crc32:08x})"
            )));
        }
        if let Some(p) = pending {
            p.commit()?;
        }
        Ok(())
    }

    /// Uploads the files of checkpoint `epoch` from `dir` (each must still have the size and
    /// CRC32 of `files`), then its manifest (`manifest`), each created only if absent: a
    /// checkpoint that another run committed is never overwritten, and this store stops
    /// writing ([`Objects::check_fence`]).
    pub(crate) fn commit(
        &self,
        epoch: Epoch,
        files: &[(String, u64, u32)],
        manifest: Vec<u8>,
        dir: &CheckpointDir,
    ) -> Result<(), CheckpointError> {
        self.check_fence()?;
        // Refuse before uploading anything if the checkpoint is there already.
        if self.has_manifest(epoch) {
            return Err(self.fence(epoch, self.show(&self.layout.manifest(epoch))));
        }
        match self.upload_all(epoch, files, dir)? {
            Ok(()) => {}
            Err(UploadError::Put(key, object_store::Error::AlreadyExists { .. })) => {
                return Err(self.fence(epoch, self.show(&key)))
            }
            Err(e) => return Err(self.upload_failed(epoch, dir, e)),
        }
        self.create_manifest(epoch, manifest)
    }

    /// Uploads one writer's files of checkpoint `epoch` from its staging directory `dir`
    /// (each must still have the size and CRC32 of `files`), each created only if absent; the
    /// manifest is left to the store that completes the checkpoint
    /// ([`Objects::commit_uploaded`]). A file that is there already (left by an earlier
    /// attempt at the same epoch, or written by another run) fails this writer's share of the
    /// checkpoint and is not overwritten; the store does not stop writing for it.
    pub(crate) fn upload_share(
        &self,
        epoch: Epoch,
        files: &[(String, u64, u32)],
        dir: &CheckpointDir,
    ) -> Result<(), CheckpointError> {
        self.check_fence()?;
        match self.upload_all(epoch, files, dir)? {
            Ok(()) => Ok(()),
            Err(UploadError::Put(key, object_store::Error::AlreadyExists { .. })) => {
                let file = key.filename().unwrap_or_default().to_string();
                Err(CheckpointError::BadFile {
                    epoch,
                    file,
                    problem: format!(
                        "{} exists already (left by an earlier attempt at this checkpoint, or \
                         written by another run): not overwritten",
                        self.show(&key)
                    ),
                })
            }
            Err(e) => Err(self.upload_failed(epoch, dir, e)),
        }
    }

    /// Completes checkpoint `epoch` whose files its writers uploaded
    /// ([`Objects::upload_share`]): checks that each of `files` is there with its size, then
    /// creates the manifest (`manifest`) only if absent, as [`Objects::commit`] does.
    pub(crate) fn commit_uploaded(
        &self,
        epoch: Epoch,
        files: &[(String, u64, u32)],
        manifest: Vec<u8>,
    ) -> Result<(), CheckpointError> {
        self.check_fence()?;
        if self.has_manifest(epoch) {
            return Err(self.fence(epoch, self.show(&self.layout.manifest(epoch))));
        }
        let heads: Vec<(String, u64, Key)> = files
            .iter()
            .map(|(name, size, _)| (name.clone(), *size, self.layout.file(epoch, name)))
            .collect();
        let store = Arc::clone(&self.store);
        let found = self.block(async move {
            futures_util::stream::iter(heads)
                .map(|(name, size, key)| {
                    let store = Arc::clone(&store);
                    async move {
                        let head = store.head(&key).await;
                        (name, size, key, head)
                    }
                })
                .buffer_unordered(UPLOADS_AT_ONCE)
                .collect::<Vec<_>>()
                .await
        })?;
        for (name, size, key, head) in found {
            let bad = |problem: String| CheckpointError::BadFile {
                epoch,
                file: name.clone(),
                problem,
            };
            match head {
                Ok(meta) if meta.size == size => {}
                Ok(meta) => {
                    return Err(bad(format!(
                        "{} bytes in {}, its writer acknowledged {size}",
                        meta.size,
                        self.show(&key)
                    )))
                }
                Err(object_store::Error::NotFound { .. }) => {
                    return Err(bad(format!(
                        "missing in {}: its writer did not upload it",
                        self.show(&key)
                    )))
                }
                Err(e) => return Err(self.failed(format!("find {}", self.show(&key)), e)),
            }
        }
        self.create_manifest(epoch, manifest)
    }

    /// Uploads `files` of checkpoint `epoch` from `dir`, at most [`UPLOADS_AT_ONCE`] read
    /// into memory at a time, each read (off the runtime's worker) and checked against its
    /// entry just before its upload, and created only if absent.
    fn upload_all(
        &self,
        epoch: Epoch,
        files: &[(String, u64, u32)],
        dir: &CheckpointDir,
    ) -> Result<Result<(), UploadError>, CheckpointError> {
        let uploads: Vec<Upload> = files
            .iter()
            .map(|(name, size, crc32)| Upload {
                name: name.clone(),
                path: dir.file(epoch, name),
                key: self.layout.file(epoch, name),
                expected: (*size, *crc32),
            })
            .collect();
        let store = Arc::clone(&self.store);
        self.block(async move {
            futures_util::stream::iter(uploads)
                .map(|u| upload(Arc::clone(&store), u))
                .buffer_unordered(UPLOADS_AT_ONCE)
                .try_collect::<Vec<()>>()
                .await
                .map(drop)
        })
    }

    /// The error of an upload of checkpoint `epoch` from `dir` that failed with `e`.
    fn upload_failed(&self, epoch: Epoch, dir: &CheckpointDir, e: UploadError) -> CheckpointError {
        match e {
            UploadError::Read(path, e) => CheckpointError::io(path, e),
            UploadError::Changed(name) => CheckpointError::BadFile {
                epoch,
                file: name,
                problem: format!(
                    "changed in the staging directory {} before its upload",
                    dir.epoch_dir(epoch).display()
                ),
            },
            UploadError::Put(key, e) => self.failed(format!("upload {}", self.show(&key)), e),
        }
    }

    /// Creates checkpoint `epoch`'s manifest only if absent: from now on it is complete.
    fn create_manifest(&self, epoch: Epoch, manifest: Vec<u8>) -> Result<(), CheckpointError> {
        let key = self.layout.manifest(epoch);
        let store = Arc::clone(&self.store);
        let put = {
            let key = key.clone();
            self.block(async move {
                store
                    .put_opts(&key, PutPayload::from(manifest), create())
                    .await
            })?
        };
        match put {
            Ok(_) => Ok(()),
            Err(object_store::Error::AlreadyExists { .. }) => {
                Err(self.fence(epoch, self.show(&key)))
            }
            Err(e) => Err(self.failed(format!("write {}", self.show(&key)), e)),
        }
    }

    /// Records that checkpoint `epoch` was committed by another run (`what` exists), and
    /// returns the error that says so.
    fn fence(&self, epoch: Epoch, what: String) -> CheckpointError {
        let mut fenced = self
            .fenced
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        fenced.get_or_insert_with(|| (epoch.0, what.clone()));
        tracing::error!(url = %self.url, epoch = epoch.0, %what, "another run writes to this checkpoint store: no more checkpoints are taken there");
        CheckpointError::AlreadyCommitted {
            epoch: epoch.0,
            url: self.url.clone(),
            what,
        }
    }

    /// Deletes checkpoint `epoch`: its manifest first (a half-deleted checkpoint is
    /// incomplete, never corrupt), then its other objects. Nothing once fenced.
    pub(crate) fn delete(&self, epoch: Epoch) -> Result<(), CheckpointError> {
        if self.is_fenced() {
            tracing::warn!(url = %self.url, epoch = epoch.0, "not deleting a checkpoint of a store another run writes to");
            return Ok(());
        }
        let store = Arc::clone(&self.store);
        let manifest = self.layout.manifest(epoch);
        let dir = self.layout.epoch_dir(epoch);
        self.block(async move {
            match store.delete(&manifest).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(e),
            }
            let keys: Vec<Key> = store
                .list(Some(&dir))
                .map_ok(|m| m.location)
                .try_collect()
                .await?;
            for key in keys {
                match store.delete(&key).await {
                    Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                    Err(e) => return Err(e),
                }
            }
            Ok(())
        })?
        .map_err(|e| self.failed(format!("delete checkpoint {}", epoch.0), e))
    }
}

/// One file of a checkpoint to upload.
struct Upload {
    /// Its name in the checkpoint.
    name: String,
    /// Where it is staged.
    path: std::path::PathBuf,
    /// Where it goes.
    key: Key,
    /// Its size and CRC32, as its manifest entry says.
    expected: (u64, u32),
}

/// Why an upload failed.
enum UploadError {
    /// The staged file could not be read.
    Read(std::path::PathBuf, std::io::Error),
    /// The staged file is no longer what the manifest says (its name).
    Changed(String),
    /// The store refused it.
    Put(Key, object_store::Error),
}

/// Reads `u`'s staged file, checks it, and creates its object (only if absent).
async fn upload(store: Arc<dyn ObjectStore>, u: Upload) -> Result<(), UploadError> {
    let path = u.path.clone();
    let bytes = tokio::task::spawn_blocking(move || std::fs::read(&path))
        .await
        .map_err(|e| UploadError::Read(u.path.clone(), std::io::Error::other(e)))?
        .map_err(|e| UploadError::Read(u.path.clone(), e))?;
    if (bytes.len() as u64, crc32fast::hash(&bytes)) != u.expected {
        return Err(UploadError::Changed(u.name));
    }
    store
        .put_opts(&u.key, PutPayload::from(bytes), create())
        .await
        .map(drop)
        .map_err(|e| UploadError::Put(u.key, e))
}

/// Options of a put that creates an object only if it is absent.
pub(crate) fn create() -> PutOptions {
    PutOptions {
        mode: PutMode::Create,
        ..PutOptions::default()
    }
}

/// Whether `path` is a file of the cache whose size and CRC32 are `expected` (read in
/// blocks, not at once).
pub(crate) fn cached(path: &Path, expected: (u64, u32)) -> bool {
    let Ok(mut file) = std::fs::File::open(path) else {
        return false;
    };
    let mut hasher = crc32fast::Hasher::new();
    let mut len = 0u64;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match std::io::Read::read(&mut file, &mut buf) {
            Ok(0) => break,
            Ok(n) => {
                hasher.update(buf.get(..n).unwrap_or_default());
                len += n as u64;
            }
            Err(_) => return false,
        }
    }
    (len, hasher.finalize()) == expected
}
