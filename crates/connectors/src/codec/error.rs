//! Fatal codec errors.
//!
//! Only problems that make a whole file (or the decoder itself) unusable are errors: a header
//! that lacks a schema column, a schema with a type the codecs do not support, a reserved CSV
//! delimiter, or a failure to assemble the output batch. A bad *record* is never an error; it becomes a
//! [`Rejected`](super::Rejected) entry and decoding goes on.

use arrow::datatypes::DataType;
use arrow::error::ArrowError;

/// A fatal decoding problem. After one is returned for a file, the decoder keeps returning it
/// until the next `start_file`.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum CodecError {
    /// The header of a CSV file does not name a column the schema requires.
    #[error(
        "{file}: line {line}: header has no column `{missing}` (header columns: {})",
        header_names(header)
    )]
    MissingColumn {
        /// The file or stream name given to `start_file`.
        file: String,
        /// 1-based line of the header record.
        line: u64,
        /// The header's column names, trimmed, in file order.
        header: Vec<String>,
        /// The schema column that is absent from the header.
        missing: String,
    },

    /// The header names a schema column twice.
    #[error(
        "{file}: line {line}: header has column `{column}` twice: which one to read is unclear"
    )]
    DuplicateColumn {
        /// The file or stream name given to `start_file`.
        file: String,
        /// 1-based line of the header record.
        line: u64,
        /// The schema column named twice.
        column: String,
    },

    /// The schema has a column of a type the codecs do not handle.
    #[error(
        "column `{column}` has type {data_type}, but the codecs support only \
         Int64, Float64, Boolean, Utf8 and Timestamp(Millisecond)"
    )]
    UnsupportedType {
        /// The schema column.
        column: String,
        /// Its type.
        data_type: DataType,
    },

    /// The CSV delimiter is a byte the format reserves.
    #[error("CSV delimiter {:?} is not allowed: `\"`, `\\r` and `\\n` are reserved", char::from(*delimiter))]
    InvalidDelimiter {
        /// The rejected delimiter byte.
        delimiter: u8,
    },

    /// Assembling or filtering the output batch failed; this is a bug in the codec, since the
    /// builders are derived from the schema.
    #[error("{file}: building the output batch failed (codec bug): {message}")]
    Internal {
        /// The file or stream name given to `start_file`.
        file: String,
        /// The Arrow error text.
        message: String,
    },
}

impl CodecError {
    /// Wraps an Arrow error raised while assembling a batch for `file`.
    pub(crate) fn internal(file: &str, err: &ArrowError) -> Self {
        CodecError::Internal {
            file: file.to_owned(),
            message: err.to_string(),
        }
    }
}

/// The names of a header for a message: each with control characters escaped and cut to 80
/// characters, at most 20 of them (a binary file's "header" can be a megabyte of anything).
fn header_names(header: &[String]) -> String {
    const NAMES: usize = 20;
    let mut names: Vec<String> = header
        .iter()
        .take(NAMES)
        .map(|n| {
            let escaped: String = n.escape_debug().collect();
            if escaped.chars().count() > 80 {
                format!("{}…", escaped.chars().take(80).collect::<String>())
            } else {
                escaped
            }
        })
        .collect();
    if header.len() > NAMES {
        names.push(format!("… and {} more", header.len() - NAMES));
    }
    names.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_delimiter_message_shows_the_byte() {
        let err = CodecError::InvalidDelimiter { delimiter: b'"' };
        assert_eq!(
            err.to_string(),
            "CSV delimiter '\"' is not allowed: `\"`, `\\r` and `\\n` are reserved"
        );
    }

    #[test]
    fn missing_column_message_names_file_line_header_and_column() {
        let err = CodecError::MissingColumn {
            file: "events.csv".into(),
            line: 1,
            header: vec!["ts".into(), "sensor".into()],
            missing: "value".into(),
        };
        assert_eq!(
            err.to_string(),
            "events.csv: line 1: header has no column `value` (header columns: ts, sensor)"
        );
    }

    #[test]
    fn a_huge_header_is_named_in_part_with_control_characters_escaped() {
        let mut header: Vec<String> = (0..1000).map(|i| format!("c{i}")).collect();
        header[0] = "\u{1b}]0;title\u{7}".into();
        header[1] = "x".repeat(10_000);
        let err = CodecError::MissingColumn {
            file: "bin.csv".into(),
            line: 1,
            header,
            missing: "ts".into(),
        };
        let text = err.to_string();
        assert!(text.len() < 600, "{}", text.len());
        assert!(!text.contains('\u{1b}'), "{text}");
        assert!(text.contains("\\u{1b}]0;title\\u{7}"), "{text}");
        assert!(text.ends_with(", … and 980 more)"), "{text}");
    }
}
