//! A snapshot in a format this anduin does not read is not damage to fall back from: the
//! coordinator refuses to start, naming the file and the format, and changes nothing.

use crate::common;

use std::time::Instant;

use anduin_coordinator::catalog::{snapshot_path, Catalog, CatalogError};
use anduin_coordinator::Txid;

#[test]
fn a_catalog_written_by_another_version_is_refused_by_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut catalog = common::open(dir.path(), common::no_snapshots());
    common::append_all(&mut catalog, &common::edits(4));
    catalog.snapshot().expect("snapshot");
    drop(catalog);
    let path = snapshot_path(dir.path(), Txid(4));
    let mut bytes = std::fs::read(&path).expect("read");
    // Format 2's prefix: magic, version, and the CRC32 of those 12 bytes.
    let mut prefix = b"ANDUINCS".to_vec();
    prefix.extend(2u32.to_le_bytes());
    let crc = crc32fast::hash(&prefix);
    prefix.extend(crc.to_le_bytes());
    bytes[..16].copy_from_slice(&prefix);
    std::fs::write(&path, &bytes).expect("write");
    let before = common::files(dir.path());

    let err =
        Catalog::open(dir.path(), common::no_snapshots(), Instant::now()).expect_err("format 2");
    assert!(
        matches!(&err, CatalogError::OtherVersion { path: p, found: 2 } if *p == path),
        "{err:?}"
    );
    assert!(err.to_string().contains("catalog format 2"), "{err}");
    assert_eq!(
        common::files(dir.path()),
        before,
        "nothing set aside or removed"
    );
}
