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
use arrow::array::ArrayRef;
use arrow::datatypes::DataType;
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

    /// The key of every row of `columns` (the key columns of a batch, in the encoder's order).
    pub fn encode(&self, columns: &[ArrayRef]) -> Result<Rows, ArrowError> {
        self.converter.convert_columns(columns)
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
