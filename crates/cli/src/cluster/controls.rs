//! The param changes of a cluster's queries: each is recorded in the coordinator's catalog as
//! soon as every instance has switched to it, before `anduin ctl set` is answered
//! ([`recorder`]); a resumed attempt is given again those its checkpoint does not cover
//! ([`after_checkpoint`], deciding through [`anduin_coordinator::controls`]):
//!
//! - a coordinator that takes the running attempt over gives them to its control plane (its
//!   history, `ctl history`, and the manifests of its checkpoints, from which later restores
//!   start), at the epochs they applied at;
//! - a new attempt (the whole query rolled back) restores them with its checkpoint: every
//!   executor applies them after the restored state, as the changes its manifest recorded at
//!   its own epoch. With no checkpoint to restore, they are sent again through the control
//!   plane and ride on the attempt's first barrier ([`send_again`]).
//!
//! A rescale after the checkpoint is never given again: a rollback undoes it, and a running
//! attempt that carried one out is not taken over (the query rolls back instead).

use std::collections::BTreeMap;
use std::sync::{Arc, Weak};

use anduin_checkpoint::{ChangeRecord, Validated};
use anduin_coordinator::catalog::{ControlRecord, Edit};
use anduin_coordinator::controls::{
    changes_after, Reapply, Resumed, RESCALE_PARAM, UNDONE_BY_ROLLBACK,
};
use anduin_coordinator::QueryId;
use anduin_runtime::control::{ChangeRequest, Control, ControlFailure, Recorder};
use anduin_types::Epoch;

use super::coordinator::{Cluster, ExitPoint};

/// Who a change sent again is from, in the history.
const AGAIN_FROM: &str = "coordinator: sent again after a rollback";

/// Who a rescale given again to an attempt that rolled back is from, in the history.
const GROWN_AGAIN_FROM: &str = "coordinator: grown again after a rollback";

/// Records each change of query `query` that every instance has switched to in the catalog
/// of `cluster` (an edit fsynced before the control plane answers).
pub(super) fn recorder(cluster: &Arc<Cluster>, query: &str) -> Arc<Recorder> {
    let (cluster, query): (Weak<Cluster>, String) = (Arc::downgrade(cluster), query.to_string());
    Arc::new(move |r: &ChangeRecord| {
        let Some(cluster) = cluster.upgrade() else {
            return;
        };
        cluster.exit_point(ExitPoint::ChangeSettled);
        cluster
            .lock()
            .record(parameter_set(&query, r, Some(Epoch(r.epoch))));
        tracing::info!(
            query = %query,
            seq = r.seq,
            epoch = r.epoch,
            operator = %r.operator,
            param = %r.param,
            "param change recorded in the catalog"
        );
        cluster.exit_point(ExitPoint::ParameterRecorded);
    })
}

/// Records each rescale and live split of query `query` in the catalog of `cluster` before
/// its barrier is sent, with no epoch yet (an intent): a coordinator that takes the query
/// over finds it after the last checkpoint whether or not the one before lived to record
/// that the executors carried it out, and rolls the query back rather than take over
/// instances whose key groups may have moved.
pub(super) fn intent_recorder(cluster: &Arc<Cluster>, query: &str) -> Arc<Recorder> {
    let (cluster, query): (Weak<Cluster>, String) = (Arc::downgrade(cluster), query.to_string());
    Arc::new(move |r: &ChangeRecord| {
        let Some(cluster) = cluster.upgrade() else {
            return;
        };
        cluster.lock().record(parameter_set(&query, r, None));
        tracing::info!(
            query = %query,
            seq = r.seq,
            operator = %r.operator,
            param = %r.param,
            "structural change recorded in the catalog before its barrier"
        );
    })
}

/// The catalog's edit recording change `r` of query `query`, applied at the barrier of `epoch`
/// (`None`: its barrier is still to be sent).
fn parameter_set(query: &str, r: &ChangeRecord, epoch: Option<Epoch>) -> Edit {
    Edit::ParameterSet {
        query: QueryId(query.to_string()),
        operator: r.operator.clone(),
        param: r.param.clone(),
        value: r.new.clone(),
        origin: r.from.clone(),
        epoch,
        at_ms: u64::try_from(r.time_ms).unwrap_or(0),
        seq: Some(r.seq),
        old: Some(r.old.clone()),
    }
}

/// The changes the catalog recorded for query `name` after `restore` (none: the beginning),
/// and what becomes of them when the attempt resumes as `how` says. Says which rescales a
/// rollback undoes.
pub(super) fn after_checkpoint(
    cluster: &Cluster,
    name: &str,
    restore: Option<&Validated>,
    how: Resumed,
) -> Reapply {
    let history: Vec<ControlRecord> = cluster
        .lock()
        .catalog
        .state()
        .queries
        .get(&QueryId(name.to_string()))
        .map(|q| q.control_history.clone())
        .unwrap_or_default();
    let (covered, epoch) = restore.map_or((&[][..], Epoch(0)), |v| {
        (&v.manifest.controls[..], Epoch(v.manifest.epoch))
    });
    let reapply = changes_after(&history, covered, epoch, how);
    for r in &reapply.undone {
        // Recorded as undone, so that a later coordinator does not count it again.
        cluster.lock().record(Edit::ParameterSet {
            query: QueryId(name.to_string()),
            operator: r.operator.clone(),
            param: r.param.clone(),
            value: r.old.clone().unwrap_or_default(),
            origin: UNDONE_BY_ROLLBACK.to_string(),
            epoch: Some(epoch),
            at_ms: r.at_ms,
            seq: r.change_seq,
            old: Some(r.value.clone()),
        });
        eprintln!(
            "anduin: query {name}: the rollback to {} undoes the change of {}.{} to {:?} ({}): a rescale no checkpoint covers is not carried over; scale again if it is still wanted",
            restore.map_or_else(|| "the beginning".to_string(), |v| format!("checkpoint {}", v.manifest.epoch)),
            r.operator,
            r.param,
            r.value,
            applied_at(r),
        );
    }
    if !reapply.changes.is_empty() {
        tracing::info!(
            query = name,
            changes = reapply.changes.len(),
            ?how,
            "gives the attempt again the param changes its checkpoint does not cover"
        );
    }
    reapply
}

/// Why a running attempt is not taken over: the rescale `r` moved key groups after its last
/// checkpoint.
pub(super) fn not_taken_over(r: &ControlRecord, restore: Option<&Validated>) -> String {
    format!(
        "operator \"{}\" was rescaled to {} instances {} (change #{}), after its last checkpoint ({}): a restarted coordinator does not take over instances whose key groups moved since then, so the query rolls back as a whole, undoing the rescale",
        r.operator,
        r.value,
        applied_at(r),
        r.change_seq.unwrap_or(0),
        restore.map_or_else(|| "none".to_string(), |v| v.manifest.epoch.to_string()),
    )
}

/// Why a running attempt is not taken over: its last checkpoint records a rescale of an
/// operator, or instances of it, beyond those the query's plan starts (`anduin ctl scale`
/// beyond `--max-parallelism` added them while it ran; the rescale's own checkpoint records
/// the rescale, not yet its instances): the coordinator taking over plans without them, and
/// would complete checkpoints that lack their state. `None`: none was added.
pub(super) fn grown_not_taken_over(
    compiled: &super::driver::Compiled,
    restore: Option<&Validated>,
) -> Option<String> {
    let v = restore?;
    let topology = compiled.topology();
    let graph = &compiled.loaded.graph;
    let planned = |operator: &str| {
        topology
            .tasks
            .iter()
            .find(|t| {
                t.operators
                    .iter()
                    .any(|n| graph.node(*n).name() == operator)
            })
            .map(|t| t.instances.len())
    };
    // The instances of each operator the checkpoint records, and a rescale at its own
    // barrier (whose instances start at that barrier, after the state was taken). An older
    // rescale beyond the planned instances whose instances the checkpoint does not record
    // was undone by a rollback whose growth again failed: the attempt runs the planned ones.
    let mut most: BTreeMap<&str, usize> = BTreeMap::new();
    for o in &v.manifest.plan.operators {
        most.insert(&o.name, o.instance_count());
    }
    let mut rescales: Vec<&ChangeRecord> = v
        .manifest
        .controls
        .iter()
        .filter(|c| c.param == RESCALE_PARAM && c.epoch >= v.manifest.epoch)
        .collect();
    rescales.sort_by_key(|c| c.seq);
    for c in rescales {
        if let Ok(n) = c.new.trim().parse::<usize>() {
            let m = most.entry(&c.operator).or_default();
            *m = (*m).max(n);
        }
    }
    most.into_iter().find_map(|(operator, n)| {
        let planned = planned(operator)?;
        (n > planned).then(|| {
            format!(
                "operator \"{operator}\" was rescaled to {n} instances while it ran (checkpoint {} records it), beyond the {planned} it started with: a restarted coordinator does not take over instances the plan does not start, so the query rolls back as a whole to {planned} instances (its state re-cut to them), and grows again once it runs if the last rescale it records is beyond them",
                v.manifest.epoch,
            )
        })
    })
}

/// The operators whose last rescale `restored` (the changes of the checkpoint an attempt
/// restores) records gave them more instances than the attempt starts (`anduin ctl scale`
/// beyond `--max-parallelism`), and how many: the attempt starts them at their planned
/// instances, their state re-cut, and is grown again to as many as soon as it runs
/// ([`grow_again`]).
fn grown_before(
    restored: &[ChangeRecord],
    planned: impl Fn(&str) -> Option<usize>,
) -> Vec<(String, usize)> {
    let mut last: BTreeMap<&str, (u64, usize)> = BTreeMap::new();
    for c in restored.iter().filter(|c| c.param == RESCALE_PARAM) {
        let Ok(n) = c.new.trim().parse::<usize>() else {
            continue;
        };
        let entry = last.entry(&c.operator).or_insert((c.seq, n));
        if c.seq >= entry.0 {
            *entry = (c.seq, n);
        }
    }
    last.into_iter()
        .filter_map(|(operator, (_, n))| {
            let planned = planned(operator)?;
            (n > planned).then(|| (operator.to_string(), n))
        })
        .collect()
}

/// Grows again, once the attempt of `control` runs, each operator whose last rescale
/// `restored` records was beyond the instances the attempt starts: a rollback keeps the
/// rescales its checkpoint recorded (as it does within `--max-parallelism`), through the
/// live growth those instances came from — on the workers that run the operator, within
/// their free slots. One that cannot grow (too few slots left after a worker's loss) runs at
/// its planned instances, and the coordinator says why.
pub(super) fn grow_again(name: &str, control: &Arc<Control>, restored: &[ChangeRecord]) {
    let restored: Vec<ChangeRecord> = restored
        .iter()
        .filter(|c| c.param == RESCALE_PARAM)
        .cloned()
        .collect();
    if restored.is_empty() {
        return;
    }
    let (name, weak) = (name.to_string(), Arc::downgrade(control));
    control.when_running(move || {
        let Some(control) = weak.upgrade() else {
            return;
        };
        let operators = control.info().operators;
        let wanted = grown_before(&restored, |op| {
            operators
                .iter()
                .find(|o| o.name == op)
                .and_then(|o| o.max_parallelism)
        });
        if wanted.is_empty() {
            return;
        }
        let spawned = std::thread::Builder::new()
            .name("anduin-grow-again".into())
            .spawn({
                let name = name.clone();
                move || {
                    for (operator, n) in wanted {
                        let request = ChangeRequest {
                            operator: operator.clone(),
                            param: RESCALE_PARAM.to_string(),
                            value: n.to_string(),
                            from: GROWN_AGAIN_FROM.to_string(),
                        };
                        match control.set(request.clone()) {
                            Ok(r) => eprintln!(
                                "anduin: query {name}: operator \"{operator}\" grown again to {n} instances after the rollback (or resume) to a checkpoint that recorded that rescale, at epoch {}",
                                r.epoch
                            ),
                            Err(e) => {
                                let now = control
                                    .params(&operator)
                                    .ok()
                                    .and_then(|ps| {
                                        ps.into_iter()
                                            .find(|p| p.name == RESCALE_PARAM)
                                            .map(|p| p.value)
                                    })
                                    .unwrap_or_else(|| "?".to_string());
                                let (line, refused) = regrowth_failed(&operator, n, &e, &now);
                                eprintln!("anduin: query {name}: {line}");
                                if let Some(why) = refused {
                                    control.publish_refusal(&request, &why);
                                }
                            }
                        }
                    }
                }
            });
        if let Err(e) = spawned {
            eprintln!("anduin: query {name}: cannot grow its operators again after the rollback: {e}; scale them again with `anduin ctl scale`");
        }
    });
}

/// What the coordinator says when growing `operator` again to `n` instances failed with `e`
/// (`now`: the instances that own its key groups): its log line, and why it was refused when
/// it was (not when a failure cut it short: the attempt that recovers the query from that
/// grows it again, or says why not).
fn regrowth_failed(
    operator: &str,
    n: usize,
    e: &ControlFailure,
    now: &str,
) -> (String, Option<String>) {
    if matches!(e, ControlFailure::NotRunning { state, .. } if state == "recovering") {
        return (
            format!("growing operator \"{operator}\" again to {n} instances was cut short ({e}); the attempt that recovers the query grows it again"),
            None,
        );
    }
    // Room can come (a worker back, more slots); other reasons hold for the whole attempt.
    let hint = if e.to_string().contains("free slots") {
        "`anduin ctl scale` once the workers that run it have room"
    } else {
        "it cannot grow in this attempt"
    };
    let why = format!("{e}; {now} instance(s) own its key groups ({hint})");
    (
        format!("operator \"{operator}\" could not be grown again to the {n} instances its checkpoint recorded: {why}"),
        Some(why),
    )
}

/// Where change `r` applied: its barrier's epoch, or, recorded only before its barrier went
/// out, that.
fn applied_at(r: &ControlRecord) -> String {
    match r.epoch {
        Some(e) => format!("at epoch {}", e.0),
        None => "at a barrier whose epoch was not recorded (the change was recorded as it went out, and cut short or lost with the coordinator before it was applied)".to_string(),
    }
}

/// Sends `changes` again through `control` (an attempt that starts from the beginning after
/// a rollback): the latest value of each param, in the order they were made, from a thread
/// of its own (each waits until every instance has switched). They ride on the attempt's
/// first barrier: the rows before it are processed under the query's own values.
pub(super) fn send_again(name: &str, control: Arc<Control>, changes: Vec<ChangeRecord>) {
    let mut latest: Vec<ChangeRecord> = Vec::new();
    for c in changes.into_iter().rev() {
        if !latest
            .iter()
            .any(|l| l.operator == c.operator && l.param == c.param)
        {
            latest.push(c);
        }
    }
    latest.reverse();
    let query = name.to_string();
    let spawned = std::thread::Builder::new()
        .name("anduin-controls-again".into())
        .spawn(move || {
            let name = query;
            for c in latest {
                let now = control.params(&c.operator).ok().and_then(|ps| {
                    ps.into_iter()
                        .find(|p| p.name == c.param)
                        .map(|p| p.value)
                });
                if now.as_deref() == Some(c.new.as_str()) {
                    // Changed back to the query's own value: nothing to send.
                    continue;
                }
                let request = ChangeRequest {
                    operator: c.operator.clone(),
                    param: c.param.clone(),
                    value: c.new.clone(),
                    from: AGAIN_FROM.to_string(),
                };
                match control.set(request) {
                    Ok(r) => eprintln!(
                        "anduin: query {name}: change #{} ({}.{} = {:?}) made before the rollback applied again at epoch {}",
                        c.seq, c.operator, c.param, c.new, r.epoch
                    ),
                    Err(e) => eprintln!(
                        "anduin: query {name}: change #{} ({}.{} = {:?}) made before the rollback could not be applied again: {e}; set it again with `anduin ctl set`",
                        c.seq, c.operator, c.param, c.new
                    ),
                }
            }
        });
    if let Err(e) = spawned {
        eprintln!("anduin: query {name}: cannot send again the changes made before the rollback: {e}; set them again with `anduin ctl set`");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rescale(seq: u64, operator: &str, to: &str) -> ChangeRecord {
        ChangeRecord {
            seq,
            time_ms: 0,
            epoch: seq,
            operator: operator.into(),
            param: RESCALE_PARAM.into(),
            old: String::new(),
            new: to.into(),
            from: "ctl".into(),
        }
    }

    #[test]
    fn a_regrowth_cut_short_by_a_recovery_is_not_a_refusal_and_a_refusal_says_what_runs() {
        let recovering = ControlFailure::NotRunning {
            query: "q".into(),
            state: "recovering".into(),
            what: "worker w1 died; the query is being recovered".into(),
        };
        let (line, refused) = regrowth_failed("w", 4, &recovering, "2");
        assert!(
            line.contains("was cut short") && line.contains("grows it again"),
            "{line}"
        );
        assert!(!line.contains("room"), "{line}");
        assert_eq!(refused, None);
        let full = ControlFailure::Invalid {
            operator: "w".into(),
            param: RESCALE_PARAM.into(),
            message: "… go one by one … within their free slots (w0 0): scale to at most 2".into(),
        };
        let (line, refused) = regrowth_failed("w", 4, &full, "2");
        assert!(
            line.contains("could not be grown again to the 4 instances"),
            "{line}"
        );
        let why = refused.expect("a refusal");
        assert!(
            why.contains("free slots (w0 0)") && why.contains("2 instance(s) own"),
            "{why}"
        );
        assert!(
            why.contains("once the workers that run it have room"),
            "{why}"
        );
        // A reason that holds for the attempt gives no hope of room.
        let split = ControlFailure::Invalid {
            operator: "w".into(),
            param: RESCALE_PARAM.into(),
            message: "it cannot get more instances while it runs: a task was split".into(),
        };
        let (_, refused) = regrowth_failed("w", 4, &split, "2");
        let why = refused.expect("a refusal");
        assert!(
            why.contains("it cannot grow in this attempt") && !why.contains("room"),
            "{why}"
        );
    }

    #[test]
    fn only_an_operators_last_rescale_beyond_its_planned_instances_is_grown_again() {
        let mut rate = rescale(4, "gen", "9");
        rate.param = "rate".into();
        let restored = vec![
            rescale(1, "w", "6"),
            rescale(2, "j", "8"),
            rescale(3, "j", "2"),
            rate,
            rescale(5, "p", "3"),
            rescale(6, "x", "5"),
        ];
        let planned = |op: &str| match op {
            "w" | "j" | "p" => Some(2),
            _ => None,
        };
        assert_eq!(
            grown_before(&restored, planned),
            vec![("p".to_string(), 3), ("w".to_string(), 6)],
            "j came back within its instances; x is no rescalable operator of this run"
        );
    }
}
