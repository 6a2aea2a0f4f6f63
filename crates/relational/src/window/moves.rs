//! A live rescale of a tumbling or sliding window that touches only the key groups that move
//! (`Operator::give_key_groups`, `Operator::take_key_groups`). The giver cuts the groups of
//! the given key groups out of each open pane, column by column, encodes only those, and
//! deletes their checkpointed entries from its table; the groups it keeps stay in memory as
//! they were (a pane that loses groups is rebuilt from its remaining groups' states, without
//! encoding them). The taker merges what it takes into its panes. Neither writes a snapshot:
//! the next checkpoint is a full one, and writes the groups taken.
//!
//! A piece (one per range given), read only by another instance of the same window in the
//! same run, never kept in a checkpoint; numbers little-endian:
//!
//! ```text
//! b"AWKG1"  u32 panes
//! per pane: i64 start, u8 sealed (0 or 1), u32 groups,
//!           per group: u32 length + the key as stored, u32 length + its state row
//! ```

use arrow::array::{ArrayRef, UInt32Array};
use arrow::row::Rows;

use super::accs::{group_key, Accs};
use super::entries::StateRows;
use super::keys::{arrow_error, KeyMap};
use super::panes::{Changed, Panes, Sealed, Slice};
use super::WindowSetup;
use anduin_operator_api::OperatorError;
use anduin_state::{KeyGroupRange, KeyedTable};

const MAGIC: &[u8; 5] = b"AWKG1";

/// The groups of one pane in a piece: their keys as stored and their state rows.
struct Part {
    start: i64,
    sealed: bool,
    keys: Vec<Vec<u8>>,
    states: Vec<Vec<u8>>,
}

impl Panes {
    /// Cuts the groups whose key is in a key group of one of `ranges` out of every open pane,
    /// and their entries out of `table`: one piece per range, in order.
    pub(crate) fn give(
        &mut self,
        ranges: &[KeyGroupRange],
        table: &mut KeyedTable,
        state_rows: &StateRows,
        setup: &WindowSetup,
    ) -> Result<Vec<Vec<u8>>, OperatorError> {
        let name = &setup.name;
        let mut parts: Vec<Vec<Part>> = ranges.iter().map(|_| Vec::new()).collect();
        let dest = |keys: &Rows| -> Vec<Option<usize>> {
            keys.iter()
                .map(|row| {
                    let kg = table.key_group(setup.codec.stored(row));
                    ranges.iter().position(|r| r.contains(kg))
                })
                .collect()
        };
        let mut emptied = Vec::new();
        for (start, slice) in self.live.iter_mut() {
            let dest = dest(slice.keys.keys());
            if dest.iter().all(Option::is_none) {
                continue;
            }
            let states = slice.accs.take_state(name)?;
            cut_out(
                &mut parts,
                &dest,
                *start,
                false,
                slice.keys.keys(),
                &states,
                state_rows,
                setup,
            )?;
            let kept = kept_ids(&dest);
            if kept.is_empty() {
                emptied.push(*start);
                continue;
            }
            let keys = pick_rows(setup, slice.keys.keys(), &kept);
            let kept_states = pick_states(&states, &kept, name)?;
            let mut accs = Accs::new(&setup.aggs, name)?;
            let ids: Vec<usize> = (0..kept.len()).collect();
            accs.merge(&kept_states, &ids, kept.len())
                .map_err(|e| e.in_window(setup, "pane", *start, |g| group_key(&keys, g)))?;
            *slice = Slice {
                keys: KeyMap::from_keys(&setup.codec, &keys),
                accs,
                changed: slice.changed.kept(&kept),
            };
        }
        for start in emptied.drain(..) {
            self.live.remove(&start);
        }
        for (start, pane) in self.sealed.iter_mut() {
            let dest = dest(&pane.keys);
            if dest.iter().all(Option::is_none) {
                continue;
            }
            cut_out(
                &mut parts,
                &dest,
                *start,
                true,
                &pane.keys,
                &pane.states,
                state_rows,
                setup,
            )?;
            let kept = kept_ids(&dest);
            if kept.is_empty() {
                emptied.push(*start);
                continue;
            }
            *pane = Sealed {
                keys: pick_rows(setup, &pane.keys, &kept),
                states: pick_states(&pane.states, &kept, name)?,
                changed: pane.changed.kept(&kept),
            };
        }
        for start in emptied {
            self.sealed.remove(&start);
        }
        // Their checkpointed entries go too (recorded as deletes): the next checkpoint, a
        // full one, must not hold what another instance now owns.
        for range in ranges {
            let _stats = table.export(*range, &mut std::io::sink())?;
        }
        Ok(parts.into_iter().map(|p| encode(&p)).collect())
    }

    /// Merges the groups of `pieces` (what [`Panes::give`] of other instances cut out) into
    /// the open panes; those that end by `cutoff` are then sealed (sliding windows).
    pub(crate) fn take(
        &mut self,
        pieces: &[Vec<u8>],
        state_rows: &StateRows,
        setup: &WindowSetup,
        cutoff: i64,
    ) -> Result<(), OperatorError> {
        let name = &setup.name;
        for piece in pieces {
            for part in decode(piece, name)? {
                let keys = setup
                    .codec
                    .rows_of_stored(part.keys.iter().map(Vec::as_slice), name)?;
                let states = state_rows.decode(part.states.iter().map(Vec::as_slice), name)?;
                let n = keys.num_rows();
                if let Some(pane) = self.sealed.get_mut(&part.start) {
                    let before = pane.keys.num_rows();
                    for row in keys.iter() {
                        pane.keys.push(row);
                    }
                    pane.states = concat_states(&pane.states, &states, name)?;
                    pane.changed.mark(&(before..before + n).collect::<Vec<_>>());
                } else if let Some(slice) = self.live.get_mut(&part.start) {
                    let ids: Vec<usize> = keys.iter().map(|row| slice.keys.group_of(row)).collect();
                    let groups = slice.keys.len();
                    slice.accs.merge(&states, &ids, groups).map_err(|e| {
                        e.in_window(setup, "pane", part.start, |g| {
                            group_key(slice.keys.keys(), g)
                        })
                    })?;
                    slice.changed.mark(&ids);
                } else if part.sealed {
                    self.sealed.insert(
                        part.start,
                        Sealed {
                            keys,
                            states,
                            changed: Changed::unstored(n),
                        },
                    );
                } else {
                    let mut accs = Accs::new(&setup.aggs, name)?;
                    let ids: Vec<usize> = (0..n).collect();
                    accs.merge(&states, &ids, n).map_err(|e| {
                        e.in_window(setup, "pane", part.start, |g| group_key(&keys, g))
                    })?;
                    self.live.insert(
                        part.start,
                        Slice {
                            keys: KeyMap::from_keys(&setup.codec, &keys),
                            accs,
                            changed: Changed::unstored(n),
                        },
                    );
                }
            }
        }
        if !self.tumbling() {
            self.seal(cutoff, setup)?;
        }
        Ok(())
    }
}

/// The ids of the groups that stay (no destination).
fn kept_ids(dest: &[Option<usize>]) -> Vec<usize> {
    dest.iter()
        .enumerate()
        .filter(|(_, d)| d.is_none())
        .map(|(id, _)| id)
        .collect()
}

/// Adds to each range's parts the groups of the pane at `start` bound for it.
#[allow(clippy::too_many_arguments)]
fn cut_out(
    parts: &mut [Vec<Part>],
    dest: &[Option<usize>],
    start: i64,
    sealed: bool,
    keys: &Rows,
    states: &[Vec<ArrayRef>],
    state_rows: &StateRows,
    setup: &WindowSetup,
) -> Result<(), OperatorError> {
    for (r, part) in parts.iter_mut().enumerate() {
        let ids: Vec<usize> = dest
            .iter()
            .enumerate()
            .filter(|(_, d)| **d == Some(r))
            .map(|(id, _)| id)
            .collect();
        if ids.is_empty() {
            continue;
        }
        let picked = pick_states(states, &ids, &setup.name)?;
        let rows = state_rows.encode(&picked, ids.len(), &setup.name)?;
        part.push(Part {
            start,
            sealed,
            keys: ids
                .iter()
                .map(|id| setup.codec.stored(keys.row(*id)).to_vec())
                .collect(),
            states: rows.iter().map(|row| row.data().to_vec()).collect(),
        });
    }
    Ok(())
}

/// The rows `ids` of `keys`, in that order.
fn pick_rows(setup: &WindowSetup, keys: &Rows, ids: &[usize]) -> Rows {
    let mut out = setup.codec.empty_rows();
    for id in ids {
        out.push(keys.row(*id));
    }
    out
}

/// The rows `ids` of every state column, in that order.
fn pick_states(
    states: &[Vec<ArrayRef>],
    ids: &[usize],
    operator: &str,
) -> Result<Vec<Vec<ArrayRef>>, OperatorError> {
    let indices = UInt32Array::from_iter_values(
        ids.iter()
            .map(|id| u32::try_from(*id).expect("a pane holds fewer than 2^32 groups")),
    );
    states
        .iter()
        .map(|columns| {
            columns
                .iter()
                .map(|c| arrow::compute::take(c.as_ref(), &indices, None))
                .collect::<Result<Vec<_>, _>>()
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| arrow_error(operator, &e))
}

/// The state columns of `a` followed by those of `b` (the same aggregates).
fn concat_states(
    a: &[Vec<ArrayRef>],
    b: &[Vec<ArrayRef>],
    operator: &str,
) -> Result<Vec<Vec<ArrayRef>>, OperatorError> {
    a.iter()
        .zip(b)
        .map(|(ca, cb)| {
            ca.iter()
                .zip(cb)
                .map(|(x, y)| arrow::compute::concat(&[x.as_ref(), y.as_ref()]))
                .collect::<Result<Vec<_>, _>>()
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| arrow_error(operator, &e))
}

fn encode(parts: &[Part]) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    let len = |n: usize| u32::try_from(n).expect("a piece holds fewer than 2^32 of anything");
    out.extend_from_slice(&len(parts.len()).to_le_bytes());
    for p in parts {
        out.extend_from_slice(&p.start.to_le_bytes());
        out.push(u8::from(p.sealed));
        out.extend_from_slice(&len(p.keys.len()).to_le_bytes());
        for (key, state) in p.keys.iter().zip(&p.states) {
            for bytes in [key, state] {
                out.extend_from_slice(&len(bytes.len()).to_le_bytes());
                out.extend_from_slice(bytes);
            }
        }
    }
    out
}

fn decode(bytes: &[u8], operator: &str) -> Result<Vec<Part>, OperatorError> {
    let corrupt = || {
        OperatorError::internal(
            operator,
            "the key groups another instance handed over are cut short or not a window's",
        )
    };
    let mut r = Reader(bytes);
    if r.take(MAGIC.len()).ok_or_else(corrupt)? != MAGIC {
        return Err(corrupt());
    }
    let panes = r.u32().ok_or_else(corrupt)?;
    let mut parts = Vec::new();
    for _ in 0..panes {
        let start = i64::from_le_bytes(r.array().ok_or_else(corrupt)?);
        let sealed = match r.take(1).ok_or_else(corrupt)? {
            [0] => false,
            [1] => true,
            _ => return Err(corrupt()),
        };
        let groups = r.u32().ok_or_else(corrupt)?;
        let (mut keys, mut states) = (Vec::new(), Vec::new());
        for _ in 0..groups {
            keys.push(r.bytes().ok_or_else(corrupt)?.to_vec());
            states.push(r.bytes().ok_or_else(corrupt)?.to_vec());
        }
        parts.push(Part {
            start,
            sealed,
            keys,
            states,
        });
    }
    if !r.0.is_empty() {
        return Err(corrupt());
    }
    Ok(parts)
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(head)
    }

    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N)?.try_into().ok()
    }

    fn u32(&mut self) -> Option<u32> {
        self.array().map(u32::from_le_bytes)
    }

    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = usize::try_from(self.u32()?).ok()?;
        self.take(n)
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn a_piece_reads_back_and_a_cut_one_is_refused() {
        let parts = vec![
            Part {
                start: -7,
                sealed: true,
                keys: vec![b"k1".to_vec(), Vec::new()],
                states: vec![b"s1".to_vec(), b"s2".to_vec()],
            },
            Part {
                start: i64::MAX,
                sealed: false,
                keys: vec![],
                states: vec![],
            },
        ];
        let bytes = encode(&parts);
        let back = decode(&bytes, "w").expect("reads back");
        assert_eq!(back.len(), 2);
        assert_eq!(
            (
                back[0].start,
                back[0].sealed,
                &back[0].keys,
                &back[0].states
            ),
            (-7, true, &parts[0].keys, &parts[0].states)
        );
        assert_eq!((back[1].start, back[1].sealed), (i64::MAX, false));
        for cut in 0..bytes.len() {
            assert!(decode(&bytes[..cut], "w").is_err(), "cut at {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode(&longer, "w").is_err());
    }
}
