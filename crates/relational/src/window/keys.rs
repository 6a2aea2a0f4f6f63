//! Group keys: the key columns of rows mapped to dense group ids (0, 1, 2, … in order of
//! first appearance), and back to key columns for output.

use std::sync::Arc;

use ahash::RandomState;
use arrow::array::{ArrayRef, BooleanArray};
use arrow::datatypes::{DataType, SchemaRef};
use arrow::row::{Row, Rows};
use std::collections::HashMap;

use anduin_operator_api::keys::KeyEncoder;
use anduin_operator_api::OperatorError;

/// Converts key columns to comparable bytes (the exchange's [`KeyEncoder`]) and back. A
/// global window (no key columns) gives every row the same key: in memory a constant
/// `true` column, stored as no bytes.
#[derive(Debug, Clone)]
pub(crate) struct KeyCodec {
    encoder: KeyEncoder,
    /// The key columns' schema (empty for a global window).
    pub schema: SchemaRef,
}

impl KeyCodec {
    pub(crate) fn new(schema: SchemaRef) -> Result<Self, String> {
        let types: Vec<DataType> = if schema.fields().is_empty() {
            vec![DataType::Boolean]
        } else {
            schema
                .fields()
                .iter()
                .map(|f| f.data_type().clone())
                .collect()
        };
        let encoder = KeyEncoder::new(types).map_err(|e| e.to_string())?;
        Ok(Self { encoder, schema })
    }

    /// The key of each of `rows` rows, from `columns` (the key columns of a batch).
    pub(crate) fn rows(
        &self,
        columns: &[ArrayRef],
        rows: usize,
        operator: &str,
    ) -> Result<Rows, OperatorError> {
        let constant: [ArrayRef; 1];
        let columns = if self.is_global() {
            constant = [Arc::new(BooleanArray::from(vec![true; rows]))];
            &constant[..]
        } else {
            columns
        };
        self.encoder
            .encode(columns)
            .map_err(|e| arrow_error(operator, &e))
    }

    /// An empty set of rows to append to.
    pub(crate) fn empty_rows(&self) -> Rows {
        self.encoder.empty_rows()
    }

    /// Key columns from rows (none for a global window).
    pub(crate) fn columns<'a>(
        &self,
        rows: impl IntoIterator<Item = arrow::row::Row<'a>>,
        operator: &str,
    ) -> Result<Vec<ArrayRef>, OperatorError> {
        if self.is_global() {
            return Ok(Vec::new());
        }
        self.encoder
            .decode(rows)
            .map_err(|e| arrow_error(operator, &e))
    }

    /// The bytes a key is checkpointed under, whose key group is the one the hash exchange
    /// routes its rows by: its row bytes; empty for a global window.
    pub(crate) fn stored<'a>(&self, row: Row<'a>) -> &'a [u8] {
        if self.is_global() {
            &[]
        } else {
            row.data()
        }
    }

    /// The key rows of keys as [`KeyCodec::stored`] gave them.
    pub(crate) fn rows_of_stored<'a>(
        &self,
        stored: impl IntoIterator<Item = &'a [u8]>,
        operator: &str,
    ) -> Result<Rows, OperatorError> {
        if self.is_global() {
            let n = stored.into_iter().count();
            return self.rows(&[], n, operator);
        }
        let parser = self.encoder.parser();
        let mut rows = self.empty_rows();
        for bytes in stored {
            rows.push(parser.parse(bytes));
        }
        Ok(rows)
    }

    /// Whether there are no key columns (a global window).
    pub(crate) fn is_global(&self) -> bool {
        self.schema.fields().is_empty()
    }
}

/// Keys to dense group ids, for one window or pane.
#[derive(Debug)]
pub(crate) struct KeyMap {
    ids: HashMap<Box<[u8]>, usize, RandomState>,
    /// The keys, in group-id order.
    keys: Rows,
}

impl KeyMap {
    pub(crate) fn new(codec: &KeyCodec) -> Self {
        Self {
            ids: HashMap::with_hasher(RandomState::with_seeds(1, 2, 3, 4)),
            keys: codec.empty_rows(),
        }
    }

    /// Bytes the keys take, about: their rows, and the map's copy of each with its id.
    pub(crate) fn size(&self) -> usize {
        let entry = std::mem::size_of::<(Box<[u8]>, usize)>();
        self.keys.size() * 2 + self.ids.capacity() * entry
    }

    /// The group id of each row in `rows[from..to]`, creating groups for new keys.
    pub(crate) fn group_ids(&mut self, rows: &Rows, from: usize, to: usize, out: &mut Vec<usize>) {
        out.clear();
        for i in from..to {
            let row = rows.row(i);
            let bytes = row.as_ref();
            let id = match self.ids.get(bytes) {
                Some(id) => *id,
                None => {
                    let id = self.keys.num_rows();
                    self.keys.push(row);
                    self.ids.insert(bytes.into(), id);
                    id
                }
            };
            out.push(id);
        }
    }

    /// The group id of one key, creating it if new.
    pub(crate) fn group_of(&mut self, row: arrow::row::Row<'_>) -> usize {
        let bytes = row.as_ref();
        if let Some(id) = self.ids.get(bytes) {
            return *id;
        }
        let id = self.keys.num_rows();
        self.keys.push(row);
        self.ids.insert(bytes.into(), id);
        id
    }

    /// How many groups.
    pub(crate) fn len(&self) -> usize {
        self.keys.num_rows()
    }

    /// The keys in group-id order.
    pub(crate) fn keys(&self) -> &Rows {
        &self.keys
    }

    /// The keys in group-id order, giving the map up.
    pub(crate) fn into_keys(self) -> Rows {
        self.keys
    }

    /// A map whose groups are `keys`, in order (ids 0, 1, …).
    pub(crate) fn from_keys(codec: &KeyCodec, keys: &Rows) -> Self {
        let mut map = Self::new(codec);
        for row in keys.iter() {
            map.group_of(row);
        }
        map
    }
}

pub(crate) fn arrow_error(operator: &str, e: &arrow::error::ArrowError) -> OperatorError {
    OperatorError::Execution {
        operator: operator.to_string(),
        message: e.to_string(),
    }
}

/// How a keyed operator's instances share its input (`partition_by` of its binding): by its
/// `key_columns`, or all rows to one instance without keys — which then cannot run in
/// parallel: a `parallelism` above 1 is refused, `what` naming the operator ("an aggregate
/// without `keys` (one group)").
pub(crate) fn partitioned_by(
    p: &anduin_operator_api::Params,
    key_columns: &[usize],
    what: &str,
) -> Result<Vec<Option<Vec<usize>>>, anduin_types::Diagnostics> {
    if let Some(n) = p.int("parallelism") {
        if n < 1 {
            return Err(p.error("parallelism", "must be at least 1").into());
        }
        if n > 1 && key_columns.is_empty() {
            return Err(p
                .error(
                    "parallelism",
                    format!("{what} cannot run in parallel: give it keys, or parallelism 1"),
                )
                .into());
        }
    }
    Ok(if key_columns.is_empty() {
        vec![None]
    } else {
        vec![Some(key_columns.to_vec())]
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int64Array, StringArray};
    use arrow::datatypes::{Field, Schema};
    use arrow::row::{RowConverter, SortField};

    /// Checkpointed entries live in the key group of their key's bytes, which must be the
    /// bytes the hash exchange (anduin-runtime's `channel.rs`) routes the key's rows by: a
    /// row converter over the key columns' types, in the order of `keys`.
    #[test]
    fn stored_keys_are_the_bytes_the_hash_exchange_routes_by() {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from(vec![
                Some("a"),
                None,
                Some("héllo"),
                Some(""),
            ])),
            Arc::new(Int64Array::from(vec![
                Some(-1),
                Some(7),
                None,
                Some(i64::MAX),
            ])),
        ];
        let schema = Arc::new(Schema::new(vec![
            Field::new("name", DataType::Utf8, true),
            Field::new("id", DataType::Int64, false),
        ]));
        let codec = KeyCodec::new(schema).expect("a codec");
        let rows = codec.rows(&columns, 4, "w").expect("rows");
        let exchange = RowConverter::new(
            columns
                .iter()
                .map(|c| SortField::new(c.data_type().clone()))
                .collect(),
        )
        .expect("a converter");
        let routed = exchange.convert_columns(&columns).expect("rows");
        for i in 0..4 {
            assert_eq!(codec.stored(rows.row(i)), routed.row(i).as_ref());
        }
        let back = codec
            .rows_of_stored((0..4).map(|i| codec.stored(rows.row(i))), "w")
            .expect("parses");
        assert_eq!(codec.columns(back.iter(), "w").expect("columns"), columns);
    }

    #[test]
    fn a_global_window_stores_its_one_key_as_no_bytes() {
        let codec = KeyCodec::new(Arc::new(Schema::empty())).expect("a codec");
        let rows = codec.rows(&[], 2, "w").expect("rows");
        assert_eq!(codec.stored(rows.row(1)), b"");
        let back = codec.rows_of_stored([&b""[..]], "w").expect("rows");
        assert_eq!(back.row(0), rows.row(0));
    }
}
