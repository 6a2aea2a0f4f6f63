//! The changelog model: how the rows of an updating stream say what they change.
//!
//! Append-only streams (the default: readers, filters, maps, windows, joins with a time bound,
//! row patterns) carry rows that are only ever added. An *updating* stream (the result of a
//! `GROUP BY` without a window, for one) carries changes to a table, each row with a
//! [`ChangeKind`] as Flink's `RowKind`: `+I` insert, `-U` the row before an update, `+U` the row
//! after it, `-D` delete. Folding the changes in order into a table gives the result.
//!
//! **Representation.** A batch of an updating stream is an ordinary Arrow `RecordBatch` whose
//! last column is [`CHANGE_COLUMN`] (`__op`, `Int8`, never null) holding the
//! [`ChangeKind::code`] of each row; the stream's schema has that column, and the planner
//! tells updating streams from append-only ones by it ([`is_updating`]). An append-only batch
//! has no such column, so an append-only query carries, computes and checks nothing more than
//! before: no per-row flag, no wrapper type, no branch in the runtime's channels. Operators that
//! pass rows through unchanged (a filter) pass the change kind with them; a map keeps the column
//! as its last; an operator that does not understand changes is refused an updating input
//! before the query starts.
//!
//! ```
//! use anduin_types::{change_column, is_updating, ChangeKind};
//! use arrow::datatypes::{DataType, Field, Schema};
//!
//! let appended = Schema::new(vec![Field::new("k", DataType::Int64, true)]);
//! assert!(!is_updating(&appended));
//! let updating = Schema::new(vec![Field::new("k", DataType::Int64, true), change_column()]);
//! assert!(is_updating(&updating));
//! assert_eq!(ChangeKind::from_code(ChangeKind::UpdateAfter.code()), Some(ChangeKind::UpdateAfter));
//! assert_eq!(ChangeKind::Delete.symbol(), "-D");
//! ```

use arrow::datatypes::{DataType, Field, Schema};

/// The name of the change-kind column, the last of an updating stream's schema.
pub const CHANGE_COLUMN: &str = "__op";

/// What a row of an updating stream does to the table it describes (Flink's `RowKind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(i8)]
pub enum ChangeKind {
    /// `+I`: a new row.
    Insert = 0,
    /// `-U`: a row about to be replaced by the `+U` that follows it (retracted).
    UpdateBefore = 1,
    /// `+U`: the new value of the row a `-U` retracted.
    UpdateAfter = 2,
    /// `-D`: a row removed.
    Delete = 3,
}

impl ChangeKind {
    /// Every kind, in code order.
    pub const ALL: [ChangeKind; 4] = [
        ChangeKind::Insert,
        ChangeKind::UpdateBefore,
        ChangeKind::UpdateAfter,
        ChangeKind::Delete,
    ];

    /// The value of [`CHANGE_COLUMN`] for this kind.
    pub fn code(self) -> i8 {
        self as i8
    }

    /// The kind of a [`CHANGE_COLUMN`] value; `None` for a value no kind has.
    pub fn from_code(code: i8) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.code() == code)
    }

    /// `+I`, `-U`, `+U` or `-D`, as changelog outputs write it.
    pub fn symbol(self) -> &'static str {
        match self {
            ChangeKind::Insert => "+I",
            ChangeKind::UpdateBefore => "-U",
            ChangeKind::UpdateAfter => "+U",
            ChangeKind::Delete => "-D",
        }
    }

    /// Whether the row is added to the table (`+I`, `+U`) rather than taken out of it.
    pub fn adds(self) -> bool {
        matches!(self, ChangeKind::Insert | ChangeKind::UpdateAfter)
    }
}

impl std::fmt::Display for ChangeKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.symbol())
    }
}

/// The field of [`CHANGE_COLUMN`].
pub fn change_column() -> Field {
    Field::new(CHANGE_COLUMN, DataType::Int8, false)
}

/// The field metadata that marks a column of an updating stream's *row key*: the columns
/// whose values identify one row of the table the changes describe (for a `GROUP BY`, its
/// grouping columns). See [`with_row_key`].
pub const ROW_KEY_METADATA: &str = "anduin.row_key";

/// `fields` with the columns at `key` marked as the stream's row key, and the schema marked
/// as one whose row key is known (an empty key: the table has at most one row, as a global
/// aggregate's). Operators that pass a key column on unchanged keep the mark
/// ([`row_key`] reads it); a writer in upsert mode checks its primary key against it.
pub fn with_row_key(fields: Vec<Field>, key: &[usize]) -> Schema {
    let fields = fields
        .into_iter()
        .enumerate()
        .map(|(i, f)| {
            if key.contains(&i) {
                let mut metadata = f.metadata().clone();
                metadata.insert(ROW_KEY_METADATA.to_string(), "true".to_string());
                f.with_metadata(metadata)
            } else {
                f
            }
        })
        .collect::<Vec<_>>();
    let metadata = [(ROW_KEY_METADATA.to_string(), "known".to_string())].into();
    Schema::new_with_metadata(fields, metadata)
}

/// The schema metadata that says what an updating stream's row key is made of, in words (for
/// a message: "the columns of the GROUP BY", "the partition columns and the row number of the
/// top-N"); see [`with_row_key_of`]. Absent: the columns of a GROUP BY.
pub const ROW_KEY_OF_METADATA: &str = "anduin.row_key_of";

/// The schema metadata that says why the rows of an updating stream have no known key, and
/// what to do instead (set by the operator that made the stream so, or lost its key); see
/// [`without_row_key`].
pub const NO_ROW_KEY_METADATA: &str = "anduin.no_row_key";

/// [`with_row_key`], saying what the key is made of (`of`, for messages: [`row_key_of`]).
pub fn with_row_key_of(fields: Vec<Field>, key: &[usize], of: &str) -> Schema {
    let schema = with_row_key(fields, key);
    let mut metadata = schema.metadata().clone();
    metadata.insert(ROW_KEY_OF_METADATA.to_string(), of.to_string());
    schema.with_metadata(metadata)
}

/// `fields` as an updating stream whose rows have no known key, and why (`why`, for the
/// message of a writer asked to upsert them: [`no_row_key`]).
pub fn without_row_key(fields: Vec<Field>, why: &str) -> Schema {
    Schema::new_with_metadata(
        fields,
        [(NO_ROW_KEY_METADATA.to_string(), why.to_string())].into(),
    )
}

/// What the row key of this schema is made of, in words ([`with_row_key_of`]), if said.
pub fn row_key_of(schema: &Schema) -> Option<&str> {
    schema
        .metadata()
        .get(ROW_KEY_OF_METADATA)
        .map(String::as_str)
}

/// Why the rows of this schema have no known key ([`without_row_key`]), if said.
pub fn no_row_key(schema: &Schema) -> Option<&str> {
    schema
        .metadata()
        .get(NO_ROW_KEY_METADATA)
        .map(String::as_str)
}

/// The row key of an updating stream of this schema (column indices), if it is known: the
/// columns [`with_row_key`] marked, kept by every operator since. `None` when no operator
/// said, or when one on the way dropped or computed over a key column.
pub fn row_key(schema: &Schema) -> Option<Vec<usize>> {
    schema.metadata().get(ROW_KEY_METADATA)?;
    Some(
        schema
            .fields()
            .iter()
            .enumerate()
            .filter(|(_, f)| f.metadata().contains_key(ROW_KEY_METADATA))
            .map(|(i, _)| i)
            .collect(),
    )
}

/// Whether a stream of this schema is updating: its last column is [`CHANGE_COLUMN`].
pub fn is_updating(schema: &Schema) -> bool {
    schema
        .fields()
        .last()
        .is_some_and(|f| f.name() == CHANGE_COLUMN && f.data_type() == &DataType::Int8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_round_trips_through_its_code_and_has_a_symbol() {
        for k in ChangeKind::ALL {
            assert_eq!(ChangeKind::from_code(k.code()), Some(k));
        }
        assert_eq!(ChangeKind::from_code(4), None);
        let symbols: Vec<&str> = ChangeKind::ALL.iter().map(|k| k.symbol()).collect();
        assert_eq!(symbols, ["+I", "-U", "+U", "-D"]);
    }

    #[test]
    fn a_row_key_is_known_only_where_an_operator_marked_it() {
        let fields = vec![
            Field::new("k", DataType::Int64, true),
            Field::new("n", DataType::Int64, true),
            change_column(),
        ];
        assert_eq!(row_key(&Schema::new(fields.clone())), None);
        assert_eq!(row_key(&with_row_key(fields.clone(), &[0])), Some(vec![0]));
        assert_eq!(row_key(&with_row_key(fields, &[])), Some(vec![]));
    }

    #[test]
    fn a_column_named_op_elsewhere_or_of_another_type_is_not_a_change_kind() {
        let first = Schema::new(vec![
            change_column(),
            Field::new("k", DataType::Int64, true),
        ]);
        assert!(!is_updating(&first));
        let text = Schema::new(vec![Field::new(CHANGE_COLUMN, DataType::Utf8, false)]);
        assert!(!is_updating(&text));
        assert!(!is_updating(&Schema::empty()));
    }
}
