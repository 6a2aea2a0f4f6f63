//! Two coordinators never share a state directory: the second is refused, naming the
//! directory and the holder's PID, until the first lets go.

use crate::common;

use std::time::Instant;

use anduin_checkpoint::LockError;
use anduin_coordinator::catalog::{Catalog, CatalogError};

#[test]
fn a_second_coordinator_cannot_open_the_same_state_dir() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut first = common::open(dir.path(), common::no_snapshots());
    common::append_all(&mut first, &common::edits(3));

    let err = Catalog::open(dir.path(), common::no_snapshots(), Instant::now())
        .expect_err("held by the first");
    match &err {
        CatalogError::Locked(LockError::Held { pid, .. }) => {
            assert_eq!(*pid, Some(std::process::id()));
        }
        other => panic!("expected Locked, got {other:?}"),
    }
    let message = err.to_string();
    assert!(
        message.contains("coordinator state directory") && message.contains("PID"),
        "{message}"
    );
    // The refused open changed nothing: the first goes on appending.
    common::append_all(&mut first, &common::edits(5)[3..]);
    drop(first);

    let second = common::open(dir.path(), common::no_snapshots());
    assert_eq!(second.state(), &common::in_memory(&common::edits(5)));
}
