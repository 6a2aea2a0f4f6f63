//! Cutting full snapshot streams by key group, and joining the pieces, record by record,
//! without loading the state into a table: what a live rescale hands over. A full stream is
//! sorted by `(kg, key)`, so each piece of it is too, and pieces of disjoint key-group ranges
//! joined in the order of their ranges make one sorted full stream again.

use crate::format::{Record, SnapshotReader, SnapshotWriter};
use crate::{KeyGroupRange, SnapshotKind, StateError, StreamIndex, TableError, TableProblem};

fn error(operator: &str, problem: TableProblem) -> TableError {
    TableError {
        operator: operator.to_string(),
        problem: Box::new(problem),
    }
}

fn backend(operator: &str) -> impl Fn(StateError) -> TableError + '_ {
    move |e| error(operator, TableProblem::Backend(e))
}

/// Calls `f` with every entry of the full stream `bytes` (stream `index` in errors), in order;
/// the stream's checksum is verified at its end.
fn each_put(
    operator: &str,
    bytes: &[u8],
    index: usize,
    mut f: impl FnMut(crate::KeyGroup, &[u8], &[u8]) -> Result<(), TableError>,
) -> Result<(), TableError> {
    let mut reader = SnapshotReader::new(bytes, StreamIndex(index)).map_err(backend(operator))?;
    reader
        .expect_kind(SnapshotKind::Full)
        .map_err(backend(operator))?;
    while let Some(record) = reader.next_record().map_err(backend(operator))? {
        if let Record::Put { kg, key, value } = record {
            f(kg, key, value)?;
        }
    }
    Ok(())
}

/// The full snapshot `full` of one of `operator`'s instances (empty bytes: no state), cut into
/// one full stream per range of `ranges` (disjoint; together the instance's own key groups).
/// An entry of a key group in none of them fails the cut: the state is corrupt, and leaving
/// the entry behind would lose it silently.
pub fn cut_full(
    operator: &str,
    full: &[u8],
    ranges: &[KeyGroupRange],
) -> Result<Vec<Vec<u8>>, TableError> {
    let mut pieces: Vec<Vec<u8>> = vec![Vec::new(); ranges.len()];
    {
        let mut writers = pieces
            .iter_mut()
            .map(|p| SnapshotWriter::new(p, SnapshotKind::Full))
            .collect::<Result<Vec<_>, _>>()
            .map_err(backend(operator))?;
        if !full.is_empty() {
            each_put(operator, full, 0, |kg, key, value| {
                let Some(writer) = ranges
                    .iter()
                    .zip(writers.iter_mut())
                    .find_map(|(r, w)| r.contains(kg).then_some(w))
                else {
                    let owned = KeyGroupRange::new(
                        ranges.iter().map(|r| r.start).min().unwrap_or(0),
                        ranges.iter().map(|r| r.end).max().unwrap_or(0),
                    );
                    return Err(error(
                        operator,
                        TableProblem::HeldOutsideOwnRange { owned, kg },
                    ));
                };
                writer.put(kg, key, value).map_err(backend(operator))
            })?;
        }
        for w in writers {
            let _stats = w.finish().map_err(backend(operator))?;
        }
    }
    Ok(pieces)
}

/// One full stream of the pieces (each a full stream of the entries of its range, the ranges
/// disjoint), in the order of their ranges. An entry outside its piece's range, or two
/// pieces whose ranges overlap, fail the join.
pub fn join_full(
    operator: &str,
    mut pieces: Vec<(KeyGroupRange, Vec<u8>)>,
) -> Result<Vec<u8>, TableError> {
    pieces.sort_by_key(|(r, _)| (r.start, r.end));
    for pair in pieces.windows(2) {
        let [(a, _), (b, _)] = pair else { continue };
        let (a, b) = (*a, *b);
        if !a.is_empty() && !b.is_empty() && b.start < a.end {
            return Err(error(
                operator,
                TableProblem::ImportConflict {
                    range: b,
                    kg: crate::KeyGroup(b.start),
                },
            ));
        }
    }
    let mut out = Vec::new();
    {
        let mut writer =
            SnapshotWriter::new(&mut out, SnapshotKind::Full).map_err(backend(operator))?;
        for (i, (range, bytes)) in pieces.iter().enumerate() {
            each_put(operator, bytes, i, |kg, key, value| {
                if !range.contains(kg) {
                    return Err(error(
                        operator,
                        TableProblem::HeldOutsideOwnRange { owned: *range, kg },
                    ));
                }
                writer.put(kg, key, value).map_err(backend(operator))
            })?;
        }
        let _stats = writer.finish().map_err(backend(operator))?;
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::{BackendKind, KeyedTable};

    /// A table of `keys` entries spread over the key groups, and its full snapshot.
    fn state(keys: u32) -> Vec<u8> {
        let mut t = KeyedTable::new("w", BackendKind::Heap, None);
        for k in 0..keys {
            let group = format!("key{k}");
            t.put(group.as_bytes(), b"sub", &k.to_be_bytes())
                .expect("a put");
        }
        let mut full = Vec::new();
        let _ = t
            .snapshot(SnapshotKind::Full, &mut full)
            .expect("a snapshot");
        full
    }

    fn restore(full: &[u8]) {
        let mut t = KeyedTable::new("w", BackendKind::Heap, None);
        t.restore(&mut &full[..], &mut [], |_| Ok::<(), TableError>(()))
            .expect("a valid full stream");
    }

    #[test]
    fn pieces_cut_from_a_snapshot_join_back_into_the_same_state_in_any_order() {
        let full = state(500);
        let ranges = [
            KeyGroupRange::new(0, 100),
            KeyGroupRange::new(100, 400),
            KeyGroupRange::new(400, 720),
        ];
        let pieces = cut_full("w", &full, &ranges).expect("cut");
        let sizes: Vec<usize> = pieces.iter().map(Vec::len).collect();
        assert!(
            sizes.iter().all(|s| *s > 12),
            "every piece holds entries: {sizes:?}"
        );
        let mut shuffled: Vec<(KeyGroupRange, Vec<u8>)> =
            ranges.iter().copied().zip(pieces).rev().collect();
        shuffled.swap(0, 1);
        let joined = join_full("w", shuffled).expect("joined");
        assert_eq!(joined, full, "the same stream, byte for byte");
        restore(&joined);
    }

    #[test]
    fn an_entry_outside_the_ranges_or_overlapping_pieces_fail_rather_than_lose_it() {
        let full = state(200);
        let e = cut_full("w", &full, &[KeyGroupRange::new(0, 300)]).expect_err("left behind");
        assert!(e.to_string().contains("did not own"), "{e}");
        let pieces = cut_full(
            "w",
            &full,
            &[KeyGroupRange::new(0, 360), KeyGroupRange::new(360, 720)],
        )
        .expect("cut");
        let wrong = vec![(KeyGroupRange::new(0, 10), pieces[0].clone())];
        assert!(
            join_full("w", wrong).is_err(),
            "entries outside the piece's range"
        );
        let overlap = vec![
            (KeyGroupRange::new(0, 400), pieces[0].clone()),
            (KeyGroupRange::new(360, 720), pieces[1].clone()),
        ];
        assert!(join_full("w", overlap).is_err(), "overlapping ranges");
        assert_eq!(
            cut_full("w", &[], &[KeyGroupRange::new(0, 720)])
                .expect("no state")
                .len(),
            1
        );
    }
}
