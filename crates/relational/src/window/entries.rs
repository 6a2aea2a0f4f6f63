//! How a window's checkpointed state is laid out in its `anduin_state::KeyedTable`: one entry
//! per key and pane, session or count window, under the key's group key (the bytes the hash
//! exchange routes by, made by `anduin_operator_api::keys::KeyEncoder`; empty for a global
//! window).
//!
//! An entry's sub-key is a tag (`p` pane, `s` session, `c` count window), then the pane's,
//! session's or count window's start as 8 big-endian bytes with the sign bit flipped, so that
//! the entries of a key sort by time. Its value is a few fixed numbers (little-endian)
//! followed by the aggregates' intermediate state of that one group, in Arrow's row format
//! over the state fields of every aggregate:
//!
//! | tag | fixed numbers             | then        |
//! |-----|---------------------------|-------------|
//! | `p` | none                      | the state   |
//! | `s` | the session's end         | the state   |
//! | `c` | rows so far, latest time  | the state   |

use std::sync::Arc;

use anduin_expr::CompiledAggregate;
use arrow::array::ArrayRef;
use arrow::datatypes::DataType;
use arrow::row::{RowConverter, Rows, SortField};

use super::keys::arrow_error;
use anduin_operator_api::OperatorError;

/// A pane of a tumbling or sliding window.
pub(crate) const PANE: u8 = b'p';
/// A session.
pub(crate) const SESSION: u8 = b's';
/// A count window.
pub(crate) const COUNT: u8 = b'c';

/// The length of a sub-key: the tag and the start.
pub(crate) const SUB_KEY_LEN: usize = 9;

/// The sub-key of a pane, session or count window (`tag`) starting at `start` (on the stack:
/// no allocation).
pub(crate) fn sub_key(tag: u8, start: i64) -> [u8; SUB_KEY_LEN] {
    let mut k = [0u8; SUB_KEY_LEN];
    let (t, s) = k.split_at_mut(1);
    t[0] = tag;
    s.copy_from_slice(&((start as u64) ^ (1 << 63)).to_be_bytes());
    k
}

/// The tag and start of a sub-key; `None` for one that is not [`SUB_KEY_LEN`] bytes.
pub(crate) fn split_sub_key(sub_key: &[u8]) -> Option<(u8, i64)> {
    let (tag, start) = sub_key.split_first()?;
    let start: [u8; 8] = start.try_into().ok()?;
    Some((*tag, (u64::from_be_bytes(start) ^ (1 << 63)) as i64))
}

/// An entry read back from a checkpoint.
#[derive(Debug)]
pub(crate) struct Restored {
    /// The group key's bytes (empty for a global window).
    pub key: Box<[u8]>,
    pub tag: u8,
    pub start: i64,
    pub value: Vec<u8>,
}

/// An entry's value: `fixed` numbers, then one group's state bytes.
pub(crate) fn value(fixed: &[u64], state: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(8 * fixed.len() + state.len());
    for n in fixed {
        v.extend_from_slice(&n.to_le_bytes());
    }
    v.extend_from_slice(state);
    v
}

/// The `N` fixed numbers of a value and its state bytes; `None` for one too short.
pub(crate) fn split_value<const N: usize>(value: &[u8]) -> Option<([u64; N], &[u8])> {
    let mut fixed = [0u64; N];
    let mut rest = value;
    for n in &mut fixed {
        let (head, tail) = rest.split_first_chunk::<8>()?;
        *n = u64::from_le_bytes(*head);
        rest = tail;
    }
    Some((fixed, rest))
}

/// Converts the intermediate states of a window's aggregates (per aggregate, its state
/// columns, one row per group) to bytes per group and back.
#[derive(Debug, Clone)]
pub(crate) struct StateRows {
    converter: Arc<RowConverter>,
    /// The type of every state column, aggregate after aggregate.
    types: Vec<DataType>,
    /// How many state columns each aggregate has.
    widths: Vec<usize>,
}

impl StateRows {
    pub(crate) fn new(aggs: &[CompiledAggregate], operator: &str) -> Result<Self, OperatorError> {
        let mut types = Vec::new();
        let mut widths = Vec::new();
        for a in aggs {
            let fields = a.state_fields().map_err(|e| OperatorError::Execution {
                operator: operator.to_string(),
                message: e.to_string(),
            })?;
            widths.push(fields.len());
            types.extend(fields.iter().map(|f| f.data_type().clone()));
        }
        let converter =
            RowConverter::new(types.iter().map(|t| SortField::new(t.clone())).collect())
                .map_err(|e| arrow_error(operator, &e))?;
        Ok(Self {
            converter: Arc::new(converter),
            types,
            widths,
        })
    }

    /// The state of each of `groups` groups as one row.
    pub(crate) fn encode(
        &self,
        states: &[Vec<ArrayRef>],
        groups: usize,
        operator: &str,
    ) -> Result<Rows, OperatorError> {
        let columns = states
            .iter()
            .flatten()
            .zip(&self.types)
            .map(|(c, t)| {
                if c.data_type() == t {
                    Ok(Arc::clone(c))
                } else {
                    arrow::compute::cast(c, t)
                }
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| arrow_error(operator, &e))?;
        let rows = self
            .converter
            .convert_columns(&columns)
            .map_err(|e| arrow_error(operator, &e))?;
        if rows.num_rows() != groups {
            return Err(OperatorError::Execution {
                operator: operator.to_string(),
                message: format!(
                    "the aggregates' state has {} rows for {groups} groups",
                    rows.num_rows()
                ),
            });
        }
        Ok(rows)
    }

    /// Per aggregate, its state columns, one row per state in `states` (as `encode` gave them).
    pub(crate) fn decode<'a>(
        &self,
        states: impl IntoIterator<Item = &'a [u8]>,
        operator: &str,
    ) -> Result<Vec<Vec<ArrayRef>>, OperatorError> {
        let parser = self.converter.parser();
        let rows: Vec<_> = states.into_iter().map(|s| parser.parse(s)).collect();
        let mut columns = self
            .converter
            .convert_rows(rows)
            .map_err(|e| arrow_error(operator, &e))?
            .into_iter();
        Ok(self
            .widths
            .iter()
            .map(|w| columns.by_ref().take(*w).collect())
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sub_keys_sort_by_start_and_split_back() {
        let starts = [i64::MIN, -5, -1, 0, 1, 7, i64::MAX];
        let keys: Vec<[u8; SUB_KEY_LEN]> = starts.iter().map(|s| sub_key(PANE, *s)).collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(sorted, keys);
        for (k, s) in keys.iter().zip(starts) {
            assert_eq!(split_sub_key(k), Some((PANE, s)));
        }
        assert_eq!(split_sub_key(&sub_key(COUNT, 3)), Some((COUNT, 3)));
        assert_eq!(split_sub_key(b"short"), None);
        assert_eq!(split_sub_key(b""), None);
        assert_eq!(split_sub_key(&[b'p'; 10]), None);
    }

    #[test]
    fn values_split_into_their_fixed_numbers_and_state() {
        let v = value(&[3, (-9i64) as u64], b"state");
        let ([rows, last], state) = split_value::<2>(&v).expect("long enough");
        assert_eq!((rows, last as i64, state), (3, -9, &b"state"[..]));
        assert!(split_value::<3>(&v[..10]).is_none());
    }
}
