//! The changes a control stream made to an operator's params, ordered by the event time they
//! take effect at: which values are in force for a row with event time t. Pure, tested without
//! Arrow.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Param values by name.
pub(crate) type Values = BTreeMap<String, String>;

/// One change: from event time `at` on, `param` is `value`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Change {
    pub at: i64,
    pub param: String,
    pub value: String,
}

/// The values in force before the earliest change kept, and the changes after them, sorted
/// by time (changes at the same time in the order they arrived: the later one wins).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Changes {
    pub base: Values,
    pub changes: Vec<Change>,
}

impl Changes {
    /// No change yet: `initial` is in force at every time.
    pub(crate) fn new(initial: Values) -> Self {
        Self {
            base: initial,
            changes: Vec::new(),
        }
    }

    /// Records a change at `at`, after the changes at the same time already recorded.
    pub(crate) fn insert(&mut self, change: Change) {
        let at = self.changes.partition_point(|c| c.at <= change.at);
        self.changes.insert(at, change);
    }

    /// Which version is in force at event time `t`: the number of changes at or before it
    /// (0, the base, for a row without an event time).
    pub(crate) fn version_at(&self, t: Option<i64>) -> usize {
        t.map_or(0, |t| self.changes.partition_point(|c| c.at <= t))
    }

    /// The values of version `v` (see [`Changes::version_at`]).
    pub(crate) fn values(&self, v: usize) -> Values {
        let mut values = self.base.clone();
        for c in self.changes.iter().take(v) {
            values.insert(c.param.clone(), c.value.clone());
        }
        values
    }

    /// Event time reached `watermark`: the changes at or before it are folded into the base
    /// (no row that is not late can tell them apart any more; a late row is evaluated under
    /// the values in force at the watermark). Returns how many were folded.
    pub(crate) fn fold_through(&mut self, watermark: i64) -> usize {
        let n = self.changes.partition_point(|c| c.at <= watermark);
        for c in self.changes.drain(..n) {
            self.base.insert(c.param, c.value);
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(at: i64, value: &str) -> Change {
        Change {
            at,
            param: "condition".into(),
            value: value.into(),
        }
    }

    fn initial() -> Changes {
        Changes::new(Values::from([("condition".into(), "v < 10".into())]))
    }

    #[test]
    fn a_row_sees_the_latest_change_at_or_before_its_time() {
        let mut c = initial();
        c.insert(change(100, "v < 20"));
        c.insert(change(50, "v < 30"));
        let at = |t| c.values(c.version_at(Some(t)))["condition"].clone();
        assert_eq!(at(49), "v < 10");
        assert_eq!(at(50), "v < 30");
        assert_eq!(at(99), "v < 30");
        assert_eq!(at(100), "v < 20");
        assert_eq!(c.values(c.version_at(None))["condition"], "v < 10");
    }

    #[test]
    fn of_two_changes_at_one_time_the_later_arrival_wins() {
        let mut c = initial();
        c.insert(change(7, "first"));
        c.insert(change(7, "second"));
        assert_eq!(c.values(c.version_at(Some(7)))["condition"], "second");
    }

    #[test]
    fn changes_the_watermark_passed_fold_into_the_base() {
        let mut c = initial();
        c.insert(change(10, "a"));
        c.insert(change(20, "b"));
        c.insert(change(30, "c"));
        assert_eq!(c.fold_through(20), 2);
        assert_eq!(c.base["condition"], "b");
        assert_eq!(c.values(c.version_at(Some(25)))["condition"], "b");
        assert_eq!(c.values(c.version_at(Some(30)))["condition"], "c");
    }
}
