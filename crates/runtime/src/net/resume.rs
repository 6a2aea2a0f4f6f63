//! Resuming a network edge after one of its ends was restored from a checkpoint while the other
//! kept running (the paper's per-task recovery with upstream backup). Pure: no sockets here.
//!
//! - [`Backup`], at the producer: the output not yet covered by a complete checkpoint. A
//!   restored consumer asks for the stream after the barrier of the checkpoint it was restored
//!   from, and the producer replays it from here.
//! - [`Seen`], at the consumer: how many rows arrived on the edge, and how many had arrived when
//!   each recent barrier did. A restored producer replays its output from the barrier of the
//!   checkpoint it was restored from; the consumer drops the rows it has already received
//!   (the replay of a deterministic producer is the same rows in the same order), and the
//!   barriers it has already had.
//!
//! A barrier of a new checkpoint that arrives while the consumer is still dropping rows it has
//! seen cannot be placed consistently (the producer's snapshot is behind what the consumer has
//! taken): that checkpoint is given up ([`Filtered::Void`]); the next one is consistent.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use anduin_types::{Barrier, BarrierKind, Message};

/// How many recent barriers a consumer remembers the row count at.
const REMEMBERED_BARRIERS: usize = 8;

/// The bytes every upstream backup of a process may hold together: an edge's backup
/// overflows (as past its own limit) when the process's are full, so that a process with many
/// edges does not keep the per-edge limit many times over.
#[derive(Debug)]
pub struct BackupBudget {
    limit: usize,
    used: AtomicUsize,
}

impl BackupBudget {
    /// A budget of `limit` bytes.
    pub fn new(limit: usize) -> Arc<Self> {
        Arc::new(Self {
            limit,
            used: AtomicUsize::new(0),
        })
    }

    /// The bytes it allows.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// The bytes the backups hold now.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// Takes `n` bytes if they fit.
    fn take(&self, n: usize) -> bool {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| {
                u.checked_add(n).filter(|t| *t <= self.limit)
            })
            .is_ok()
    }

    fn has_room(&self, n: usize) -> bool {
        self.used().saturating_add(n) <= self.limit
    }

    fn give_back(&self, n: usize) {
        let _ = self
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| {
                Some(u.saturating_sub(n))
            });
    }
}

/// The producer's copy of what it sent after the barrier of the last complete checkpoint.
#[derive(Debug)]
pub(crate) struct Backup {
    /// The stream kept starts after the barrier of this epoch (0: at the beginning).
    base: u64,
    kept: VecDeque<Message>,
    bytes: usize,
    /// At most this many bytes are kept; beyond, the backup is given up until the next
    /// barrier, from which it is kept again.
    limit: usize,
    /// The backup outgrew its limit and nothing is kept until the next barrier.
    dropping: bool,
    /// A replay from before this checkpoint's barrier is impossible: the backup outgrew its
    /// limit before it.
    overflowed_before: Option<u64>,
    /// What the process's backups hold together; this one's bytes are taken from it.
    budget: Arc<BackupBudget>,
}

impl Drop for Backup {
    fn drop(&mut self) {
        self.budget.give_back(self.bytes);
    }
}

/// Why a producer cannot replay what a consumer asks for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ReplayError {
    #[error("the consumer asks for the output after checkpoint {asked}, but this producer keeps only what follows checkpoint {base}")]
    TooOld { asked: u64, base: u64 },
    #[error("the consumer asks for the output after checkpoint {asked}, which this producer has not reached")]
    Ahead { asked: u64 },
    #[error("the output since checkpoint {base} outgrew the upstream backup's {limit} bytes (or the {budget} bytes of every backup of its process): it cannot be replayed (checkpoint more often, or the query recovers as a whole)")]
    Overflowed {
        base: u64,
        limit: usize,
        budget: usize,
    },
}

impl Backup {
    /// An empty backup of a stream that starts after checkpoint `base`, of at most `limit`
    /// bytes taken from `budget`.
    pub(crate) fn new(base: u64, limit: usize, budget: Arc<BackupBudget>) -> Self {
        Self {
            base,
            kept: VecDeque::new(),
            bytes: 0,
            limit,
            dropping: false,
            overflowed_before: None,
            budget,
        }
    }

    /// Where the kept stream starts.
    pub(crate) fn base(&self) -> u64 {
        self.base
    }

    /// Keeps `msg`, sent after everything kept so far. Past the limit, everything kept is
    /// let go and nothing is kept until the next barrier; the backup then starts again after
    /// that barrier (a consumer restored from an earlier checkpoint cannot be replayed to).
    pub(crate) fn keep(&mut self, msg: &Message) {
        if self.dropping {
            if let Message::Barrier(b) = msg {
                self.dropping = false;
                self.base = b.epoch.0;
                self.overflowed_before = Some(b.epoch.0);
            }
            return;
        }
        let n = size(msg);
        if self.bytes + n <= self.limit && self.budget.take(n) {
            self.bytes += n;
            self.kept.push_back(msg.clone());
            return;
        }
        tracing::warn!(
            base = self.base,
            limit = self.limit,
            budget = self.budget.limit(),
            "the upstream backup of an edge outgrew its limit (or its process's backups theirs); a failure of its consumer before the next checkpoint completes will recover the query as a whole"
        );
        self.kept.clear();
        self.budget.give_back(self.bytes);
        self.bytes = 0;
        self.dropping = true;
    }

    /// Whether `msg` can be kept without outgrowing the limit (and the backup is not given
    /// up until the next barrier).
    pub(crate) fn has_room_for(&self, msg: &Message) -> bool {
        let n = size(msg);
        !self.dropping && self.bytes + n <= self.limit && self.budget.has_room(n)
    }

    /// Checkpoint `epoch` is complete: what came before its barrier is no longer needed.
    pub(crate) fn trim(&mut self, epoch: u64) {
        if epoch <= self.base || self.dropping {
            return;
        }
        let Some(at) = self.position_of(epoch) else {
            return;
        };
        let freed: usize = self.kept.drain(..=at).map(|m| size(&m)).sum();
        self.bytes -= freed;
        self.budget.give_back(freed);
        self.base = epoch;
    }

    /// What to send to a consumer that wants the stream after checkpoint `asked`'s barrier.
    pub(crate) fn replay(&self, asked: u64) -> Result<Vec<Message>, ReplayError> {
        let overflowed = ReplayError::Overflowed {
            base: asked,
            limit: self.limit,
            budget: self.budget.limit(),
        };
        if self.dropping || self.overflowed_before.is_some_and(|e| asked < e) {
            return Err(overflowed);
        }
        if asked < self.base {
            return Err(ReplayError::TooOld {
                asked,
                base: self.base,
            });
        }
        if asked == self.base {
            return Ok(self.kept.iter().cloned().collect());
        }
        let at = self
            .position_of(asked)
            .ok_or(ReplayError::Ahead { asked })?;
        Ok(self.kept.iter().skip(at + 1).cloned().collect())
    }

    fn position_of(&self, epoch: u64) -> Option<usize> {
        self.kept
            .iter()
            .position(|m| matches!(m, Message::Barrier(b) if b.epoch.0 == epoch))
    }
}

/// The bytes `m` holds: a batch's rows, not the whole buffers a slice of a larger batch
/// shares with the other slices (a reader cutting a file's rows into one-row batches counted
/// the file's buffer once per row, and the backup overflowed at a few thousand rows).
pub(crate) fn size(m: &Message) -> usize {
    match m {
        Message::Data(b) => b
            .columns()
            .iter()
            .map(|c| {
                c.to_data()
                    .get_slice_memory_size()
                    .unwrap_or_else(|_| c.get_array_memory_size())
            })
            .sum(),
        _ => 64,
    }
}

/// The consumer's account of one edge, kept across the producer's connections.
#[derive(Debug)]
pub(crate) struct Seen {
    /// The consumer's stream starts after this checkpoint's barrier (its task's restore).
    restored: u64,
    /// Rows delivered to the consumer task since its start.
    rows: u64,
    /// Recent barriers and the row count when each arrived.
    at: VecDeque<(u64, u64)>,
    /// The newest barrier delivered.
    last_barrier: u64,
    /// Rows of the current replay still to drop.
    skip: u64,
    /// A producer has connected before.
    connected: bool,
    /// Messages delivered to the consumer task: their numbers on its queue.
    delivered: u64,
    /// The end was delivered: a restored producer's replay of it is dropped.
    ended: bool,
}

/// Why a consumer cannot take a restored producer's replay.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ResumeError {
    #[error("the producer's output starts after checkpoint {from}, but this consumer needs it from checkpoint {needs} on")]
    StartsTooLate { from: u64, needs: u64 },
    #[error("the producer's output starts after checkpoint {from}, whose barrier this consumer no longer remembers")]
    Forgotten { from: u64 },
    #[error("the restored producer's output ended {missing} rows short of what this consumer had already received: its replay is not the same (is the producer deterministic?)")]
    Shorter { missing: u64 },
}

/// What to do with one message of a (possibly replayed) stream.
#[derive(Debug, Clone)]
pub(crate) enum Filtered {
    /// Deliver it (a batch may have lost its first rows, already received).
    Deliver(Message),
    /// Already received: drop it.
    Drop,
    /// The barrier of checkpoint `0` came while rows already received were being dropped:
    /// the checkpoint cannot be consistent and must be given up (the barrier is delivered
    /// all the same, so that alignment downstream goes on).
    Void(u64, Barrier),
}

impl Seen {
    /// A consumer end whose task was restored from checkpoint `restored` (0: fresh).
    pub(crate) fn new(restored: u64) -> Self {
        Self {
            restored,
            rows: 0,
            at: VecDeque::new(),
            last_barrier: restored,
            skip: 0,
            connected: false,
            delivered: 0,
            ended: false,
        }
    }

    /// The number of the next message delivered to the task (1, 2, 3, … across connections).
    pub(crate) fn next_seq(&mut self) -> u64 {
        self.delivered += 1;
        self.delivered
    }

    /// A producer connects whose stream starts after checkpoint `from`: where the consumer
    /// wants the stream to start (the answer of its handshake), having set up what to drop.
    pub(crate) fn connect(&mut self, from: u64) -> Result<u64, ResumeError> {
        if !self.connected {
            // The first producer of this consumer: the stream must start where the consumer's
            // own restore does; the producer skips to there.
            if from > self.restored {
                return Err(ResumeError::StartsTooLate {
                    from,
                    needs: self.restored,
                });
            }
            self.connected = true;
            self.skip = 0;
            return Ok(self.restored);
        }
        // A producer restored while this consumer ran: it replays from `from`, and what the
        // consumer received after that barrier is dropped from the replay.
        let at = if from == self.restored {
            0
        } else {
            self.at
                .iter()
                .find(|(e, _)| *e == from)
                .map(|(_, rows)| *rows)
                .ok_or(ResumeError::Forgotten { from })?
        };
        if from < self.restored {
            return Err(ResumeError::StartsTooLate {
                from,
                needs: self.restored,
            });
        }
        self.skip = self.rows - at;
        Ok(from)
    }

    /// What to do with `msg`, the next message of the current connection.
    pub(crate) fn filter(&mut self, msg: Message) -> Result<Filtered, ResumeError> {
        if self.ended {
            return Ok(Filtered::Drop);
        }
        Ok(match msg {
            Message::Data(batch) => {
                let n = batch.num_rows() as u64;
                if self.skip >= n {
                    self.skip -= n;
                    return Ok(Filtered::Drop);
                }
                let batch = if self.skip > 0 {
                    let from = usize::try_from(self.skip).unwrap_or(usize::MAX);
                    self.skip = 0;
                    batch.slice(from, batch.num_rows() - from)
                } else {
                    batch
                };
                self.rows += batch.num_rows() as u64;
                Filtered::Deliver(Message::Data(batch))
            }
            Message::Watermark(_) if self.skip > 0 => Filtered::Drop,
            Message::Barrier(b) if matches!(b.kind, BarrierKind::Checkpoint { .. }) => {
                let epoch = b.epoch.0;
                if epoch <= self.last_barrier {
                    Filtered::Drop
                } else if self.skip > 0 {
                    self.last_barrier = epoch;
                    Filtered::Void(epoch, b)
                } else {
                    self.last_barrier = epoch;
                    self.at.push_back((epoch, self.rows));
                    if self.at.len() > REMEMBERED_BARRIERS {
                        self.at.pop_front();
                    }
                    Filtered::Deliver(Message::Barrier(b))
                }
            }
            Message::End if self.skip > 0 => {
                return Err(ResumeError::Shorter { missing: self.skip })
            }
            Message::End => {
                self.ended = true;
                Filtered::Deliver(Message::End)
            }
            other => Filtered::Deliver(other),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::resume_tests::{barrier, rows, values};
    use super::*;

    #[test]
    fn one_row_slices_of_a_large_batch_count_their_rows_not_the_batch() {
        let Message::Data(whole) = rows(0, 10_000) else {
            panic!("rows are data");
        };
        let whole_bytes = size(&Message::Data(whole.clone()));
        // Room for the whole batch's rows, twice over: its 10 000 one-row slices fit.
        let mut b = Backup::new(0, 2 * whole_bytes, BackupBudget::new(usize::MAX));
        for i in 0..whole.num_rows() {
            b.keep(&Message::Data(whole.slice(i, 1)));
        }
        assert!(!b.dropping, "kept {} bytes of {}", b.bytes, b.limit);
        assert!(b.bytes <= 2 * whole_bytes);
        assert_eq!(values(&b.replay(0).expect("replays")).len(), 10_000);
    }

    /// A stream `0..n` rows in batches of 10 with a barrier after every 30 rows.
    fn stream(n: i64, first_epoch: u64) -> Vec<Message> {
        let mut out = Vec::new();
        let mut e = first_epoch;
        for start in (0..n).step_by(10) {
            out.push(rows(start, (start + 10).min(n)));
            if (start + 10) % 30 == 0 {
                e += 1;
                out.push(barrier(e));
            }
        }
        out
    }

    #[test]
    fn the_backups_of_a_process_share_its_budget_and_give_back_what_they_let_go() {
        let one = size(&rows(0, 10));
        // Each edge could keep ten batches; the process, three in all and a barrier.
        let budget = BackupBudget::new(3 * one + 64);
        let mut a = Backup::new(0, 10 * one, Arc::clone(&budget));
        let mut b = Backup::new(0, 10 * one, Arc::clone(&budget));
        a.keep(&rows(0, 10));
        a.keep(&barrier(1));
        b.keep(&rows(0, 10));
        assert!(b.has_room_for(&rows(10, 20)));
        b.keep(&rows(10, 20));
        assert_eq!(budget.used(), 3 * one + 64, "three batches and a barrier");
        // The budget is full: the next batch overflows `b`, which gives its bytes back.
        assert!(!b.has_room_for(&rows(20, 30)));
        b.keep(&rows(20, 30));
        assert!(matches!(b.replay(0), Err(ReplayError::Overflowed { .. })));
        assert_eq!(budget.used(), one + 64, "a's batch and barrier only");
        // A trim gives back what it lets go; a dropped backup, all it held.
        a.trim(1);
        assert_eq!(budget.used(), 0);
        a.keep(&rows(30, 40));
        assert_eq!(budget.used(), one);
        drop(a);
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn a_restored_consumer_gets_exactly_what_follows_its_checkpoint() {
        let mut b = Backup::new(0, usize::MAX, BackupBudget::new(usize::MAX));
        for m in stream(100, 0) {
            b.keep(&m);
        }
        // Checkpoint 1 (after row 30) completed; the consumer restores from it.
        b.trim(1);
        assert_eq!(b.base(), 1);
        assert_eq!(
            values(&b.replay(1).expect("replays")),
            (30..100).collect::<Vec<_>>()
        );
        // From checkpoint 2 (after row 60), had it completed and the trim not arrived yet.
        assert_eq!(
            values(&b.replay(2).expect("replays")),
            (60..100).collect::<Vec<_>>()
        );
        assert_eq!(
            b.replay(0).err(),
            Some(ReplayError::TooOld { asked: 0, base: 1 })
        );
        assert_eq!(b.replay(9).err(), Some(ReplayError::Ahead { asked: 9 }));
    }

    #[test]
    fn an_overflowed_backup_keeps_everything_again_after_the_next_barrier() {
        // Room for two batches: the third (rows 20..30) overflows; barrier 1 follows.
        let one = size(&rows(0, 10));
        let mut b = Backup::new(0, 2 * one + one / 2, BackupBudget::new(usize::MAX));
        for m in stream(100, 0) {
            b.keep(&m);
            if matches!(&m, Message::Data(d) if d.num_rows() > 0) && b.dropping {
                assert!(matches!(b.replay(0), Err(ReplayError::Overflowed { .. })));
            }
        }
        // Kept again after barrier 1 — and overflowed again after it, then kept after 2, …
        let base = b.base();
        assert!(base >= 1, "kept again after a barrier");
        let from = i64::try_from(base * 30).expect("small");
        assert_eq!(
            values(&b.replay(base).expect("replays")),
            (from..100).collect::<Vec<_>>(),
            "every row after the barrier it starts at, none lost"
        );
        assert!(matches!(
            b.replay(base - 1),
            Err(ReplayError::Overflowed { .. })
        ));
        // A completed checkpoint before the new start trims nothing and loses nothing.
        b.trim(base - 1);
        assert_eq!(
            values(&b.replay(base).expect("replays")).len(),
            usize::try_from(100 - from).expect("small")
        );
    }

    #[test]
    fn a_consumer_drops_what_a_restored_producer_replays_of_what_it_had() {
        let mut seen = Seen::new(0);
        assert_eq!(seen.connect(0), Ok(0));
        let original = stream(100, 0);
        // The first producer got rows 0..75 and barriers 1, 2 across before it died.
        let mut got = Vec::new();
        for m in original.iter().take(9) {
            if let Filtered::Deliver(m) = seen.filter(m.clone()).expect("filters") {
                got.push(m);
            }
        }
        assert_eq!(values(&got), (0..70).collect::<Vec<_>>());
        // Restored from checkpoint 1: it replays rows 30.. with barriers at other places
        // (epoch 3 is a new checkpoint, injected while the replay is behind).
        assert_eq!(seen.connect(1), Ok(1));
        let mut replay = vec![rows(30, 35), rows(35, 50), barrier(3)];
        replay.extend([rows(50, 72), rows(72, 100), barrier(4), Message::End]);
        let mut voided = Vec::new();
        for m in replay {
            match seen.filter(m).expect("filters") {
                Filtered::Deliver(m) => got.push(m),
                Filtered::Drop => {}
                Filtered::Void(e, b) => {
                    voided.push(e);
                    got.push(Message::Barrier(b));
                }
            }
        }
        assert_eq!(values(&got), (0..100).collect::<Vec<_>>(), "each row once");
        assert_eq!(voided, vec![3]);
        assert!(got
            .iter()
            .any(|m| matches!(m, Message::Barrier(b) if b.epoch.0 == 4)));
    }

    #[test]
    fn a_replay_shorter_than_what_was_received_is_an_error_not_a_loss() {
        let mut seen = Seen::new(0);
        seen.connect(0).expect("connects");
        for m in stream(60, 0) {
            seen.filter(m).expect("filters");
        }
        seen.connect(1).expect("resumes");
        assert!(matches!(seen.filter(rows(30, 40)), Ok(Filtered::Drop)));
        assert_eq!(
            seen.filter(Message::End).err(),
            Some(ResumeError::Shorter { missing: 20 })
        );
    }

    #[test]
    fn a_first_producer_must_start_where_the_consumer_was_restored() {
        let mut seen = Seen::new(5);
        assert_eq!(
            seen.connect(7),
            Err(ResumeError::StartsTooLate { from: 7, needs: 5 })
        );
        assert_eq!(seen.connect(3), Ok(5));
        let mut later = Seen::new(0);
        later.connect(0).expect("connects");
        assert_eq!(later.connect(4), Err(ResumeError::Forgotten { from: 4 }));
    }
}
