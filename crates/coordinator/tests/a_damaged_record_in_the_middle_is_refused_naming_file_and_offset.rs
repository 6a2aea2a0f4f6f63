//! Damage before the end of the log is not a crash's torn tail: the catalog refuses to open,
//! naming the file and the byte offset, rather than skip acknowledged edits — and leaves the
//! file as it was.

use crate::common;

use std::time::Instant;

use anduin_coordinator::catalog::{format, segment_path, Catalog, CatalogError};
use anduin_coordinator::Txid;

#[test]
fn a_damaged_record_in_the_middle_is_refused_naming_file_and_offset() {
    let dir = tempfile::tempdir().expect("tempdir");
    let edits = common::edits(6);
    let mut catalog = common::open(dir.path(), common::no_snapshots());
    common::append_all(&mut catalog, &edits);
    drop(catalog);

    // Record 3 starts after the header and records 1 and 2.
    let mut offset = format::SEGMENT_HEADER_LEN;
    for (i, e) in edits[..2].iter().enumerate() {
        offset += format::encode_record(Txid(i as u64 + 1), e)
            .expect("encodes")
            .len();
    }
    let segment = segment_path(dir.path(), Txid(1));
    let mut bytes = std::fs::read(&segment).expect("read");
    // A flipped bit inside record 3's body.
    bytes[offset + 30] ^= 0x04;
    std::fs::write(&segment, &bytes).expect("write");

    let err = Catalog::open(dir.path(), common::no_snapshots(), Instant::now())
        .expect_err("damage in the middle");
    match &err {
        CatalogError::Corrupt {
            path, offset: at, ..
        } => {
            assert_eq!(path, &segment);
            assert_eq!(*at, offset as u64);
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
    let message = err.to_string();
    assert!(
        message.contains("edits-00000000000000000001.log")
            && message.contains(&format!("byte {offset}"))
            && message.contains("backup"),
        "{message}"
    );
    assert_eq!(
        std::fs::read(&segment).expect("read"),
        bytes,
        "left as it was"
    );

    // A damaged record header in the middle is refused the same way.
    bytes[offset + 30] ^= 0x04;
    bytes[offset + 2] ^= 0x80;
    std::fs::write(&segment, &bytes).expect("write");
    let err = Catalog::open(dir.path(), common::no_snapshots(), Instant::now())
        .expect_err("damage in the middle");
    assert!(
        matches!(err, CatalogError::Corrupt { offset: at, .. } if at == offset as u64),
        "{err}"
    );
}
