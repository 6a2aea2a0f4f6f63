//! The window top-N (Flink's Window Top-N, and with `limit = 1` its Window Deduplication):
//! a top-N partitioned by a window's bounds (and maybe other keys) over an append-only input
//! whose rows belong to windows — a window aggregate's results, a windowing table function's
//! rows. Each partition (one window, one value of the other keys) keeps its first `limit`
//! rows in the order, as the running top-N does (`rank.rs`: ties by arrival), until the
//! watermark passes the window's end; then its rows are emitted once, in rank order with
//! their rank if asked, and its state is dropped. The output is append-only.
//!
//! A window ends, as the window operator fires it, when the watermark reaches its end
//! (`window_end <= watermark`): its rows all came before. A row of a window that ended
//! already is late: it is dropped and counted (`late_rows_dropped`), as Flink drops it.
//!
//! ```text
//! limit 2, order c DESC, keys window_start, window_end:
//!   rows (0,10,a,3) (0,10,b,5) (0,10,c,4) (10,20,a,1)
//!   watermark 10 -> (0,10,b,5,1) (0,10,c,4,2)      window [10, 20) still held
//! ```
//!
//! State: one keyed-table entry per partition (its key's bytes as group key, `t` as sub-key,
//! `entry.rs` as value, the window end as its pending time), written when changed and
//! deleted once emitted; the watermark and the count of late rows go inline in the
//! manifest. It rescales by key group as the running top-N does.

use std::collections::{BTreeSet, HashSet};

use ahash::RandomState;
use anduin_operator_api::event_time::event_times;
use anduin_operator_api::rescale::{
    agreed, combine_moved, rescale_inline_as, Combine, RescaleError, RescaleMeta,
};
use anduin_operator_api::{
    BuildContext, Collector, KeyGroupsGiven, Operator, OperatorError, RestoreIn, SnapshotOut,
};
use anduin_state::{KeyGroupRange, KeyedTable, TableEntry};
use anduin_types::{ChangeKind, SnapshotKind, Watermark};
use arrow::record_batch::RecordBatch;
use hashbrown::HashMap;
use serde::{Deserialize, Serialize};

use super::entry;
use super::rank::{Change, Partition, Ties};
use super::rows::{internal, Codecs};
use super::{Mode, TopSetup};

/// The sub-key of a partition's entry.
const ROWS: &[u8] = b"t";

/// What a window top-N keeps in a checkpoint's manifest.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Meta {
    /// The watermark of the input: every window ending at or before it was emitted.
    watermark: i64,
    /// Late rows dropped so far.
    late: u64,
}

impl RescaleMeta for Meta {
    fn combine(parts: Vec<Self>, how: Combine) -> Result<Self, RescaleError> {
        Ok(Meta {
            watermark: agreed("watermarks", parts.iter().map(|p| p.watermark))?,
            late: how.counter(parts.iter().map(|p| p.late)),
        })
    }
}

/// A running window top-N.
pub(crate) struct WindowTopN {
    setup: TopSetup,
    /// The input column holding each row's window end (one of the keys).
    end: usize,
    /// How rows of equal order values rank.
    ties: Ties,
    codecs: Codecs,
    /// The partitions of the windows not ended yet, by their key's bytes (the window's
    /// bounds among them).
    partitions: HashMap<Box<[u8]>, Partition, RandomState>,
    /// Partitions changed since the last checkpoint.
    dirty: HashSet<Box<[u8]>, RandomState>,
    /// The partitions by their window's end: what the watermark closes, in order.
    pending: BTreeSet<(i64, Box<[u8]>)>,
    /// The checkpointed copy of the partitions.
    table: KeyedTable,
    /// The input's watermark (`i64::MIN` before the first).
    watermark: i64,
    /// Rows dropped because their window ended already (or they have no window end).
    late: u64,
}

impl WindowTopN {
    pub(crate) fn new(
        setup: TopSetup,
        end: usize,
        ctx: &BuildContext,
    ) -> Result<Self, OperatorError> {
        let Mode::Ranked(ties) = setup.mode else {
            return Err(internal(
                &setup.name,
                "a window top-N ranks its rows: keep-first deduplication is another operator",
            ));
        };
        let dir = ctx.backend_dir(&setup.name);
        let table = KeyedTable::new(&setup.name, setup.backend, dir);
        let codecs = Codecs::new(&setup)?;
        Ok(Self {
            end,
            ties,
            codecs,
            partitions: HashMap::with_hasher(RandomState::with_seeds(1, 2, 3, 4)),
            dirty: HashSet::with_hasher(RandomState::with_seeds(1, 2, 3, 4)),
            pending: BTreeSet::new(),
            table,
            watermark: i64::MIN,
            late: 0,
            setup,
        })
    }

    /// Adds a batch's rows to their windows' partitions, dropping the late ones.
    fn add(&mut self, batch: &RecordBatch) -> Result<(), OperatorError> {
        let (keys, values, sort) = self.codecs.rows(&self.setup, batch)?;
        let ends = event_times(batch, self.end);
        for (i, end) in ends.into_iter().enumerate() {
            let Some(end) = end.filter(|e| *e > self.watermark) else {
                self.late += 1;
                continue;
            };
            let key = self.setup.codec.stored(keys.row(i));
            let p = self.partitions.entry_ref(key).or_default();
            if p.pending.is_none() {
                p.pending = Some(end);
                self.pending.insert((end, key.into()));
            }
            p.add(sort.row(i).as_ref(), values.row(i).as_ref(), self.ties);
            // Of an append-only input, a row past the first `limit` never comes back.
            p.trim(self.setup.limit);
            if !self.dirty.contains(key) {
                self.dirty.insert(key.into());
            }
        }
        Ok(())
    }

    /// Emits the rows of every window ending at or before `upto`, in order of their ends, and
    /// drops their partitions.
    fn fire(&mut self, upto: i64, out: &mut dyn Collector) -> Result<(), OperatorError> {
        let mut emitted = Vec::new();
        while self.pending.first().is_some_and(|(end, _)| *end <= upto) {
            let Some((_, key)) = self.pending.pop_first() else {
                break;
            };
            let Some(p) = self.partitions.remove(&key) else {
                return Err(internal(
                    &self.setup.name,
                    "a window waiting for the watermark holds no partition",
                ));
            };
            emitted.extend(
                p.top(self.setup.limit)
                    .into_iter()
                    .zip(1..)
                    .map(|(row, rank)| Change {
                        row,
                        rank,
                        kind: ChangeKind::Insert,
                    }),
            );
            self.dirty.insert(key);
        }
        if emitted.is_empty() {
            return Ok(());
        }
        let batch = self.codecs.output(&self.setup, &emitted)?;
        out.collect(0, batch)
    }

    /// Writes the partitions changed since the last checkpoint to the table, deleting those
    /// emitted.
    fn flush(&mut self) -> Result<(), OperatorError> {
        for key in self.dirty.drain() {
            match self.partitions.get(&key) {
                Some(p) => self.table.put(&key, ROWS, &entry::encode(p))?,
                None => self.table.delete(&key, ROWS)?,
            }
        }
        Ok(())
    }

    fn meta(&self) -> Meta {
        Meta {
            watermark: self.watermark,
            late: self.late,
        }
    }

    /// Rebuilds the index of the windows by their ends.
    fn index_pending(&mut self) {
        self.pending = self
            .partitions
            .iter()
            .filter_map(|(k, p)| p.pending.map(|t| (t, k.clone())))
            .collect();
    }
}

impl Operator for WindowTopN {
    fn name(&self) -> &str {
        &self.setup.name
    }

    fn process_batch(
        &mut self,
        _input: usize,
        batch: RecordBatch,
        _out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        self.add(&batch)
    }

    /// Emits the windows the watermark ends, then forwards it: the rows emitted are at or
    /// after it (their window ends). A watermark that does not move event time on (as one
    /// sent again after a restore) does nothing.
    fn handle_watermark(
        &mut self,
        watermark: Watermark,
        out: &mut dyn Collector,
    ) -> Result<Option<Watermark>, OperatorError> {
        if watermark.0 <= self.watermark {
            return Ok(None);
        }
        self.watermark = watermark.0;
        self.fire(watermark.0, out)?;
        Ok(Some(watermark))
    }

    fn on_end_of_input(&mut self, out: &mut dyn Collector) -> Result<(), OperatorError> {
        self.fire(Watermark::MAX.0, out)
    }

    /// No row will come: every window is emitted now, as at the end of event time. The
    /// watermark stays where it is (a checkpoint, or an instance beside this one, must agree
    /// on it), as the window operator's does.
    fn on_input_exhausted(
        &mut self,
        _input: usize,
        out: &mut dyn Collector,
    ) -> Result<bool, OperatorError> {
        self.fire(Watermark::MAX.0, out)?;
        Ok(true)
    }

    fn snapshot(&mut self, out: &mut dyn SnapshotOut) -> Result<(), OperatorError> {
        self.flush()?;
        let kind = if out.full_due() {
            SnapshotKind::Full
        } else {
            SnapshotKind::Changes
        };
        out.inline_typed(&self.setup.name, &self.meta())?;
        let stream = out.stream(kind)?;
        let _stats = self.table.snapshot(kind, stream)?;
        Ok(())
    }

    fn rescale_inline(
        &self,
        parts: &[Option<serde_json::Value>],
        how: Combine,
    ) -> Result<Option<serde_json::Value>, RescaleError> {
        rescale_inline_as::<Meta>(parts, how)
    }

    fn restore(&mut self, mut state: RestoreIn) -> Result<(), OperatorError> {
        let name = &self.setup.name;
        let meta: Meta = state.inline_as(name)?;
        let Some((full, changes)) = state.files.split_first_mut() else {
            return Err(OperatorError::Execution {
                operator: name.clone(),
                message: "the checkpoint has no state file for this window top-N".into(),
            });
        };
        let mut changes: Vec<&mut dyn std::io::Read> = changes
            .iter_mut()
            .map(|f| f as &mut dyn std::io::Read)
            .collect();
        let partitions = &mut self.partitions;
        partitions.clear();
        self.dirty.clear();
        self.table
            .restore(full, &mut changes, |e: TableEntry<'_>| {
                partitions.insert(e.group_key.into(), decode(name, &e)?);
                Ok::<(), OperatorError>(())
            })?;
        self.watermark = meta.watermark;
        self.late = meta.late;
        self.index_pending();
        Ok(())
    }

    fn moves_key_groups(&self) -> bool {
        true
    }

    fn give_key_groups(
        &mut self,
        ranges: &[KeyGroupRange],
    ) -> Result<KeyGroupsGiven, OperatorError> {
        // The table first holds every partition as it is in memory.
        self.flush()?;
        let pieces = self.table.export_each(ranges)?;
        let table = &self.table;
        self.partitions
            .retain(|key, _| !crate::retracting::given_away(table, ranges, key));
        self.index_pending();
        KeyGroupsGiven::new(&self.setup.name, pieces, &self.meta())
    }

    fn take_key_groups(
        &mut self,
        pieces: Vec<(KeyGroupRange, Vec<u8>)>,
        inline: Vec<Option<serde_json::Value>>,
    ) -> Result<(), OperatorError> {
        let meta = combine_moved(&self.setup.name, self.meta(), inline)?;
        self.late = meta.late;
        let name = &self.setup.name;
        for (range, bytes) in pieces {
            let partitions = &mut self.partitions;
            self.table
                .import_scanned(range, &bytes, |e: TableEntry<'_>| {
                    if partitions
                        .insert(e.group_key.into(), decode(name, &e)?)
                        .is_some()
                    {
                        return Err(OperatorError::internal(
                            name,
                            format!(
                                "a window partition of {} handed over at a rescale is held here already",
                                e.kg
                            ),
                        ));
                    }
                    Ok::<(), OperatorError>(())
                })?;
        }
        self.index_pending();
        Ok(())
    }

    fn metrics(&self) -> Vec<(&'static str, u64)> {
        let rows: usize = self.partitions.values().map(|p| p.len).sum();
        let mut metrics = vec![
            ("partitions", self.partitions.len() as u64),
            ("rows_held", rows as u64),
            ("late_rows_dropped", self.late),
        ];
        metrics.extend(self.table.size_bytes().map(|b| ("state_backend_bytes", b)));
        metrics
    }

    fn is_stateless(&self) -> bool {
        false
    }
}

/// The partition a checkpointed entry holds: one with the end of its window.
fn decode(name: &str, e: &TableEntry<'_>) -> Result<Partition, OperatorError> {
    (e.sub_key == ROWS)
        .then(|| entry::decode(e.value))
        .flatten()
        .filter(|p| p.pending.is_some())
        .ok_or_else(|| OperatorError::Execution {
            operator: name.to_string(),
            message: format!(
                "the checkpoint's window top-N state holds an entry in {} that is not a window's partition: the state is corrupt, or the query changed its input; restore from an earlier checkpoint",
                e.kg
            ),
        })
}
