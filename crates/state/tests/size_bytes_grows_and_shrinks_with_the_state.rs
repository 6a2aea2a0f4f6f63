//! `size_bytes` is a metric: exact key and value bytes on the heap, an estimate that grows
//! with the data for the LSM.

use anduin_state::{HeapBackend, KeyGroup, LsmBackend, StateBackend, StateError};

#[test]
fn the_heap_counts_key_and_value_bytes_exactly() -> Result<(), StateError> {
    let mut b = HeapBackend::new();
    assert_eq!(b.size_bytes(), 0);
    b.put(KeyGroup(0), b"key", b"value")?;
    assert_eq!(b.size_bytes(), 8);
    b.put(KeyGroup(0), b"key", b"v")?;
    assert_eq!(b.size_bytes(), 4);
    b.put(KeyGroup(1), b"key", b"")?;
    assert_eq!(b.size_bytes(), 7);
    b.delete(KeyGroup(0), b"key")?;
    b.delete(KeyGroup(0), b"absent")?;
    assert_eq!(b.size_bytes(), 3);
    Ok(())
}

#[test]
fn the_lsm_estimate_grows_with_the_data() -> Result<(), StateError> {
    let mut b = LsmBackend::open_temporary()?;
    let empty = b.size_bytes();
    for i in 0..1000u32 {
        b.put(KeyGroup(0), &i.to_be_bytes(), &[1; 100])?;
    }
    assert!(
        b.size_bytes() >= empty + 100_000,
        "{} bytes",
        b.size_bytes()
    );
    Ok(())
}
