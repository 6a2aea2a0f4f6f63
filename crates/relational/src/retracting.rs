//! What the operators that take retractions and keep their state in a keyed table share
//! (the `aggregate` of a GROUP BY without a window, the `regular_join`, `top_n`): the count
//! of retractions of rows nothing held, kept in a checkpoint's manifest, the table's
//! snapshot, restore and key-group handoff around it, and how a row of an updating input is
//! read as adding or taking out.

use anduin_operator_api::rescale::{combine_moved, Combine, RescaleError, RescaleMeta};
use anduin_operator_api::{KeyGroupsGiven, OperatorError, RestoreIn, SnapshotOut};
use anduin_state::{KeyGroupRange, KeyedTable, TableEntry};
use anduin_types::{ChangeKind, SnapshotKind};
use arrow::array::AsArray;
use arrow::datatypes::Int8Type;
use arrow::record_batch::RecordBatch;
use serde::{Deserialize, Serialize};

use crate::ttl::{Incoming, StateTtl};

/// Whether each row of `batch` adds (`+I`, `+U`, any row of an append-only input: no
/// `change_in` column) or takes out (`-U`, `-D`), for operator `operator`.
pub(crate) fn adds(
    operator: &str,
    batch: &RecordBatch,
    change_in: Option<usize>,
) -> Result<Vec<bool>, OperatorError> {
    let error = |message: String| OperatorError::Execution {
        operator: operator.to_string(),
        message,
    };
    let Some(c) = change_in else {
        return Ok(vec![true; batch.num_rows()]);
    };
    let codes = batch
        .column(c)
        .as_primitive_opt::<Int8Type>()
        .ok_or_else(|| error("the input's change kind is not a change kind column".into()))?;
    codes
        .iter()
        .map(|code| {
            code.and_then(ChangeKind::from_code)
                .map(ChangeKind::adds)
                .ok_or_else(|| {
                    error(format!(
                        "a row of the input has no valid change kind ({code:?}): a bug in anduin"
                    ))
                })
        })
        .collect()
}

/// What such an operator keeps in a checkpoint's manifest.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Meta {
    /// Retractions of rows nothing held, so far.
    unmatched_retractions: u64,
    /// With a state time-to-live: the now of its time line (`crate::ttl`), in ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ttl_now_ms: Option<u64>,
}

impl RescaleMeta for Meta {
    fn combine(parts: Vec<Self>, how: Combine) -> Result<Self, RescaleError> {
        Ok(Meta {
            unmatched_retractions: how.counter(parts.iter().map(|p| p.unmatched_retractions)),
            // The instances' time lines went on from one start: the latest is the nearest.
            ttl_now_ms: parts.iter().filter_map(|p| p.ttl_now_ms).max(),
        })
    }
}

/// Snapshots `table` (flushed by the caller) with the count `unmatched` and the time of
/// `ttl`'s time line inline.
pub(crate) fn snapshot(
    name: &str,
    table: &mut KeyedTable,
    unmatched: u64,
    ttl: &StateTtl,
    out: &mut dyn SnapshotOut,
) -> Result<(), OperatorError> {
    let kind = if out.full_due() {
        SnapshotKind::Full
    } else {
        SnapshotKind::Changes
    };
    let meta = Meta {
        unmatched_retractions: unmatched,
        ttl_now_ms: ttl.checkpoint_time(),
    };
    out.inline_typed(name, &meta)?;
    let stream = out.stream(kind)?;
    let _stats = table.snapshot(kind, stream)?;
    Ok(())
}

/// The instances' inline parts combined at a restore at another parallelism.
pub(crate) fn rescale_inline(
    parts: &[Option<serde_json::Value>],
    how: Combine,
) -> Result<Option<serde_json::Value>, RescaleError> {
    anduin_operator_api::rescale::rescale_inline_as::<Meta>(parts, how)
}

/// Restores `table` from `state`, calling `each` with every entry of the operator (the write
/// times of its keys go to `ttl`); the count of unmatched retractions. `what` names the
/// state in the error of a checkpoint without its file.
pub(crate) fn restore(
    name: &str,
    what: &str,
    table: &mut KeyedTable,
    ttl: &mut StateTtl,
    mut state: RestoreIn,
    mut each: impl FnMut(TableEntry<'_>) -> Result<(), OperatorError>,
) -> Result<u64, OperatorError> {
    let meta: Meta = state.inline_as(name)?;
    let Some((full, changes)) = state.files.split_first_mut() else {
        return Err(OperatorError::Execution {
            operator: name.to_string(),
            message: format!("the checkpoint has no state file for this {what}"),
        });
    };
    let mut changes: Vec<&mut dyn std::io::Read> = changes
        .iter_mut()
        .map(|f| f as &mut dyn std::io::Read)
        .collect();
    let mut incoming = Incoming::for_ttl(ttl);
    table.restore(full, &mut changes, |e: TableEntry<'_>| {
        if incoming.take(name, &e)? {
            return Ok(());
        }
        each(e)
    })?;
    ttl.restored(meta.ttl_now_ms, incoming, table)?;
    Ok(meta.unmatched_retractions)
}

/// The key groups `pieces` given at a live rescale, with the count `unmatched` inline.
pub(crate) fn given(
    name: &str,
    pieces: Vec<Vec<u8>>,
    unmatched: u64,
) -> Result<KeyGroupsGiven, OperatorError> {
    let meta = Meta {
        unmatched_retractions: unmatched,
        ttl_now_ms: None,
    };
    KeyGroupsGiven::new(name, pieces, &meta)
}

/// The count of unmatched retractions after taking key groups whose givers' inline parts
/// are `inline`, this instance's being `own`.
pub(crate) fn taken(
    name: &str,
    own: u64,
    inline: Vec<Option<serde_json::Value>>,
) -> Result<u64, OperatorError> {
    let own = Meta {
        unmatched_retractions: own,
        ttl_now_ms: None,
    };
    Ok(combine_moved(name, own, inline)?.unmatched_retractions)
}

/// Whether `table` puts `key` in one of `ranges` (what a giver drops from memory).
pub(crate) fn given_away(table: &KeyedTable, ranges: &[KeyGroupRange], key: &[u8]) -> bool {
    let kg = table.key_group(key);
    ranges.iter().any(|r| r.contains(kg))
}
