//! The rows a join holds in memory: per side the batches they came in, and per key both
//! sides' rows still waiting for partners, with a mark saying how they relate to the key's
//! checkpointed copy in the state backend (see `checkpoint.rs`).

use std::collections::HashMap;

use ahash::RandomState;
use arrow::record_batch::RecordBatch;

/// A buffered row.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry {
    /// Its event time.
    pub time: i64,
    /// Where it is in its side's [`Chunks`]: batch and row.
    pub at: (usize, usize),
    /// Whether it found a partner (for outer joins).
    pub matched: bool,
}

/// How a key's rows in memory relate to its entry in the state backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mark {
    /// The backend has no entry for the key: it came after the last snapshot.
    New,
    /// The backend's entry is out of date (or, if both sides are empty, to be deleted).
    Changed,
    /// The backend's entry holds exactly these rows.
    Saved,
}

/// Both sides' rows of one key, each in arrival order.
#[derive(Debug)]
pub(crate) struct Key {
    /// Left rows, then right rows.
    pub sides: [Vec<Entry>; 2],
    pub mark: Mark,
}

impl Key {
    fn touch(&mut self) {
        if self.mark == Mark::Saved {
            self.mark = Mark::Changed;
        }
    }

    /// Whether neither side has a row.
    pub(crate) fn is_empty(&self) -> bool {
        self.sides.iter().all(Vec::is_empty)
    }

    /// The rows of `side` (0 left, 1 right) and those of the other side.
    pub(crate) fn own_and_other(&mut self, side: usize) -> (&mut Vec<Entry>, &mut Vec<Entry>) {
        let [left, right] = &mut self.sides;
        if side == 0 {
            (left, right)
        } else {
            (right, left)
        }
    }
}

/// The batches one side's rows came in.
#[derive(Debug, Default)]
pub(crate) struct Chunks {
    /// A batch none of whose rows is buffered anymore is dropped (`None`).
    pub batches: Vec<Option<RecordBatch>>,
    /// Rows still buffered per batch.
    live: Vec<usize>,
}

impl Chunks {
    /// Adds a batch; returns its index for entries.
    pub(crate) fn add(&mut self, batch: RecordBatch) -> usize {
        self.batches.push(Some(batch));
        self.live.push(0);
        self.batches.len() - 1
    }

    /// Adds a batch all of whose rows are buffered (rebuilt by a restore).
    pub(crate) fn add_restored(&mut self, batch: RecordBatch) -> usize {
        let rows = batch.num_rows();
        let chunk = self.add(batch);
        if let Some(n) = self.live.get_mut(chunk) {
            *n = rows;
        }
        chunk
    }

    /// Counts a row of batch `chunk` as buffered.
    pub(crate) fn hold(&mut self, chunk: usize) {
        if let Some(n) = self.live.get_mut(chunk) {
            *n += 1;
        }
    }

    /// Drops batch `chunk` if none of its rows is buffered (all late, or none at all).
    pub(crate) fn drop_if_unused(&mut self, chunk: usize) {
        if self.live.get(chunk) == Some(&0) {
            if let Some(c) = self.batches.get_mut(chunk) {
                *c = None;
            }
        }
    }

    /// Forgets rows pruned earlier: a batch none of whose rows is buffered is dropped.
    pub(crate) fn release(&mut self, gone: &[(Box<[u8]>, Entry)]) {
        for (_, e) in gone {
            if let Some(n) = self.live.get_mut(e.at.0) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    if let Some(c) = self.batches.get_mut(e.at.0) {
                        *c = None;
                    }
                }
            }
        }
    }
}

/// The rows of both sides: their batches, and the rows by key.
#[derive(Debug, Default)]
pub(crate) struct Store {
    /// The batches of the left and of the right side.
    pub chunks: [Chunks; 2],
    pub keys: Keys,
}

/// Both sides' rows by key (the Arrow row-format bytes of the key columns). A key whose rows
/// are all gone stays, empty and [`Mark::Changed`], until the next snapshot deletes its entry
/// from the backend, unless the backend never saw it.
#[derive(Debug, Default)]
pub(crate) struct Keys(pub HashMap<Box<[u8]>, Key, RandomState>);

impl Keys {
    /// The rows of `key` (new and empty if there are none), marked as changed.
    pub(crate) fn key_mut(&mut self, key: &[u8]) -> &mut Key {
        if !self.0.contains_key(key) {
            self.0.insert(
                key.into(),
                Key {
                    sides: [Vec::new(), Vec::new()],
                    mark: Mark::New,
                },
            );
        }
        let k = self.0.get_mut(key).expect("inserted above if absent");
        k.touch();
        k
    }

    /// Removes the rows of each side that `expired` says are done and returns them per side,
    /// in arrival order. Their batches stay until [`Chunks::release`].
    pub(crate) fn prune(
        &mut self,
        expired: [&dyn Fn(&Entry) -> bool; 2],
    ) -> [Vec<(Box<[u8]>, Entry)>; 2] {
        let mut gone: [Vec<(Box<[u8]>, Entry)>; 2] = [Vec::new(), Vec::new()];
        self.0.retain(|key, k| {
            let mut removed = false;
            for ((list, expired), gone) in k.sides.iter_mut().zip(expired).zip(&mut gone) {
                list.retain(|e| {
                    if expired(e) {
                        gone.push((key.clone(), *e));
                        removed = true;
                        false
                    } else {
                        true
                    }
                });
            }
            if removed {
                k.touch();
            }
            // A key the backend never saw needs no delete.
            !(k.mark == Mark::New && k.is_empty())
        });
        for g in &mut gone {
            g.sort_by_key(|(_, e)| e.at);
        }
        gone
    }
}
