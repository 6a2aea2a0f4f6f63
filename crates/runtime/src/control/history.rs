//! The history of a query's param changes, bounded: the most recent changes in full (what
//! `ctl history` shows), and of older ones only the latest per operator and param. A
//! checkpoint's manifest records, per operator and param, the latest change applied before its
//! epoch (in force when its snapshot was taken) and the latest applied at its epoch (after
//! the snapshot, on its barrier): all a restore needs to put the values back in the right
//! order around the state, however many changes a long-running query has seen. Params whose
//! every earlier value matters (a writer's paths: an output it had may not be reused) keep
//! every change. Pure, tested without threads.

use std::collections::{BTreeMap, BTreeSet};

use super::types::ChangeRecord;

/// How many changes the history keeps in full.
pub(crate) const HISTORY_KEPT: usize = 1000;

/// The changes applied so far (see the module's documentation).
#[derive(Debug)]
pub(crate) struct History {
    limit: usize,
    /// The most recent changes, by number.
    recent: Vec<ChangeRecord>,
    /// Of the changes that left `recent`, the latest per operator and param.
    older: BTreeMap<(String, String), ChangeRecord>,
    /// The operators and params whose every change is kept.
    keep_all: BTreeSet<(String, String)>,
    /// Of those, the changes that left `recent`.
    older_all: Vec<ChangeRecord>,
    /// How many changes were applied or restored in all.
    total: u64,
    /// With checkpoints, the epoch of the last manifest written ([`History::through`]): a
    /// change after it stays in full until a manifest has recorded it (its key's latest
    /// older change could be one a later checkpoint needs). `None`: no checkpoints.
    recorded: Option<u64>,
}

impl History {
    /// An empty history keeping `limit` changes in full.
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            limit: limit.max(1),
            recent: Vec::new(),
            older: BTreeMap::new(),
            keep_all: BTreeSet::new(),
            older_all: Vec::new(),
            total: 0,
            recorded: None,
        }
    }

    /// Keeps every change of `param` of `operator`, in the history and in manifests.
    pub(crate) fn keep_every_change(&mut self, operator: &str, param: &str) {
        self.keep_all
            .insert((operator.to_string(), param.to_string()));
    }

    /// A history starting from the records of the checkpoint of `epoch`.
    pub(crate) fn restore(&mut self, epoch: u64, records: &[ChangeRecord]) {
        self.recent.clear();
        self.older.clear();
        self.older_all.clear();
        self.total = 0;
        self.recorded = Some(epoch);
        for r in records {
            self.push(r.clone());
        }
    }

    /// The run takes checkpoints: changes stay in full until a manifest records them.
    pub(crate) fn checkpointed(&mut self) {
        self.recorded.get_or_insert(0);
    }

    /// Records a change (changes may settle out of order: kept sorted by number).
    pub(crate) fn push(&mut self, record: ChangeRecord) {
        let at = self.recent.partition_point(|r| r.seq < record.seq);
        self.recent.insert(at, record);
        self.total += 1;
        self.evict();
    }

    /// Moves the changes beyond the limit out of `recent`, the oldest first, as far as a
    /// manifest has recorded them.
    fn evict(&mut self) {
        while self.recent.len() > self.limit {
            let first = &self.recent[0];
            if self.recorded.is_some_and(|e| first.epoch > e) {
                return;
            }
            let old = self.recent.remove(0);
            let key = (old.operator.clone(), old.param.clone());
            if self.keep_all.contains(&key) {
                self.older_all.push(old);
            } else if self.older.get(&key).is_none_or(|r| r.seq < old.seq) {
                self.older.insert(key, old);
            }
        }
    }

    /// The changes kept in full, oldest first.
    pub(crate) fn recent(&self) -> &[ChangeRecord] {
        &self.recent
    }

    /// How many changes were applied or restored in all.
    pub(crate) fn total(&self) -> u64 {
        self.total
    }

    /// Change `seq`, if it is kept in full.
    pub(crate) fn find(&self, seq: u64) -> Option<&ChangeRecord> {
        self.recent.iter().find(|r| r.seq == seq)
    }

    /// Per operator and param, the latest change applied at a barrier before `epoch` and the
    /// latest applied at `epoch`, by number: what the checkpoint of `epoch` records
    /// (checkpoints complete in order of their epochs). A restore applies the first before
    /// the state (the snapshot was taken under it) and the second after (it came after the
    /// snapshot).
    pub(crate) fn through(&mut self, epoch: u64) -> Vec<ChangeRecord> {
        self.recorded = Some(self.recorded.map_or(epoch, |e| e.max(epoch)));
        let out = self.latest_through(epoch);
        self.evict();
        out
    }

    fn latest_through(&self, epoch: u64) -> Vec<ChangeRecord> {
        // Keyed by (operator, param, whether applied at `epoch` itself).
        let mut latest: BTreeMap<(&str, &str, bool), &ChangeRecord> = BTreeMap::new();
        let mut every = Vec::new();
        for r in self
            .older
            .values()
            .chain(&self.older_all)
            .chain(&self.recent)
        {
            if r.epoch > epoch {
                continue;
            }
            let (operator, param) = (r.operator.as_str(), r.param.as_str());
            if self
                .keep_all
                .iter()
                .any(|(o, p)| (o.as_str(), p.as_str()) == (operator, param))
            {
                every.push(r.clone());
                continue;
            }
            let key = (operator, param, r.epoch == epoch);
            if latest.get(&key).is_none_or(|l| l.seq < r.seq) {
                latest.insert(key, r);
            }
        }
        let mut out: Vec<ChangeRecord> = latest.into_values().cloned().collect();
        out.extend(every);
        out.sort_by_key(|r| r.seq);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(seq: u64, epoch: u64, param: &str, new: &str) -> ChangeRecord {
        ChangeRecord {
            seq,
            time_ms: 0,
            epoch,
            operator: "low".into(),
            param: param.into(),
            old: String::new(),
            new: new.into(),
            from: "test".into(),
        }
    }

    #[test]
    fn a_checkpoint_records_the_latest_change_of_each_param_up_to_its_epoch() {
        let mut h = History::new(10);
        h.push(record(1, 1, "condition", "a"));
        h.push(record(2, 2, "rate", "5"));
        h.push(record(3, 3, "condition", "b"));
        h.push(record(4, 5, "condition", "c"));
        let mut through = |e| -> Vec<(u64, String)> {
            h.through(e).into_iter().map(|r| (r.seq, r.new)).collect()
        };
        assert_eq!(through(4), vec![(2, "5".into()), (3, "b".into())]);
        // `b` was in force when the snapshot of 5 was taken, `c` came after it.
        assert_eq!(
            through(5),
            vec![(2, "5".into()), (3, "b".into()), (4, "c".into())]
        );
        assert_eq!(through(6), vec![(2, "5".into()), (4, "c".into())]);
        assert_eq!(through(0), vec![]);
    }

    #[test]
    fn a_long_history_keeps_the_recent_changes_and_the_latest_of_each_param() {
        let mut h = History::new(3);
        h.push(record(1, 1, "rate", "1"));
        for seq in 2..=100 {
            h.push(record(seq, seq, "condition", &format!("v{seq}")));
        }
        assert_eq!(h.total(), 100);
        assert_eq!(
            h.recent().iter().map(|r| r.seq).collect::<Vec<_>>(),
            vec![98, 99, 100]
        );
        assert!(h.find(1).is_none());
        let kept: Vec<(u64, String)> = h.through(100).into_iter().map(|r| (r.seq, r.new)).collect();
        // v99 was in force when the snapshot of 100 was taken, v100 came after it.
        assert_eq!(
            kept,
            vec![(1, "1".into()), (99, "v99".into()), (100, "v100".into())]
        );
    }

    #[test]
    fn with_checkpoints_a_change_stays_in_full_until_a_manifest_records_it() {
        let mut h = History::new(2);
        h.restore(0, &[]);
        for seq in 1..=5 {
            h.push(record(seq, seq + 10, "condition", &format!("v{seq}")));
        }
        // No manifest past epoch 0 yet: nothing may leave, or a checkpoint of epoch 12
        // would find only a later change of `condition`.
        assert_eq!(h.recent().len(), 5);
        let last = |records: Vec<ChangeRecord>| records.last().map(|r| r.new.clone());
        assert_eq!(last(h.through(12)).as_deref(), Some("v2"));
        assert_eq!(h.recent().len(), 3);
        assert_eq!(last(h.through(15)).as_deref(), Some("v5"));
        assert_eq!(h.recent().len(), 2);
    }

    #[test]
    fn every_change_of_a_param_that_keeps_them_all_is_recorded() {
        let mut h = History::new(2);
        h.keep_every_change("low", "path");
        for seq in 1..=5 {
            h.push(record(seq, seq, "path", &format!("p{seq}")));
            h.push(record(seq + 100, seq, "condition", &format!("c{seq}")));
        }
        let kept: Vec<String> = h.through(5).into_iter().map(|r| r.new).collect();
        // c4 was in force when the snapshot of 5 was taken, c5 came after it.
        assert_eq!(kept, vec!["p1", "p2", "p3", "p4", "p5", "c4", "c5"]);
    }

    #[test]
    fn changes_settled_out_of_order_are_kept_by_number() {
        let mut h = History::new(10);
        h.push(record(2, 1, "condition", "b"));
        h.push(record(1, 1, "condition", "a"));
        assert_eq!(h.recent()[0].seq, 1);
        assert_eq!(h.through(1)[0].new, "b");
    }
}
