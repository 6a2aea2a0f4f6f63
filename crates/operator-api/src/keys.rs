//! The one encoding of a row's key: the bytes the hash exchange routes a row by, and the bytes
//! a keyed operator (window, join, pattern) stores the row's state under.
//!
//! A key is the Arrow row format of the key columns, made by a [`KeyEncoder`] over the key
//! columns' types in the order the operator declares them. Its key group is
//! [`KeyEncoder::key_group`] ([`key_group_for_key`] with [`DEFAULT_MAX_KEY_GROUPS`]), the key
//! group an `anduin_state::KeyedTable` stores the key's entries in, and its instance is
//! [`KeyEncoder::instance`] of that key group. Because routing and storage both go through
//! this module, the instance that receives a row is the one whose key groups hold its state:
//! what moving a range of key groups between instances (a live rescale) relies on.
//!
//! An operator without key columns (a global window, an unpartitioned pattern) has one key,
//! the empty bytes, runs one instance, and the exchange sends it every row.
//!
//! Two floats are one key when they are the same value in the order `MIN` and `MAX` use
//! (`anduin_expr`'s `float_order`): every NaN is one key, whatever its sign and payload (`0.0 /
//! 0.0` is a negative NaN on x86, `'NaN'` parsed a positive one), so [`KeyEncoder::encode`]
//! makes each NaN the canonical one before encoding; `-0.0` and `0.0` are two keys. A key
//! with a null column is a key like any other here (a window's group of nulls): a join, for
//! which it equals nothing, looks at the key columns' nulls itself.
//!
//! ```
//! use std::sync::Arc;
//! use anduin_operator_api::keys::KeyEncoder;
//! use arrow::array::{ArrayRef, Int64Array, StringArray};
//! use arrow::datatypes::DataType;
//!
//! let columns: Vec<ArrayRef> = vec![
//!     Arc::new(StringArray::from(vec![Some("a"), None])),
//!     Arc::new(Int64Array::from(vec![7, 7])),
//! ];
//! let encoder = KeyEncoder::new([DataType::Utf8, DataType::Int64])?;
//! let keys = encoder.encode(&columns)?;
//! let kg = KeyEncoder::key_group(keys.row(0).as_ref());
//! assert!(kg.0 < anduin_state::DEFAULT_MAX_KEY_GROUPS.get());
//! assert_eq!(encoder.decode(keys.iter())?, columns);
//! # Ok::<(), arrow::error::ArrowError>(())
//! ```

use std::num::NonZeroU16;
use std::sync::Arc;

use anduin_state::{instance_for, key_group_for_key, KeyGroup, DEFAULT_MAX_KEY_GROUPS};
use arrow::array::{Array, ArrayRef, AsArray};
use arrow::datatypes::{ArrowPrimitiveType, DataType, Float16Type, Float32Type, Float64Type};
use arrow::error::ArrowError;
use arrow::row::{Row, RowConverter, RowParser, Rows, SortField};

/// Turns key columns into key bytes (Arrow's row format) and back. Cheap to clone.
#[derive(Debug, Clone)]
pub struct KeyEncoder {
    converter: Arc<RowConverter>,
}

impl KeyEncoder {
    /// An encoder of keys whose columns have `types`, in that order (at least one: an operator
    /// without key columns has the one key `b""` and needs no encoder).
    pub fn new(types: impl IntoIterator<Item = DataType>) -> Result<Self, ArrowError> {
        let fields: Vec<SortField> = types.into_iter().map(SortField::new).collect();
        if fields.is_empty() {
            return Err(ArrowError::InvalidArgumentError(
                "a key encoder needs at least one key column".into(),
            ));
        }
        Ok(Self {
            converter: Arc::new(RowConverter::new(fields)?),
        })
    }

    /// The key of every row of `columns` (the key columns of a batch, in the encoder's order),
    /// every NaN of a float column encoded as the canonical NaN (a column with another NaN is
    /// copied with it replaced; the others are encoded as they are).
    pub fn encode(&self, columns: &[ArrayRef]) -> Result<Rows, ArrowError> {
        let canonical: Vec<Option<ArrayRef>> = columns.iter().map(canonical_nans).collect();
        if canonical.iter().all(Option::is_none) {
            return self.converter.convert_columns(columns);
        }
        let columns: Vec<ArrayRef> = canonical
            .into_iter()
            .zip(columns)
            .map(|(c, original)| c.unwrap_or_else(|| Arc::clone(original)))
            .collect();
        self.converter.convert_columns(&columns)
    }

    /// The key columns of `keys`.
    pub fn decode<'a>(
        &self,
        keys: impl IntoIterator<Item = Row<'a>>,
    ) -> Result<Vec<ArrayRef>, ArrowError> {
        self.converter.convert_rows(keys)
    }

    /// A parser of key bytes back into rows (of bytes this encoder made: a checkpoint's
    /// checksum vouches for stored ones).
    pub fn parser(&self) -> RowParser {
        self.converter.parser()
    }

    /// An empty set of keys to push to.
    pub fn empty_rows(&self) -> Rows {
        self.converter.empty_rows(0, 0)
    }

    /// The key group of `key`: where its state is stored and by which it is routed.
    pub fn key_group(key: &[u8]) -> KeyGroup {
        key_group_for_key(key, DEFAULT_MAX_KEY_GROUPS)
    }

    /// The instance (of `parallelism`) that owns `key`: the one the exchange sends its rows to.
    pub fn instance(key: &[u8], parallelism: NonZeroU16) -> usize {
        usize::from(instance_for(
            Self::key_group(key),
            DEFAULT_MAX_KEY_GROUPS,
            parallelism,
        ))
    }
}

/// `column` with every NaN made the canonical NaN of its type, if it is a float column with
/// a NaN that is not (a negative one, or one with a payload); `None` otherwise.
fn canonical_nans(column: &ArrayRef) -> Option<ArrayRef> {
    macro_rules! canonical {
        ($arrow:ty) => {{
            type Native = <$arrow as ArrowPrimitiveType>::Native;
            let array = column.as_primitive::<$arrow>();
            let nan = Native::NAN.to_bits();
            // Null slots count too: a copy for nothing at worst, never a wrong key.
            if !array
                .values()
                .iter()
                .any(|v| v.is_nan() && v.to_bits() != nan)
            {
                return None;
            }
            let canonical = array.unary::<_, $arrow>(|v| if v.is_nan() { Native::NAN } else { v });
            Some(Arc::new(canonical) as ArrayRef)
        }};
    }
    match column.data_type() {
        DataType::Float64 => canonical!(Float64Type),
        DataType::Float32 => canonical!(Float32Type),
        DataType::Float16 => canonical!(Float16Type),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Float32Array, Float64Array};

    #[test]
    fn every_nan_is_the_canonical_nan_and_the_zeros_stay_two() {
        let negative = f64::from_bits(f64::NAN.to_bits() | (1 << 63));
        let payload = f64::from_bits(f64::NAN.to_bits() | 1);
        let column: ArrayRef = Arc::new(Float64Array::from(vec![
            Some(f64::NAN),
            Some(negative),
            Some(payload),
            None,
            Some(0.0),
            Some(-0.0),
        ]));
        let encoder = KeyEncoder::new([DataType::Float64]).expect("an encoder");
        let keys = encoder.encode(&[column]).expect("encodes");
        assert_eq!(keys.row(0), keys.row(1));
        assert_eq!(keys.row(0), keys.row(2));
        assert_ne!(keys.row(0), keys.row(3), "null is not NaN");
        assert_ne!(keys.row(4), keys.row(5), "-0.0 and 0.0 are two keys");

        let column: ArrayRef = Arc::new(Float32Array::from(vec![
            f32::NAN,
            f32::from_bits(f32::NAN.to_bits() | (1 << 31)),
        ]));
        let encoder = KeyEncoder::new([DataType::Float32]).expect("an encoder");
        let keys = encoder.encode(&[column]).expect("encodes");
        assert_eq!(keys.row(0), keys.row(1));
    }

    #[test]
    fn a_column_without_another_nan_is_not_copied() {
        let column: ArrayRef = Arc::new(Float64Array::from(vec![1.0, f64::NAN, -0.0]));
        assert!(canonical_nans(&column).is_none());
    }
}
