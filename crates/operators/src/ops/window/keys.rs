//! Group keys: the key columns of rows mapped to dense group ids (0, 1, 2, … in order of
//! first appearance), and back to key columns for output.

use std::sync::Arc;

use ahash::RandomState;
use arrow::array::{ArrayRef, BooleanArray};
use arrow::datatypes::{DataType, SchemaRef};
use arrow::row::{RowConverter, Rows, SortField};
use std::collections::HashMap;

use crate::OperatorError;

/// Converts key columns to comparable bytes (Arrow's row format) and back. A global window
/// (no key columns) gives every row the same key.
#[derive(Debug, Clone)]
pub(crate) struct KeyCodec {
    converter: Arc<RowConverter>,
    /// The key columns' schema (empty for a global window).
    pub schema: SchemaRef,
}

impl KeyCodec {
    pub(crate) fn new(schema: SchemaRef) -> Result<Self, String> {
        let fields = if schema.fields().is_empty() {
            vec![SortField::new(DataType::Boolean)]
        } else {
            schema
                .fields()
                .iter()
                .map(|f| SortField::new(f.data_type().clone()))
                .collect()
        };
        let converter = RowConverter::new(fields).map_err(|e| e.to_string())?;
        Ok(Self {
            converter: Arc::new(converter),
            schema,
        })
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
        self.converter
            .convert_columns(columns)
            .map_err(|e| arrow_error(operator, &e))
    }

    /// An empty set of rows to append to.
    pub(crate) fn empty_rows(&self) -> Rows {
        self.converter.empty_rows(0, 0)
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
        self.converter
            .convert_rows(rows)
            .map_err(|e| arrow_error(operator, &e))
    }

    /// Key rows from key columns as [`KeyCodec::columns`] gave them (for restoring).
    pub(crate) fn rows_from_columns(
        &self,
        columns: &[ArrayRef],
        rows: usize,
        operator: &str,
    ) -> Result<Rows, OperatorError> {
        self.rows(columns, rows, operator)
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
