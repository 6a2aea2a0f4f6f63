//! Partitioning by ranges of a column's value (the splitter `by = "range"` of the paper's
//! partitioning pattern): `param ranges = "value: 10, 20"` on a stateless operator runs it in
//! three instances, the first taking the rows whose `value` is below 10 (and those whose
//! `value` is null), the second those from 10 up to 20, the third those from 20 on.
//!
//! Only a stateless operator is split this way: a keyed operator's state is kept, restored
//! and rescaled by key group (a hash of the key), and its instances own ranges of key groups;
//! a range of values would put one key group's keys on several instances.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, StringArray};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Schema};
use arrow::row::{Row, RowConverter, Rows, SortField};

/// The param that asks for it.
pub const PARAM: &str = "ranges";

/// The most bounds: one instance more than them is the most a partitioning rule makes
/// ([`anduin_rewrite::MAX_COPIES`]).
const MAX_BOUNDS: u64 = anduin_rewrite::MAX_COPIES - 1;

/// A column and the bounds that split its values into `bounds.len() + 1` ranges.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ranges {
    /// The column whose value picks the instance.
    pub column: String,
    /// The lower bound of each range after the first, as written, in increasing order.
    pub bounds: Vec<String>,
}

/// Why a `ranges` param cannot split the rows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RangesError {
    /// Not of the form `COLUMN: BOUND, BOUND, …`.
    #[error("`ranges` is `COLUMN: BOUND, BOUND, …` (e.g. \"value: 10, 20\" for three instances), not \"{0}\"")]
    Form(String),
    /// A bound is empty, or a quoted one not closed.
    #[error(
        "`ranges` bound {number} {why} (in \"{text}\"); quote a bound holding a comma as 'a,b'"
    )]
    BadBound {
        /// Which bound, from 1.
        number: usize,
        /// What is wrong with it.
        why: &'static str,
        /// The whole param.
        text: String,
    },
    /// More bounds than instances a rule may make.
    #[error("`ranges` has {0} bounds, so {n} instances, more than the {max} a partitioning rule may make: give at most {most} bounds", n = .0 + 1, max = MAX_BOUNDS + 1, most = MAX_BOUNDS)]
    TooMany(usize),
    /// The column is not in the operator's input.
    #[error(
        "`ranges` splits by column \"{column}\", which the input does not have (it has {have})"
    )]
    NoColumn {
        /// The column asked for.
        column: String,
        /// The input's columns.
        have: String,
    },
    /// The column's type has no order to split by.
    #[error("`ranges` cannot split by column \"{column}\" of type {data_type}: split by a number, a string, a date or a timestamp")]
    Type {
        /// The column.
        column: String,
        /// Its type.
        data_type: DataType,
    },
    /// A bound is not a value of the column's type.
    #[error("`ranges` bound \"{bound}\" is not a value of column \"{column}\" ({data_type})")]
    Bound {
        /// The bound as written.
        bound: String,
        /// The column.
        column: String,
        /// Its type.
        data_type: DataType,
    },
    /// The bounds do not increase.
    #[error("`ranges` bounds must increase, and \"{next}\" is not above \"{previous}\"")]
    Order {
        /// The bound before.
        previous: String,
        /// The bound that is not above it.
        next: String,
    },
    /// The rows could not be compared with the bounds.
    #[error("`ranges` could not compare column \"{column}\" with its bounds: {reason}")]
    Compare {
        /// The column.
        column: String,
        /// What arrow said.
        reason: String,
    },
}

impl Ranges {
    /// Reads `COLUMN: BOUND, BOUND, …` (at least one bound; a bound may be quoted with `'`,
    /// and then holds commas and spaces as written).
    pub fn parse(text: &str) -> Result<Self, RangesError> {
        let form = || RangesError::Form(text.to_string());
        let (column, rest) = text.split_once(':').ok_or_else(form)?;
        let column = column.trim();
        if column.is_empty() || rest.trim().is_empty() {
            return Err(form());
        }
        let bad = |number: usize, why: &'static str| RangesError::BadBound {
            number,
            why,
            text: text.to_string(),
        };
        let mut bounds = Vec::new();
        let mut chars = rest.chars().peekable();
        loop {
            while chars.next_if(|c| c.is_whitespace()).is_some() {}
            let number = bounds.len() + 1;
            let bound = if chars.next_if_eq(&'\'').is_some() {
                let mut quoted = String::new();
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => quoted.push(c),
                        None => return Err(bad(number, "has no closing quote")),
                    }
                }
                while chars.next_if(|c| c.is_whitespace()).is_some() {}
                if chars.peek().is_some_and(|c| *c != ',') {
                    return Err(bad(number, "goes on after its closing quote"));
                }
                quoted
            } else {
                let mut plain = String::new();
                while let Some(c) = chars.next_if(|c| *c != ',') {
                    plain.push(c);
                }
                let plain = plain.trim().to_string();
                if plain.is_empty() {
                    return Err(bad(number, "is empty"));
                }
                plain
            };
            bounds.push(bound);
            if chars.next().is_none() {
                break;
            }
        }
        if u64::try_from(bounds.len()).map_or(true, |n| n > MAX_BOUNDS) {
            return Err(RangesError::TooMany(bounds.len()));
        }
        Ok(Self {
            column: column.to_string(),
            bounds,
        })
    }

    /// How many instances the ranges make.
    pub fn instances(&self) -> usize {
        self.bounds.len() + 1
    }

    /// The ranges operator `def` asks for (`param ranges`), if it asks for well-formed ones
    /// (a malformed param is refused where the operator is checked).
    pub fn asked_by(def: &anduin_spec::OperatorDef) -> Option<Self> {
        Self::parse(def.param(PARAM)?.value.as_text().as_str()).ok()
    }

    /// The ranges bound to the column of that name in `schema`: checks that the column
    /// exists, can be ordered, and the bounds are values of its type that increase.
    pub fn bind(&self, schema: &Schema) -> Result<BoundRanges, RangesError> {
        let (index, field) =
            schema
                .column_with_name(&self.column)
                .ok_or_else(|| RangesError::NoColumn {
                    column: self.column.clone(),
                    have: schema
                        .fields()
                        .iter()
                        .map(|f| format!("\"{}\"", f.name()))
                        .collect::<Vec<_>>()
                        .join(", "),
                })?;
        let data_type = field.data_type();
        let ordered = data_type.is_numeric()
            || data_type.is_temporal()
            || matches!(data_type, DataType::Utf8 | DataType::LargeUtf8);
        if !ordered {
            return Err(RangesError::Type {
                column: self.column.clone(),
                data_type: data_type.clone(),
            });
        }
        let bad_bound = |bound: String| RangesError::Bound {
            bound,
            column: self.column.clone(),
            data_type: data_type.clone(),
        };
        // A bound that is not a value of the type is cast to null.
        let written: ArrayRef = Arc::new(StringArray::from(self.bounds.clone()));
        let bounds = cast(&written, data_type).map_err(|_| bad_bound(self.bounds.join(", ")))?;
        if let Some(i) = (0..bounds.len()).find(|i| bounds.is_null(*i)) {
            return Err(bad_bound(self.bounds[i].clone()));
        }
        let converter = RowConverter::new(vec![SortField::new(data_type.clone())])
            .map_err(|e| self.compare_error(e))?;
        let rows = converter
            .convert_columns(&[bounds])
            .map_err(|e| self.compare_error(e))?;
        for i in 1..rows.num_rows() {
            if rows.row(i - 1) >= rows.row(i) {
                return Err(RangesError::Order {
                    previous: self.bounds[i - 1].clone(),
                    next: self.bounds[i].clone(),
                });
            }
        }
        Ok(BoundRanges {
            column: self.column.clone(),
            index,
            converter,
            bounds: rows,
        })
    }

    fn compare_error(&self, e: arrow::error::ArrowError) -> RangesError {
        RangesError::Compare {
            column: self.column.clone(),
            reason: e.to_string(),
        }
    }
}

/// Ranges bound to a schema: the column's index, and the bounds in arrow's row format (nulls
/// first; floats in their total order, NaN above infinity), in which rows are compared.
pub struct BoundRanges {
    column: String,
    /// The column's index in the schema.
    pub index: usize,
    converter: RowConverter,
    bounds: Rows,
}

impl BoundRanges {
    /// How many instances the ranges make.
    pub fn instances(&self) -> usize {
        self.bounds.num_rows() + 1
    }

    /// The rows of `column` (of the bound type) each instance takes: instance i those at or
    /// above bound i−1 and below bound i (the first also those whose value is null), found by
    /// a binary search among the bounds.
    pub fn split(&self, column: &ArrayRef) -> Result<Vec<Vec<u32>>, RangesError> {
        let values = self
            .converter
            .convert_columns(&[Arc::clone(column)])
            .map_err(|e| RangesError::Compare {
                column: self.column.clone(),
                reason: e.to_string(),
            })?;
        let bounds: Vec<Row<'_>> = self.bounds.iter().collect();
        let mut rows: Vec<Vec<u32>> = vec![Vec::new(); self.instances()];
        for (row, value) in values.iter().enumerate() {
            let instance = bounds.partition_point(|b| *b <= value);
            if let Some(list) = rows.get_mut(instance) {
                list.push(u32::try_from(row).unwrap_or(u32::MAX));
            }
        }
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int64Array, StringArray};
    use arrow::datatypes::Field;

    fn schema() -> Schema {
        Schema::new(vec![
            Field::new("value", DataType::Int64, true),
            Field::new("sensor", DataType::Utf8, true),
            Field::new("ok", DataType::Boolean, true),
        ])
    }

    #[test]
    fn each_row_goes_to_the_range_its_value_falls_in_and_nulls_to_the_first() {
        let r = Ranges::parse("value: 10, 20").expect("well formed");
        assert_eq!(r.instances(), 3);
        let bound = r.bind(&schema()).expect("binds");
        assert_eq!(bound.index, 0);
        let column: ArrayRef = Arc::new(Int64Array::from(vec![
            Some(9),
            Some(10),
            None,
            Some(19),
            Some(20),
            Some(-5),
            Some(i64::MAX),
        ]));
        let parts = bound.split(&column).expect("splits");
        assert_eq!(parts, vec![vec![0, 2, 5], vec![1, 3], vec![4, 6]]);
    }

    #[test]
    fn strings_split_by_their_order_and_quoted_bounds_are_unquoted() {
        let r = Ranges::parse("sensor: 'm', t").expect("well formed");
        let bound = r.bind(&schema()).expect("binds");
        assert_eq!(bound.index, 1);
        let column: ArrayRef = Arc::new(StringArray::from(vec!["a", "m", "s", "t", "z"]));
        let parts = bound.split(&column).expect("splits");
        assert_eq!(parts, vec![vec![0], vec![1, 2], vec![3, 4]]);
    }

    #[test]
    fn a_quoted_bound_keeps_its_commas_and_too_many_bounds_are_refused() {
        let r = Ranges::parse("sensor: 'a,b' , z, ''").expect("well formed");
        assert_eq!(r.bounds, ["a,b", "z", ""]);
        let many = (0..1024)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(", ");
        let err = Ranges::parse(&format!("value: {many}")).expect_err("too many");
        assert!(
            err.to_string()
                .contains("has 1024 bounds, so 1025 instances, more than the 1024"),
            "{err}"
        );
        let most = (0..1023)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(", ");
        assert_eq!(
            Ranges::parse(&format!("value: {most}"))
                .expect("the most")
                .instances(),
            1024
        );
    }

    #[test]
    fn floats_split_in_their_total_order() {
        let schema = Schema::new(vec![Field::new("x", DataType::Float64, true)]);
        let r = Ranges::parse("x: 0, 2").expect("well formed");
        let bound = r.bind(&schema).expect("binds");
        let column: ArrayRef = Arc::new(arrow::array::Float64Array::from(vec![
            Some(f64::NEG_INFINITY),
            Some(-0.0),
            Some(0.0),
            Some(1.5),
            Some(2.0),
            Some(f64::INFINITY),
            Some(f64::NAN),
            None,
        ]));
        let parts = bound.split(&column).expect("splits");
        assert_eq!(parts, vec![vec![0, 1, 7], vec![2, 3], vec![4, 5, 6]]);
    }

    #[test]
    fn bad_ranges_say_what_is_wrong() {
        for (text, says) in [
            ("value", "is `COLUMN: BOUND"),
            ("value:", "is `COLUMN: BOUND"),
            (": 1", "is `COLUMN: BOUND"),
            ("value: 1,,2", "bound 2 is empty"),
            ("value: 1,", "bound 2 is empty"),
            ("sensor: 'm", "bound 1 has no closing quote"),
            ("sensor: 'm' n", "bound 1 goes on after its closing quote"),
            ("nope: 1", "column \"nope\", which the input does not have (it has \"value\", \"sensor\", \"ok\")"),
            ("ok: true", "of type Boolean"),
            ("value: ten", "bound \"ten\" is not a value of column \"value\" (Int64)"),
            ("value: 20, 10", "\"10\" is not above \"20\""),
            ("value: 10, 10", "\"10\" is not above \"10\""),
        ] {
            let err = Ranges::parse(text)
                .and_then(|r| r.bind(&schema()).map(|_| ()))
                .expect_err(text)
                .to_string();
            assert!(err.contains(says), "{text}: {err}");
        }
    }
}
