//! The stream selector's decisions (paper §4.2, pattern 3: hot standby), pure: which rows of
//! which replica go out, and what changes when a replica is lost.
//!
//! Replicas of a deterministic operator, fed the same input in the same order, emit the same
//! rows in the same order, though split into batches differently and at their own pace. The
//! selector numbers each replica's rows as they come (its *ordinals*, from 0 at the start or
//! at the checkpoint the run resumed from) and forwards the rows of one replica, the *active*
//! one: every ordinal once, in order, whichever replica it comes from. A standby's rows that
//! are ahead of what went out are held; those behind are duplicates and dropped. When the
//! active replica is lost, the lowest-numbered live one becomes active: its held rows go out
//! at once and its later rows go out as they come, past the ordinals already forwarded. So the
//! output has no gap and no duplicate whenever at least one replica lives.
//!
//! Event time goes the same way: a replica's watermarks stand between its rows, at the
//! ordinal of the row after them, the same in every replica. The active replica's go out as
//! they come; a standby's are held at their ordinal with its rows, and go out in order with
//! them when it takes over (those at or below what went out are dropped). So whatever follows
//! the selector sees the rows and watermarks of one replica, as if it had never failed: a row
//! late after the selector is late in every run.
//!
//! What is held is bounded by how far a standby runs ahead of the active replica, which the
//! shared input (a multicast waits for its slowest consumer) keeps within the channels'
//! capacity.

use std::collections::VecDeque;

/// Rows the selector can count and cut (a `RecordBatch` in the operator, a vector in tests).
pub trait Rows: Sized {
    /// How many rows.
    fn len(&self) -> usize;
    /// Whether there are none.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// `len` rows from `offset` on.
    fn slice(&self, offset: usize, len: usize) -> Self;
}

impl Rows for arrow::record_batch::RecordBatch {
    fn len(&self) -> usize {
        self.num_rows()
    }
    fn slice(&self, offset: usize, len: usize) -> Self {
        arrow::record_batch::RecordBatch::slice(self, offset, len)
    }
}

/// What the selector forwards: rows, and watermarks between them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Out<B, W> {
    /// Rows, in order.
    Rows(B),
    /// Event time advanced to this watermark (after the rows before it).
    Watermark(W),
}

/// What a standby holds: rows (with the ordinal of the first), or a watermark (with the
/// ordinal of the row after it).
#[derive(Debug)]
enum Held<B, W> {
    Rows(u64, B),
    Watermark(u64, W),
}

/// What a replica has sent.
#[derive(Debug)]
struct Replica<B, W> {
    /// How many rows it has sent (the ordinal of its next row).
    seen: u64,
    /// Lost: its rows are no longer expected.
    lost: bool,
    /// Its producer is being restored: its rows pause, and go on where they stopped.
    suspended: bool,
    /// Its rows and watermarks past what went out, in order.
    held: VecDeque<Held<B, W>>,
}

/// Why the selector cannot go on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    /// Every replica was lost.
    #[error("every replica was lost (the last was input {last}): no copy is left to forward")]
    AllLost {
        /// The input lost last.
        last: usize,
    },
    /// An input number the selector does not have.
    #[error("input {0} is not one of the replicas")]
    NoSuchInput(usize),
}

/// The selector's state over `n` replicas.
#[derive(Debug)]
pub struct Selector<B, W> {
    replicas: Vec<Replica<B, W>>,
    active: usize,
    /// How many rows went out (the ordinal of the next row to forward).
    forwarded: u64,
    /// The last watermark that went out.
    watermark: Option<W>,
}

impl<B: Rows, W: Ord + Copy> Selector<B, W> {
    /// A selector over `n` replicas; replica 0 is active first.
    pub fn new(n: usize) -> Self {
        Self {
            replicas: (0..n)
                .map(|_| Replica {
                    seen: 0,
                    lost: false,
                    suspended: false,
                    held: VecDeque::new(),
                })
                .collect(),
            active: 0,
            forwarded: 0,
            watermark: None,
        }
    }

    /// The active replica.
    pub fn active(&self) -> usize {
        self.active
    }

    /// How many rows went out.
    pub fn forwarded(&self) -> u64 {
        self.forwarded
    }

    /// How many rows are held, over every replica.
    pub fn held_rows(&self) -> usize {
        self.replicas
            .iter()
            .flat_map(|r| r.held.iter())
            .map(|h| match h {
                Held::Rows(_, b) => b.len(),
                Held::Watermark(..) => 0,
            })
            .sum()
    }

    /// Whether every row a replica not lost has sent went out: once each replica is
    /// exhausted, nothing more will (a paused active replica that others are ahead of has
    /// not: its rows come again when it is back).
    pub fn caught_up(&self) -> bool {
        self.replicas
            .iter()
            .filter(|r| !r.lost)
            .all(|r| r.seen <= self.forwarded)
    }

    /// Whether `w` is past the last watermark that went out.
    fn is_new(&self, w: W) -> bool {
        self.watermark.is_none_or(|last| w > last)
    }

    /// `rows` came from replica `input`: what goes out now (in order).
    pub fn rows(&mut self, input: usize, rows: B) -> Result<Vec<Out<B, W>>, SelectorError> {
        let replica = self
            .replicas
            .get_mut(input)
            .ok_or(SelectorError::NoSuchInput(input))?;
        let first = replica.seen;
        let n = rows.len() as u64;
        replica.seen += n;
        if replica.lost || n == 0 {
            return Ok(Vec::new());
        }
        let fresh = past(first, rows, self.forwarded);
        if input != self.active {
            if let Some((start, rows)) = fresh {
                self.replicas[input].held.push_back(Held::Rows(start, rows));
            }
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        if let Some((start, rows)) = fresh {
            self.forwarded = start + rows.len() as u64;
            out.push(Out::Rows(rows));
        }
        self.drop_forwarded();
        Ok(out)
    }

    /// Replica `input`'s event time advanced to `w` (after the rows it has sent): what goes
    /// out now.
    pub fn watermark(&mut self, input: usize, w: W) -> Result<Vec<Out<B, W>>, SelectorError> {
        let replica = self
            .replicas
            .get(input)
            .ok_or(SelectorError::NoSuchInput(input))?;
        let at = replica.seen;
        if replica.lost || !self.is_new(w) {
            return Ok(Vec::new());
        }
        if input != self.active {
            self.replicas[input].held.push_back(Held::Watermark(at, w));
            return Ok(Vec::new());
        }
        self.watermark = Some(w);
        self.drop_forwarded();
        Ok(vec![Out::Watermark(w)])
    }

    /// Replica `input` was lost: if it was the active one, the lowest-numbered live replica
    /// takes over, and what it holds past the rows that went out goes out now.
    pub fn lost(&mut self, input: usize) -> Result<Vec<Out<B, W>>, SelectorError> {
        let replica = self
            .replicas
            .get_mut(input)
            .ok_or(SelectorError::NoSuchInput(input))?;
        replica.lost = true;
        replica.held.clear();
        if input != self.active {
            return Ok(Vec::new());
        }
        // A live replica before a paused one: the paused one may never come back.
        let next = self
            .replicas
            .iter()
            .position(|r| !r.lost && !r.suspended)
            .or_else(|| self.replicas.iter().position(|r| !r.lost))
            .ok_or(SelectorError::AllLost { last: input })?;
        Ok(self.take_over(next))
    }

    /// Replica `input` pauses while it is restored (on a cluster): if it was the active one,
    /// the lowest-numbered replica neither lost nor paused takes over, and what it holds past
    /// the rows that went out goes out now; if none can, the paused one stays active and its
    /// rows go on when it is back. What it sent stays counted: it goes on where it stopped.
    pub fn suspend(&mut self, input: usize) -> Result<Vec<Out<B, W>>, SelectorError> {
        let replica = self
            .replicas
            .get_mut(input)
            .ok_or(SelectorError::NoSuchInput(input))?;
        replica.suspended = true;
        if input != self.active {
            return Ok(Vec::new());
        }
        match self.replicas.iter().position(|r| !r.lost && !r.suspended) {
            Some(next) => Ok(self.take_over(next)),
            None => Ok(Vec::new()),
        }
    }

    /// Replica `input` is back from its restore: a standby again, or the active one if the
    /// active one is paused.
    pub fn resume(&mut self, input: usize) -> Result<Vec<Out<B, W>>, SelectorError> {
        let replica = self
            .replicas
            .get_mut(input)
            .ok_or(SelectorError::NoSuchInput(input))?;
        replica.suspended = false;
        if input != self.active
            && self.replicas[self.active].suspended
            && !self.replicas[input].lost
        {
            return Ok(self.take_over(input));
        }
        Ok(Vec::new())
    }

    /// Replica `next` becomes the active one: what it holds past what went out goes out.
    fn take_over(&mut self, next: usize) -> Vec<Out<B, W>> {
        tracing::info!(
            from = self.active,
            to = next,
            "stream selector: another copy takes over"
        );
        self.active = next;
        let held = std::mem::take(&mut self.replicas[next].held);
        let mut out = Vec::new();
        for h in held {
            match h {
                Held::Rows(first, rows) => {
                    if let Some((start, rows)) = past(first, rows, self.forwarded) {
                        self.forwarded = start + rows.len() as u64;
                        out.push(Out::Rows(rows));
                    }
                }
                Held::Watermark(_, w) => {
                    if self.is_new(w) {
                        self.watermark = Some(w);
                        out.push(Out::Watermark(w));
                    }
                }
            }
        }
        out
    }

    /// Drops what standbys hold that went out since: rows up to what went out, and
    /// watermarks before it or not past the last one that went out.
    fn drop_forwarded(&mut self) {
        let (forwarded, last) = (self.forwarded, self.watermark);
        for r in &mut self.replicas {
            while let Some(h) = r.held.pop_front() {
                match h {
                    Held::Rows(first, rows) => {
                        if let Some((start, rest)) = past(first, rows, forwarded) {
                            r.held.push_front(Held::Rows(start, rest));
                            break;
                        }
                    }
                    Held::Watermark(at, w) => {
                        if at >= forwarded && last.is_none_or(|l| w > l) {
                            r.held.push_front(Held::Watermark(at, w));
                            break;
                        }
                    }
                }
            }
        }
    }
}

/// The rows of `rows` (ordinals from `first`) at or past ordinal `from`, with the ordinal of
/// the first of them; `None` if there are none.
fn past<B: Rows>(first: u64, rows: B, from: u64) -> Option<(u64, B)> {
    let n = rows.len() as u64;
    if first + n <= from {
        return None;
    }
    if first >= from {
        return Some((first, rows));
    }
    let skip = usize::try_from(from - first).expect("less than the batch's length");
    let len = rows.len() - skip;
    Some((from, rows.slice(skip, len)))
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Rows for Vec<u32> {
        fn len(&self) -> usize {
            Vec::len(self)
        }
        fn slice(&self, offset: usize, len: usize) -> Self {
            self[offset..offset + len].to_vec()
        }
    }

    type Sel = Selector<Vec<u32>, u64>;

    /// The rows of `out`, in order (its watermarks left out).
    fn flat(out: Vec<Out<Vec<u32>, u64>>) -> Vec<u32> {
        out.into_iter()
            .flat_map(|o| match o {
                Out::Rows(rows) => rows,
                Out::Watermark(_) => Vec::new(),
            })
            .collect()
    }

    #[test]
    fn the_active_replica_s_rows_go_out_and_a_standby_s_are_dropped_once_forwarded() {
        let mut s = Sel::new(2);
        assert_eq!(
            flat(s.rows(1, vec![0, 1, 2]).expect("rows")),
            Vec::<u32>::new()
        );
        assert_eq!(s.held_rows(), 3, "the standby is ahead");
        assert_eq!(flat(s.rows(0, vec![0, 1]).expect("rows")), [0, 1]);
        assert_eq!(s.held_rows(), 1, "rows 0 and 1 went out");
        assert_eq!(flat(s.rows(0, vec![2, 3]).expect("rows")), [2, 3]);
        assert_eq!(s.held_rows(), 0);
        assert_eq!(flat(s.rows(1, vec![3]).expect("rows")), Vec::<u32>::new());
        assert_eq!(s.held_rows(), 0, "a duplicate is not held");
    }

    #[test]
    fn the_selector_is_caught_up_once_what_every_live_replica_sent_went_out() {
        let mut s = Sel::new(3);
        assert!(s.caught_up(), "nothing came");
        s.rows(1, vec![0, 1, 2]).expect("rows");
        assert!(!s.caught_up(), "a standby is ahead");
        s.rows(0, vec![0, 1, 2]).expect("rows");
        assert!(s.caught_up());
        s.rows(2, vec![0, 1, 2, 3]).expect("rows");
        assert!(!s.caught_up(), "row 3 has not gone out");
        s.lost(2).expect("not active");
        assert!(s.caught_up(), "a lost replica's rows are not expected");
        s.suspend(0).expect("paused");
        s.rows(1, vec![3]).expect("rows");
        assert!(s.caught_up(), "the standby took over and its row went out");
    }

    #[test]
    fn a_standby_ahead_of_the_lost_active_replica_gives_its_held_rows_at_once() {
        let mut s = Sel::new(2);
        s.rows(0, vec![0, 1]).expect("rows");
        s.rows(1, vec![0, 1, 2, 3]).expect("rows");
        assert_eq!(flat(s.lost(0).expect("a replica lives")), [2, 3]);
        assert_eq!(s.active(), 1);
        assert_eq!(flat(s.rows(1, vec![4]).expect("rows")), [4]);
        assert_eq!(
            flat(s.rows(0, vec![2, 3, 4, 5]).expect("rows")),
            Vec::<u32>::new()
        );
    }

    #[test]
    fn a_standby_behind_the_lost_active_replica_goes_on_past_what_went_out() {
        let mut s = Sel::new(3);
        s.rows(0, vec![0, 1, 2, 3]).expect("rows");
        s.rows(2, vec![0]).expect("rows");
        assert_eq!(flat(s.lost(1).expect("not active")), Vec::<u32>::new());
        assert_eq!(flat(s.lost(0).expect("replica 2 lives")), Vec::<u32>::new());
        assert_eq!(s.active(), 2);
        assert_eq!(flat(s.rows(2, vec![1, 2, 3, 4, 5]).expect("rows")), [4, 5]);
        assert_eq!(s.lost(2), Err(SelectorError::AllLost { last: 2 }));
    }

    #[test]
    fn a_standby_s_watermarks_go_out_at_their_rows_when_it_takes_over() {
        let mut s = Sel::new(2);
        assert_eq!(
            s.rows(0, vec![0, 1]).expect("rows"),
            [Out::Rows(vec![0, 1])]
        );
        assert_eq!(s.watermark(0, 10).expect("wm"), [Out::Watermark(10)]);
        // The standby is behind, then ahead: its watermark at row 2 is held with row 2.
        assert_eq!(s.rows(1, vec![0, 1]).expect("rows"), []);
        assert_eq!(s.watermark(1, 10).expect("wm"), [], "went out already");
        s.rows(1, vec![2]).expect("rows");
        s.watermark(1, 20).expect("wm");
        s.rows(1, vec![3]).expect("rows");
        // The active one is lost before its row 2: the standby's rows and watermark go out
        // in its order.
        assert_eq!(
            s.lost(0).expect("a replica lives"),
            [Out::Rows(vec![2]), Out::Watermark(20), Out::Rows(vec![3])]
        );
        assert_eq!(s.watermark(1, 30).expect("wm"), [Out::Watermark(30)]);
    }

    /// A tiny seeded generator (xorshift), enough to shuffle deliveries.
    struct Seeded(u64);
    impl Seeded {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n.max(1)
        }
    }

    #[test]
    fn with_replicas_lost_at_random_points_the_output_is_every_row_once_in_order() {
        for seed in 1..=300u64 {
            let mut rng = Seeded(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let total = 1 + rng.below(200) as u32;
            let n = 2 + rng.below(3) as usize;
            // Each replica's output, cut into its own batches.
            let mut pending: Vec<VecDeque<Vec<u32>>> = (0..n)
                .map(|_| {
                    let mut batches = VecDeque::new();
                    let mut at = 0;
                    while at < total {
                        let len = (1 + rng.below(9) as u32).min(total - at);
                        batches.push_back((at..at + len).collect());
                        at += len;
                    }
                    batches
                })
                .collect();
            // Every replica but one (chosen at random) is lost after a random number of
            // deliveries.
            let survivor = rng.below(n as u64) as usize;
            let mut dies_after: Vec<Option<u64>> = (0..n)
                .map(|i| (i != survivor).then(|| rng.below(2 * u64::from(total) / 3)))
                .collect();
            let mut s = Sel::new(n);
            let mut out = Vec::new();
            let mut step = 0u64;
            while pending.iter().any(|p| !p.is_empty()) {
                step += 1;
                let r = rng.below(n as u64) as usize;
                if let Some(after) = dies_after[r] {
                    if step > after {
                        dies_after[r] = None;
                        pending[r].clear();
                        out.extend(flat(s.lost(r).expect("the survivor lives")));
                        continue;
                    }
                }
                if let Some(b) = pending[r].pop_front() {
                    out.extend(flat(s.rows(r, b).expect("rows")));
                }
            }
            let expected: Vec<u32> = (0..total).collect();
            assert_eq!(
                out, expected,
                "seed {seed}: {n} replicas, survivor {survivor}"
            );
        }
    }

    /// What a replica sends: a row (its ordinal) or a watermark.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Event {
        Row(u32),
        Watermark(u64),
    }

    /// What every replica sends: up to `rows` rows, with rising watermarks between them.
    fn random_stream(rng: &mut Seeded, rows: u64) -> Vec<Event> {
        let total = 1 + rng.below(rows) as u32;
        let mut stream = Vec::new();
        let mut wm = 0u64;
        for row in 0..total {
            if rng.below(4) == 0 {
                wm += 1 + rng.below(5);
                stream.push(Event::Watermark(wm));
            }
            stream.push(Event::Row(row));
        }
        stream.push(Event::Watermark(wm + 1));
        stream
    }

    /// Appends what went out to `out`, row by row.
    fn went_out(out: &mut Vec<Event>, got: Vec<Out<Vec<u32>, u64>>) {
        for o in got {
            match o {
                Out::Rows(rows) => out.extend(rows.into_iter().map(Event::Row)),
                Out::Watermark(w) => out.push(Event::Watermark(w)),
            }
        }
    }

    #[test]
    fn with_replicas_lost_at_random_points_rows_and_watermarks_go_out_as_one_replica_sent_them() {
        for seed in 1..=300u64 {
            let mut rng = Seeded(seed.wrapping_mul(0xD1B5_4A32_D192_ED03));
            let stream = random_stream(&mut rng, 120);
            let n = 2 + rng.below(3) as usize;
            // Each replica cuts the rows into batches of its own (a watermark ends a batch).
            let mut pending: Vec<VecDeque<Result<Vec<u32>, u64>>> = (0..n)
                .map(|_| {
                    let mut items = VecDeque::new();
                    let mut batch = Vec::new();
                    for e in &stream {
                        match e {
                            Event::Row(r) => {
                                batch.push(*r);
                                if rng.below(3) == 0 {
                                    items.push_back(Ok(std::mem::take(&mut batch)));
                                }
                            }
                            Event::Watermark(w) => {
                                if !batch.is_empty() {
                                    items.push_back(Ok(std::mem::take(&mut batch)));
                                }
                                items.push_back(Err(*w));
                            }
                        }
                    }
                    if !batch.is_empty() {
                        items.push_back(Ok(batch));
                    }
                    items
                })
                .collect();
            let survivor = rng.below(n as u64) as usize;
            let mut dies_after: Vec<Option<u64>> = (0..n)
                .map(|i| (i != survivor).then(|| rng.below(stream.len() as u64)))
                .collect();
            let mut s = Sel::new(n);
            let mut out = Vec::new();
            let mut step = 0u64;
            while pending.iter().any(|p| !p.is_empty()) {
                step += 1;
                let r = rng.below(n as u64) as usize;
                let got = match dies_after[r] {
                    Some(after) if step > after => {
                        dies_after[r] = None;
                        pending[r].clear();
                        s.lost(r).expect("the survivor lives")
                    }
                    _ => match pending[r].pop_front() {
                        Some(Ok(rows)) => s.rows(r, rows).expect("rows"),
                        Some(Err(w)) => s.watermark(r, w).expect("watermark"),
                        None => continue,
                    },
                };
                went_out(&mut out, got);
            }
            assert_eq!(
                out, stream,
                "seed {seed}: {n} replicas, survivor {survivor}"
            );
        }
    }

    #[test]
    fn copies_paused_and_back_at_random_points_give_every_row_and_watermark_once_in_order() {
        for seed in 1..=300u64 {
            let mut rng = Seeded(seed.wrapping_mul(0xA076_1D64_78BD_642F));
            let stream = random_stream(&mut rng, 100);
            let n = 2 + rng.below(2) as usize;
            let mut pending: Vec<VecDeque<Event>> =
                (0..n).map(|_| stream.iter().copied().collect()).collect();
            let mut paused = vec![false; n];
            let mut s = Sel::new(n);
            let mut out = Vec::new();
            while pending.iter().any(|p| !p.is_empty()) {
                let r = rng.below(n as u64) as usize;
                let got = match rng.below(10) {
                    // Paused, or back from a restore.
                    0 if !paused[r] => {
                        paused[r] = true;
                        s.suspend(r).expect("suspend")
                    }
                    1 if paused[r] => {
                        paused[r] = false;
                        s.resume(r).expect("resume")
                    }
                    // A paused copy sends nothing (but what was on its way before the pause
                    // may still come, as here one time in four).
                    _ if paused[r] && rng.below(4) != 0 => continue,
                    _ => match pending[r].pop_front() {
                        Some(Event::Row(row)) => s.rows(r, vec![row]).expect("rows"),
                        Some(Event::Watermark(w)) => s.watermark(r, w).expect("watermark"),
                        None => continue,
                    },
                };
                went_out(&mut out, got);
            }
            // Every copy back: whatever a paused active copy held up has gone out.
            for (r, p) in paused.iter().enumerate() {
                if *p {
                    went_out(&mut out, s.resume(r).expect("resume"));
                }
            }
            assert_eq!(out, stream, "seed {seed}: {n} copies");
        }
    }
}
