//! A crash in the middle of an append leaves a cut record at the end of the log: it was never
//! acknowledged, so recovery drops it (and says so), keeps every whole edit, and appends on.

use crate::common;

use std::fs::OpenOptions;
use std::io::Write;
use std::time::Instant;

use anduin_coordinator::catalog::{format, segment_path};
use anduin_coordinator::Txid;

#[test]
fn a_crash_mid_append_recovers_every_complete_edit() {
    let edits = common::edits(12);
    let (whole, extra) = edits.split_at(10);
    let expected = common::in_memory(whole);

    // The record of edit 11, cut at every length short of whole, written by hand as a crash
    // in the middle of its append would leave it.
    let record = format::encode_record(Txid(11), &extra[0]).expect("encodes");
    for cut in [1, 7, 15, 16, 17, record.len() / 2, record.len() - 1] {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut catalog = common::open(dir.path(), common::no_snapshots());
        common::append_all(&mut catalog, whole);
        drop(catalog);
        let segment = segment_path(dir.path(), Txid(1));
        let good_len = std::fs::metadata(&segment).expect("segment").len();
        let mut file = OpenOptions::new()
            .append(true)
            .open(&segment)
            .expect("open");
        file.write_all(&record[..cut]).expect("a cut record");
        drop(file);

        let mut catalog = common::open(dir.path(), common::no_snapshots());
        assert_eq!(catalog.state(), &expected, "cut at {cut}");
        assert_eq!(catalog.last_txid(), Txid(10));
        let torn = catalog
            .recovered()
            .torn_tail
            .clone()
            .expect("the torn tail is reported");
        assert_eq!(
            (torn.path.clone(), torn.offset, torn.bytes),
            (segment.clone(), good_len, cut as u64)
        );
        assert_eq!(
            std::fs::metadata(&segment).expect("segment").len(),
            good_len,
            "truncated"
        );

        // Appends go on after the last whole edit, and the log reads clean.
        for e in extra {
            catalog.append(e.clone(), Instant::now()).expect("appended");
        }
        drop(catalog);
        let catalog = common::open(dir.path(), common::no_snapshots());
        assert_eq!(catalog.state(), &common::in_memory(&edits));
        assert_eq!(catalog.recovered().torn_tail, None);
    }
}

#[test]
fn a_zeroed_end_from_a_crash_is_dropped_too() {
    let dir = tempfile::tempdir().expect("tempdir");
    let edits = common::edits(5);
    let mut catalog = common::open(dir.path(), common::no_snapshots());
    common::append_all(&mut catalog, &edits);
    drop(catalog);
    let segment = segment_path(dir.path(), Txid(1));
    let mut file = OpenOptions::new()
        .append(true)
        .open(&segment)
        .expect("open");
    file.write_all(&[0u8; 4096])
        .expect("zeros, as a file extended but never written");
    drop(file);
    let catalog = common::open(dir.path(), common::no_snapshots());
    assert_eq!(catalog.state(), &common::in_memory(&edits));
    assert_eq!(
        catalog.recovered().torn_tail.as_ref().map(|t| t.bytes),
        Some(4096)
    );
}
