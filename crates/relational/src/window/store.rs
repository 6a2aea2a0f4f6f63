//! Where a window keeps its checkpointed state. The open panes, sessions and count windows
//! live in memory (their accumulators, fast to update); the state backend (anduin-state: heap
//! or LSM, chosen per operator) holds their checkpointed copy, one entry per key and pane,
//! session or count window under the key's key group (layout in [`super::entries`]). A
//! checkpoint writes the entries that changed since the last one and deletes those of windows
//! that fired, then takes the backend's snapshot: full, or the changes since the previous one.

use std::io::{Read, Write};
use std::path::PathBuf;

use anduin_state::{
    key_group_for_key, open_backend, BackendKind, KeyGroup, SnapshotKind, StateBackend, StateError,
    DEFAULT_MAX_KEY_GROUPS,
};

use super::entries::{entry_key, split_entry_key, StateRows};
use anduin_operator_api::OperatorError;

/// An entry read back from a checkpoint.
#[derive(Debug)]
pub(crate) struct Restored {
    /// The group key's bytes (empty for a global window).
    pub key: Box<[u8]>,
    pub tag: u8,
    pub start: i64,
    pub value: Vec<u8>,
}

/// The state backend of one window instance, opened on first use (a window that never
/// checkpoints never opens one).
pub(crate) struct Store {
    kind: BackendKind,
    /// Where an LSM backend works (a temporary directory if `None`).
    dir: Option<PathBuf>,
    backend: Option<Box<dyn StateBackend>>,
    /// The encoding of the aggregates' states.
    pub states: StateRows,
    operator: String,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("kind", &self.kind).finish()
    }
}

impl Store {
    pub(crate) fn new(
        kind: BackendKind,
        states: StateRows,
        operator: &str,
        dir: Option<PathBuf>,
    ) -> Self {
        Self {
            kind,
            dir,
            backend: None,
            states,
            operator: operator.to_string(),
        }
    }

    fn error(&self, e: StateError) -> OperatorError {
        OperatorError::Execution {
            operator: self.operator.clone(),
            message: format!("state backend: {e}"),
        }
    }

    fn backend(&mut self) -> Result<&mut Box<dyn StateBackend>, OperatorError> {
        if self.backend.is_none() {
            let backend =
                open_backend(self.kind, self.dir.as_deref()).map_err(|e| self.error(e))?;
            self.backend = Some(backend);
        }
        Ok(self.backend.as_mut().expect("opened just above"))
    }

    /// Sets the entry of `key`'s window `tag` starting at `start`.
    pub(crate) fn put(
        &mut self,
        key: &[u8],
        tag: u8,
        start: i64,
        value: &[u8],
    ) -> Result<(), OperatorError> {
        let kg = key_group_for_key(key, DEFAULT_MAX_KEY_GROUPS);
        let entry = entry_key(key, tag, start);
        let r = self.backend()?.put(kg, &entry, value);
        r.map_err(|e| self.error(e))
    }

    /// Removes the entry of `key`'s window `tag` starting at `start`.
    pub(crate) fn delete(&mut self, key: &[u8], tag: u8, start: i64) -> Result<(), OperatorError> {
        let kg = key_group_for_key(key, DEFAULT_MAX_KEY_GROUPS);
        let entry = entry_key(key, tag, start);
        let r = self.backend()?.delete(kg, &entry);
        r.map_err(|e| self.error(e))
    }

    /// Writes the backend's snapshot of `kind` to `out`.
    pub(crate) fn snapshot(
        &mut self,
        kind: SnapshotKind,
        out: &mut dyn Write,
    ) -> Result<(), OperatorError> {
        let r = self.backend()?.snapshot(kind, out);
        r.map(|_stats| ()).map_err(|e| self.error(e))
    }

    /// Replaces the backend's state with a full snapshot and the changelogs after it; returns
    /// every entry, key group after key group.
    pub(crate) fn restore(
        &mut self,
        full: &mut dyn Read,
        changes: &mut [&mut dyn Read],
    ) -> Result<Vec<Restored>, OperatorError> {
        let backend = self.backend()?;
        let mut found = Vec::new();
        let mut bad = false;
        let r = backend.restore(full, changes).and_then(|()| {
            for g in 0..DEFAULT_MAX_KEY_GROUPS.get() {
                backend.scan(KeyGroup(g), &mut |k, v| {
                    match split_entry_key(k) {
                        Some((key, tag, start)) => found.push(Restored {
                            key: key.into(),
                            tag,
                            start,
                            value: v.to_vec(),
                        }),
                        None => bad = true,
                    }
                    Ok(())
                })?;
            }
            Ok(())
        });
        r.map_err(|e| self.error(e))?;
        if bad {
            return Err(OperatorError::Execution {
                operator: self.operator.clone(),
                message: "the checkpoint's window state holds an entry of an unknown kind: restore from an earlier checkpoint".into(),
            });
        }
        Ok(found)
    }

    /// The backend's bytes (a metric), once a checkpoint or restore opened it.
    pub(crate) fn bytes(&self) -> Option<u64> {
        self.backend.as_ref().map(|b| b.size_bytes())
    }
}
