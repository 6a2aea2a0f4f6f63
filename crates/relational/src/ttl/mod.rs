//! State time-to-live for the updating operators (the regular join, the aggregate of a
//! GROUP BY without a window, the OVER window, top-N and deduplication), as Flink's
//! `table.exec.state.ttl` with its defaults: processing time; a key's state expires once it
//! has not been written (created or updated) for the time-to-live (`OnCreateAndWrite`), and
//! expired state is never returned (`NeverReturnExpired`). Reading a key's state does not
//! keep it alive.
//!
//! The operators keep their state in memory, by key, and checkpoint the keys changed through
//! a keyed table; [`StateTtl`] sits beside that map: it records each key's last write, and
//! [`StateTtl::sweep`], called before a batch is applied and at each checkpoint, hands back
//! every key whose last write is at least the time-to-live old, oldest first, for the
//! operator to drop (and delete from its table at the next checkpoint). Since a batch is
//! applied at one instant, a key swept before it is exactly a key expired when the batch
//! touches it, and the state of keys never seen again is freed too. A key's state may have
//! parts that expire apart (a regular join's two sides): each part has its own write time.
//!
//! The time is the run's clock ([`anduin_types::Clock`], a test's `ManualClock`), counted in
//! milliseconds on a time line that goes on across a restore (`stored.rs`): the write times
//! are checkpointed with the state, and the time a query was down does not age it.
//!
//! With no time-to-live (0), every method returns at once: the operators behave as before.

mod param;
mod stored;

use std::collections::BTreeMap;
use std::time::Instant;

use ahash::RandomState;
use anduin_types::{elapsed_ms, SharedClock};
use hashbrown::HashMap;

pub(crate) use param::{ttl_ms, STATE_TTL};
pub(crate) use stored::Incoming;

/// When one part of a key was last written, and its place in the queue of expiries.
#[derive(Debug, Clone, Copy)]
struct Written {
    /// Its last write, in ms on the time line.
    last: u64,
    /// The entry of the queue that stands for it (older entries of the key are stale).
    queued: (u64, u64),
}

/// The write times of an operator's keys, and the sweep that expires them.
pub(crate) struct StateTtl {
    /// The time-to-live in milliseconds; 0 for none.
    ttl_ms: u64,
    /// How many parts of a key expire apart (1, or 2 for a join's sides).
    parts: u8,
    clock: SharedClock,
    /// The instant the time line's `base_ms` stands for.
    origin: Instant,
    base_ms: u64,
    /// The time of the batch or checkpoint at hand ([`StateTtl::tick`]).
    now_ms: u64,
    /// By unit (a key, and its part's byte when a key has several).
    written: HashMap<Box<[u8]>, Written, RandomState>,
    /// Units by (last write, sequence number) as queued: at most one live entry per unit.
    queue: BTreeMap<(u64, u64), Box<[u8]>>,
    seq: u64,
    /// Units expired so far (a metric).
    expired: u64,
}

impl std::fmt::Debug for StateTtl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateTtl")
            .field("ttl_ms", &self.ttl_ms)
            .field("parts", &self.parts)
            .field("now_ms", &self.now_ms)
            .field("units", &self.written.len())
            .finish()
    }
}

impl StateTtl {
    /// Write times of keys whose state has `parts` parts, expiring after `ttl_ms` (0: never)
    /// on `clock`.
    pub(crate) fn new(ttl_ms: u64, parts: u8, clock: SharedClock) -> Self {
        let origin = clock.now();
        Self {
            ttl_ms,
            parts: parts.max(1),
            clock,
            origin,
            base_ms: 0,
            now_ms: 0,
            written: HashMap::with_hasher(RandomState::with_seeds(1, 2, 3, 4)),
            queue: BTreeMap::new(),
            seq: 0,
            expired: 0,
        }
    }

    /// Whether state expires at all.
    pub(crate) fn on(&self) -> bool {
        self.ttl_ms > 0
    }

    /// Reads the clock: the time of the writes and the sweep that follow.
    pub(crate) fn tick(&mut self) {
        if self.on() {
            self.now_ms = self.base_ms + elapsed_ms(self.clock.as_ref(), self.origin);
        }
    }

    /// Part `part` of `key` was written now.
    pub(crate) fn wrote(&mut self, key: &[u8], part: u8) {
        if !self.on() {
            return;
        }
        let now = self.now_ms;
        let unit = self.unit(key, part);
        match self.written.get_mut(unit.as_slice()) {
            Some(w) => w.last = now,
            None => self.admit(unit.into_boxed_slice(), now),
        }
    }

    /// Calls `expire` with every key and part whose last write is at least the time-to-live
    /// old, oldest first, and forgets them.
    pub(crate) fn sweep(&mut self, mut expire: impl FnMut(&[u8], u8)) {
        if !self.on() {
            return;
        }
        let now = self.now_ms;
        while let Some(entry) = self.queue.first_entry() {
            let (time, seq) = *entry.key();
            if time.saturating_add(self.ttl_ms) > now {
                break;
            }
            let unit = entry.remove();
            let Some(w) = self.written.get_mut(&unit) else {
                continue; // Forgotten: the operator dropped the key.
            };
            if w.queued != (time, seq) {
                continue; // A stale entry: the unit was queued again since.
            }
            if w.last.saturating_add(self.ttl_ms) > now {
                // Written since it was queued: queued again at its last write.
                self.seq += 1;
                w.queued = (w.last, self.seq);
                self.queue.insert(w.queued, unit);
                continue;
            }
            self.written.remove(&unit);
            self.expired += 1;
            let (key, part) = self.split(&unit);
            expire(key, part);
        }
    }

    /// Keeps the write times of the keys `keep` says to keep (the others were given away).
    pub(crate) fn retain(&mut self, keep: impl Fn(&[u8]) -> bool) {
        let parts = self.parts;
        self.written
            .retain(|unit, _| keep(split_unit(parts, unit).0));
    }

    /// The metrics of expiry: keys (parts) expired so far, and those with a write time.
    pub(crate) fn metrics(&self) -> Vec<(&'static str, u64)> {
        if !self.on() {
            return Vec::new();
        }
        vec![
            ("ttl_expired", self.expired),
            ("ttl_keys", self.written.len() as u64),
        ]
    }

    fn admit(&mut self, unit: Box<[u8]>, last: u64) {
        self.seq += 1;
        let queued = (last, self.seq);
        self.queue.insert(queued, unit.clone());
        self.written.insert(unit, Written { last, queued });
    }

    fn unit(&self, key: &[u8], part: u8) -> Vec<u8> {
        let mut unit = Vec::with_capacity(key.len() + 1);
        unit.extend_from_slice(key);
        if self.parts > 1 {
            unit.push(part);
        }
        unit
    }

    fn split<'u>(&self, unit: &'u [u8]) -> (&'u [u8], u8) {
        split_unit(self.parts, unit)
    }
}

/// A unit's key and part.
fn split_unit(parts: u8, unit: &[u8]) -> (&[u8], u8) {
    match unit.split_last() {
        Some((part, key)) if parts > 1 => (key, *part),
        _ => (unit, 0),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use anduin_types::{ManualClock, SharedClock};

    use super::*;

    fn swept(ttl: &mut StateTtl) -> Vec<(Vec<u8>, u8)> {
        let mut out = Vec::new();
        ttl.tick();
        ttl.sweep(|k, p| out.push((k.to_vec(), p)));
        out
    }

    #[test]
    fn a_key_expires_once_unwritten_for_the_ttl_and_a_write_keeps_it() {
        let clock = Arc::new(ManualClock::new());
        let mut ttl = StateTtl::new(1_000, 1, Arc::clone(&clock) as SharedClock);
        ttl.tick();
        ttl.wrote(b"a", 0);
        ttl.wrote(b"b", 0);
        clock.advance(Duration::from_millis(600));
        ttl.tick();
        ttl.wrote(b"b", 0);
        clock.advance(Duration::from_millis(399));
        assert_eq!(swept(&mut ttl), vec![], "999 ms: nothing");
        clock.advance(Duration::from_millis(1));
        assert_eq!(swept(&mut ttl), vec![(b"a".to_vec(), 0)]);
        clock.advance(Duration::from_millis(599));
        assert_eq!(swept(&mut ttl), vec![]);
        clock.advance(Duration::from_millis(1));
        assert_eq!(swept(&mut ttl), vec![(b"b".to_vec(), 0)]);
        assert_eq!(ttl.metrics(), vec![("ttl_expired", 2), ("ttl_keys", 0)]);
    }

    #[test]
    fn the_parts_of_a_key_expire_apart() {
        let clock = Arc::new(ManualClock::new());
        let mut ttl = StateTtl::new(100, 2, Arc::clone(&clock) as SharedClock);
        ttl.tick();
        ttl.wrote(b"k", 0);
        ttl.wrote(b"k", 1);
        clock.advance(Duration::from_millis(50));
        ttl.tick();
        ttl.wrote(b"k", 1);
        clock.advance(Duration::from_millis(50));
        assert_eq!(swept(&mut ttl), vec![(b"k".to_vec(), 0)]);
        clock.advance(Duration::from_millis(50));
        assert_eq!(swept(&mut ttl), vec![(b"k".to_vec(), 1)]);
    }

    #[test]
    fn without_a_ttl_nothing_is_recorded_or_expired() {
        let clock = Arc::new(ManualClock::new());
        let mut ttl = StateTtl::new(0, 1, Arc::clone(&clock) as SharedClock);
        ttl.wrote(b"a", 0);
        clock.advance(Duration::from_secs(3600));
        assert_eq!(swept(&mut ttl), vec![]);
        assert!(ttl.metrics().is_empty());
    }

    #[test]
    fn a_hot_key_keeps_one_entry_in_the_queue() {
        let clock = Arc::new(ManualClock::new());
        let mut ttl = StateTtl::new(10, 1, Arc::clone(&clock) as SharedClock);
        for _ in 0..1_000 {
            clock.advance(Duration::from_millis(3));
            let _ = swept(&mut ttl);
            ttl.wrote(b"hot", 0);
        }
        assert!(ttl.queue.len() <= 1, "{}", ttl.queue.len());
        assert_eq!(ttl.expired, 0);
    }
}
