//! The LSM directory is working storage: a backend opened on a directory that a previous
//! backend used starts empty (the state comes back through `restore`, not from the directory),
//! and a temporary backend's directory is removed when it drops.

use anduin_state::{KeyGroup, LsmBackend, SnapshotKind, StateBackend, StateError};

#[test]
fn opening_an_lsm_directory_again_starts_empty() -> Result<(), StateError> {
    let dir = tempfile::tempdir().expect("a temporary directory");
    {
        let mut b = LsmBackend::open(dir.path())?;
        b.put(KeyGroup(1), b"left", b"behind")?;
        let mut sink = Vec::new();
        let _ = b.snapshot(SnapshotKind::Full, &mut sink)?;
        b.put(KeyGroup(1), b"tracked", b"change")?;
    }
    let mut b = LsmBackend::open(dir.path())?;
    assert_eq!(b.get(KeyGroup(1), b"left")?, None);
    let mut changes = Vec::new();
    let stats = b.snapshot(SnapshotKind::Changes, &mut changes)?;
    assert_eq!(stats.entries, 0, "no change is inherited either");
    Ok(())
}

#[test]
fn a_temporary_lsm_backend_removes_its_directory() -> Result<(), StateError> {
    let b = LsmBackend::open_temporary()?;
    let dir = b.dir().to_path_buf();
    assert!(dir.exists());
    drop(b);
    assert!(!dir.exists(), "{} is left behind", dir.display());
    Ok(())
}
