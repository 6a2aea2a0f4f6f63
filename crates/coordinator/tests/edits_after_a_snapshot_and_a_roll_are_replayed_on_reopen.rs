//! After N edits a snapshot is written and the log rolled; the snapshots kept and the
//! segments their edits need stay, older ones go; a reopened catalog loads the newest snapshot
//! and replays only what came after it.

use crate::common;

use std::time::{Duration, Instant};

use anduin_coordinator::catalog::CatalogOptions;
use anduin_coordinator::Txid;

#[test]
fn edits_after_a_snapshot_and_a_roll_are_replayed_on_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    let options = CatalogOptions {
        snapshot_every_edits: 5,
        snapshot_every: Duration::from_secs(3600),
        keep_snapshots: 2,
    };
    let edits = common::edits(12);
    let mut catalog = common::open(dir.path(), options);
    common::append_all(&mut catalog, &edits[..5]);
    assert_eq!(catalog.snapshot_txid(), Txid(5));
    // One snapshot: the empty catalog still counts as the one before, so edits 1..5 stay.
    assert_eq!(
        common::files(dir.path()),
        vec![
            "edits-00000000000000000001.log",
            "edits-00000000000000000006.log",
            "snapshot-00000000000000000005.img",
        ]
    );
    common::append_all(&mut catalog, &edits[5..]);
    assert_eq!(catalog.snapshot_txid(), Txid(10));
    // Two snapshots kept (5 and 10): the segment of edits 1..5 is no longer needed.
    assert_eq!(
        common::files(dir.path()),
        vec![
            "edits-00000000000000000006.log",
            "edits-00000000000000000011.log",
            "snapshot-00000000000000000005.img",
            "snapshot-00000000000000000010.img",
        ]
    );
    drop(catalog);

    let catalog = common::open(dir.path(), options);
    assert_eq!(catalog.state(), &common::in_memory(&edits));
    assert_eq!(catalog.recovered().snapshot, Some(Txid(10)));
    assert_eq!(catalog.recovered().replayed, 2);
    assert_eq!(catalog.last_txid(), Txid(12));
}

#[test]
fn a_snapshot_is_also_written_after_its_period_and_not_without_edits() {
    let dir = tempfile::tempdir().expect("tempdir");
    let options = CatalogOptions {
        snapshot_every_edits: 1000,
        snapshot_every: Duration::from_secs(60),
        keep_snapshots: 2,
    };
    let t0 = Instant::now();
    let mut catalog =
        anduin_coordinator::catalog::Catalog::open(dir.path(), options, t0).expect("opens");
    assert_eq!(
        catalog
            .snapshot_if_due(t0 + Duration::from_secs(120))
            .expect("ok"),
        None,
        "no edits"
    );
    for e in common::edits(3) {
        catalog
            .append(e, t0 + Duration::from_secs(121))
            .expect("appended");
    }
    assert_eq!(
        catalog
            .snapshot_if_due(t0 + Duration::from_secs(180))
            .expect("ok"),
        None,
        "the first edit waited 59 s"
    );
    assert_eq!(
        catalog
            .snapshot_if_due(t0 + Duration::from_secs(181))
            .expect("ok"),
        Some(Txid(3))
    );
    assert_eq!(
        catalog
            .snapshot_if_due(t0 + Duration::from_secs(999))
            .expect("ok"),
        None,
        "nothing new"
    );
    drop(catalog);
    let catalog = common::open(dir.path(), options);
    assert_eq!(catalog.recovered().snapshot, Some(Txid(3)));
    assert_eq!(catalog.recovered().replayed, 0);
}
