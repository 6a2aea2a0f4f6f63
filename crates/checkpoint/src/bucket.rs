//! A prefix of an object store for a few small objects kept beside the checkpoints (the
//! coordinator's catalog), reached synchronously: read one, create one only if absent, list
//! them, delete one. Created-only-if-absent is what makes such objects a log that two writers
//! cannot both extend at the same place: the second is told, not overwritten.

use std::sync::Arc;

use futures_util::StreamExt;
use object_store::path::Path as Key;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

use crate::error::CheckpointError;
use crate::location::S3Settings;
use crate::objects::{create, Objects};

/// How many requests of one call are in flight at once.
const AT_ONCE: usize = 16;

/// Objects under one prefix of an object store. Cloning shares the connection.
#[derive(Clone, Debug)]
pub struct Bucket {
    objects: Arc<Objects>,
    /// The prefix, under the connection's.
    root: Key,
    /// `s3://bucket/prefix`, for messages.
    url: String,
}

/// What [`Bucket::create`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Created {
    /// The object is written.
    Written,
    /// An object of that name was there already: nothing was written.
    Exists,
}

impl Bucket {
    /// The objects under `prefix` of S3-compatible bucket `bucket`, reached with `settings`
    /// (`url`, `s3://bucket/prefix`, names them in messages). Makes no request.
    pub fn s3(
        bucket: &str,
        prefix: &str,
        settings: &S3Settings,
        url: String,
    ) -> Result<Self, CheckpointError> {
        Objects::s3(bucket, prefix, settings, url).map(Self::of)
    }

    /// The objects of an in-memory object store (for tests: clones share it), named `url`.
    pub fn in_memory(url: &str) -> Result<Self, CheckpointError> {
        let store: Arc<dyn ObjectStore> = Arc::new(object_store::memory::InMemory::new());
        Objects::new(store, "", url.to_string()).map(Self::of)
    }

    /// The objects under `name/` of this one's prefix, on the same connection.
    pub fn child(&self, name: &str) -> Result<Self, CheckpointError> {
        Ok(Self {
            objects: Arc::clone(&self.objects),
            root: self.root.clone().join(name),
            url: format!("{}/{name}", self.url),
        })
    }

    fn of(objects: Objects) -> Self {
        Self {
            root: objects.root().clone(),
            url: objects.url().to_string(),
            objects: Arc::new(objects),
        }
    }

    /// Where they are: `s3://bucket/prefix`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Object `name` as messages show it: `s3://bucket/prefix/name`.
    pub fn show(&self, name: &str) -> String {
        format!("{}/{name}", self.url())
    }

    fn key(&self, name: &str) -> Key {
        self.root.clone().join(name)
    }

    /// The bytes of object `name`; `None` if there is none.
    pub fn get(&self, name: &str) -> Result<Option<Vec<u8>>, CheckpointError> {
        Ok(self.get_all(&[name.to_string()])?.pop().flatten())
    }

    /// The bytes of each of objects `names`, in their order (`None`: none of that name),
    /// fetched [`AT_ONCE`] at a time.
    pub fn get_all(&self, names: &[String]) -> Result<Vec<Option<Vec<u8>>>, CheckpointError> {
        let store = self.objects.store();
        let keys: Vec<(usize, Key)> = names.iter().map(|n| self.key(n)).enumerate().collect();
        let mut got = self.objects.block(async move {
            futures_util::stream::iter(keys)
                .map(|(i, key)| {
                    let store = Arc::clone(&store);
                    async move {
                        let got = match store.get(&key).await {
                            Ok(r) => r.bytes().await.map(|b| Some(b.to_vec())),
                            Err(object_store::Error::NotFound { .. }) => Ok(None),
                            Err(e) => Err(e),
                        };
                        (i, got)
                    }
                })
                .buffer_unordered(AT_ONCE)
                .collect::<Vec<_>>()
                .await
        })?;
        got.sort_by_key(|(i, _)| *i);
        got.into_iter()
            .map(|(i, got)| {
                got.map_err(|e| {
                    let name = names.get(i).map_or("?", String::as_str);
                    self.objects.failed(format!("read {}", self.show(name)), e)
                })
            })
            .collect()
    }

    /// Creates object `name` holding `bytes`, only if there is none of that name.
    pub fn create(&self, name: &str, bytes: Vec<u8>) -> Result<Created, CheckpointError> {
        let (store, key) = (self.objects.store(), self.key(name));
        let put = self.objects.block(async move {
            store
                .put_opts(&key, PutPayload::from(bytes), create())
                .await
        })?;
        match put {
            Ok(_) => Ok(Created::Written),
            Err(object_store::Error::AlreadyExists { .. }) => Ok(Created::Exists),
            Err(e) => Err(self.objects.failed(format!("write {}", self.show(name)), e)),
        }
    }

    /// The names of the objects directly under the prefix, sorted.
    pub fn list(&self) -> Result<Vec<String>, CheckpointError> {
        let (store, root) = (self.objects.store(), self.root.clone());
        let listed = self
            .objects
            .block(async move { store.list_with_delimiter(Some(&root)).await })?
            .map_err(|e| self.objects.failed("list its objects", e))?;
        let mut names: Vec<String> = listed
            .objects
            .iter()
            .filter_map(|m| m.location.filename().map(str::to_string))
            .collect();
        names.sort();
        Ok(names)
    }

    /// Deletes object `name` (none of that name is no error).
    pub fn delete(&self, name: &str) -> Result<(), CheckpointError> {
        self.delete_all(&[name.to_string()])
    }

    /// Deletes objects `names` ([`AT_ONCE`] at a time; none of a name is no error).
    pub fn delete_all(&self, names: &[String]) -> Result<(), CheckpointError> {
        let store = self.objects.store();
        let keys: Vec<(usize, Key)> = names.iter().map(|n| self.key(n)).enumerate().collect();
        let failed = self.objects.block(async move {
            futures_util::stream::iter(keys)
                .map(|(i, key)| {
                    let store = Arc::clone(&store);
                    async move {
                        match store.delete(&key).await {
                            Ok(()) | Err(object_store::Error::NotFound { .. }) => None,
                            Err(e) => Some((i, e)),
                        }
                    }
                })
                .buffer_unordered(AT_ONCE)
                .filter_map(std::future::ready)
                .collect::<Vec<_>>()
                .await
        })?;
        match failed.into_iter().next() {
            None => Ok(()),
            Some((i, e)) => {
                let name = names.get(i).map_or("?", String::as_str);
                Err(self
                    .objects
                    .failed(format!("delete {}", self.show(name)), e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_object_is_created_once_listed_read_and_deleted() {
        let bucket = Bucket::in_memory("memory://test").expect("a bucket");
        let log = bucket.child("log").expect("a child");
        assert_eq!(log.list().expect("lists"), Vec::<String>::new());
        assert_eq!(
            log.create("b", b"one".to_vec()).expect("creates"),
            Created::Written
        );
        assert_eq!(
            log.create("b", b"two".to_vec()).expect("answers"),
            Created::Exists
        );
        log.create("a", b"zero".to_vec()).expect("creates");
        bucket.create("outside", b"x".to_vec()).expect("creates");
        assert_eq!(log.list().expect("lists"), vec!["a", "b"]);
        assert_eq!(log.get("b").expect("reads"), Some(b"one".to_vec()));
        assert_eq!(log.get("c").expect("reads"), None);
        assert_eq!(
            log.get_all(&["c".into(), "b".into(), "a".into()])
                .expect("reads"),
            vec![None, Some(b"one".to_vec()), Some(b"zero".to_vec())]
        );
        log.delete("b").expect("deletes");
        log.delete("b").expect("twice is no error");
        assert_eq!(log.list().expect("lists"), vec!["a"]);
        assert_eq!(log.show("a"), "memory://test/log/a");
    }
}
