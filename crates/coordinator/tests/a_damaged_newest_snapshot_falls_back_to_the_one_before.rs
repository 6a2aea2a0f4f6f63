//! A damaged newest snapshot is set aside and the one before it is loaded, with the edits kept
//! for that; if nothing holds the edits it held, the catalog refuses to open rather than forget
//! them.

use crate::common;

use std::time::{Duration, Instant};

use anduin_coordinator::catalog::{
    corrupt_path, snapshot_path, Catalog, CatalogError, CatalogOptions,
};
use anduin_coordinator::Txid;

fn options() -> CatalogOptions {
    CatalogOptions {
        snapshot_every_edits: 4,
        snapshot_every: Duration::from_secs(3600),
        keep_snapshots: 2,
    }
}

#[test]
fn a_damaged_newest_snapshot_falls_back_to_the_one_before() {
    let dir = tempfile::tempdir().expect("tempdir");
    let edits = common::edits(10);
    let mut catalog = common::open(dir.path(), options());
    common::append_all(&mut catalog, &edits);
    drop(catalog);
    let newest = snapshot_path(dir.path(), Txid(8));
    let mut bytes = std::fs::read(&newest).expect("read");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 1;
    std::fs::write(&newest, &bytes).expect("write");

    let catalog = common::open(dir.path(), options());
    assert_eq!(catalog.state(), &common::in_memory(&edits));
    assert_eq!(catalog.recovered().snapshot, Some(Txid(4)));
    assert_eq!(catalog.recovered().replayed, 6);
    assert_eq!(catalog.recovered().set_aside, vec![corrupt_path(&newest)]);
}

#[test]
fn a_damaged_only_snapshot_without_its_edits_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let edits = common::edits(10);
    let mut catalog = common::open(dir.path(), options());
    common::append_all(&mut catalog, &edits);
    drop(catalog);
    // Both snapshots damaged; the segments of edits 1..8 are gone.
    for txid in [4, 8] {
        std::fs::write(snapshot_path(dir.path(), Txid(txid)), b"ANDUINCS damaged").expect("write");
    }
    let err = Catalog::open(dir.path(), options(), Instant::now()).expect_err("edits lost");
    assert!(
        matches!(err, CatalogError::Missing { from: Txid(1), .. }),
        "{err}"
    );
    assert!(err.to_string().contains("backup"), "{err}");
}
