//! `scan` visits exactly the entries of one key group, in bytewise key order, whatever the
//! order of the puts; key groups never leak into each other, not even at byte boundaries
//! (key group 1 with key `[0]` versus key group 0 with key `[1, 0]` …) or at the largest key
//! group.

use crate::common;

use anduin_state::{KeyGroup, StateError};
use common::with_each_backend;

#[test]
fn scan_returns_one_key_group_in_key_order() {
    with_each_backend(|open| {
        let mut b = open();
        let groups = [0u16, 1, 255, 256, u16::MAX - 1, u16::MAX];
        let keys: [&[u8]; 6] = [b"\xff", b"b", b"", b"a\x00", b"a", b"\x00\x01"];
        for kg in groups {
            for key in keys.iter().rev() {
                let value = [kg.to_be_bytes().as_slice(), key].concat();
                b.put(KeyGroup(kg), key, &value)?;
            }
        }
        let mut sorted = keys.to_vec();
        sorted.sort();
        for kg in groups {
            let mut seen = Vec::new();
            b.scan(KeyGroup(kg), &mut |k, v| {
                assert_eq!(
                    v,
                    [kg.to_be_bytes().as_slice(), k].concat(),
                    "value of {k:?} in {kg}"
                );
                seen.push(k.to_vec());
                Ok(())
            })?;
            assert_eq!(seen, sorted, "key group {kg}");
        }
        for empty in [2u16, 257, u16::MAX - 2] {
            b.scan(KeyGroup(empty), &mut |k, _| {
                panic!("key group {empty} holds {k:?}")
            })?;
        }
        Ok(())
    });
}

#[test]
fn scan_stops_at_the_first_error_of_its_callback() {
    with_each_backend(|open| {
        let mut b = open();
        for k in [b"a", b"b", b"c"] {
            b.put(KeyGroup(4), k, b"")?;
        }
        let mut calls = 0;
        let result = b.scan(KeyGroup(4), &mut |_, _| {
            calls += 1;
            Err(StateError::ParallelismAboveMaxKeyGroups {
                parallelism: 0,
                max: 0,
            })
        });
        assert!(matches!(
            result,
            Err(StateError::ParallelismAboveMaxKeyGroups { .. })
        ));
        assert_eq!(calls, 1);
        Ok(())
    });
}

#[test]
fn a_delete_removes_only_its_key_group_s_entry() {
    with_each_backend(|open| {
        let mut b = open();
        b.put(KeyGroup(1), b"k", b"one")?;
        b.put(KeyGroup(2), b"k", b"two")?;
        b.delete(KeyGroup(1), b"k")?;
        b.delete(KeyGroup(3), b"never there")?;
        assert_eq!(b.get(KeyGroup(1), b"k")?, None);
        assert_eq!(b.get(KeyGroup(2), b"k")?, Some(b"two".to_vec()));
        Ok(())
    });
}
