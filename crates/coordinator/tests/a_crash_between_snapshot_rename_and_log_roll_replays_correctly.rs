//! A crash after a snapshot's rename but before the log was rolled leaves the snapshot and the
//! old segment holding the same edits: replay skips the edits the snapshot holds, and appends
//! go on in the old segment. A snapshot a crash left half-written (under its temporary name)
//! is removed.

use crate::common;

use anduin_coordinator::catalog::{segment_path, snapshot_path, temp_path};
use anduin_coordinator::Txid;

#[test]
fn a_crash_between_snapshot_rename_and_log_roll_replays_correctly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let edits = common::edits(11);
    let mut catalog = common::open(dir.path(), common::no_snapshots());
    common::append_all(&mut catalog, &edits[..5]);
    catalog.snapshot().expect("snapshot");
    drop(catalog);
    // The roll never happened.
    std::fs::remove_file(segment_path(dir.path(), Txid(6))).expect("the rolled segment");
    assert_eq!(
        common::files(dir.path()),
        vec![
            "edits-00000000000000000001.log",
            "snapshot-00000000000000000005.img"
        ]
    );

    let mut catalog = common::open(dir.path(), common::no_snapshots());
    assert_eq!(catalog.state(), &common::in_memory(&edits[..5]));
    assert_eq!(catalog.recovered().snapshot, Some(Txid(5)));
    assert_eq!(
        catalog.recovered().replayed,
        0,
        "edits 1..5 are in the snapshot"
    );
    common::append_all(&mut catalog, &edits[5..8]);
    drop(catalog);
    assert_eq!(
        common::files(dir.path()),
        vec![
            "edits-00000000000000000001.log",
            "snapshot-00000000000000000005.img"
        ],
        "edits 6..8 went on in the old segment"
    );

    // A crash in the middle of writing the next snapshot leaves its temporary file.
    let half = temp_path(&snapshot_path(dir.path(), Txid(8)));
    std::fs::write(&half, b"ANDUINCS half of a snapsh").expect("half a snapshot");
    let mut catalog = common::open(dir.path(), common::no_snapshots());
    assert_eq!(catalog.recovered().removed_temporary, vec![half]);
    assert_eq!(
        catalog.recovered().replayed,
        3,
        "edits 6..8 after the snapshot"
    );
    assert_eq!(catalog.state(), &common::in_memory(&edits[..8]));

    // And from there snapshots and rolls go on as usual.
    catalog.snapshot().expect("snapshot");
    common::append_all(&mut catalog, &edits[8..]);
    drop(catalog);
    let catalog = common::open(dir.path(), common::no_snapshots());
    assert_eq!(catalog.state(), &common::in_memory(&edits));
    assert_eq!(catalog.recovered().snapshot, Some(Txid(8)));
    assert_eq!(catalog.recovered().replayed, 3);
}
