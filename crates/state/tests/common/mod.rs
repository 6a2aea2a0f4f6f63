//! Shared by the scenario tests: every behaviour is checked against each backend.

#![allow(dead_code)] // each test file uses a different part

use std::collections::BTreeMap;

use anduin_state::{HeapBackend, KeyGroup, LsmBackend, LsmOptions, StateBackend, StateError};

/// Opens an empty backend.
pub type Open = fn() -> Box<dyn StateBackend>;

/// The backends under test: heap, LSM, and LSM with change tracking so small that it spills
/// to disk after a few keys (to exercise the merge of memory and spilled keys).
pub const BACKENDS: [(&str, Open); 3] = [
    ("heap", open_heap),
    ("lsm", open_lsm),
    ("lsm-spilling", open_lsm_spilling),
];

/// One backend of each kind (restore targets: spilling changes nothing about restoring).
pub const KINDS: [(&str, Open); 2] = [("heap", open_heap), ("lsm", open_lsm)];

fn open_heap() -> Box<dyn StateBackend> {
    Box::new(HeapBackend::new())
}

fn open_lsm() -> Box<dyn StateBackend> {
    Box::new(LsmBackend::open_temporary().expect("a temporary LSM backend opens"))
}

fn open_lsm_spilling() -> Box<dyn StateBackend> {
    let options = LsmOptions::default().with_change_tracking_memory(200);
    Box::new(LsmBackend::open_with(None, options).expect("a temporary LSM backend opens"))
}

/// Runs `scenario` with each backend; a failure names the backend.
pub fn with_each_backend(scenario: impl Fn(Open) -> Result<(), StateError>) {
    for (name, open) in BACKENDS {
        eprintln!("backend: {name}");
        if let Err(e) = scenario(open) {
            panic!("backend {name}: {e}");
        }
    }
}

/// Entries by `(key group, key)`.
pub type Entries = BTreeMap<(u16, Vec<u8>), Vec<u8>>;

/// Every entry of key groups `kgs`, read through `scan`.
pub fn contents(
    backend: &dyn StateBackend,
    kgs: impl IntoIterator<Item = u16>,
) -> Result<Entries, StateError> {
    let mut out = BTreeMap::new();
    for kg in kgs {
        backend.scan(KeyGroup(kg), &mut |k, v| {
            out.insert((kg, k.to_vec()), v.to_vec());
            Ok(())
        })?;
    }
    Ok(out)
}

/// A full snapshot of `backend`.
pub fn full_snapshot(backend: &mut dyn StateBackend) -> Result<Vec<u8>, StateError> {
    let mut out = Vec::new();
    let _ = backend.snapshot(anduin_state::SnapshotKind::Full, &mut out)?;
    Ok(out)
}

/// A changes snapshot of `backend`.
pub fn changes_snapshot(backend: &mut dyn StateBackend) -> Result<Vec<u8>, StateError> {
    let mut out = Vec::new();
    let _ = backend.snapshot(anduin_state::SnapshotKind::Changes, &mut out)?;
    Ok(out)
}

/// Restores `backend` from byte streams.
pub fn restore_from(
    backend: &mut dyn StateBackend,
    full: &[u8],
    changes: &[Vec<u8>],
) -> Result<(), StateError> {
    let mut readers: Vec<&[u8]> = changes.iter().map(Vec::as_slice).collect();
    let mut dyn_readers: Vec<&mut dyn std::io::Read> = readers
        .iter_mut()
        .map(|r| r as &mut dyn std::io::Read)
        .collect();
    backend.restore(&mut &full[..], &mut dyn_readers)
}
