//! Which recovery a failure gets: per-task (only the lost instances are restored, on other
//! workers, from the last complete checkpoint; their producers replay from their upstream
//! backups and their consumers drop what they already had), or the whole query rolled back
//! to the last complete checkpoint. Pure: facts in, a choice out.
//!
//! A restored instance's consumers that keep running can drop what they already had only if
//! the instance replays the same rows in the same order. That holds for a source (it reads
//! again from its checkpointed position) and for an operator with a single input channel (it
//! gets the same input in the same order); an operator that merges several input channels
//! sees them interleaved differently after a restore, so its consumers must be restored with
//! it — and when they run on workers that are still alive, the query rolls back as a whole.

use std::collections::BTreeSet;

/// What the choice needs to know of one task instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceFacts {
    /// The worker it runs on.
    pub worker: u32,
    /// Its name, for the reason of a fallback.
    pub name: String,
    /// It reads a source (its output replays from its checkpointed position).
    pub source: bool,
    /// How many channels feed it.
    pub inputs: usize,
    /// The instances it sends to, by index.
    pub consumers: Vec<usize>,
    /// Its source has reported the end of its input (any source's end makes the query
    /// finishing: it rolls back as a whole).
    pub ended: bool,
    /// The instances it hands state to or takes state from at points of its input that a
    /// restore of it alone would no longer share with them (the copies of a pattern that
    /// spreads its partial matches): restored only with all of them.
    pub together: Vec<usize>,
}

/// What to do about lost workers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecoveryChoice {
    /// Restore these instances (every one of the lost workers'), and nothing else.
    PerTask {
        /// The instances to restore, by index.
        restore: BTreeSet<usize>,
    },
    /// Roll the whole query back to its last complete checkpoint.
    WholeQuery {
        /// Why per-task recovery cannot apply.
        why: String,
    },
}

/// The recovery of the loss of `lost` workers, with `live` workers left.
pub fn choose_recovery(
    instances: &[InstanceFacts],
    lost: &BTreeSet<u32>,
    live: &BTreeSet<u32>,
) -> RecoveryChoice {
    let whole = |why: String| RecoveryChoice::WholeQuery { why };
    if live.is_empty() {
        return whole("no worker is left to restore the lost tasks on".into());
    }
    let restore: BTreeSet<usize> = instances
        .iter()
        .enumerate()
        .filter(|(_, i)| lost.contains(&i.worker))
        .map(|(n, _)| n)
        .collect();
    if restore.is_empty() {
        return whole("the lost workers ran none of the query's tasks".into());
    }
    // A finishing query (a source has read all its input, so its last checkpoint may be in
    // flight, and parts may have ended and committed everything) rolls back as a whole.
    if let Some(i) = instances.iter().find(|i| i.ended) {
        return whole(format!(
            "{} had already read all its input: the query is finishing",
            i.name
        ));
    }
    for &n in &restore {
        let i = &instances[n];
        if let Some(o) = i.together.iter().find(|o| !restore.contains(o)) {
            let other = instances.get(*o).map_or("?", |o| o.name.as_str());
            return whole(format!(
                "{} hands partial matches along with {other} (still running) at points of their input that a restore of {} alone would not share",
                i.name, i.name
            ));
        }
        let replays_the_same = i.source || i.inputs <= 1;
        if replays_the_same {
            continue;
        }
        if let Some(c) = i.consumers.iter().find(|c| !restore.contains(c)) {
            let consumer = instances.get(*c).map_or("?", |c| c.name.as_str());
            return whole(format!(
                "{} merges {} inputs, so its replay is not the stream {} (still running) already had",
                i.name, i.inputs, consumer
            ));
        }
    }
    RecoveryChoice::PerTask { restore }
}

/// Which of the instances a timed-out checkpoint waited for are stuck: those none of whose
/// producers also waited (the others wait only because the stuck ones hold the barrier back).
/// `producers(i)`: the instances that send to instance `i`.
pub fn stuck_instances(
    waiting: &BTreeSet<usize>,
    producers: impl Fn(usize) -> Vec<usize>,
) -> BTreeSet<usize> {
    waiting
        .iter()
        .copied()
        .filter(|i| !producers(*i).iter().any(|p| waiting.contains(p)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stuck_instances_are_those_whose_producers_all_acknowledged() {
        // 0 -> 2, 1 -> 2, 2 -> 3, 1 -> 4: 1 is stuck, 2, 3 and 4 wait behind it.
        let producers = |i: usize| match i {
            2 => vec![0, 1],
            3 => vec![2],
            4 => vec![1],
            _ => Vec::new(),
        };
        let waiting = [1, 2, 3, 4].into();
        assert_eq!(stuck_instances(&waiting, producers), [1].into());
        // Two stuck on their own.
        let waiting = [0, 4].into();
        assert_eq!(stuck_instances(&waiting, producers), [0, 4].into());
    }

    fn inst(
        worker: u32,
        name: &str,
        source: bool,
        inputs: usize,
        consumers: &[usize],
    ) -> InstanceFacts {
        InstanceFacts {
            worker,
            name: name.into(),
            source,
            inputs,
            consumers: consumers.to_vec(),
            ended: false,
            together: Vec::new(),
        }
    }

    /// Three sources, three windows fed by every source, three sinks (one per window), one of
    /// each per worker: the worker-kill test's query.
    fn windowed() -> Vec<InstanceFacts> {
        let mut v = Vec::new();
        for w in 0..3 {
            v.push(inst(w, &format!("source[{w}]"), true, 0, &[3, 4, 5]));
        }
        for w in 0..3 {
            v.push(inst(
                w,
                &format!("window[{w}]"),
                false,
                3,
                &[6 + w as usize],
            ));
        }
        for w in 0..3 {
            v.push(inst(w, &format!("sink[{w}]"), false, 1, &[]));
        }
        v
    }

    #[test]
    fn a_lost_worker_whose_merging_tasks_feed_only_its_own_is_recovered_alone() {
        let choice = choose_recovery(&windowed(), &[1].into(), &[0, 2].into());
        assert_eq!(
            choice,
            RecoveryChoice::PerTask {
                restore: [1, 4, 7].into()
            }
        );
    }

    #[test]
    fn a_merging_task_that_feeds_a_surviving_one_rolls_the_query_back() {
        let mut q = windowed();
        // window[1]'s sink runs on worker 2.
        q[7].worker = 2;
        match choose_recovery(&q, &[1].into(), &[0, 2].into()) {
            RecoveryChoice::WholeQuery { why } => {
                assert!(why.contains("window[1] merges 3 inputs"), "{why}");
                assert!(why.contains("sink[1]"), "{why}");
            }
            other => panic!("expected a rollback, got {other:?}"),
        }
    }

    #[test]
    fn copies_that_hand_partial_matches_along_are_restored_only_together() {
        // A source on worker 0 feeding three copies of a pattern, on workers 0, 1, 2.
        let mut q = vec![inst(0, "gen", true, 0, &[1, 2, 3])];
        for w in 0..3 {
            q.push(inst(w, &format!("dips[{w}]"), false, 1, &[]));
        }
        for (c, copy) in q.iter_mut().enumerate().skip(1) {
            copy.together = (1..4).filter(|o| *o != c).collect();
        }
        match choose_recovery(&q, &[1].into(), &[0, 2].into()) {
            RecoveryChoice::WholeQuery { why } => {
                assert!(
                    why.contains("dips[1] hands partial matches along with dips[0]"),
                    "{why}"
                )
            }
            other => panic!("expected a rollback, got {other:?}"),
        }
        // All of them on the lost worker: restored together, alone.
        for copy in q.iter_mut().skip(1) {
            copy.worker = 1;
        }
        assert_eq!(
            choose_recovery(&q, &[1].into(), &[0, 2].into()),
            RecoveryChoice::PerTask {
                restore: [1, 2, 3].into()
            }
        );
    }

    #[test]
    fn no_live_worker_or_a_finished_source_rolls_the_query_back() {
        assert!(matches!(
            choose_recovery(&windowed(), &[0, 1, 2].into(), &BTreeSet::new()),
            RecoveryChoice::WholeQuery { .. }
        ));
        let mut q = windowed();
        // A source of a worker that lives on has ended: the query is finishing.
        q[2].ended = true;
        assert!(matches!(
            choose_recovery(&q, &[1].into(), &[0, 2].into()),
            RecoveryChoice::WholeQuery { why } if why.contains("source[2] had already read")
        ));
    }
}
