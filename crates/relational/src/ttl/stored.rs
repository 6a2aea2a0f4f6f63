//! The write times in checkpoints: one entry per key and part beside the operator's own
//! entries of the key (same group key, sub-key `\xffttl` and the part's byte, value the last
//! write in ms on the time line, little-endian), written when the operator writes its
//! changed keys; and the time line's now in the checkpoint's manifest.
//!
//! A restore keeps the ages: the time line goes on from the checkpoint's recorded now, on the
//! restoring process's clock, so a key `a` old at the checkpoint is `a` old just after the
//! restore, and the time the query was down does not count (Flink counts it, its time being
//! the wall clock: here a restore after a long outage does not expire everything at once).
//! A key restored without a write time (a checkpoint taken without a time-to-live) counts as
//! written at the restore; the write times of a checkpoint restored without a time-to-live
//! are dropped.

use std::collections::HashSet;

use anduin_operator_api::OperatorError;
use anduin_state::{KeyedTable, TableEntry, TableError};

use super::StateTtl;

/// What the sub-key of a write time starts with (no operator's sub-key does).
const PREFIX: &[u8] = b"\xffttl";

fn sub_key(part: u8) -> [u8; 5] {
    [PREFIX[0], PREFIX[1], PREFIX[2], PREFIX[3], part]
}

/// The part whose write time an entry of sub-key `sub_key` holds, if it holds one.
fn part_of(sub_key: &[u8]) -> Option<u8> {
    match sub_key.split_last() {
        Some((part, prefix)) if prefix == PREFIX => Some(*part),
        _ => None,
    }
}

/// The entries of a restore or of key groups taken at a rescale, as the operator's callback
/// sees them: the write times set aside, the keys of the operator's entries noted (only with
/// a time-to-live: without one, a restore copies no key).
#[derive(Debug, Default)]
pub(crate) struct Incoming {
    times: Vec<(Box<[u8]>, u8, u64)>,
    keys: HashSet<Box<[u8]>>,
    note_keys: bool,
}

impl Incoming {
    /// What `ttl` takes in.
    pub(crate) fn for_ttl(ttl: &StateTtl) -> Self {
        Self {
            note_keys: ttl.on(),
            ..Self::default()
        }
    }

    /// Whether `e` is a write time (kept here; the operator skips it) rather than an entry of
    /// the operator `name` (whose key is noted).
    pub(crate) fn take(&mut self, name: &str, e: &TableEntry<'_>) -> Result<bool, OperatorError> {
        let Some(part) = part_of(e.sub_key) else {
            if self.note_keys && !self.keys.contains(e.group_key) {
                self.keys.insert(e.group_key.into());
            }
            return Ok(false);
        };
        let bytes: [u8; 8] = e.value.try_into().map_err(|_| OperatorError::Execution {
            operator: name.to_string(),
            message: format!(
                "the checkpoint holds a state write time in {} that is not 8 bytes: the state is corrupt; restore from an earlier checkpoint",
                e.kg
            ),
        })?;
        self.times
            .push((e.group_key.into(), part, u64::from_le_bytes(bytes)));
        Ok(true)
    }
}

impl StateTtl {
    /// The time line's now, for a checkpoint's manifest (`None` without a time-to-live).
    pub(crate) fn checkpoint_time(&self) -> Option<u64> {
        self.on().then_some(self.now_ms)
    }

    /// Writes the write times of `key`'s parts to `table` (when the operator writes its
    /// changed key), or deletes those of the parts the operator does not hold (`present`).
    pub(crate) fn store(
        &mut self,
        table: &mut KeyedTable,
        key: &[u8],
        present: impl Fn(u8) -> bool,
    ) -> Result<(), TableError> {
        if !self.on() {
            return Ok(());
        }
        for part in 0..self.parts {
            let unit = self.unit(key, part);
            if !present(part) {
                self.written.remove(unit.as_slice());
                table.delete(key, &sub_key(part))?;
                continue;
            }
            let last = match self.written.get(unit.as_slice()) {
                Some(w) => w.last,
                None => {
                    let now = self.now_ms;
                    self.admit(unit.into_boxed_slice(), now);
                    now
                }
            };
            table.put(key, &sub_key(part), &last.to_le_bytes())?;
        }
        Ok(())
    }

    /// After a restore of `table`: the time line goes on from `time` (the checkpoint's now,
    /// if it had a time-to-live), and the write times of `incoming` replace those held.
    pub(crate) fn restored(
        &mut self,
        time: Option<u64>,
        incoming: Incoming,
        table: &mut KeyedTable,
    ) -> Result<(), TableError> {
        self.written.clear();
        self.queue.clear();
        self.origin = self.clock.now();
        self.base_ms = time.unwrap_or(0);
        self.now_ms = self.base_ms;
        self.taken(incoming, table)
    }

    /// Adds the write times of `incoming` (entries restored or taken at a rescale): a key
    /// without one counts as written now; a write time of no key, or any without a
    /// time-to-live, is deleted from `table`.
    pub(crate) fn taken(
        &mut self,
        incoming: Incoming,
        table: &mut KeyedTable,
    ) -> Result<(), TableError> {
        let now = self.now_ms;
        for (key, part, last) in incoming.times {
            if self.on() && part < self.parts && incoming.keys.contains(&key) {
                let unit = self.unit(&key, part);
                self.written.remove(unit.as_slice());
                self.admit(unit.into_boxed_slice(), last.min(now));
            } else {
                table.delete(&key, &sub_key(part))?;
            }
        }
        if !self.on() {
            return Ok(());
        }
        for key in &incoming.keys {
            for part in 0..self.parts {
                let unit = self.unit(key, part);
                if !self.written.contains_key(unit.as_slice()) {
                    self.admit(unit.into_boxed_slice(), now);
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use anduin_state::{BackendKind, KeyGroup};
    use anduin_types::{ManualClock, SharedClock};

    use super::*;

    fn entry<'a>(key: &'a [u8], sub: &'a [u8], value: &'a [u8]) -> TableEntry<'a> {
        TableEntry {
            kg: KeyGroup(0),
            group_key: key,
            sub_key: sub,
            value,
        }
    }

    #[test]
    fn a_restore_keeps_the_ages_on_the_restoring_clock() -> Result<(), OperatorError> {
        let mut table = KeyedTable::new("op", BackendKind::Heap, None);
        let first = Arc::new(ManualClock::new());
        let mut ttl = StateTtl::new(1_000, 1, Arc::clone(&first) as SharedClock);
        first.advance(Duration::from_secs(5));
        ttl.tick();
        ttl.wrote(b"old", 0);
        first.advance(Duration::from_millis(700));
        ttl.tick();
        ttl.wrote(b"new", 0);
        ttl.store(&mut table, b"old", |_| true)?;
        ttl.store(&mut table, b"new", |_| true)?;
        let time = ttl.checkpoint_time();
        assert_eq!(time, Some(5_700));

        // Another process, whose clock started elsewhere, much later.
        let second = Arc::new(ManualClock::new());
        second.advance(Duration::from_secs(3_600));
        let mut back = StateTtl::new(1_000, 1, Arc::clone(&second) as SharedClock);
        let mut incoming = Incoming::for_ttl(&back);
        for (key, sub, value) in [
            (&b"old"[..], &b"g"[..], &b"state"[..]),
            (b"old", &sub_key(0), &5_000u64.to_le_bytes()),
            (b"new", b"g", b"state"),
            (b"new", &sub_key(0), &5_700u64.to_le_bytes()),
            (b"bare", b"g", b"state"),
        ] {
            let _ = incoming.take("op", &entry(key, sub, value))?;
        }
        back.restored(time, incoming, &mut table)?;
        second.advance(Duration::from_millis(300));
        let mut expired = Vec::new();
        back.tick();
        back.sweep(|k, _| expired.push(k.to_vec()));
        assert_eq!(expired, vec![b"old".to_vec()], "700 + 300 ms old");
        second.advance(Duration::from_millis(700));
        back.tick();
        back.sweep(|k, _| expired.push(k.to_vec()));
        assert_eq!(
            expired,
            vec![b"old".to_vec(), b"new".to_vec(), b"bare".to_vec()],
            "a key without a write time counts as written at the restore"
        );
        Ok(())
    }

    #[test]
    fn a_write_time_that_is_not_eight_bytes_is_corrupt_state() {
        let e = Incoming::default()
            .take("op", &entry(b"k", &sub_key(0), b"short"))
            .expect_err("corrupt");
        assert!(e.to_string().contains("not 8 bytes"), "{e}");
    }
}
