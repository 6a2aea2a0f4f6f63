//! How a writer writes the rows of an updating stream (see `anduin_types::change`): its
//! `mode`.
//!
//! - `append` (the default): the rows as they are. An append-only stream only: the planner
//!   refuses an updating one before the query starts (`append_only_refusal`).
//! - `changelog`: every change, with an `op` column first holding `+I`, `-U`, `+U` or `-D`
//!   (every row of an append-only input is a `+I`). Folding the rows in order into a table
//!   gives the result.
//! - `upsert`: the changes keyed by `primary_key`: the same `op` column, without the `-U`
//!   rows, so that a reader keeps the latest row of each key and removes the key at a `-D`.
//!   A `-U` that no `+U` of the same key follows in its batch (a filter after a `GROUP BY`
//!   dropped the new row, or the key's values changed) is written as the `-D` it amounts to.
//!   The primary key must hold the columns that identify the rows of the updating stream (for
//!   a `GROUP BY`, its grouping columns, as the query passes them on: see
//!   `anduin_types::row_key`), as Flink asks of an upsert sink; a key that does not is
//!   refused before the query starts, as is an input with a column named `op`.

use std::sync::Arc;

use std::collections::HashMap;

use anduin_types::{is_updating, row_key, ChangeKind, CHANGE_COLUMN};
use arrow::array::{Array, ArrayRef, BooleanArray, Int8Array, StringArray};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use arrow::row::{Row, RowConverter, SortField};

/// The name of the change-kind column in a changelog or upsert output.
pub const OP_COLUMN: &str = "op";

/// How a writer writes changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Rows as they come, of an append-only stream.
    Append,
    /// Every change, with its kind in an `op` column first.
    Changelog,
    /// Changes by primary key (column indices in the input): `-U` rows left out.
    Upsert {
        /// The primary key's columns.
        key: Vec<usize>,
    },
}

impl Mode {
    /// The mode a writer's `mode` and `primary_key` params ask for, over an input of
    /// `schema`; an error says what is wrong, naming the param.
    pub fn parse(
        mode: &str,
        primary_key: Option<&str>,
        schema: &Schema,
    ) -> Result<Self, (&'static str, String)> {
        if mode != "append" && data_columns(schema).iter().any(|c| c == OP_COLUMN) {
            return Err((
                "mode",
                format!("the input has a column named `{OP_COLUMN}`, the name of the change column {} {mode} output writes first: rename that column (AS …)", if mode == "upsert" { "an" } else { "a" }),
            ));
        }
        match mode {
            "append" | "changelog" if primary_key.is_some() => Err((
                "primary_key",
                format!("a primary key is for `mode = 'upsert'`, not `{mode}`"),
            )),
            "append" => Ok(Mode::Append),
            "changelog" => Ok(Mode::Changelog),
            "upsert" => {
                let Some(text) = primary_key else {
                    return Err((
                        "mode",
                        "an upsert output needs its primary key: add primary_key = 'a, b' (the columns that identify a row, e.g. the GROUP BY columns)".into(),
                    ));
                };
                let columns = data_columns(schema);
                let mut key: Vec<usize> = Vec::new();
                for name in text.split(',').map(str::trim) {
                    let Some(i) = columns.iter().position(|c| c.as_str() == name) else {
                        return Err((
                            "primary_key",
                            format!(
                                "unknown column `{name}` in the primary key: the input has {}",
                                columns.join(", ")
                            ),
                        ));
                    };
                    if key.contains(&i) {
                        return Err((
                            "primary_key",
                            format!("column `{name}` is twice in the primary key"),
                        ));
                    }
                    key.push(i);
                }
                identifies_rows(&key, schema)?;
                Ok(Mode::Upsert { key })
            }
            other => Err((
                "mode",
                format!("unknown mode `{other}`: expected append, changelog or upsert"),
            )),
        }
    }

    /// The schema of what is written for an input of `schema`: the input's columns (without
    /// its change kind), with an `op` column first unless the mode is `append`.
    pub fn written_schema(&self, schema: &Schema) -> SchemaRef {
        let mut fields: Vec<Field> = schema
            .fields()
            .iter()
            .filter(|f| f.name() != CHANGE_COLUMN)
            .map(|f| f.as_ref().clone())
            .collect();
        if *self != Mode::Append {
            fields.insert(0, Field::new(OP_COLUMN, DataType::Utf8, false));
        }
        Arc::new(Schema::new(fields))
    }

    /// The rows of `batch` to write (see the module's documentation), in `written` (what
    /// [`Mode::written_schema`] gave for the batch's schema).
    pub fn rows(&self, batch: &RecordBatch, written: &SchemaRef) -> Result<RecordBatch, String> {
        if *self == Mode::Append {
            return Ok(batch.clone());
        }
        let change = batch
            .schema()
            .index_of(CHANGE_COLUMN)
            .ok()
            .map(|i| batch.column(i));
        let kinds: Vec<ChangeKind> = match change {
            None => vec![ChangeKind::Insert; batch.num_rows()],
            Some(c) => {
                let codes = c
                    .as_any()
                    .downcast_ref::<Int8Array>()
                    .ok_or_else(|| format!("column `{CHANGE_COLUMN}` is not the change kind"))?;
                codes
                    .iter()
                    .map(|code| {
                        code.and_then(ChangeKind::from_code)
                            .ok_or_else(|| format!("a row has no valid change kind ({code:?})"))
                    })
                    .collect::<Result<_, _>>()?
            }
        };
        let ops: ArrayRef = Arc::new(StringArray::from_iter_values(
            kinds.iter().map(|k| k.symbol()),
        ));
        let mut columns = vec![ops];
        columns.extend(
            batch
                .schema()
                .fields()
                .iter()
                .zip(batch.columns())
                .filter(|(f, _)| f.name() != CHANGE_COLUMN)
                .map(|(_, c)| Arc::clone(c)),
        );
        let rows = RecordBatch::try_new(Arc::clone(written), columns).map_err(|e| e.to_string())?;
        let Mode::Upsert { key } = self else {
            return Ok(rows);
        };
        // Each `-U` is left out where a row that adds the same key comes after it in the
        // batch (its `+U`), and written as a `-D` where none does.
        let key_columns: Vec<ArrayRef> = key.iter().map(|i| Arc::clone(batch.column(*i))).collect();
        let converter = RowConverter::new(
            key_columns
                .iter()
                .map(|c| SortField::new(c.data_type().clone()))
                .collect(),
        )
        .map_err(|e| e.to_string())?;
        let keys = converter
            .convert_columns(&key_columns)
            .map_err(|e| e.to_string())?;
        let mut next: HashMap<Row<'_>, ChangeKind> = HashMap::new();
        let mut keep = vec![true; kinds.len()];
        let mut symbols: Vec<&str> = kinds.iter().map(|k| k.symbol()).collect();
        for i in (0..kinds.len()).rev() {
            if kinds[i] == ChangeKind::UpdateBefore {
                if next.get(&keys.row(i)).is_some_and(|k| k.adds()) {
                    keep[i] = false;
                } else {
                    symbols[i] = ChangeKind::Delete.symbol();
                }
            }
            next.insert(keys.row(i), kinds[i]);
        }
        let mut columns = rows.columns().to_vec();
        columns[0] = Arc::new(StringArray::from(symbols));
        let rows = RecordBatch::try_new(Arc::clone(written), columns).map_err(|e| e.to_string())?;
        let keep = BooleanArray::from(keep);
        arrow::compute::filter_record_batch(&rows, &keep).map_err(|e| e.to_string())
    }
}

/// Whether primary key `key` (column indices) of an upsert output holds every column that
/// identifies a row of an updating input of `schema`; an error naming the param says why not.
/// Any key does for an append-only input (its latest row of each key wins).
fn identifies_rows(key: &[usize], schema: &Schema) -> Result<(), (&'static str, String)> {
    if !is_updating(schema) {
        return Ok(());
    }
    let Some(row_key) = row_key(schema) else {
        let why = anduin_types::no_row_key(schema).unwrap_or(
            "the operators before the writer do not say which columns identify the rows of the updating stream (as a GROUP BY's grouping columns or a top-N's partition columns do, when they reach the writer as they are: not computed over, not dropped); write with mode = 'changelog'",
        );
        return Err((
            "primary_key",
            format!("no column of the input is known to identify its rows: {why}"),
        ));
    };
    let missing: Vec<&str> = row_key
        .iter()
        .filter(|i| !key.contains(i))
        .map(|i| schema.field(*i).name().as_str())
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let needed: Vec<&str> = row_key
        .iter()
        .map(|i| schema.field(*i).name().as_str())
        .collect();
    Err((
        "primary_key",
        format!(
            "the primary key does not identify the rows of the updating input: it lacks {} (the rows are identified by {}, {}); two rows would share a key and overwrite each other",
            missing.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", "),
            needed.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", "),
            anduin_types::row_key_of(schema)
                .unwrap_or("the columns of the GROUP BY that makes the stream updating")
        ),
    ))
}

/// The names of the columns of rows of `schema` (without the change kind).
fn data_columns(schema: &Schema) -> Vec<String> {
    schema
        .fields()
        .iter()
        .filter(|f| f.name() != CHANGE_COLUMN)
        .map(|f| f.name().clone())
        .collect()
}

/// Why a writer of `mode` cannot take an updating stream, or `Ok` if it can.
pub fn updates_accepted(mode: &str) -> Result<(), String> {
    match mode {
        "changelog" | "upsert" => Ok(()),
        _ => Err("it writes an append-only output (mode = 'append'); write the changes with mode = 'changelog' (an `op` column of +I, -U, +U, -D) or mode = 'upsert' with primary_key = '…'".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use anduin_types::{change_column, with_row_key};
    use arrow::array::Int64Array;

    /// Changes to a table keyed by `k` (as a `GROUP BY k` makes them).
    fn updating() -> RecordBatch {
        let schema = Arc::new(with_row_key(
            vec![
                Field::new("k", DataType::Int64, true),
                Field::new("n", DataType::Int64, true),
                change_column(),
            ],
            &[0],
        ));
        let code = |k: ChangeKind| k.code();
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int64Array::from(vec![1, 1, 1, 2])),
                Arc::new(Int64Array::from(vec![1, 1, 2, 5])),
                Arc::new(Int8Array::from(vec![
                    code(ChangeKind::Insert),
                    code(ChangeKind::UpdateBefore),
                    code(ChangeKind::UpdateAfter),
                    code(ChangeKind::Delete),
                ])),
            ],
        )
        .expect("valid")
    }

    fn ops(b: &RecordBatch) -> Vec<String> {
        let a = b
            .column(0)
            .as_any()
            .downcast_ref::<StringArray>()
            .expect("text");
        a.iter().map(|s| s.unwrap_or("").to_string()).collect()
    }

    #[test]
    fn a_changelog_writes_every_change_with_its_op_first() {
        let b = updating();
        let mode = Mode::parse("changelog", None, &b.schema()).expect("valid");
        let written = mode.written_schema(&b.schema());
        let rows = mode.rows(&b, &written).expect("rows");
        assert_eq!(ops(&rows), ["+I", "-U", "+U", "-D"]);
        let names: Vec<&str> = written.fields().iter().map(|f| f.name().as_str()).collect();
        assert_eq!(names, ["op", "k", "n"]);
    }

    #[test]
    fn an_upsert_leaves_the_update_befores_out() {
        let b = updating();
        let mode = Mode::parse("upsert", Some("k"), &b.schema()).expect("valid");
        assert_eq!(mode, Mode::Upsert { key: vec![0] });
        let rows = mode
            .rows(&b, &mode.written_schema(&b.schema()))
            .expect("rows");
        assert_eq!(ops(&rows), ["+I", "+U", "-D"]);
    }

    #[test]
    fn an_update_before_that_no_update_after_follows_is_written_as_a_delete() {
        // k = 1 goes from 1 to 2 and a filter dropped the new row; k = 2 is updated as usual;
        // k = 3's -U comes last in the batch.
        let schema = updating().schema();
        let code = |k: ChangeKind| k.code();
        let b = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![
                Arc::new(Int64Array::from(vec![1, 2, 2, 3])),
                Arc::new(Int64Array::from(vec![1, 4, 5, 6])),
                Arc::new(Int8Array::from(vec![
                    code(ChangeKind::UpdateBefore),
                    code(ChangeKind::UpdateBefore),
                    code(ChangeKind::UpdateAfter),
                    code(ChangeKind::UpdateBefore),
                ])),
            ],
        )
        .expect("valid");
        let mode = Mode::parse("upsert", Some("k"), &schema).expect("valid");
        let rows = mode.rows(&b, &mode.written_schema(&schema)).expect("rows");
        assert_eq!(ops(&rows), ["-D", "+U", "-D"]);
        let k = rows
            .column(1)
            .as_any()
            .downcast_ref::<Int64Array>()
            .expect("ints");
        assert_eq!(k.values().to_vec(), [1, 2, 3]);
    }

    #[test]
    fn an_upsert_key_without_every_grouping_column_is_refused() {
        let keyed = with_row_key(
            vec![
                Field::new("a", DataType::Int64, true),
                Field::new("b", DataType::Int64, true),
                Field::new("n", DataType::Int64, true),
                change_column(),
            ],
            &[0, 1],
        );
        let (param, message) = Mode::parse("upsert", Some("a"), &keyed).expect_err("lacks b");
        assert_eq!(param, "primary_key");
        assert!(message.contains("it lacks `b`"), "{message}");
        assert!(Mode::parse("upsert", Some("b, a"), &keyed).is_ok());
        assert!(Mode::parse("upsert", Some("a, b, n"), &keyed).is_ok());
        let unknown = Schema::new(vec![
            Field::new("a", DataType::Int64, true),
            change_column(),
        ]);
        let (_, message) = Mode::parse("upsert", Some("a"), &unknown).expect_err("no row key");
        assert!(
            message.contains("no column of the input is known"),
            "{message}"
        );
        let appended = Schema::new(vec![Field::new("a", DataType::Int64, true)]);
        assert!(Mode::parse("upsert", Some("a"), &appended).is_ok());
    }

    #[test]
    fn a_column_named_op_is_refused_where_the_change_column_is_written() {
        let s = Schema::new(vec![
            Field::new("op", DataType::Utf8, true),
            change_column(),
        ]);
        let (param, message) = Mode::parse("changelog", None, &s).expect_err("op twice");
        assert_eq!(param, "mode");
        assert!(message.contains("column named `op`"), "{message}");
        assert!(Mode::parse(
            "append",
            None,
            &Schema::new(vec![Field::new("op", DataType::Utf8, true)])
        )
        .is_ok());
    }

    #[test]
    fn an_upsert_needs_a_primary_key_of_known_columns() {
        let b = updating();
        let s = b.schema();
        assert_eq!(
            Mode::parse("upsert", None, &s).expect_err("no key").0,
            "mode"
        );
        let (param, message) = Mode::parse("upsert", Some("k, __op"), &s).expect_err("op");
        assert_eq!(param, "primary_key");
        assert!(message.contains("unknown column `__op`"), "{message}");
        assert!(Mode::parse("changelog", Some("k"), &s).is_err());
    }

    #[test]
    fn an_append_only_input_is_all_inserts_in_a_changelog() {
        let schema = Arc::new(Schema::new(vec![Field::new("k", DataType::Int64, true)]));
        let b = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![Arc::new(Int64Array::from(vec![7, 8]))],
        )
        .expect("valid");
        let mode = Mode::Changelog;
        let rows = mode.rows(&b, &mode.written_schema(&schema)).expect("rows");
        assert_eq!(ops(&rows), ["+I", "+I"]);
    }
}
