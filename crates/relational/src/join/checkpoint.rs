//! The join's checkpointed copy of its rows, in a keyed table (`anduin_state::KeyedTable`,
//! heap or LSM, chosen per operator). Live rows stay in memory ([`Store`]); a snapshot writes
//! one entry per key changed since the last one (its group key the bytes the runtime's hash
//! exchange routes by, its sub-key empty, its value in `codec.rs`), deletes the entries of keys
//! whose rows are all gone, and takes the table's full snapshot or changelog. A restore reads
//! a full snapshot and the changelogs after it back into the table and rebuilds the rows in
//! memory from its entries. With the LSM backend, checkpoints are incremental and nothing
//! leaves memory.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::Arc;

use anduin_state::{
    BackendKind, KeyGroup, KeyGroupRange, KeyedTable, SnapshotKind, TableEntry, TableError,
};
use arrow::array::{Array, ArrayRef};
use arrow::compute::interleave;
use arrow::datatypes::SchemaRef;
use arrow::error::ArrowError;
use arrow::record_batch::RecordBatch;
use arrow::row::{RowConverter, RowParser, Rows, SortField};

use super::codec::{get_sides, put_side, StoredRow};
use super::store::{Chunks, Entry, Key, Mark, Store};

/// Why a snapshot or restore of the join's state failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CheckpointError {
    #[error(transparent)]
    Table(#[from] TableError),
    #[error(transparent)]
    Arrow(#[from] ArrowError),
    #[error(
        "the checkpoint's state holds a corrupt entry in {0}: restore from an earlier checkpoint"
    )]
    Corrupt(KeyGroup),
    #[error(
        "the checkpoint's state holds an entry in {0} with a sub-key of {1} bytes, where a join \
         stores none: the state is corrupt; restore from an earlier checkpoint"
    )]
    SubKey(KeyGroup, usize),
    #[error("a buffered row's batch is gone; this is a bug in anduin's join")]
    Lost,
    #[error(
        "a key handed over at a rescale is held here already; this is a bug in anduin's rescale"
    )]
    AlreadyHeld,
}

/// The table and how rows of each side become bytes and back.
pub(crate) struct Checkpointed {
    /// One entry per key (sub-key empty), opened on first use.
    table: KeyedTable,
    /// The left and the right side's columns, as Arrow row-format bytes.
    values: [RowConverter; 2],
    schemas: [SchemaRef; 2],
}

impl Checkpointed {
    /// The (not yet opened) checkpointed copy of join `operator`'s rows, in a backend of `kind`
    /// working in `dir` (LSM; a temporary directory if `None`).
    pub(crate) fn new(
        operator: &str,
        kind: BackendKind,
        dir: Option<PathBuf>,
        schemas: [SchemaRef; 2],
    ) -> Result<Self, CheckpointError> {
        let converter = |s: &SchemaRef| {
            RowConverter::new(
                s.fields()
                    .iter()
                    .map(|f| SortField::new(f.data_type().clone()))
                    .collect(),
            )
        };
        Ok(Self {
            table: KeyedTable::new(operator, kind, dir),
            values: [converter(&schemas[0])?, converter(&schemas[1])?],
            schemas,
        })
    }

    /// Writes the keys of `store` changed since the last snapshot to the backend (see
    /// [`Checkpointed::save`]), then the backend's snapshot of `kind` to `out`.
    pub(crate) fn snapshot(
        &mut self,
        store: &mut Store,
        kind: SnapshotKind,
        out: &mut dyn Write,
    ) -> Result<(), CheckpointError> {
        self.save(store)?;
        let _stats = self.table.snapshot(kind, out)?;
        Ok(())
    }

    /// A live rescale: the keys of the key groups of `ranges` leave, each range's entries as
    /// a full stream (what [`Checkpointed::take`] reads), out of the table and out of memory.
    pub(crate) fn give(
        &mut self,
        store: &mut Store,
        ranges: &[KeyGroupRange],
    ) -> Result<Vec<Vec<u8>>, CheckpointError> {
        // The table first holds every key as it is in memory.
        self.save(store)?;
        let pieces = self.table.export_each(ranges)?;
        let table = &self.table;
        let [left, right] = store.keys.remove_where(|key| {
            let kg = table.key_group(key);
            ranges.iter().any(|r| r.contains(kg))
        });
        store.chunks[0].release(&left);
        store.chunks[1].release(&right);
        Ok(pieces)
    }

    /// A live rescale: adds the keys other instances gave ([`Checkpointed::give`]), each
    /// piece with its range, to the table and to memory.
    pub(crate) fn take(
        &mut self,
        store: &mut Store,
        pieces: &[(KeyGroupRange, Vec<u8>)],
    ) -> Result<(), CheckpointError> {
        let mut loader = Loader::new(&self.values, store);
        for (range, bytes) in pieces {
            self.table
                .import_scanned(*range, bytes, |e| loader.load(e))?;
        }
        loader.finish(&self.values, &self.schemas, store)
    }

    /// Writes the keys of `store` changed since the last snapshot to the backend, and deletes
    /// the entries of keys whose rows are all gone.
    fn save(&mut self, store: &mut Store) -> Result<(), CheckpointError> {
        let changed: Vec<(&[u8], &Key)> = store
            .keys
            .iter()
            .filter(|(_, k)| k.mark != Mark::Saved)
            .collect();
        // The changed keys' rows of each side as row-format bytes, in one conversion per side.
        let mut values = Vec::with_capacity(2);
        for side in 0..2 {
            let at: Vec<(usize, usize)> = changed
                .iter()
                .flat_map(|(_, k)| k.side(side).map(Entry::at))
                .collect();
            values.push(self.rows_at(side, &store.chunks[side], &at)?);
        }
        let mut next = [0usize; 2];
        let mut bytes = Vec::new();
        for (key, k) in &changed {
            if k.is_empty() {
                self.table.delete(key, b"")?;
                continue;
            }
            bytes.clear();
            for side in 0..2 {
                let first = next[side];
                next[side] += k.side(side).len();
                let rows = k.side(side).enumerate().map(|(i, e)| StoredRow {
                    time: e.time,
                    matched: e.matched(),
                    values: values[side].row(first + i).data(),
                });
                put_side(&mut bytes, rows);
            }
            self.table.put(key, b"", &bytes)?;
        }
        store.keys.saved();
        Ok(())
    }

    /// The values of the rows `at` of one side, in that order.
    fn rows_at(
        &self,
        side: usize,
        chunks: &Chunks,
        at: &[(usize, usize)],
    ) -> Result<Rows, CheckpointError> {
        let converter = &self.values[side];
        if at.is_empty() {
            return Ok(converter.empty_rows(0, 0));
        }
        let mut slot = vec![usize::MAX; chunks.batches.len()];
        let mut batches: Vec<&RecordBatch> = Vec::new();
        for (i, b) in chunks.batches.iter().enumerate() {
            if let Some(b) = b {
                slot[i] = batches.len();
                batches.push(b);
            }
        }
        let indices = at
            .iter()
            .map(|(chunk, row)| match slot.get(*chunk) {
                Some(&s) if s != usize::MAX => Ok((s, *row)),
                _ => Err(CheckpointError::Lost),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut columns: Vec<ArrayRef> = Vec::new();
        for c in 0..self.schemas[side].fields().len() {
            let arrays: Vec<&dyn Array> = batches.iter().map(|b| b.column(c).as_ref()).collect();
            columns.push(interleave(&arrays, &indices)?);
        }
        Ok(converter.convert_columns(&columns)?)
    }

    /// Replaces the table's entries with a full snapshot and the changelogs after it, and
    /// returns the rows it holds, rebuilt in memory (one batch per side).
    pub(crate) fn restore(
        &mut self,
        full: &mut dyn Read,
        changes: &mut [&mut dyn Read],
    ) -> Result<Store, CheckpointError> {
        let mut store = Store::default();
        let mut loader = Loader::new(&self.values, &store);
        self.table
            .restore(full, changes, |e: TableEntry<'_>| loader.load(e))?;
        loader.finish(&self.values, &self.schemas, &mut store)?;
        Ok(store)
    }
}

/// Rebuilds keys in memory from table entries: their rows, in one new batch per side.
struct Loader {
    parsers: [RowParser; 2],
    values: [Rows; 2],
    /// The index the new batch of each side will have in its chunks.
    chunk: [usize; 2],
    keys: Vec<(Vec<u8>, Key)>,
}

impl Loader {
    fn new(converters: &[RowConverter; 2], store: &Store) -> Self {
        Self {
            parsers: [converters[0].parser(), converters[1].parser()],
            values: [
                converters[0].empty_rows(0, 0),
                converters[1].empty_rows(0, 0),
            ],
            chunk: [store.chunks[0].batches.len(), store.chunks[1].batches.len()],
            keys: Vec::new(),
        }
    }

    fn load(&mut self, e: TableEntry<'_>) -> Result<(), CheckpointError> {
        if !e.sub_key.is_empty() {
            return Err(CheckpointError::SubKey(e.kg, e.sub_key.len()));
        }
        let sides = get_sides(e.value).ok_or(CheckpointError::Corrupt(e.kg))?;
        let mut k = Key::new(Mark::Saved);
        for (side, rows) in sides.iter().enumerate() {
            for r in rows {
                // The stream's checksum vouches for the bytes the converter reads.
                self.values[side].push(self.parsers[side].parse(r.values));
                k.push(
                    side,
                    Entry::new(
                        r.time,
                        (self.chunk[side], self.values[side].num_rows() - 1),
                        r.matched,
                    ),
                );
            }
        }
        if !k.is_empty() {
            self.keys.push((e.group_key.to_vec(), k));
        }
        Ok(())
    }

    /// Adds the batches and the keys to `store`, indexed by time.
    fn finish(
        self,
        converters: &[RowConverter; 2],
        schemas: &[SchemaRef; 2],
        store: &mut Store,
    ) -> Result<(), CheckpointError> {
        for (side, rows) in self.values.iter().enumerate() {
            if rows.num_rows() > 0 {
                let columns = converters[side].convert_rows(rows)?;
                let batch = RecordBatch::try_new(Arc::clone(&schemas[side]), columns)?;
                let chunk = store.chunks[side].add_restored(batch);
                if chunk != self.chunk[side] {
                    return Err(CheckpointError::Lost);
                }
            }
        }
        for (key, k) in self.keys {
            if store.keys.contains(&key) {
                return Err(CheckpointError::AlreadyHeld);
            }
            store.keys.insert(&key, k);
        }
        store.keys.reindex();
        Ok(())
    }
}
