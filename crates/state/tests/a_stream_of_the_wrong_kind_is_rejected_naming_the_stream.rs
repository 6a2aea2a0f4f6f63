//! A restore starts from a full snapshot and continues with changelogs only: a changelog given
//! first, or a full snapshot among the changelogs, is rejected with the stream's index.

use crate::common;

use anduin_state::{KeyGroup, SnapshotKind, StateError, StreamIndex, StreamProblem};
use common::{changes_snapshot, full_snapshot, restore_from, with_each_backend};

#[test]
fn a_changelog_given_as_the_full_snapshot_is_rejected() {
    with_each_backend(|open| {
        let mut b = open();
        b.put(KeyGroup(0), b"k", b"v")?;
        let changes = changes_snapshot(b.as_mut())?;
        let err = restore_from(open().as_mut(), &changes, &[]).expect_err("a changelog first");
        assert!(
            matches!(
                err,
                StateError::BadStream {
                    stream: StreamIndex(0),
                    problem: StreamProblem::WrongKind {
                        expected: SnapshotKind::Full,
                        found: SnapshotKind::Changes
                    }
                }
            ),
            "{err}"
        );
        assert_eq!(
            err.to_string(),
            "stream 0 (the full snapshot): expected a full snapshot, found a changes snapshot"
        );
        Ok(())
    });
}

#[test]
fn a_full_snapshot_among_the_changelogs_is_rejected() {
    with_each_backend(|open| {
        let mut b = open();
        b.put(KeyGroup(0), b"k", b"v")?;
        let full = full_snapshot(b.as_mut())?;
        let changes = changes_snapshot(b.as_mut())?;
        let err = restore_from(open().as_mut(), &full, &[changes, full.clone()])
            .expect_err("a full snapshot as changelog 2");
        assert!(
            matches!(
                err,
                StateError::BadStream {
                    stream: StreamIndex(2),
                    problem: StreamProblem::WrongKind {
                        expected: SnapshotKind::Changes,
                        found: SnapshotKind::Full
                    }
                }
            ),
            "{err}"
        );
        Ok(())
    });
}

#[test]
fn an_empty_input_is_a_truncated_full_snapshot() {
    with_each_backend(|open| {
        let err = restore_from(open().as_mut(), &[], &[]).expect_err("no bytes at all");
        assert!(
            matches!(
                err,
                StateError::BadStream {
                    stream: StreamIndex(0),
                    problem: StreamProblem::Truncated { offset: 0 }
                }
            ),
            "{err}"
        );
        Ok(())
    });
}
