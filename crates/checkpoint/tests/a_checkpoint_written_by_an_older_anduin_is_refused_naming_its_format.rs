//! A checkpoint whose manifest has another format than this build's (written by an older
//! anduin, whose keyed state is laid out differently) is refused by name: reading its
//! manifest says which format it has and what to do, and a starting run finds nothing usable
//! rather than misreading it or silently starting over.

use std::collections::BTreeMap;

use anduin_checkpoint::decide::RestoreDecision;
use anduin_checkpoint::plan::PlanFingerprint;
use anduin_checkpoint::{CheckpointError, Manifest, Store, MANIFEST_FORMAT, READ_FORMATS};
use anduin_types::Epoch;

/// The newest format this build no longer reads.
const UNREADABLE: u32 = READ_FORMATS[0] - 1;

fn complete(store: &Store, epoch: u64, format: u32) {
    store.begin(Epoch(epoch)).expect("begins");
    store
        .complete(&Manifest {
            format,
            epoch,
            created_unix_ms: 0,
            finished: false,
            plan: PlanFingerprint::default(),
            files: Vec::new(),
            operators: BTreeMap::new(),
            controls: Vec::new(),
        })
        .expect("completes");
}

#[test]
fn a_manifest_of_an_older_format_is_refused_naming_its_format_and_what_to_do() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path()).expect("opens");
    complete(&store, 1, UNREADABLE);

    let e = store.manifest(Epoch(1)).expect_err("another format");
    assert!(
        matches!(e, CheckpointError::OtherFormat { epoch: 1, found, expected, .. }
            if found == UNREADABLE && expected == MANIFEST_FORMAT),
        "{e}"
    );
    let message = e.to_string();
    for part in [
        "checkpoint 1",
        "MANIFEST.json",
        &format!("format {}", UNREADABLE),
        "an older anduin",
        "--from-scratch",
    ] {
        assert!(message.contains(part), "{part:?} not in: {message}");
    }

    let (decision, validated) = store.choose_restore().expect("lists");
    assert!(validated.is_none());
    match decision {
        RestoreDecision::NothingUsable { problems } => {
            assert_eq!(problems.len(), 1);
            assert_eq!(problems[0].0, Epoch(1));
            assert!(
                problems[0].1.contains("an older anduin"),
                "{}",
                problems[0].1
            );
        }
        other => panic!("an older checkpoint must not be restored nor skipped: {other:?}"),
    }
}

#[test]
fn a_manifest_of_the_previous_format_is_read_as_having_no_param_changes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path()).expect("opens");
    complete(&store, 1, READ_FORMATS[0]);
    let m = store
        .manifest(Epoch(1))
        .expect("format 2 is read")
        .expect("present");
    assert_eq!(m.format, READ_FORMATS[0]);
    assert!(m.controls.is_empty());
}
