//! Which param changes a query's attempt must be given again when it resumes: pure, facts in,
//! decision out.
//!
//! A checkpoint's manifest records the param changes applied up to its epoch (the latest of
//! each param, and every change of the params that keep them all); the catalog records every
//! change the control plane applied, with its number (`seq`) and the epoch it applied at
//! ([`crate::catalog::Edit::ParameterSet`]). The changes numbered after every one the manifest
//! recorded came after the checkpoint: a resumed attempt would lose them.
//!
//! - A coordinator that takes a running attempt over ([`Resumed::TakeOver`]) restarts nothing:
//!   the executors applied those changes already. Its control plane must still know them (its
//!   history, the values its next checkpoints record, the `old` value of the next change), so
//!   they are given to it as they applied, at their own epochs. A rescale (`parallelism`)
//!   among them cannot be: the running instances hold key groups as after it, while the
//!   checkpoint coordinator would record the plan from before it. The attempt is not taken
//!   over then ([`Reapply::not_taken_over`]): the query rolls back as a whole to the
//!   checkpoint, as after any rescale no checkpoint covers.
//! - A new attempt that restores the checkpoint ([`Resumed::Rollback`]) gets them with the
//!   restore, applied after the state as if they had ridden on the checkpoint's barrier
//!   (their epoch becomes the checkpoint's): the rows after the checkpoint are processed again
//!   under the values in force when the attempt failed. A rescale among them is undone by the
//!   rollback ([`Reapply::undone`]), as a rescale no checkpoint covers always was; a live
//!   split (`pipeline`) too (a cluster refuses them while the query runs).
//!
//! Changes the catalog holds without a number (written by an older coordinator) are not given
//! again: nothing says whether the checkpoint covers them.

use anduin_checkpoint::ChangeRecord;
use anduin_types::Epoch;

use crate::catalog::ControlRecord;

/// The param of a live rescale in the control plane (`anduin ctl scale`).
pub const RESCALE_PARAM: &str = "parallelism";
/// The param of a live split of a chain in the control plane.
pub const SPLIT_PARAM: &str = "pipeline";

/// How an attempt resumes from its checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resumed {
    /// A coordinator takes the running attempt over: nothing restarts.
    TakeOver,
    /// A new attempt restores the checkpoint (the whole query rolls back to it).
    Rollback,
}

/// What to do with the changes the catalog recorded after a checkpoint.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[must_use]
pub struct Reapply {
    /// The changes to give the attempt, oldest first, as a manifest records them: appended to
    /// the restored checkpoint's.
    pub changes: Vec<ChangeRecord>,
    /// With [`Resumed::Rollback`]: the rescales and splits the rollback undoes.
    pub undone: Vec<ControlRecord>,
    /// With [`Resumed::TakeOver`]: the first rescale after the checkpoint, which keeps the
    /// attempt from being taken over.
    pub not_taken_over: Option<ControlRecord>,
}

/// The origin of the record a rollback writes for each rescale or live split it undoes.
pub const UNDONE_BY_ROLLBACK: &str = "coordinator: undone by a rollback";

/// Of the changes in `history` (the catalog's control history of the query), those applied
/// after the checkpoint of `epoch` whose manifest recorded `covered` (`Epoch(0)` and nothing:
/// the attempt starts from the beginning), and what becomes of them when the attempt resumes
/// as `how` says (see the module's documentation).
pub fn changes_after(
    history: &[ControlRecord],
    covered: &[ChangeRecord],
    epoch: Epoch,
    how: Resumed,
) -> Reapply {
    let last_covered = covered.iter().map(|r| r.seq).max().unwrap_or(0);
    // The changes a rollback undid (recorded so by it): no later resumption counts them.
    let undone: std::collections::BTreeSet<u64> = history
        .iter()
        .filter(|r| r.origin == UNDONE_BY_ROLLBACK)
        .filter_map(|r| r.change_seq)
        .collect();
    let mut out = Reapply::default();
    let mut after: Vec<(u64, &ControlRecord)> = history
        .iter()
        .filter_map(|r| r.change_seq.map(|seq| (seq, r)))
        .filter(|(seq, _)| *seq > last_covered && !undone.contains(seq))
        .collect();
    // A change recorded as applied (with its epoch) before its intent (recorded before its
    // barrier was sent, with none).
    after.sort_by_key(|(seq, r)| (*seq, r.epoch.is_none()));
    after.dedup_by_key(|(seq, _)| *seq);
    for (seq, r) in after {
        let structural = r.param == RESCALE_PARAM || r.param == SPLIT_PARAM;
        match how {
            Resumed::TakeOver if structural => {
                out.not_taken_over.get_or_insert_with(|| r.clone());
                continue;
            }
            Resumed::Rollback if structural => {
                out.undone.push(r.clone());
                continue;
            }
            _ => {}
        }
        let applied_at = match how {
            Resumed::TakeOver => r.epoch.map_or(0, |e| e.0),
            Resumed::Rollback => epoch.0,
        };
        out.changes.push(ChangeRecord {
            seq,
            time_ms: i64::try_from(r.at_ms).unwrap_or(i64::MAX),
            epoch: applied_at,
            operator: r.operator.clone(),
            param: r.param.clone(),
            old: r.old.clone().unwrap_or_default(),
            new: r.value.clone(),
            from: r.origin.clone(),
        });
    }
    out
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn line(seq: Option<u64>, epoch: u64, param: &str, value: &str) -> ControlRecord {
        ControlRecord {
            seq: seq.unwrap_or(0),
            operator: "low".into(),
            param: param.into(),
            value: value.into(),
            origin: "ctl".into(),
            epoch: Some(Epoch(epoch)),
            at_ms: 5,
            change_seq: seq,
            old: Some("before".into()),
        }
    }

    fn covered(seq: u64, epoch: u64) -> ChangeRecord {
        ChangeRecord {
            seq,
            time_ms: 0,
            epoch,
            operator: "low".into(),
            param: "condition".into(),
            old: String::new(),
            new: "x".into(),
            from: "ctl".into(),
        }
    }

    #[test]
    fn only_the_changes_numbered_after_the_manifests_are_given_again() {
        let history = [
            line(Some(1), 2, "condition", "a"),
            line(Some(2), 4, "condition", "b"),
            line(Some(3), 7, "condition", "c"),
            line(None, 8, "condition", "unnumbered"),
        ];
        let r = changes_after(&history, &[covered(2, 4)], Epoch(5), Resumed::TakeOver);
        assert_eq!(r.changes.len(), 1);
        assert_eq!((r.changes[0].seq, r.changes[0].epoch), (3, 7));
        assert_eq!(r.changes[0].new, "c");
        assert_eq!(r.changes[0].old, "before");
        assert_eq!(r.not_taken_over, None);
    }

    #[test]
    fn a_rollback_applies_them_at_the_checkpoint_and_undoes_the_rescales() {
        let history = [
            line(Some(3), 7, "condition", "c"),
            line(Some(4), 8, RESCALE_PARAM, "4"),
            line(Some(5), 9, "condition", "d"),
        ];
        let r = changes_after(&history, &[covered(2, 4)], Epoch(5), Resumed::Rollback);
        let got: Vec<(u64, u64, &str)> = r
            .changes
            .iter()
            .map(|c| (c.seq, c.epoch, c.new.as_str()))
            .collect();
        assert_eq!(got, vec![(3, 5, "c"), (5, 5, "d")]);
        assert_eq!(r.undone.len(), 1);
        assert_eq!(r.undone[0].value, "4");
    }

    #[test]
    fn a_rescale_after_the_checkpoint_keeps_the_attempt_from_being_taken_over() {
        let history = [
            line(Some(1), 2, RESCALE_PARAM, "2"),
            line(Some(3), 7, RESCALE_PARAM, "4"),
        ];
        let r = changes_after(&history, &[covered(2, 4)], Epoch(5), Resumed::TakeOver);
        assert_eq!(r.not_taken_over.map(|l| l.value), Some("4".into()));
        assert!(r.changes.is_empty());
    }

    #[test]
    fn a_rescale_recorded_only_as_an_intent_keeps_the_attempt_from_being_taken_over_until_undone() {
        // Recorded before its barrier went out (no epoch): the coordinator died before
        // recording that the executors carried it out.
        let intent = ControlRecord {
            epoch: None,
            ..line(Some(3), 0, RESCALE_PARAM, "4")
        };
        let r = changes_after(
            std::slice::from_ref(&intent),
            &[covered(2, 4)],
            Epoch(5),
            Resumed::TakeOver,
        );
        assert_eq!(r.not_taken_over.map(|l| l.value), Some("4".into()));
        // Recorded as applied too: the applied record is the one told.
        let history = [intent.clone(), line(Some(3), 7, RESCALE_PARAM, "4")];
        let r = changes_after(&history, &[covered(2, 4)], Epoch(5), Resumed::Rollback);
        assert_eq!(r.undone.len(), 1);
        assert_eq!(r.undone[0].epoch, Some(Epoch(7)));
        // Undone by a rollback: counted no more.
        let undone = ControlRecord {
            origin: UNDONE_BY_ROLLBACK.into(),
            value: "before".into(),
            ..line(Some(3), 5, RESCALE_PARAM, "before")
        };
        let history = [intent, undone];
        let r = changes_after(&history, &[covered(2, 4)], Epoch(5), Resumed::TakeOver);
        assert_eq!(r.not_taken_over, None);
        assert!(r.changes.is_empty());
    }

    #[test]
    fn without_a_checkpoint_every_numbered_change_is_after_it() {
        let history = [line(Some(1), 1, "condition", "a")];
        let r = changes_after(&history, &[], Epoch(0), Resumed::Rollback);
        assert_eq!(r.changes.len(), 1);
        assert_eq!(r.changes[0].epoch, 0);
    }
}
