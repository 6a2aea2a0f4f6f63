//! A restore rejects a damaged stream (a flipped byte anywhere, a truncation anywhere, wrong
//! magic, an unknown version) with a typed error that names the stream, and leaves the backend
//! empty.

use crate::common;

use anduin_state::{KeyGroup, StateBackend, StateError, StreamIndex, StreamProblem};
use common::{changes_snapshot, contents, full_snapshot, restore_from, with_each_backend, Open};

/// A full snapshot and two changelogs of a small state.
fn chain(open: Open) -> Result<(Vec<u8>, Vec<Vec<u8>>), StateError> {
    let mut b = open();
    b.put(KeyGroup(1), b"apple", b"red")?;
    b.put(KeyGroup(2), b"kiwi", b"green")?;
    let full = full_snapshot(b.as_mut())?;
    b.put(KeyGroup(1), b"banana", b"yellow")?;
    let c1 = changes_snapshot(b.as_mut())?;
    b.delete(KeyGroup(1), b"apple")?;
    let c2 = changes_snapshot(b.as_mut())?;
    Ok((full, vec![c1, c2]))
}

/// Restores into `b` (after giving it stray state) and returns the error, checking that the
/// backend is empty afterwards.
fn restore_err(
    b: &mut dyn StateBackend,
    full: &[u8],
    changes: &[Vec<u8>],
) -> Result<StateError, StateError> {
    b.put(KeyGroup(3), b"stray", b"x")?;
    let err = match restore_from(b, full, changes) {
        Ok(()) => panic!("a damaged chain restored"),
        Err(e) => e,
    };
    assert!(
        contents(b, 0..8)?.is_empty(),
        "a failed restore leaves the backend empty"
    );
    Ok(err)
}

fn stream_of(err: &StateError) -> StreamIndex {
    match err {
        StateError::BadStream { stream, .. } => *stream,
        other => panic!("expected a BadStream error, got {other}"),
    }
}

/// Applies `damage` to stream `victim` (0 = full, i = changes[i-1]) of a good chain.
fn damaged(
    (full, changes): &(Vec<u8>, Vec<Vec<u8>>),
    victim: usize,
    damage: impl Fn(&mut Vec<u8>),
) -> (Vec<u8>, Vec<Vec<u8>>) {
    let (mut full, mut changes) = (full.clone(), changes.clone());
    match victim {
        0 => damage(&mut full),
        i => damage(&mut changes[i - 1]),
    }
    (full, changes)
}

fn stream_len(good: &(Vec<u8>, Vec<Vec<u8>>), victim: usize) -> usize {
    match victim {
        0 => good.0.len(),
        i => good.1[i - 1].len(),
    }
}

#[test]
fn a_flipped_bit_anywhere_in_any_stream_is_detected() {
    with_each_backend(|open| {
        let good = chain(open)?;
        let mut b = open();
        for victim in 0..3 {
            for at in 0..stream_len(&good, victim) {
                for bit in [0x01u8, 0x80] {
                    let (full, changes) = damaged(&good, victim, |s| s[at] ^= bit);
                    let err = restore_err(b.as_mut(), &full, &changes)?;
                    assert_eq!(stream_of(&err), StreamIndex(victim), "byte {at}: {err}");
                }
            }
        }
        Ok(())
    });
}

#[test]
fn a_truncation_anywhere_in_any_stream_is_detected() {
    with_each_backend(|open| {
        let good = chain(open)?;
        let mut b = open();
        for victim in 0..3 {
            for len in 0..stream_len(&good, victim) {
                let (full, changes) = damaged(&good, victim, |s| s.truncate(len));
                let err = restore_err(b.as_mut(), &full, &changes)?;
                assert_eq!(stream_of(&err), StreamIndex(victim), "length {len}: {err}");
                assert!(
                    matches!(
                        err,
                        StateError::BadStream {
                            problem: StreamProblem::Truncated { offset },
                            ..
                        } if offset == len as u64
                    ),
                    "length {len}: {err}"
                );
            }
        }
        Ok(())
    });
}

#[test]
fn a_flipped_payload_byte_is_a_checksum_mismatch() {
    with_each_backend(|open| {
        let good = chain(open)?;
        let mut b = open();
        // The last byte of the first record's value ("red") in the full snapshot.
        let at = good
            .0
            .windows(3)
            .position(|w| w == b"red")
            .expect("value present")
            + 2;
        let (full, changes) = damaged(&good, 0, |s| s[at] ^= 0x20);
        let err = restore_err(b.as_mut(), &full, &changes)?;
        assert!(
            matches!(
                err,
                StateError::BadStream {
                    stream: StreamIndex(0),
                    problem: StreamProblem::ChecksumMismatch { .. }
                }
            ),
            "{err}"
        );
        assert!(
            err.to_string()
                .starts_with("stream 0 (the full snapshot): checksum mismatch"),
            "{err}"
        );
        Ok(())
    });
}

#[test]
fn wrong_magic_and_unknown_versions_are_named() {
    with_each_backend(|open| {
        let good = chain(open)?;
        let mut b = open();
        let (full, changes) = damaged(&good, 2, |s| s[..8].copy_from_slice(b"PAR1PAR1"));
        let err = restore_err(b.as_mut(), &full, &changes)?;
        assert!(
            matches!(
                err,
                StateError::BadStream {
                    stream: StreamIndex(2),
                    problem: StreamProblem::BadMagic { found },
                } if &found == b"PAR1PAR1"
            ),
            "{err}"
        );
        assert!(
            err.to_string()
                .starts_with("stream 2 (changelog 2): not an anduin state snapshot"),
            "{err}"
        );

        let (full, changes) = damaged(&good, 1, |s| s[8..10].copy_from_slice(&2u16.to_be_bytes()));
        let err = restore_err(b.as_mut(), &full, &changes)?;
        assert!(
            matches!(
                err,
                StateError::BadStream {
                    stream: StreamIndex(1),
                    problem: StreamProblem::UnsupportedVersion { found: 2 }
                }
            ),
            "{err}"
        );
        Ok(())
    });
}

#[test]
fn bytes_after_the_trailer_are_rejected() {
    with_each_backend(|open| {
        let good = chain(open)?;
        let mut b = open();
        let (full, changes) = damaged(&good, 1, |s| s.push(0));
        let err = restore_err(b.as_mut(), &full, &changes)?;
        assert!(
            matches!(
                err,
                StateError::BadStream {
                    stream: StreamIndex(1),
                    problem: StreamProblem::TrailingBytes { .. }
                }
            ),
            "{err}"
        );
        Ok(())
    });
}

#[test]
fn the_undamaged_chain_restores() {
    with_each_backend(|open| {
        let (full, changes) = chain(open)?;
        let mut b: Box<dyn StateBackend> = open();
        restore_from(b.as_mut(), &full, &changes)?;
        let got = contents(b.as_ref(), 0..8)?;
        let want = [
            ((1, b"banana".to_vec()), b"yellow".to_vec()),
            ((2, b"kiwi".to_vec()), b"green".to_vec()),
        ];
        assert_eq!(got, want.into_iter().collect());
        Ok(())
    });
}
