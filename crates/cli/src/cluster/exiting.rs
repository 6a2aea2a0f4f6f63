//! When an executor whose part has ended may end its process. It keeps the acknowledgements
//! its tasks sent of checkpoints it does not know complete (and where its sources ended), to
//! tell them again to a coordinator that takes the query over: the last checkpoint, begun by
//! a coordinator that died, is completed from them. Those facts must outlive the coordinator
//! that read them until the checkpoint is settled — its manifest written, or the checkpoint
//! given up — not merely until it has read them: a coordinator killed between reading the
//! last acknowledgements and writing the last manifest otherwise left the next one nothing to
//! complete it from, and the query finished with no checkpoint marked finished.
//!
//! So an executor asks ([`super::proto::ToCoordinator::MayExit`]) with the newest checkpoint
//! it acknowledged, and the coordinator answers once that checkpoint, or a later one, has
//! completed or been given up ([`Attempt::settle`]).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::coordinator::{Cluster, ExitPoint};
use super::driver::{current, Attempt};
use super::proto::ToExecutor;

/// The parts among `waiting` (each with the newest checkpoint its executor acknowledged) that
/// may end now that every checkpoint up to `settled` has completed or been given up: one
/// after it is the last, still in flight (no part ends before the last barrier).
pub(super) fn may_exit(waiting: &BTreeMap<u32, u64>, settled: u64) -> Vec<u32> {
    waiting
        .iter()
        .filter(|(_, acked)| **acked <= settled)
        .map(|(part, _)| *part)
        .collect()
}

impl Attempt {
    /// The executor of `part`, its part ended, waits to end until checkpoint `acked` is
    /// settled: answered at once if it is.
    pub(super) fn await_exit(&mut self, part: u32, acked: u64) {
        self.exiting.insert(part, acked);
        self.settle(0);
    }

    /// Checkpoint `epoch` completed (its manifest is written) or was given up, or is the one
    /// the attempt restored from or found complete: the executors waiting on it, or on an
    /// earlier one, may end.
    pub(super) fn settle(&mut self, epoch: u64) {
        self.settled = self.settled.max(epoch);
        for part in may_exit(&self.exiting, self.settled) {
            self.exiting.remove(&part);
            if let Some((to, _)) = self.executors.get(&part) {
                // A connection gone meanwhile: the executor asks again on its next one.
                let _ = to.send(&ToExecutor::EndAllowed);
            }
        }
    }
}

/// With `--inject-exit-after last-checkpoint-awaited` (testing): before the manifest of the
/// last checkpoint of attempt `number` of `query` is written (a source of it has taken the
/// last barrier), waits (at most a minute) until every part's executor waits to end, then
/// exits as a kill would — after the coordinator read every acknowledgement of the last
/// checkpoint and every executor asked to end, before the checkpoint completed.
pub(super) fn exit_once_every_part_awaits(cluster: &Arc<Cluster>, query: &str, number: u64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut state = cluster.lock();
    loop {
        let Some(a) = current(&state, query, number) else {
            return;
        };
        if a.finished_sources.is_empty() {
            return;
        }
        if a.workers.iter().all(|w| a.exiting.contains_key(w)) {
            cluster.exit_point(ExitPoint::LastCheckpointAwaited);
            return;
        }
        if Instant::now() >= deadline {
            return;
        }
        state = cluster.wait(state, Duration::from_millis(200));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ended_part_may_end_once_the_checkpoint_it_acknowledged_last_is_settled() {
        let waiting: BTreeMap<u32, u64> = [(1, 3), (2, 3), (4, 2)].into();
        // Checkpoint 2 complete, the last (3) in flight: its acknowledgements may still be
        // needed by the next coordinator, should this one die before writing its manifest.
        assert_eq!(may_exit(&waiting, 2), vec![4]);
        // Once 3 completed or was given up, nothing of theirs is needed any more.
        assert_eq!(may_exit(&waiting, 3), vec![1, 2, 4]);
        assert!(may_exit(&waiting, 1).is_empty());
        assert!(may_exit(&BTreeMap::new(), 9).is_empty());
    }
}
