//! Keys longer than `MAX_KEY_LEN` and values longer than `MAX_VALUE_LEN` are rejected with a
//! typed error by every backend (the LSM's own limit would otherwise panic), and change
//! nothing; keys and values at the limits are stored.

use crate::common;

use anduin_state::{KeyGroup, StateError, MAX_KEY_LEN, MAX_VALUE_LEN};
use common::{changes_snapshot, contents, full_snapshot, restore_from, with_each_backend};

#[test]
fn oversized_keys_and_values_are_rejected_without_changing_state() {
    with_each_backend(|open| {
        let mut b = open();
        let long_key = vec![b'k'; MAX_KEY_LEN + 1];
        let err = b
            .put(KeyGroup(9), &long_key, b"v")
            .expect_err("key too long");
        assert!(
            matches!(
                err,
                StateError::KeyTooLarge { kg: KeyGroup(9), len } if len == MAX_KEY_LEN + 1
            ),
            "{err}"
        );
        assert!(matches!(
            b.delete(KeyGroup(9), &long_key),
            Err(StateError::KeyTooLarge { .. })
        ));
        let long_value = vec![0u8; MAX_VALUE_LEN + 1];
        let err = b
            .put(KeyGroup(9), b"k", &long_value)
            .expect_err("value too long");
        assert!(matches!(err, StateError::ValueTooLarge { .. }), "{err}");
        assert!(contents(b.as_ref(), [9])?.is_empty());

        let key_at_limit = vec![b'k'; MAX_KEY_LEN];
        b.put(KeyGroup(9), &key_at_limit, b"v")?;
        let full = full_snapshot(b.as_mut())?;
        b.delete(KeyGroup(9), &key_at_limit)?;
        let changes = changes_snapshot(b.as_mut())?;
        let mut r = open();
        restore_from(r.as_mut(), &full, &[])?;
        assert_eq!(r.get(KeyGroup(9), &key_at_limit)?, Some(b"v".to_vec()));
        restore_from(r.as_mut(), &full, &[changes])?;
        assert_eq!(r.get(KeyGroup(9), &key_at_limit)?, None);
        Ok(())
    });
}
