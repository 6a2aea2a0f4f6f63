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

/// The values in force before the earliest change kept (with the time of the change that set
/// each), and the changes after them, sorted by time (changes at the same time in the order
/// they arrived: the later one wins).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Changes {
    pub base: Values,
    /// Per param of `base`, the time of the change that set it (absent: the query's value).
    #[serde(default)]
    pub base_at: BTreeMap<String, i64>,
    /// The watermark the changes were folded through, if any.
    #[serde(default)]
    pub folded: Option<i64>,
    pub changes: Vec<Change>,
    /// The values of each version, computed when first asked for since the last change.
    #[serde(skip)]
    versions: Vec<Values>,
}

/// Where a change went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Inserted {
    /// Among the changes still apart: it applies to every row from its time on.
    InTime,
    /// Behind the watermark the changes were folded through (late in its own stream): it
    /// applies to the rows not evaluated yet, unless a later change of its param was folded.
    Behind {
        /// A later change of the same param had been folded: this one changes nothing.
        superseded: bool,
    },
}

impl Changes {
    /// No change yet: `initial` is in force at every time.
    pub(crate) fn new(initial: Values) -> Self {
        Self {
            base: initial,
            ..Self::default()
        }
    }

    /// Records a change at `at`, after the changes at the same time already recorded.
    pub(crate) fn insert(&mut self, change: Change) -> Inserted {
        self.versions.clear();
        if self.folded.is_some_and(|w| change.at < w) {
            let superseded = self
                .base_at
                .get(&change.param)
                .is_some_and(|t| *t > change.at);
            if !superseded {
                self.base_at.insert(change.param.clone(), change.at);
                self.base.insert(change.param, change.value);
            }
            return Inserted::Behind { superseded };
        }
        let at = self.changes.partition_point(|c| c.at <= change.at);
        self.changes.insert(at, change);
        Inserted::InTime
    }

    /// Which version is in force at event time `t`: the number of changes at or before it
    /// (0, the base, for a row without an event time).
    pub(crate) fn version_at(&self, t: Option<i64>) -> usize {
        t.map_or(0, |t| self.changes.partition_point(|c| c.at <= t))
    }

    /// Whether a row at `t` is behind the watermark the changes were folded through: it is
    /// evaluated under the values in force there, not under those of its own time.
    pub(crate) fn is_behind(&self, t: Option<i64>) -> bool {
        match (t, self.folded) {
            (Some(t), Some(w)) => t < w,
            _ => false,
        }
    }

    /// The values of version `v` (see [`Changes::version_at`]).
    pub(crate) fn values(&mut self, v: usize) -> &Values {
        if self.versions.is_empty() {
            let mut values = self.base.clone();
            self.versions.push(values.clone());
            for c in &self.changes {
                values.insert(c.param.clone(), c.value.clone());
                self.versions.push(values.clone());
            }
        }
        let last = self.versions.len() - 1;
        &self.versions[v.min(last)]
    }

    /// Event time reached `watermark`: the changes before it are folded into the base (no row
    /// that is not late can tell them apart any more; a late row is evaluated under the values
    /// in force at the watermark). A change at the watermark's own time is not: a watermark
    /// `w` says no row before `w` is to come, and one at `w` may (a second change at the
    /// same time, read after the watermark the first one made). Returns how many were folded.
    pub(crate) fn fold_through(&mut self, watermark: i64) -> usize {
        self.folded = Some(self.folded.map_or(watermark, |w| w.max(watermark)));
        let n = self.changes.partition_point(|c| c.at < watermark);
        if n > 0 {
            self.versions.clear();
        }
        for c in self.changes.drain(..n) {
            self.base_at.insert(c.param.clone(), c.at);
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
        let mut at = |t| {
            let v = c.version_at(Some(t));
            c.values(v)["condition"].clone()
        };
        assert_eq!(at(49), "v < 10");
        assert_eq!(at(50), "v < 30");
        assert_eq!(at(99), "v < 30");
        assert_eq!(at(100), "v < 20");
        assert_eq!(c.values(0)["condition"], "v < 10");
        assert_eq!(c.version_at(None), 0);
    }

    #[test]
    fn of_two_changes_at_one_time_the_later_arrival_wins() {
        let mut c = initial();
        c.insert(change(7, "first"));
        c.insert(change(7, "second"));
        let v = c.version_at(Some(7));
        assert_eq!(c.values(v)["condition"], "second");
    }

    #[test]
    fn changes_the_watermark_passed_fold_into_the_base() {
        let mut c = initial();
        c.insert(change(10, "a"));
        c.insert(change(20, "b"));
        c.insert(change(30, "c"));
        assert_eq!(c.fold_through(21), 2);
        assert_eq!(c.base["condition"], "b");
        let v = c.version_at(Some(25));
        assert_eq!(c.values(v)["condition"], "b");
        let v = c.version_at(Some(30));
        assert_eq!(c.values(v)["condition"], "c");
        assert!(c.is_behind(Some(20)) && !c.is_behind(Some(21)));
    }

    #[test]
    fn a_second_change_at_the_watermark_s_own_time_is_in_time() {
        let mut c = initial();
        c.insert(change(20, "b"));
        assert_eq!(c.fold_through(20), 0, "a row at 20 is still to come");
        assert_eq!(c.insert(change(20, "b2")), Inserted::InTime);
        let v = c.version_at(Some(20));
        assert_eq!(c.values(v)["condition"], "b2", "the later arrival wins");
        assert_eq!(
            c.insert(change(19, "late")),
            Inserted::Behind { superseded: false }
        );
    }

    #[test]
    fn a_change_behind_the_fold_never_overrides_a_later_folded_one() {
        let mut c = initial();
        c.insert(change(10, "a"));
        c.insert(change(30, "c"));
        c.fold_through(31);
        assert_eq!(
            c.insert(change(20, "late")),
            Inserted::Behind { superseded: true }
        );
        assert_eq!(c.base["condition"], "c");
        // Behind the fold but later than the folded change of its param: it applies to the
        // rows still to come.
        c.insert(change(40, "d"));
        c.fold_through(50);
        assert_eq!(
            c.insert(change(45, "e")),
            Inserted::Behind { superseded: false }
        );
        assert_eq!(c.values(0)["condition"], "e");
        assert_eq!(c.insert(change(60, "f")), Inserted::InTime);
    }
}
