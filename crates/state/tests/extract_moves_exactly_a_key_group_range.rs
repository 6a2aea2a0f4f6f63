//! `extract` writes the entries of exactly the key groups of a range as a full snapshot and
//! removes them; another instance restores that snapshot; the next changelog of the source
//! records the removals, so the source's checkpoint chain stays true.

use crate::common;

use anduin_state::{KeyGroup, KeyGroupRange, StateError};
use common::{
    changes_snapshot, contents, full_snapshot, restore_from, with_each_backend, Entries, KINDS,
};

fn fill(b: &mut dyn anduin_state::StateBackend) -> Result<Entries, StateError> {
    let mut all = Entries::new();
    for kg in 0..8u16 {
        for i in 0..5u8 {
            let (key, value) = (vec![i, 0xff], vec![kg as u8, i]);
            b.put(KeyGroup(kg), &key, &value)?;
            all.insert((kg, key), value);
        }
    }
    Ok(all)
}

#[test]
fn extract_moves_exactly_a_key_group_range() {
    with_each_backend(|open| {
        let mut source = open();
        let all = fill(source.as_mut())?;
        let before = full_snapshot(source.as_mut())?;

        let range = KeyGroupRange::new(2, 5);
        let mut moved = Vec::new();
        let stats = source.extract(range, &mut moved)?;
        let (inside, outside): (Entries, Entries) = all
            .into_iter()
            .partition(|((kg, _), _)| range.contains(KeyGroup(*kg)));
        assert_eq!(stats.entries, inside.len() as u64);
        assert_eq!(stats.bytes, moved.len() as u64);
        assert_eq!(
            contents(source.as_ref(), 0..8)?,
            outside,
            "the source keeps the rest"
        );

        for (target, open_target) in KINDS {
            let mut t = open_target();
            restore_from(t.as_mut(), &moved, &[])?;
            assert_eq!(
                contents(t.as_ref(), 0..8)?,
                inside,
                "restored into {target}"
            );
        }

        let changes = changes_snapshot(source.as_mut())?;
        let mut replay = open();
        restore_from(replay.as_mut(), &before, &[changes])?;
        assert_eq!(
            contents(replay.as_ref(), 0..8)?,
            outside,
            "the chain records the removals"
        );
        Ok(())
    });
}

#[test]
fn extracting_an_empty_range_moves_nothing() {
    with_each_backend(|open| {
        let mut source = open();
        let all = fill(source.as_mut())?;
        for range in [
            KeyGroupRange::new(3, 3),
            KeyGroupRange::new(5, 2),
            KeyGroupRange::new(100, 200),
        ] {
            let mut moved = Vec::new();
            let stats = source.extract(range, &mut moved)?;
            assert_eq!(stats.entries, 0, "{range}");
            let mut t = open();
            restore_from(t.as_mut(), &moved, &[])?;
            assert!(contents(t.as_ref(), 0..8)?.is_empty());
        }
        assert_eq!(contents(source.as_ref(), 0..8)?, all);
        Ok(())
    });
}
