//! A snapshot whose output fails keeps its changes tracked for the next snapshot, and an
//! extract whose output fails removes nothing.

use crate::common;

use std::io::{self, Write};

use anduin_state::{KeyGroup, KeyGroupRange, SnapshotKind, StateError};
use common::{changes_snapshot, contents, full_snapshot, restore_from, with_each_backend};

/// Accepts `left` bytes, then fails every write.
struct FailingAfter {
    left: usize,
}

impl Write for FailingAfter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.left == 0 {
            return Err(io::Error::other("disk full"));
        }
        let n = buf.len().min(self.left);
        self.left -= n;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_failed_changes_snapshot_keeps_the_changes_for_the_next_one() {
    with_each_backend(|open| {
        let mut b = open();
        b.put(KeyGroup(1), b"a", b"1")?;
        let full = full_snapshot(b.as_mut())?;
        b.put(KeyGroup(1), b"b", b"2")?;
        b.delete(KeyGroup(1), b"a")?;
        for left in [0, 20] {
            let err = b
                .snapshot(SnapshotKind::Changes, &mut FailingAfter { left })
                .expect_err("the output fails");
            assert!(
                matches!(
                    err,
                    StateError::Write {
                        kind: SnapshotKind::Changes,
                        ..
                    }
                ),
                "{err}"
            );
        }
        let changes = changes_snapshot(b.as_mut())?;
        let mut r = open();
        restore_from(r.as_mut(), &full, &[changes])?;
        assert_eq!(contents(r.as_ref(), 0..4)?, contents(b.as_ref(), 0..4)?);
        Ok(())
    });
}

#[test]
fn a_failed_extract_removes_nothing() {
    with_each_backend(|open| {
        let mut b = open();
        for kg in 0..4u16 {
            b.put(KeyGroup(kg), b"k", &[7; 100])?;
        }
        let before = contents(b.as_ref(), 0..4)?;
        let err = b
            .extract(KeyGroupRange::new(1, 3), &mut FailingAfter { left: 150 })
            .expect_err("the output fails");
        assert!(matches!(err, StateError::Write { .. }), "{err}");
        assert_eq!(contents(b.as_ref(), 0..4)?, before);
        Ok(())
    });
}
