//! Barrier alignment (the paper's checkpointing pattern, Flink's aligned checkpoints): a task
//! with several inputs takes its snapshot when the barrier of an epoch has arrived on all of
//! them. An input that delivered the barrier is not read again until then, so the snapshot
//! reflects exactly the rows before the barrier on every input. Pure: no channels here.

use anduin_types::{Barrier, Epoch};

/// What a barrier or an end of input did to the alignment.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub(crate) enum Alignment {
    /// Wait for the other inputs; do not read this one meanwhile.
    Waiting,
    /// The barrier has arrived on every open input: snapshot, forward it, read everything.
    Aligned(Barrier),
}

/// The alignment state of one task.
#[derive(Debug)]
pub(crate) struct Aligner {
    /// Per input: the barrier has arrived in the current round.
    arrived: Vec<bool>,
    /// Per input: the input has ended (it no longer takes part).
    ended: Vec<bool>,
    /// Per input: it takes part again once the checkpoint being aligned is.
    rejoin: Vec<bool>,
    current: Option<Barrier>,
    /// The newest checkpoint aligned or given up: its barriers, and older ones, are ignored.
    done: Epoch,
}

impl Aligner {
    pub(crate) fn new(inputs: usize) -> Self {
        Self {
            arrived: vec![false; inputs],
            ended: vec![false; inputs],
            rejoin: vec![false; inputs],
            current: None,
            done: Epoch(0),
        }
    }

    /// `k` inputs more, which take part from the next barrier on.
    pub(crate) fn add(&mut self, k: usize) {
        let n = self.arrived.len() + k;
        self.arrived.resize(n, false);
        self.ended.resize(n, false);
        self.rejoin.resize(n, false);
    }

    /// Whether input `i` is held back (its barrier came, others' have not).
    pub(crate) fn is_blocked(&self, i: usize) -> bool {
        self.current.is_some() && self.arrived.get(i).copied().unwrap_or(false)
    }

    /// The barrier `b` arrived on input `i`.
    pub(crate) fn on_barrier(&mut self, i: usize, b: Barrier) -> Alignment {
        if b.epoch <= self.done {
            // A barrier of a checkpoint this task has aligned or given up (its producer was
            // restored, or a newer barrier overtook it): nothing to do.
            return Alignment::Waiting;
        }
        match &self.current {
            Some(cur) if b.epoch < cur.epoch => {
                // A checkpoint older than the one being aligned, which overtook it.
                tracing::debug!(epoch = b.epoch.0, "a barrier of a given-up checkpoint");
                return Alignment::Waiting;
            }
            Some(cur) if b.epoch > cur.epoch => {
                // A newer checkpoint's barrier: the one being aligned was given up (a restored
                // producer never sends it). Its inputs are read again; the newer one aligns.
                tracing::warn!(
                    given_up = cur.epoch.0,
                    epoch = b.epoch.0,
                    "a newer barrier overtook the checkpoint being aligned"
                );
                self.arrived.iter_mut().for_each(|a| *a = false);
                self.done = cur.epoch;
                self.current = Some(b);
            }
            Some(_) => {}
            None => self.current = Some(b),
        }
        if let Some(a) = self.arrived.get_mut(i) {
            *a = true;
        }
        self.check()
    }

    /// Input `i` ended: it no longer holds an alignment up.
    pub(crate) fn on_end(&mut self, i: usize) -> Alignment {
        if let Some(e) = self.ended.get_mut(i) {
            *e = true;
        }
        if let Some(r) = self.rejoin.get_mut(i) {
            *r = false;
        }
        if self.current.is_some() {
            self.check()
        } else {
            Alignment::Waiting
        }
    }

    /// Input `i`, out of alignment since [`Aligner::on_end`] (its producer was being
    /// restored), takes part again from the next checkpoint on; barriers of those aligned
    /// meanwhile are ignored when they come.
    pub(crate) fn on_resume(&mut self, i: usize) {
        // The checkpoint being aligned does not wait for it (the others' barriers came
        // without it, and it replays from an older one): it rejoins after.
        if self.current.is_some() {
            if let Some(r) = self.rejoin.get_mut(i) {
                *r = true;
            }
        } else if let Some(e) = self.ended.get_mut(i) {
            *e = false;
        }
    }

    fn check(&mut self) -> Alignment {
        let all = self
            .arrived
            .iter()
            .zip(&self.ended)
            .all(|(arrived, ended)| *arrived || *ended);
        if !all {
            return Alignment::Waiting;
        }
        self.arrived.iter_mut().for_each(|a| *a = false);
        for (ended, rejoin) in self.ended.iter_mut().zip(&mut self.rejoin) {
            if std::mem::take(rejoin) {
                *ended = false;
            }
        }
        match self.current.take() {
            Some(b) => {
                self.done = b.epoch;
                Alignment::Aligned(b)
            }
            None => Alignment::Waiting,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn barrier(e: u64) -> Barrier {
        Barrier::checkpoint(Epoch(e), true)
    }

    #[test]
    fn a_single_input_aligns_at_once() {
        let mut a = Aligner::new(1);
        assert_eq!(a.on_barrier(0, barrier(1)), Alignment::Aligned(barrier(1)));
        assert!(!a.is_blocked(0));
    }

    #[test]
    fn inputs_that_delivered_the_barrier_wait_for_the_others() {
        let mut a = Aligner::new(3);
        assert_eq!(a.on_barrier(1, barrier(4)), Alignment::Waiting);
        assert!(a.is_blocked(1));
        assert!(!a.is_blocked(0));
        assert_eq!(a.on_barrier(0, barrier(4)), Alignment::Waiting);
        assert_eq!(a.on_barrier(2, barrier(4)), Alignment::Aligned(barrier(4)));
        assert!(!a.is_blocked(1));
        // The next round starts clean.
        assert_eq!(a.on_barrier(2, barrier(5)), Alignment::Waiting);
    }

    #[test]
    fn an_ended_input_does_not_hold_alignment_up() {
        let mut a = Aligner::new(2);
        assert_eq!(a.on_barrier(0, barrier(2)), Alignment::Waiting);
        assert_eq!(a.on_end(1), Alignment::Aligned(barrier(2)));
        assert_eq!(a.on_barrier(0, barrier(3)), Alignment::Aligned(barrier(3)));
    }

    #[test]
    fn a_barrier_of_a_given_up_checkpoint_is_ignored() {
        let mut a = Aligner::new(2);
        assert_eq!(a.on_barrier(0, barrier(3)), Alignment::Waiting);
        // Barrier 2 was overtaken by 3: it blocks nothing and aligns nothing.
        assert_eq!(a.on_barrier(1, barrier(2)), Alignment::Waiting);
        assert!(!a.is_blocked(1));
        assert_eq!(a.on_barrier(1, barrier(3)), Alignment::Aligned(barrier(3)));
        assert_eq!(a.on_barrier(0, barrier(3)), Alignment::Waiting);
        assert!(!a.is_blocked(0), "a repeated barrier starts no round");
    }

    #[test]
    fn an_input_back_from_a_restore_mid_alignment_rejoins_after_that_checkpoint() {
        let mut a = Aligner::new(3);
        // Input 1's producer is lost: checkpoint 1 aligns over 0 and 2.
        assert_eq!(a.on_end(1), Alignment::Waiting);
        assert_eq!(a.on_barrier(0, barrier(1)), Alignment::Waiting);
        // It is back before input 2's barrier: checkpoint 1 does not wait for it.
        a.on_resume(1);
        assert!(!a.is_blocked(1));
        assert_eq!(a.on_barrier(2, barrier(1)), Alignment::Aligned(barrier(1)));
        // Its replay brings checkpoint 1's barrier again: ignored. Checkpoint 2 waits for it.
        assert_eq!(a.on_barrier(1, barrier(1)), Alignment::Waiting);
        assert_eq!(a.on_barrier(0, barrier(2)), Alignment::Waiting);
        assert_eq!(a.on_barrier(2, barrier(2)), Alignment::Waiting);
        assert_eq!(a.on_barrier(1, barrier(2)), Alignment::Aligned(barrier(2)));
        // Back with no checkpoint being aligned: it takes part at once.
        assert_eq!(a.on_end(2), Alignment::Waiting);
        a.on_resume(2);
        assert_eq!(a.on_barrier(0, barrier(3)), Alignment::Waiting);
        assert_eq!(a.on_barrier(1, barrier(3)), Alignment::Waiting);
        assert_eq!(a.on_barrier(2, barrier(3)), Alignment::Aligned(barrier(3)));
    }

    #[test]
    fn a_newer_barrier_mid_alignment_gives_the_older_checkpoint_up() {
        let mut a = Aligner::new(3);
        assert_eq!(a.on_barrier(0, barrier(2)), Alignment::Waiting);
        assert_eq!(a.on_barrier(1, barrier(2)), Alignment::Waiting);
        // Input 2's producer was restored and never sends barrier 2: barrier 3 overtakes it.
        assert_eq!(a.on_barrier(2, barrier(3)), Alignment::Waiting);
        assert!(
            !a.is_blocked(0),
            "inputs held for checkpoint 2 are read again"
        );
        assert!(a.is_blocked(2));
        assert_eq!(a.on_barrier(0, barrier(3)), Alignment::Waiting);
        assert_eq!(a.on_barrier(1, barrier(3)), Alignment::Aligned(barrier(3)));
    }
}
