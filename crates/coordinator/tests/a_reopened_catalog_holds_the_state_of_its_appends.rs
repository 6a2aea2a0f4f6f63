//! Every acknowledged edit is in the catalog a restarted coordinator opens.

use crate::common;

use anduin_coordinator::Txid;

#[test]
fn a_reopened_catalog_holds_the_state_of_its_appends() {
    let dir = tempfile::tempdir().expect("tempdir");
    let edits = common::edits(30);
    let mut catalog = common::open(dir.path(), common::no_snapshots());
    assert_eq!(catalog.last_txid(), Txid(0));
    common::append_all(&mut catalog, &edits);
    let live = catalog.state().clone();
    assert_eq!(live, common::in_memory(&edits));
    drop(catalog);

    let catalog = common::open(dir.path(), common::no_snapshots());
    assert_eq!(catalog.state(), &live);
    assert_eq!(catalog.last_txid(), Txid(30));
    let recovered = catalog.recovered();
    assert_eq!(recovered.snapshot, None);
    assert_eq!(recovered.replayed, 30);
    assert_eq!(recovered.torn_tail, None);
    assert_eq!(
        common::files(dir.path()),
        vec!["edits-00000000000000000001.log"]
    );

    // The query's source, settings, placement, checkpoint and parameters all came back.
    let q = &catalog.state().queries[&anduin_coordinator::QueryId::new("q2")];
    assert!(q.source.text.contains("price > ${MIN}"));
    assert_eq!(q.settings.parallelism, Some(2));
    assert_eq!(q.placement.len(), 2);
    assert!(q.last_checkpoint.is_some());
    assert!(!q.control_history.is_empty());
}
