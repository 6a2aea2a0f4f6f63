//! A window operator's state in a checkpoint: an Arrow IPC stream of its open panes,
//! sessions and count windows, one row per group with its key and the intermediate state
//! of each aggregate (always a full snapshot: open windows are short-lived).
//!
//! Columns: `section` (0 live pane, 1 sealed pane, 2 session, 3 count window), `t0` (pane or
//! session start, first row of a count window), `t1` (session end, last row of a count
//! window), `n` (rows of a count window), the key columns, then `s<i>_<j>`: state field `j`
//! of aggregate `i`.

use std::io::{Read, Write};
use std::sync::Arc;

use arrow::array::{ArrayRef, Int64Array, Int8Array, UInt64Array};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use arrow_ipc::reader::StreamReader;
use arrow_ipc::writer::StreamWriter;

use super::keys::arrow_error;
use super::WindowSetup;
use crate::OperatorError;

pub(crate) const LIVE_PANE: i8 = 0;
pub(crate) const SEALED_PANE: i8 = 1;
pub(crate) const SESSION: i8 = 2;
pub(crate) const COUNT: i8 = 3;

/// The rows of one kind of state.
pub(crate) struct Section {
    pub section: i8,
    pub t0: Vec<i64>,
    pub t1: Vec<i64>,
    pub n: Vec<u64>,
    pub keys: Vec<ArrayRef>,
    /// Per aggregate, its state columns.
    pub states: Vec<Vec<ArrayRef>>,
}

fn schema(setup: &WindowSetup) -> Result<SchemaRef, OperatorError> {
    let mut fields = vec![
        Field::new("section", DataType::Int8, false),
        Field::new("t0", DataType::Int64, false),
        Field::new("t1", DataType::Int64, false),
        Field::new("n", DataType::UInt64, false),
    ];
    for f in setup.codec.schema.fields() {
        fields.push(f.as_ref().clone().with_nullable(true));
    }
    for (i, a) in setup.aggs.iter().enumerate() {
        let state = a.state_fields().map_err(|e| OperatorError::Execution {
            operator: setup.name.clone(),
            message: e.to_string(),
        })?;
        for (j, f) in state.iter().enumerate() {
            fields.push(Field::new(format!("s{i}_{j}"), f.data_type().clone(), true));
        }
    }
    Ok(Arc::new(Schema::new(fields)))
}

/// Writes `sections` as one IPC stream.
pub(crate) fn write(
    setup: &WindowSetup,
    sections: Vec<Section>,
    out: &mut dyn Write,
) -> Result<(), OperatorError> {
    let schema = schema(setup)?;
    let err = |e: arrow::error::ArrowError| arrow_error(&setup.name, &e);
    let mut w = StreamWriter::try_new(out, &schema).map_err(err)?;
    for s in sections {
        let rows = s.t0.len();
        if rows == 0 {
            continue;
        }
        let mut columns: Vec<ArrayRef> = vec![
            Arc::new(Int8Array::from(vec![s.section; rows])),
            Arc::new(Int64Array::from(s.t0)),
            Arc::new(Int64Array::from(s.t1)),
            Arc::new(UInt64Array::from(s.n)),
        ];
        columns.extend(s.keys);
        columns.extend(s.states.into_iter().flatten());
        // Key and state columns are nullable in the snapshot whatever they were live.
        let columns = columns
            .into_iter()
            .zip(schema.fields())
            .map(|(c, f)| {
                if c.data_type() == f.data_type() {
                    Ok(c)
                } else {
                    arrow::compute::cast(&c, f.data_type())
                }
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(err)?;
        let batch = RecordBatch::try_new(Arc::clone(&schema), columns).map_err(err)?;
        w.write(&batch).map_err(err)?;
    }
    w.finish().map_err(err)
}

/// A section read back: the same parts as written.
pub(crate) struct ReadSection {
    pub section: i8,
    pub t0: Vec<i64>,
    pub t1: Vec<i64>,
    pub n: Vec<u64>,
    pub keys: Vec<ArrayRef>,
    pub states: Vec<Vec<ArrayRef>>,
    pub rows: usize,
}

/// Reads the sections of a snapshot stream.
pub(crate) fn read(
    setup: &WindowSetup,
    input: &mut dyn Read,
) -> Result<Vec<ReadSection>, OperatorError> {
    let err = |e: arrow::error::ArrowError| OperatorError::Execution {
        operator: setup.name.clone(),
        message: format!("the checkpoint's window state is unreadable: {e}"),
    };
    let expected = schema(setup)?;
    let reader = StreamReader::try_new(input, None).map_err(err)?;
    if reader.schema().fields() != expected.fields() {
        return Err(OperatorError::Execution {
            operator: setup.name.clone(),
            message: "the checkpoint's window state has other columns than this window keeps"
                .into(),
        });
    }
    let nkeys = setup.codec.schema.fields().len();
    let mut out = Vec::new();
    for batch in reader {
        let batch = batch.map_err(err)?;
        let ints = |i: usize| -> Vec<i64> {
            batch
                .column(i)
                .as_any()
                .downcast_ref::<Int64Array>()
                .map(|a| a.values().to_vec())
                .unwrap_or_default()
        };
        let section = batch
            .column(0)
            .as_any()
            .downcast_ref::<Int8Array>()
            .and_then(|a| a.values().first().copied())
            .unwrap_or(-1);
        let n = batch
            .column(3)
            .as_any()
            .downcast_ref::<UInt64Array>()
            .map(|a| a.values().to_vec())
            .unwrap_or_default();
        let keys: Vec<ArrayRef> = (4..4 + nkeys)
            .map(|i| Arc::clone(batch.column(i)))
            .collect();
        let mut states = Vec::new();
        let mut col = 4 + nkeys;
        for a in &setup.aggs {
            let k = a.state_fields().map(|f| f.len()).unwrap_or(0);
            states.push(
                (col..col + k)
                    .map(|i| Arc::clone(batch.column(i)))
                    .collect(),
            );
            col += k;
        }
        out.push(ReadSection {
            section,
            t0: ints(1),
            t1: ints(2),
            n,
            keys,
            states,
            rows: batch.num_rows(),
        });
    }
    Ok(out)
}
