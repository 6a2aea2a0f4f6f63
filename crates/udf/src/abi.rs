//! The SQL types a function may take and return, and the WebAssembly values they travel as.

use std::fmt;

use arrow::datatypes::DataType;
use wasmtime::ValType;

/// A type of a UDF's argument or result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SqlType {
    /// `BIGINT`: an `i64`.
    Bigint,
    /// `DOUBLE`: an `f64`.
    Double,
    /// `BOOLEAN`: an `i32`, 0 or 1.
    Boolean,
    /// `VARCHAR`: UTF-8 bytes in the module's memory.
    Varchar,
}

impl SqlType {
    /// The type named `name` (any case; the usual synonyms: `INT8`, `INTEGER`, `FLOAT8`,
    /// `TEXT`, `STRING`, `BOOL`), if a UDF may use it.
    pub fn parse(name: &str) -> Option<SqlType> {
        match name.trim().to_ascii_uppercase().as_str() {
            "BIGINT" | "INT8" | "INTEGER" | "INT" | "LONG" => Some(SqlType::Bigint),
            "DOUBLE" | "DOUBLE PRECISION" | "FLOAT8" | "FLOAT" => Some(SqlType::Double),
            "BOOLEAN" | "BOOL" => Some(SqlType::Boolean),
            "VARCHAR" | "TEXT" | "STRING" => Some(SqlType::Varchar),
            _ => None,
        }
    }

    /// The Arrow type of its column.
    pub fn arrow(self) -> DataType {
        match self {
            SqlType::Bigint => DataType::Int64,
            SqlType::Double => DataType::Float64,
            SqlType::Boolean => DataType::Boolean,
            SqlType::Varchar => DataType::Utf8,
        }
    }

    /// The WebAssembly parameters an argument of this type is passed as.
    pub(crate) fn params(self) -> &'static [ValType] {
        match self {
            SqlType::Bigint => &[ValType::I64],
            SqlType::Double => &[ValType::F64],
            SqlType::Boolean => &[ValType::I32],
            SqlType::Varchar => &[ValType::I32, ValType::I32],
        }
    }

    /// The WebAssembly result a result of this type is returned as.
    pub(crate) fn result(self) -> ValType {
        match self {
            SqlType::Bigint | SqlType::Varchar => ValType::I64,
            SqlType::Double => ValType::F64,
            SqlType::Boolean => ValType::I32,
        }
    }
}

impl fmt::Display for SqlType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SqlType::Bigint => "BIGINT",
            SqlType::Double => "DOUBLE",
            SqlType::Boolean => "BOOLEAN",
            SqlType::Varchar => "VARCHAR",
        })
    }
}

/// A WebAssembly function type as text: `(i64, i64) -> i64`.
pub(crate) fn show_wasm(params: &[ValType], results: &[ValType]) -> String {
    let list = |v: &[ValType]| {
        v.iter()
            .map(|t| match t {
                ValType::I32 => "i32".to_string(),
                ValType::I64 => "i64".to_string(),
                ValType::F32 => "f32".to_string(),
                ValType::F64 => "f64".to_string(),
                ValType::V128 => "v128".to_string(),
                ValType::Ref(r) => r.to_string(),
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let results = match results {
        [one] => list(std::slice::from_ref(one)),
        more => format!("({})", list(more)),
    };
    format!("({}) -> {results}", list(params))
}

/// Whether two lists of WebAssembly types are the same.
pub(crate) fn same(a: &[ValType], b: &[ValType]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| ValType::eq(x, y))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synonyms_name_the_four_types() {
        assert_eq!(SqlType::parse("int8"), Some(SqlType::Bigint));
        assert_eq!(SqlType::parse("Text"), Some(SqlType::Varchar));
        assert_eq!(SqlType::parse("bool"), Some(SqlType::Boolean));
        assert_eq!(SqlType::parse("double"), Some(SqlType::Double));
        assert_eq!(SqlType::parse("TIMESTAMP"), None);
    }

    #[test]
    fn a_wasm_type_reads_as_written_in_the_docs() {
        assert_eq!(
            show_wasm(&[ValType::I32, ValType::I32], &[ValType::I64]),
            "(i32, i32) -> i64"
        );
        assert_eq!(show_wasm(&[], &[]), "() -> ()");
    }
}
