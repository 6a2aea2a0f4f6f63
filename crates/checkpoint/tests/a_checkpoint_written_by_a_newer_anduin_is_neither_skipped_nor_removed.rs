//! A checkpoint written by a newer anduin (a manifest format above this build's) above a
//! usable older one: the starting run must not fall back to the older one (that would drop
//! what the newer one holds) nor remove the newer one, but say that it cannot read it and
//! that the anduin which wrote it can.

use std::collections::BTreeMap;

use anduin_checkpoint::plan::PlanFingerprint;
use anduin_checkpoint::recovery::RecoveryPlan;
use anduin_checkpoint::{Manifest, Store, MANIFEST_FORMAT};
use anduin_types::Epoch;

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
fn a_checkpoint_written_by_a_newer_anduin_is_neither_skipped_nor_removed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path()).expect("opens");
    complete(&store, 1, MANIFEST_FORMAT);
    complete(&store, 2, MANIFEST_FORMAT + 1);

    let (plan, chosen) = store.recovery(false).expect("examines");
    assert!(
        chosen.is_none(),
        "the older checkpoint must not be restored"
    );
    match plan {
        RecoveryPlan::Unusable { problems } => {
            assert_eq!(problems.len(), 1);
            assert_eq!(problems[0].0, Epoch(2));
            for part in ["a newer anduin", "resume it with the anduin that wrote it"] {
                assert!(
                    problems[0].1.contains(part),
                    "{part:?} not in: {}",
                    problems[0].1
                );
            }
        }
        other => panic!("a newer checkpoint must stop the recovery: {other:?}"),
    }
    assert_eq!(store.epochs().expect("lists"), vec![Epoch(1), Epoch(2)]);

    // Starting over is the user's explicit choice.
    let (plan, _) = store.recovery(true).expect("examines");
    assert!(
        matches!(plan, RecoveryPlan::Fresh { asked: true, .. }),
        "{plan:?}"
    );
}
