//! The column types of the `.flow` language and their Arrow representation.

use std::fmt;

use arrow::datatypes::{DataType, TimeUnit};
use serde::{Deserialize, Serialize};

/// A column type as written in a `type` block (`column name = "ts", type = "timestamp"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ColumnType {
    /// 64-bit signed integer (`int`, `bigint`, `long`).
    Int,
    /// 64-bit IEEE float (`double`, `float`).
    Double,
    /// Boolean (`bool`, `boolean`).
    Bool,
    /// UTF-8 text (`string`, `varchar`, `text`).
    String,
    /// Milliseconds since the Unix epoch, UTC (`timestamp`).
    Timestamp,
}

impl ColumnType {
    /// Every type name the language accepts, canonical names first.
    pub const NAMES: &'static [&'static str] = &[
        "int",
        "double",
        "bool",
        "string",
        "timestamp",
        "bigint",
        "long",
        "float",
        "boolean",
        "varchar",
        "text",
    ];

    /// Parses a type name as written in a `.flow` file; `None` if it is not one.
    ///
    /// # Examples
    /// ```
    /// use anduin_types::ColumnType;
    /// assert_eq!(ColumnType::parse("bigint"), Some(ColumnType::Int));
    /// assert_eq!(ColumnType::parse("decimal"), None);
    /// ```
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name.to_ascii_lowercase().as_str() {
            "int" | "bigint" | "long" => Self::Int,
            "double" | "float" => Self::Double,
            "bool" | "boolean" => Self::Bool,
            "string" | "varchar" | "text" => Self::String,
            "timestamp" => Self::Timestamp,
            _ => return None,
        })
    }

    /// The Arrow type that holds values of this column type.
    pub fn arrow_type(self) -> DataType {
        match self {
            Self::Int => DataType::Int64,
            Self::Double => DataType::Float64,
            Self::Bool => DataType::Boolean,
            Self::String => DataType::Utf8,
            Self::Timestamp => DataType::Timestamp(TimeUnit::Millisecond, None),
        }
    }

    /// The column type of an Arrow type, if the language has one for it.
    pub fn from_arrow(dt: &DataType) -> Option<Self> {
        Some(match dt {
            DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::UInt8
            | DataType::UInt16
            | DataType::UInt32 => Self::Int,
            DataType::Float16 | DataType::Float32 | DataType::Float64 => Self::Double,
            DataType::Boolean => Self::Bool,
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => Self::String,
            DataType::Timestamp(TimeUnit::Millisecond, _) => Self::Timestamp,
            _ => return None,
        })
    }

    /// The column type that carries values of Arrow type `dt` computed by an expression, after
    /// a cast: narrower ints widen to `int`, floats and decimals become `double`, dates and
    /// timestamps of any unit or zone become `timestamp` (milliseconds, UTC). `None` for types
    /// a stream cannot carry (structs, lists, intervals, an untyped NULL).
    ///
    /// # Examples
    /// ```
    /// use arrow::datatypes::{DataType, TimeUnit};
    /// use anduin_types::ColumnType;
    /// assert_eq!(ColumnType::carrying(&DataType::Int32), Some(ColumnType::Int));
    /// assert_eq!(ColumnType::carrying(&DataType::Timestamp(TimeUnit::Nanosecond, None)), Some(ColumnType::Timestamp));
    /// assert_eq!(ColumnType::carrying(&DataType::Null), None);
    /// ```
    pub fn carrying(dt: &DataType) -> Option<Self> {
        Some(match dt {
            DataType::UInt64 => Self::Int,
            DataType::Decimal32(..)
            | DataType::Decimal64(..)
            | DataType::Decimal128(..)
            | DataType::Decimal256(..) => Self::Double,
            DataType::Timestamp(_, _) | DataType::Date32 | DataType::Date64 => Self::Timestamp,
            other => return Self::from_arrow(other),
        })
    }

    /// The item type of `dt` if it is a list of one of the column types, as a pattern's
    /// `array_agg` measure makes (Arrow `List` of the type's own Arrow type): a column no
    /// type names, which a `map` passes on to a writer and nothing else computes on.
    ///
    /// # Examples
    /// ```
    /// use std::sync::Arc;
    /// use arrow::datatypes::{DataType, Field};
    /// use anduin_types::ColumnType;
    /// let list = |t| DataType::List(Arc::new(Field::new_list_field(t, true)));
    /// assert_eq!(ColumnType::list_item(&list(DataType::Utf8)), Some(ColumnType::String));
    /// assert_eq!(ColumnType::list_item(&list(DataType::Int32)), None);
    /// assert_eq!(ColumnType::list_item(&DataType::Int64), None);
    /// ```
    pub fn list_item(dt: &DataType) -> Option<Self> {
        match dt {
            DataType::List(item) => {
                Self::from_arrow(item.data_type()).filter(|t| t.arrow_type() == *item.data_type())
            }
            _ => None,
        }
    }

    /// The canonical name, as `explain` prints it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Int => "int",
            Self::Double => "double",
            Self::Bool => "bool",
            Self::String => "string",
            Self::Timestamp => "timestamp",
        }
    }
}

impl fmt::Display for ColumnType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_parses_and_round_trips_through_arrow() {
        for name in ColumnType::NAMES {
            let t = ColumnType::parse(name).expect("listed names parse");
            assert_eq!(ColumnType::from_arrow(&t.arrow_type()), Some(t));
        }
    }
}
