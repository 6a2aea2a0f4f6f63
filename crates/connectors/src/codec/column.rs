//! The five column types anduin streams carry, resolved once from a schema.

use arrow::datatypes::{DataType, Schema, TimeUnit};

use super::CodecError;

/// One of the column types the codecs support.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ColumnKind {
    /// `Int64`.
    Int64,
    /// `Float64`.
    Float64,
    /// `Boolean`.
    Boolean,
    /// `Utf8`.
    Utf8,
    /// `Timestamp(Millisecond, None)`.
    TimestampMs,
}

impl ColumnKind {
    /// The kind for `data_type`, or `None` when the codecs do not support it.
    pub(crate) fn of(data_type: &DataType) -> Option<Self> {
        match data_type {
            DataType::Int64 => Some(ColumnKind::Int64),
            DataType::Float64 => Some(ColumnKind::Float64),
            DataType::Boolean => Some(ColumnKind::Boolean),
            DataType::Utf8 => Some(ColumnKind::Utf8),
            DataType::Timestamp(TimeUnit::Millisecond, None) => Some(ColumnKind::TimestampMs),
            _ => None,
        }
    }

    /// How a value of this kind is named in reject reasons ("is not an int").
    pub(crate) fn noun(self) -> &'static str {
        match self {
            ColumnKind::Int64 => "an int",
            ColumnKind::Float64 => "a float",
            ColumnKind::Boolean => "a boolean",
            ColumnKind::Utf8 => "a string",
            ColumnKind::TimestampMs => "a timestamp",
        }
    }
}

/// A schema column as the decoders see it.
#[derive(Debug, Clone)]
pub(crate) struct ColumnInfo {
    /// Field name.
    pub(crate) name: String,
    /// Value type.
    pub(crate) kind: ColumnKind,
    /// Whether nulls are allowed; a null in a non-nullable column rejects the record.
    pub(crate) nullable: bool,
    /// Whether it is the source's event time: a null rejects the record, whatever
    /// `nullable` says, with a reason that says so.
    pub(crate) event_time: bool,
}

/// Resolves every schema field, failing on the first unsupported type.
pub(crate) fn resolve_columns(schema: &Schema) -> Result<Vec<ColumnInfo>, CodecError> {
    schema
        .fields()
        .iter()
        .map(|f| match ColumnKind::of(f.data_type()) {
            Some(kind) => Ok(ColumnInfo {
                name: f.name().clone(),
                kind,
                nullable: f.is_nullable(),
                event_time: false,
            }),
            None => Err(CodecError::UnsupportedType {
                column: f.name().clone(),
                data_type: f.data_type().clone(),
            }),
        })
        .collect()
}

/// Shortens a value for a reject reason so one huge field cannot bloat the report.
pub(crate) fn excerpt(bytes: &[u8]) -> String {
    const MAX: usize = 64;
    let text = String::from_utf8_lossy(bytes);
    if text.chars().count() <= MAX {
        text.into_owned()
    } else {
        let mut short: String = text.chars().take(MAX).collect();
        short.push('…');
        short
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::datatypes::Field;

    #[test]
    fn an_unsupported_type_is_reported_with_its_column() {
        let schema = Schema::new(vec![
            Field::new("a", DataType::Int64, true),
            Field::new("b", DataType::Int32, true),
        ]);
        let err = resolve_columns(&schema).expect_err("Int32 is unsupported");
        assert!(
            err.to_string().contains("column `b` has type Int32"),
            "{err}"
        );
    }

    #[test]
    fn long_values_are_cut_in_excerpts() {
        let long = "x".repeat(100);
        assert_eq!(excerpt(long.as_bytes()).chars().count(), 65);
        assert_eq!(excerpt(b"abc"), "abc");
    }
}
