//! Property test: after any sequence of puts, deletes and snapshots of either kind, restoring
//! a fresh backend from the last full snapshot and the changelogs after it gives exactly the
//! state of a `BTreeMap` model, and so does restoring into the other backend kind (snapshots
//! are portable).

use crate::common;

use anduin_state::{KeyGroup, SnapshotKind, StateBackend, StateError};
use common::{contents, restore_from, Open, BACKENDS, KINDS};
use proptest::prelude::*;

const KEY_GROUPS: u16 = 4;

#[derive(Debug, Clone)]
enum Op {
    Put(u16, Vec<u8>, Vec<u8>),
    Delete(u16, Vec<u8>),
    Snapshot(SnapshotKind),
}

fn op() -> impl Strategy<Value = Op> {
    // Few distinct keys, so that puts overwrite and deletes hit.
    let key = prop::collection::vec(prop_oneof![Just(0u8), Just(1), Just(0xff)], 0..3);
    prop_oneof![
        6 => (0..KEY_GROUPS, key.clone(), prop::collection::vec(any::<u8>(), 0..12))
            .prop_map(|(kg, k, v)| Op::Put(kg, k, v)),
        3 => (0..KEY_GROUPS, key).prop_map(|(kg, k)| Op::Delete(kg, k)),
        1 => Just(Op::Snapshot(SnapshotKind::Full)),
        2 => Just(Op::Snapshot(SnapshotKind::Changes)),
    ]
}

type Model = common::Entries;

/// The snapshots a checkpoint store would keep: the last full one and the changelogs after it.
#[derive(Default)]
struct Chain {
    full: Option<Vec<u8>>,
    changes: Vec<Vec<u8>>,
}

/// Runs `ops` on a backend from `open` and the model; ends with a snapshot so the chain covers
/// every op. Returns the chain and the model.
fn run(open: Open, ops: &[Op]) -> Result<(Chain, Model), StateError> {
    let mut backend = open();
    let mut model = Model::new();
    let mut chain = Chain::default();
    let final_kind = ops
        .iter()
        .any(|op| matches!(op, Op::Snapshot(SnapshotKind::Full)));
    let final_snapshot = Op::Snapshot(if final_kind {
        SnapshotKind::Changes
    } else {
        SnapshotKind::Full
    });
    for op in ops.iter().chain([&final_snapshot]) {
        match op {
            Op::Put(kg, k, v) => {
                backend.put(KeyGroup(*kg), k, v)?;
                model.insert((*kg, k.clone()), v.clone());
            }
            Op::Delete(kg, k) => {
                backend.delete(KeyGroup(*kg), k)?;
                model.remove(&(*kg, k.clone()));
            }
            Op::Snapshot(kind) => {
                let mut out = Vec::new();
                let stats = backend.snapshot(*kind, &mut out)?;
                assert_eq!(stats.bytes, out.len() as u64, "stats count every byte");
                match kind {
                    SnapshotKind::Full => {
                        assert_eq!(
                            stats.entries,
                            model.len() as u64,
                            "a full snapshot holds every entry"
                        );
                        chain = Chain {
                            full: Some(out),
                            changes: Vec::new(),
                        };
                    }
                    SnapshotKind::Changes => chain.changes.push(out),
                }
            }
        }
    }
    assert_eq!(
        contents(backend.as_ref(), 0..KEY_GROUPS)?,
        model,
        "the live backend"
    );
    Ok((chain, model))
}

fn check_restore(
    into: &mut dyn StateBackend,
    chain: &Chain,
    model: &Model,
) -> Result<(), StateError> {
    let full = chain
        .full
        .as_deref()
        .expect("run ends with a full snapshot if there was none");
    // Restore twice: a restore replaces whatever the backend held.
    for _ in 0..2 {
        restore_from(into, full, &chain.changes)?;
        assert_eq!(&contents(into, 0..KEY_GROUPS)?, model);
        for ((kg, k), v) in model {
            assert_eq!(into.get(KeyGroup(*kg), k)?.as_ref(), Some(v));
        }
        into.put(KeyGroup(0), b"stray", b"must vanish on restore")?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn restoring_the_last_full_snapshot_and_later_changelogs_reproduces_the_model(
        ops in prop::collection::vec(op(), 0..60)
    ) {
        for (source, open_source) in BACKENDS {
            let (chain, model) = run(open_source, &ops)
                .unwrap_or_else(|e| panic!("running on {source}: {e}"));
            for (target, open_target) in KINDS {
                let mut into = open_target();
                check_restore(into.as_mut(), &chain, &model).unwrap_or_else(|e| {
                    panic!("restoring {source}'s snapshots into {target}: {e}")
                });
            }
        }
    }
}
