//! One batch's candidate pairs and its output: the other side's rows of each input row's key
//! gathered once (they do not change while the batch is applied), the residual condition
//! evaluated on all the pairs at once, and the changes assembled into one output batch.

use std::sync::Arc;

use ahash::RandomState;
use anduin_operator_api::OperatorError;
use anduin_types::ChangeKind;
use arrow::array::{new_null_array, Array, ArrayRef, Int8Array, UInt32Array};
use arrow::buffer::NullBuffer;
use arrow::record_batch::RecordBatch;
use arrow::row::{RowConverter, Rows};
use hashbrown::HashMap;

use super::changes::Held;
use super::RegularSetup;

pub(crate) fn internal(operator: &str, e: impl std::fmt::Display) -> OperatorError {
    OperatorError::internal(operator, e.to_string())
}

/// Which rows of the key `columns` have a null in some column (`None`: none has).
pub(crate) fn null_keys(columns: &[ArrayRef]) -> Option<NullBuffer> {
    columns.iter().fold(None, |acc, c| {
        NullBuffer::union(acc.as_ref(), c.logical_nulls().as_ref())
    })
}

/// The pairs of a batch's rows with the other side's rows of their keys.
pub(crate) struct Pairs {
    /// Per pair, its input row.
    pub rows: Vec<u32>,
    /// Per pair, its other row's index among its key's rows of the other side.
    pub held: Vec<u32>,
    /// The pairs of input row `i` are `starts[i]..starts[i + 1]`, their other rows in the
    /// key's order: the key's other row `j` is pair `starts[i] + j`.
    pub starts: Vec<usize>,
    /// The other rows' columns, a row per pair (empty when there are no pairs).
    pub columns: Vec<ArrayRef>,
}

/// The other side (`other`) rows of the key of each of `n` rows (`keys`; none for a row with
/// a null key), decoded with `converter`.
pub(crate) fn gather(
    held: &HashMap<Box<[u8]>, [Vec<Held>; 2], RandomState>,
    keys: &Rows,
    nulls: Option<&NullBuffer>,
    other: usize,
    converter: &RowConverter,
    operator: &str,
) -> Result<Pairs, OperatorError> {
    let n = keys.num_rows();
    let parser = converter.parser();
    // The held rows themselves, not a copy of their bytes: decoded once, below.
    let mut gathered = Vec::new();
    let mut pairs = Pairs {
        rows: Vec::new(),
        held: Vec::new(),
        starts: Vec::with_capacity(n + 1),
        columns: Vec::new(),
    };
    for i in 0..n {
        pairs.starts.push(pairs.rows.len());
        if nulls.is_some_and(|b| b.is_null(i)) {
            continue;
        }
        let Some(sides) = held.get(keys.row(i).as_ref()) else {
            continue;
        };
        for (j, h) in sides[other].iter().enumerate() {
            pairs.rows.push(i as u32);
            pairs.held.push(j as u32);
            gathered.push(parser.parse(&h.values));
        }
    }
    pairs.starts.push(pairs.rows.len());
    if !pairs.rows.is_empty() {
        pairs.columns = converter
            .convert_rows(gathered)
            .map_err(|e| internal(operator, e))?;
    }
    Ok(pairs)
}

/// `columns` at `at` (a null row where `at` is null).
fn take_all(
    columns: &[ArrayRef],
    at: &UInt32Array,
    operator: &str,
) -> Result<Vec<ArrayRef>, OperatorError> {
    columns
        .iter()
        .map(|c| arrow::compute::take(c.as_ref(), at, None))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| internal(operator, e))
}

/// The left columns then the right ones, of `mine` from `side` and `theirs`.
fn in_order(side: usize, mine: Vec<ArrayRef>, theirs: Vec<ArrayRef>) -> Vec<ArrayRef> {
    if side == 0 {
        [mine, theirs].concat()
    } else {
        [theirs, mine].concat()
    }
}

/// Whether each pair holds the join's condition (all pairs without one); `values` are the
/// batch's value columns, from `side`.
pub(crate) fn condition(
    setup: &RegularSetup,
    side: usize,
    values: &[ArrayRef],
    pairs: &Pairs,
) -> Result<Vec<bool>, OperatorError> {
    let Some(c) = &setup.condition else {
        return Ok(vec![true; pairs.rows.len()]);
    };
    if pairs.rows.is_empty() {
        return Ok(Vec::new());
    }
    let mine = take_all(values, &UInt32Array::from(pairs.rows.clone()), &setup.name)?;
    let columns = in_order(side, mine, pairs.columns.clone());
    let joined = RecordBatch::try_new(Arc::clone(&setup.rows), columns)
        .map_err(|e| internal(&setup.name, e))?;
    let pass = c.evaluate_bool(&joined).map_err(|e| OperatorError::Execution {
        operator: setup.name.clone(),
        message: format!(
            "the join condition `{}` failed: {}. The query stops: a pair of rows is no single row's fault, so it cannot go to the dead letters. Guard the condition (e.g. `CASE WHEN … END`, `NULLIF(x, 0)`)",
            c.site.text, e.message
        ),
    })?;
    Ok((0..pass.len())
        .map(|i| pass.is_valid(i) && pass.value(i))
        .collect())
}

/// One change to emit: the input row (by index) or nulls, the other side's row (by pair)
/// or nulls, and its kind.
pub(crate) struct Out {
    pub input: Option<u32>,
    pub other: Option<u32>,
    pub kind: ChangeKind,
}

/// The output batch of `outs`: the input's values at their rows, the pairs' other rows at
/// theirs, nulls elsewhere, and the change kinds if the output has them.
pub(crate) fn output(
    setup: &RegularSetup,
    side: usize,
    values: &[ArrayRef],
    pairs: &Pairs,
    outs: &[Out],
) -> Result<RecordBatch, OperatorError> {
    let name = &setup.name;
    let at: UInt32Array = outs.iter().map(|o| o.input).collect();
    let mine = take_all(values, &at, name)?;
    let theirs = if pairs.columns.is_empty() {
        let width = setup.sides[1 - side].values.len();
        let first = if side == 0 { values.len() } else { 0 };
        (first..first + width)
            .map(|i| new_null_array(setup.rows.field(i).data_type(), outs.len()))
            .collect()
    } else {
        let at: UInt32Array = outs.iter().map(|o| o.other).collect();
        take_all(&pairs.columns, &at, name)?
    };
    let mut columns = in_order(side, mine, theirs);
    if setup.updating() {
        columns.push(Arc::new(
            outs.iter().map(|o| o.kind.code()).collect::<Int8Array>(),
        ));
    } else if let Some(o) = outs.iter().find(|o| o.kind != ChangeKind::Insert) {
        return Err(internal(
            name,
            format!("an append-only join emitted a {} change", o.kind.symbol()),
        ));
    }
    RecordBatch::try_new(Arc::clone(&setup.schema), columns).map_err(|e| internal(name, e))
}
