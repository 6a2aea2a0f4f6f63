//! Buffered rows of one side of a join: the batches they came in, and per key the rows still
//! waiting for partners.

use std::collections::HashMap;

use ahash::RandomState;
use arrow::record_batch::RecordBatch;

/// A buffered row.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry {
    /// Its event time.
    pub time: i64,
    /// Where it is: batch and row.
    pub at: (usize, usize),
    /// Whether it found a partner (for outer joins).
    pub matched: bool,
}

/// The rows of one side, by key.
#[derive(Debug, Default)]
pub(crate) struct Store {
    /// The batches rows came in; a batch whose rows are all gone is dropped (`None`).
    pub chunks: Vec<Option<RecordBatch>>,
    /// Rows still buffered per batch.
    live: Vec<usize>,
    /// Rows by key.
    pub by_key: HashMap<Box<[u8]>, Vec<Entry>, RandomState>,
}

impl Store {
    /// Adds a batch; returns its index for entries.
    pub(crate) fn add_chunk(&mut self, batch: RecordBatch) -> usize {
        self.chunks.push(Some(batch));
        self.live.push(0);
        self.chunks.len() - 1
    }

    /// Buffers row `at` under `key`.
    pub(crate) fn insert(&mut self, key: &[u8], entry: Entry) {
        if let Some(n) = self.live.get_mut(entry.at.0) {
            *n += 1;
        }
        match self.by_key.get_mut(key) {
            Some(list) => list.push(entry),
            None => {
                self.by_key.insert(key.into(), vec![entry]);
            }
        }
    }

    /// Removes the rows `expired` says are done and returns them, in arrival order. Their
    /// batches stay until [`Store::release`].
    pub(crate) fn prune(
        &mut self,
        mut expired: impl FnMut(&Entry) -> bool,
    ) -> Vec<(Box<[u8]>, Entry)> {
        let mut gone = Vec::new();
        self.by_key.retain(|key, list| {
            list.retain(|e| {
                if expired(e) {
                    gone.push((key.clone(), *e));
                    false
                } else {
                    true
                }
            });
            !list.is_empty()
        });
        gone.sort_by_key(|(_, e)| e.at);
        gone
    }

    /// Forgets rows pruned earlier: a batch none of whose rows is buffered is dropped.
    pub(crate) fn release(&mut self, gone: &[(Box<[u8]>, Entry)]) {
        for (_, e) in gone {
            if let Some(n) = self.live.get_mut(e.at.0) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    if let Some(c) = self.chunks.get_mut(e.at.0) {
                        *c = None;
                    }
                }
            }
        }
    }

    /// Every buffered row, in arrival order.
    pub(crate) fn entries(&self) -> Vec<(Box<[u8]>, Entry)> {
        let mut all: Vec<(Box<[u8]>, Entry)> = self
            .by_key
            .iter()
            .flat_map(|(k, list)| list.iter().map(move |e| (k.clone(), *e)))
            .collect();
        all.sort_by_key(|(_, e)| e.at);
        all
    }
}
