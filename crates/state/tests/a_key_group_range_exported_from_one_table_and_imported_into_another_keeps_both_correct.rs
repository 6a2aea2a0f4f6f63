//! Property test (seeded): two tables own complementary sets of key groups, and writes go to
//! the owner of their group key's key group, as the exchange routes them. Ranges of key
//! groups move back and forth between them by `export` and `import`, between snapshots of
//! either kind. After every move, and at the end, both tables answer `get` and `scan` as a `BTreeMap` model
//! of what each owns, and at the end each table's last full snapshot and the changelogs after
//! it restore, into a table of either backend, to exactly its model.

use std::collections::BTreeMap;
use std::num::NonZeroU16;

use anduin_state::{
    BackendKind, KeyGroup, KeyGroupRange, KeyedTable, SnapshotKind, TableEntry, TableError,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};

/// Few key groups, so that ranges hold several keys and moves hit them.
const MAX: u16 = 8;
/// The seed of the runner: a failure names it and the case.
const SEED: [u8; 32] = *b"anduin-keyed-table-export-import";

/// `(group key, sub-key) → value`.
type Model = BTreeMap<(Vec<u8>, Vec<u8>), Vec<u8>>;

#[derive(Debug, Clone)]
enum Op {
    Put(Vec<u8>, Vec<u8>, Vec<u8>),
    Delete(Vec<u8>, Vec<u8>),
    Snapshot(usize, SnapshotKind),
    /// Move up to `len` key groups from `start` on, as far as `from` owns them, to the other.
    Move {
        from: usize,
        start: u16,
        len: u16,
    },
}

fn op() -> impl Strategy<Value = Op> {
    // Few distinct group keys and sub-keys, so that puts overwrite and deletes hit.
    let group_key = prop::collection::vec(0u8..6, 0..3);
    let sub_key = prop::collection::vec(0u8..2, 0..2);
    prop_oneof![
        8 => (group_key.clone(), sub_key.clone(), prop::collection::vec(any::<u8>(), 0..8))
            .prop_map(|(g, s, v)| Op::Put(g, s, v)),
        3 => (group_key, sub_key).prop_map(|(g, s)| Op::Delete(g, s)),
        1 => (0..2usize).prop_map(|t| Op::Snapshot(t, SnapshotKind::Full)),
        2 => (0..2usize).prop_map(|t| Op::Snapshot(t, SnapshotKind::Changes)),
        2 => (0..2usize, 0..MAX, 1..=MAX).prop_map(|(from, start, len)| Op::Move { from, start, len }),
    ]
}

/// A table, what it should hold, and the snapshots a checkpoint store would keep of it.
struct Side {
    table: KeyedTable,
    model: Model,
    full: Option<Vec<u8>>,
    changes: Vec<Vec<u8>>,
}

impl Side {
    fn new(name: &str, kind: BackendKind) -> Self {
        Side {
            table: open(name, kind),
            model: Model::new(),
            full: None,
            changes: Vec::new(),
        }
    }

    fn snapshot(&mut self, kind: SnapshotKind) -> Result<(), TableError> {
        let mut out = Vec::new();
        let stats = self.table.snapshot(kind, &mut out)?;
        assert_eq!(stats.bytes, out.len() as u64);
        match kind {
            SnapshotKind::Full => {
                assert_eq!(stats.entries, self.model.len() as u64, "a full snapshot");
                self.full = Some(out);
                self.changes.clear();
            }
            _ => self.changes.push(out),
        }
        Ok(())
    }
}

fn max() -> NonZeroU16 {
    NonZeroU16::new(MAX).expect("not zero")
}

fn open(name: &str, kind: BackendKind) -> KeyedTable {
    KeyedTable::new(name, kind, None).with_max_key_groups(max())
}

fn kg_of(table: &KeyedTable, group_key: &[u8]) -> u16 {
    table.key_group(group_key).0
}

/// Everything `table` holds, through `scan`, checking the order of key groups.
fn scanned(table: &KeyedTable) -> Result<Model, TableError> {
    let mut out = Model::new();
    let mut last = KeyGroup(0);
    table.scan(table.all_key_groups(), |e: TableEntry<'_>| {
        assert!(e.kg >= last, "key group after key group");
        assert_eq!(
            e.kg,
            table.key_group(e.group_key),
            "stored where it is routed"
        );
        last = e.kg;
        out.insert((e.group_key.to_vec(), e.sub_key.to_vec()), e.value.to_vec());
        Ok::<(), TableError>(())
    })?;
    Ok(out)
}

/// Both tables answer as their models: `scan` whole, and `get` for every key of either model.
fn check_live(sides: &[Side; 2]) -> Result<(), TableError> {
    for (i, side) in sides.iter().enumerate() {
        assert_eq!(
            scanned(&side.table)?,
            side.model,
            "table {i} scans as its model"
        );
        for ((g, s), _) in sides.iter().flat_map(|x| x.model.iter()) {
            assert_eq!(
                side.table.get(g, s)?.as_ref(),
                side.model.get(&(g.clone(), s.clone())),
                "table {i}: get {g:?}/{s:?}"
            );
        }
    }
    Ok(())
}

/// Runs `ops` on tables of `kinds`; returns how many entries moved.
fn run(ops: &[Op], kinds: [BackendKind; 2]) -> Result<u64, TableError> {
    let mut moved_entries = 0;
    let mut sides = [Side::new("a", kinds[0]), Side::new("b", kinds[1])];
    // Table 0 owns the first half of the key groups, table 1 the rest.
    let mut owner: Vec<usize> = (0..MAX).map(|kg| usize::from(kg >= MAX / 2)).collect();
    for op in ops {
        match op {
            Op::Put(g, s, v) => {
                let side = &mut sides[owner[usize::from(kg_of(&sides[0].table, g))]];
                side.table.put(g, s, v)?;
                side.model.insert((g.clone(), s.clone()), v.clone());
            }
            Op::Delete(g, s) => {
                let side = &mut sides[owner[usize::from(kg_of(&sides[0].table, g))]];
                side.table.delete(g, s)?;
                side.model.remove(&(g.clone(), s.clone()));
            }
            Op::Snapshot(t, kind) => sides[*t].snapshot(*kind)?,
            Op::Move { from, start, len } => {
                let end = (*start..(*start + *len).min(MAX))
                    .take_while(|kg| owner[usize::from(*kg)] == *from)
                    .last()
                    .map_or(*start, |kg| kg + 1);
                let range = KeyGroupRange::new(*start, end);
                let to = 1 - from;
                let mut moved = Vec::new();
                let stats = sides[*from].table.export(range, &mut moved)?;
                let leaving: Model = sides[*from]
                    .model
                    .iter()
                    .filter(|((g, _), _)| range.contains(sides[0].table.key_group(g)))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                assert_eq!(stats.entries, leaving.len() as u64, "export of {range}");
                let imported = sides[to].table.import(range, &mut moved.as_slice())?;
                assert_eq!(imported, leaving.len() as u64, "import of {range}");
                moved_entries += imported;
                for (k, v) in leaving {
                    sides[*from].model.remove(&k);
                    sides[to].model.insert(k, v);
                }
                for kg in range.iter() {
                    owner[usize::from(kg.0)] = to;
                }
                check_live(&sides)?;
            }
        }
    }
    check_live(&sides)?;
    for (i, side) in sides.iter_mut().enumerate() {
        let last = if side.full.is_some() {
            SnapshotKind::Changes
        } else {
            SnapshotKind::Full
        };
        side.snapshot(last)?;
        let full = side.full.as_deref().expect("a full snapshot was taken");
        // Into the other kind of backend: snapshots are portable.
        let other = match kinds[i] {
            BackendKind::Heap => BackendKind::Lsm,
            _ => BackendKind::Heap,
        };
        for kind in [kinds[i], other] {
            let mut restored = open("restored", kind);
            let mut changes: Vec<&[u8]> = side.changes.iter().map(Vec::as_slice).collect();
            let mut streams: Vec<&mut dyn std::io::Read> = changes
                .iter_mut()
                .map(|c| c as &mut dyn std::io::Read)
                .collect();
            let mut handed_back = Model::new();
            restored.restore(&mut &full[..], &mut streams, |e| {
                handed_back.insert((e.group_key.to_vec(), e.sub_key.to_vec()), e.value.to_vec());
                Ok::<(), TableError>(())
            })?;
            assert_eq!(handed_back, side.model, "table {i} restored into {kind:?}");
            assert_eq!(
                scanned(&restored)?,
                side.model,
                "table {i} restored, scanned"
            );
        }
    }
    Ok(moved_entries)
}

#[test]
fn a_key_group_range_exported_from_one_table_and_imported_into_another_keeps_both_correct() {
    let config = Config {
        cases: 32,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &SEED));
    let moved = std::cell::Cell::new(0u64);
    let result = runner.run(&prop::collection::vec(op(), 0..80), |ops| {
        for kinds in [
            [BackendKind::Heap, BackendKind::Heap],
            [BackendKind::Lsm, BackendKind::Heap],
            [BackendKind::Heap, BackendKind::Lsm],
        ] {
            let n = run(&ops, kinds).map_err(|e| TestCaseError::fail(format!("{kinds:?}: {e}")))?;
            moved.set(moved.get() + n);
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("seed {:?}: {e}", std::str::from_utf8(&SEED).unwrap_or("?"));
    }
    assert!(
        moved.get() > 100,
        "the cases moved {} entries: too few to test moving",
        moved.get()
    );
}
