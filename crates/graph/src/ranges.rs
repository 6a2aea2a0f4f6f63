//! Partitioning by ranges of a column's value (the splitter `by = "range"` of the paper's
//! partitioning pattern): `param ranges = "value: 10, 20"` on a stateless operator runs it in
//! three instances, the first taking the rows whose `value` is below 10 (and those whose
//! `value` is null), the second those from 10 up to 20, the third those from 20 on.
//!
//! Only a stateless operator is split this way: a keyed operator's state is kept, restored
//! and rescaled by key group (a hash of the key), and its instances own ranges of key groups;
//! a range of values would put one key group's keys on several instances.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, StringArray, UInt32Array};
use arrow::compute::kernels::cmp::{gt_eq, lt};
use arrow::compute::{cast_with_options, CastOptions};
use arrow::datatypes::{DataType, Schema};

/// The param that asks for it.
pub const PARAM: &str = "ranges";

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
    /// Reads `COLUMN: BOUND, BOUND, …` (at least one bound; a bound may be quoted with `'`).
    pub fn parse(text: &str) -> Result<Self, RangesError> {
        let form = || RangesError::Form(text.to_string());
        let (column, bounds) = text.split_once(':').ok_or_else(form)?;
        let column = column.trim();
        if column.is_empty() {
            return Err(form());
        }
        let bounds: Vec<String> = bounds
            .split(',')
            .map(|b| {
                let b = b.trim();
                b.strip_prefix('\'')
                    .and_then(|b| b.strip_suffix('\''))
                    .unwrap_or(b)
                    .to_string()
            })
            .collect();
        if bounds.iter().any(String::is_empty) {
            return Err(form());
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

    /// The bounds as values of the column's type in `schema`, and the column's index; checks
    /// that the column exists, can be ordered, and the bounds increase.
    pub fn bind(&self, schema: &Schema) -> Result<(usize, ArrayRef), RangesError> {
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
        let written: ArrayRef = Arc::new(StringArray::from(self.bounds.clone()));
        let strict = CastOptions {
            safe: true,
            ..CastOptions::default()
        };
        let bounds =
            cast_with_options(&written, data_type, &strict).map_err(|_| RangesError::Bound {
                bound: self.bounds.join(", "),
                column: self.column.clone(),
                data_type: data_type.clone(),
            })?;
        if let Some(i) = (0..bounds.len()).find(|i| bounds.is_null(*i)) {
            return Err(RangesError::Bound {
                bound: self.bounds[i].clone(),
                column: self.column.clone(),
                data_type: data_type.clone(),
            });
        }
        for i in 1..bounds.len() {
            let above = lt(&bounds.slice(i - 1, 1), &bounds.slice(i, 1)).map_err(|e| {
                RangesError::Compare {
                    column: self.column.clone(),
                    reason: e.to_string(),
                }
            })?;
            if !above.value(0) {
                return Err(RangesError::Order {
                    previous: self.bounds[i - 1].clone(),
                    next: self.bounds[i].clone(),
                });
            }
        }
        Ok((index, bounds))
    }

    /// The rows of `column` each instance takes: instance i those at or above bound i−1 and
    /// below bound i (the first also those whose value is null).
    pub fn split(
        &self,
        column: &ArrayRef,
        bounds: &ArrayRef,
    ) -> Result<Vec<UInt32Array>, RangesError> {
        let compare = |e: arrow::error::ArrowError| RangesError::Compare {
            column: self.column.clone(),
            reason: e.to_string(),
        };
        let mut instance = vec![0_usize; column.len()];
        for i in 0..bounds.len() {
            let at_or_above =
                gt_eq(column, &arrow::array::Scalar::new(bounds.slice(i, 1))).map_err(compare)?;
            for (row, above) in at_or_above.iter().enumerate() {
                if above == Some(true) {
                    instance[row] = i + 1;
                }
            }
        }
        let mut rows: Vec<Vec<u32>> = vec![Vec::new(); self.instances()];
        for (row, i) in instance.into_iter().enumerate() {
            rows[i].push(u32::try_from(row).unwrap_or(u32::MAX));
        }
        Ok(rows.into_iter().map(UInt32Array::from).collect())
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

    fn rows(parts: &[UInt32Array]) -> Vec<Vec<u32>> {
        parts.iter().map(|p| p.values().to_vec()).collect()
    }

    #[test]
    fn each_row_goes_to_the_range_its_value_falls_in_and_nulls_to_the_first() {
        let r = Ranges::parse("value: 10, 20").expect("well formed");
        assert_eq!(r.instances(), 3);
        let (index, bounds) = r.bind(&schema()).expect("binds");
        assert_eq!(index, 0);
        let column: ArrayRef = Arc::new(Int64Array::from(vec![
            Some(9),
            Some(10),
            None,
            Some(19),
            Some(20),
            Some(-5),
            Some(i64::MAX),
        ]));
        let parts = r.split(&column, &bounds).expect("splits");
        assert_eq!(rows(&parts), vec![vec![0, 2, 5], vec![1, 3], vec![4, 6]]);
    }

    #[test]
    fn strings_split_by_their_order_and_quoted_bounds_are_unquoted() {
        let r = Ranges::parse("sensor: 'm', t").expect("well formed");
        let (index, bounds) = r.bind(&schema()).expect("binds");
        assert_eq!(index, 1);
        let column: ArrayRef = Arc::new(StringArray::from(vec!["a", "m", "s", "t", "z"]));
        let parts = r.split(&column, &bounds).expect("splits");
        assert_eq!(rows(&parts), vec![vec![0], vec![1, 2], vec![3, 4]]);
    }

    #[test]
    fn bad_ranges_say_what_is_wrong() {
        for (text, says) in [
            ("value", "is `COLUMN: BOUND"),
            ("value:", "is `COLUMN: BOUND"),
            (": 1", "is `COLUMN: BOUND"),
            ("value: 1,,2", "is `COLUMN: BOUND"),
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
