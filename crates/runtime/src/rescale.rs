//! Live rescaling of a keyed operator (the paper's pattern 4 applied while the query runs):
//! a change of its `parallelism` rides on a barrier, as a param change does. The producers
//! feeding it send the barrier to every instance and then route rows by the new number of
//! instances that own key groups; each instance, once the barrier has arrived on all its
//! inputs, hands the key groups it loses to the instances that gain them and takes those it
//! gains, before it reads anything after the barrier. The instances beyond the operator's
//! parallelism run idle (owning no key group) until a rescale hands them some: the query runs
//! `--max-parallelism` instances of it.
//!
//! Instances in the same process hand key groups over through in-process inboxes; an
//! instance in another process (a cluster's worker) over the data plane
//! ([`crate::net::handoff`]), into the same inbox.

use anduin_types::Barrier;

/// The param of a control update that rescales an operator.
pub(crate) const PARALLELISM: &str = "parallelism";

/// The number of instances `barrier` rescales `operator` to, if it does.
pub(crate) fn rescaled_to(barrier: &Barrier, operator: &str) -> Option<usize> {
    barrier
        .control
        .iter()
        .rev()
        .find(|u| u.operator == operator && u.param == PARALLELISM)
        .and_then(|u| u.value.trim().parse().ok())
}

use std::collections::BTreeMap;
use std::io::Write;
use std::num::NonZeroU16;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anduin_operator_api::{Combine, Operator, OperatorError, RestoreIn, SnapshotOut};
use anduin_state::{
    assign_ranges, cut_full, intersection, join_full, KeyGroupRange, DEFAULT_MAX_KEY_GROUPS,
};
use anduin_types::{Epoch, SnapshotKind};
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

/// Key groups one instance hands another at a rescale: a full snapshot of their entries.
pub(crate) struct Handoff {
    pub epoch: Epoch,
    /// The giving instance.
    pub from: usize,
    pub range: KeyGroupRange,
    pub bytes: Vec<u8>,
    /// What the giving instance keeps inline (its event time, for the taker's).
    pub inline: Option<serde_json::Value>,
}

/// Where an instance hands key groups to another instance of its operator.
pub(crate) enum Mate {
    /// One in this process: its inbox.
    Here(Sender<Handoff>),
    /// One in another process (a cluster's worker): over the network, into its inbox there.
    Elsewhere(crate::net::RemoteMate),
}

impl Mate {
    /// Hands `handoff` over; `Err` says why it could not be.
    fn hand(&self, handoff: Handoff) -> Result<(), String> {
        match self {
            Mate::Here(tx) => tx.send(handoff).map_err(|_| "it has stopped".to_string()),
            Mate::Elsewhere(remote) => remote
                .hand(handoff)
                .map_err(|e| format!("on worker {}: {e}", remote.worker())),
        }
    }
}

/// Makes a fresh instance of the operator (its factory, with the instance's context).
pub(crate) type Rebuild = Box<dyn Fn() -> Result<Box<dyn Operator>, OperatorError> + Send>;

/// What one instance of a rescalable operator needs to hand over and take key groups.
pub(crate) struct Rescaler {
    /// This instance, of `slots`.
    pub instance: usize,
    pub slots: usize,
    /// How many instances own key groups now (the first ones).
    pub active: usize,
    /// Where every instance takes handoffs, by instance.
    pub mates: Vec<Mate>,
    pub inbox: Receiver<Handoff>,
    /// How long to wait for a handoff from another process before the rescale fails (its
    /// process may be gone without this one hearing of it); `None`: until the run fails.
    pub patience: Option<Duration>,
    /// Handoffs of a later rescale that came before this one's were all in.
    pub early: Vec<Handoff>,
    pub rebuild: Rebuild,
    /// The param changes applied to the operator so far (the latest value of each): a rebuilt
    /// instance takes them again before its state.
    pub applied: BTreeMap<String, String>,
    /// The operator's state was rebuilt: its next checkpoint must be a full one (its changes
    /// are tracked from the rebuild, not from its last checkpoint).
    pub full_next: bool,
    /// Set when the run fails: stop waiting for handoffs.
    pub abort: Arc<AtomicBool>,
    /// Where instances beyond `slots` are added while the query runs (an embedded run's
    /// operator that can grow, `crate::grow`): a rescale beyond `slots` reaches them there.
    pub grows: Option<Arc<crate::grow::Growth>>,
}

/// The inboxes of the `slots` instances of one operator: `(every sender, receivers)`.
pub(crate) fn inboxes(slots: usize) -> (Vec<Sender<Handoff>>, Vec<Receiver<Handoff>>) {
    (0..slots).map(|_| crossbeam_channel::unbounded()).unzip()
}

/// The key groups instance `i` owns when the first `active` of the instances own them all.
pub(crate) fn owned(active: usize, i: usize) -> KeyGroupRange {
    u16::try_from(active)
        .ok()
        .and_then(NonZeroU16::new)
        .and_then(|p| assign_ranges(DEFAULT_MAX_KEY_GROUPS, p).ok())
        .and_then(|ranges| ranges.get(i).copied())
        .unwrap_or(KeyGroupRange::new(0, 0))
}

/// The old instances that hand instance `i` key groups when the owners go from `from` to
/// `to` instances, and the ranges (without `i` itself).
fn senders_to(i: usize, from: usize, to: usize, slots: usize) -> Vec<(usize, KeyGroupRange)> {
    (0..slots)
        .filter(|&k| k != i)
        .map(|k| (k, intersection(owned(from, k), owned(to, i))))
        .filter(|(_, r)| !r.is_empty())
        .collect()
}

/// Rescales `op`, instance `r.instance`, from `r.active` owners to `to` at the barrier of
/// `epoch` (after its snapshot, if it took one): it hands the key groups it loses to their new
/// owners, takes those it gains, and goes on as a fresh instance restored from what it keeps
/// and takes. An instance that neither loses nor gains key groups is left as it is.
pub(crate) fn rescale(
    name: &str,
    op: &mut Box<dyn Operator>,
    r: &mut Rescaler,
    epoch: Epoch,
    to: usize,
) -> Result<(), OperatorError> {
    let (i, from) = (r.instance, r.active);
    if to == from {
        return Ok(());
    }
    if to > r.slots && r.grows.is_some() {
        // Instances were added at this barrier (`crate::grow`): they take their share.
        r.slots = to;
    }
    if to == 0 || to > r.slots {
        return Err(OperatorError::internal(
            name,
            format!(
                "a rescale to {to} instances reached an operator running {}",
                r.slots
            ),
        ));
    }
    let gives: Vec<(usize, KeyGroupRange)> = (0..r.slots)
        .filter(|&j| j != i)
        .map(|j| (j, intersection(owned(from, i), owned(to, j))))
        .filter(|(_, range)| !range.is_empty())
        .collect();
    let takes = senders_to(i, from, to, r.slots);
    r.active = to;
    if gives.is_empty() && takes.is_empty() {
        return Ok(());
    }
    let began = std::time::Instant::now();
    let moved = if op.moves_key_groups() {
        move_directly(name, op, r, epoch, gives, takes)?
    } else {
        let kept = intersection(owned(from, i), owned(to, i));
        move_by_snapshot(name, op, r, epoch, kept, gives, takes)?
    };
    r.full_next = true;
    tracing::info!(
        operator = name,
        instance = i,
        from,
        to,
        epoch = epoch.0,
        directly = moved.directly,
        snapshot_bytes = moved.snapshot_bytes,
        given_bytes = moved.given_bytes,
        taken_bytes = moved.taken_bytes,
        given_ms = moved.given_at.as_millis(),
        taken_ms = moved.taken_at.as_millis(),
        took_ms = began.elapsed().as_millis(),
        "key groups moved"
    );
    Ok(())
}

/// What a move did, for its log line.
struct Moved {
    /// The operator moved its key groups itself (no snapshot, no rebuild).
    directly: bool,
    snapshot_bytes: usize,
    given_bytes: usize,
    taken_bytes: usize,
    /// When the handoffs were all out, and when the others' were all in.
    given_at: Duration,
    taken_at: Duration,
}

/// The move of an operator that gives and takes key groups itself: only their state is
/// touched, the rest stays in place.
fn move_directly(
    name: &str,
    op: &mut Box<dyn Operator>,
    r: &mut Rescaler,
    epoch: Epoch,
    gives: Vec<(usize, KeyGroupRange)>,
    takes: Vec<(usize, KeyGroupRange)>,
) -> Result<Moved, OperatorError> {
    let began = std::time::Instant::now();
    let ranges: Vec<KeyGroupRange> = gives.iter().map(|(_, range)| *range).collect();
    let given = if ranges.is_empty() {
        anduin_operator_api::KeyGroupsGiven::default()
    } else {
        op.give_key_groups(&ranges)?
    };
    if given.pieces.len() != ranges.len() {
        return Err(OperatorError::internal(
            name,
            format!(
                "it gave {} pieces of state for {} ranges of key groups",
                given.pieces.len(),
                ranges.len()
            ),
        ));
    }
    let given_bytes = given.pieces.iter().map(Vec::len).sum();
    hand_all(name, r, epoch, gives, given.pieces, &given.inline)?;
    let given_at = began.elapsed();
    let (inline, pieces) = receive_all(name, r, epoch, takes)?;
    let taken_bytes = pieces.iter().map(|(_, bytes)| bytes.len()).sum();
    let taken_at = began.elapsed();
    if !pieces.is_empty() {
        op.take_key_groups(pieces, inline)?;
    }
    Ok(Moved {
        directly: true,
        snapshot_bytes: 0,
        given_bytes,
        taken_bytes,
        given_at,
        taken_at,
    })
}

/// The move of any other keyed operator: a full snapshot of the instance, cut by key group;
/// the pieces it gives are handed over, and the instance is rebuilt from the piece it keeps
/// and those it takes.
fn move_by_snapshot(
    name: &str,
    op: &mut Box<dyn Operator>,
    r: &mut Rescaler,
    epoch: Epoch,
    kept: KeyGroupRange,
    gives: Vec<(usize, KeyGroupRange)>,
    takes: Vec<(usize, KeyGroupRange)>,
) -> Result<Moved, OperatorError> {
    let began = std::time::Instant::now();
    let mut mine = Memory::new(epoch);
    op.snapshot(&mut mine)?;
    // Its state cut record by record: a piece per instance it gives key groups to, and the
    // piece it keeps (`kept`, last).
    let ranges: Vec<KeyGroupRange> = gives
        .iter()
        .map(|(_, range)| *range)
        .chain([kept])
        .collect();
    let mut pieces = cut_full(name, &mine.bytes, &ranges)?;
    let kept_piece = pieces.pop().unwrap_or_default();
    let given_bytes = pieces.iter().map(Vec::len).sum();
    hand_all(name, r, epoch, gives, pieces, &mine.inline)?;
    let given_at = began.elapsed();
    let (taken_inline, taken) = receive_all(name, r, epoch, takes)?;
    let taken_bytes = taken.iter().map(|(_, bytes)| bytes.len()).sum();
    let taken_at = began.elapsed();
    let parts: Vec<Option<serde_json::Value>> = std::iter::once(mine.inline.clone())
        .chain(taken_inline)
        .collect();
    let inline = op.rescale_inline(&parts, Combine::Move).map_err(|e| {
        OperatorError::internal(name, format!("its instances cannot be combined: {e}"))
    })?;
    let mut owned_now = vec![(kept, kept_piece)];
    owned_now.extend(taken);
    let full = join_full(name, owned_now)?;
    rebuild(name, op, r, (epoch, inline, full))?;
    Ok(Moved {
        directly: false,
        snapshot_bytes: mine.bytes.len(),
        given_bytes,
        taken_bytes,
        given_at,
        taken_at,
    })
}

/// Replaces `op` by a fresh instance with the params applied so far, restored from `full`
/// (a full snapshot) and `inline`.
fn rebuild(
    name: &str,
    op: &mut Box<dyn Operator>,
    r: &Rescaler,
    (epoch, inline, full): (Epoch, Option<serde_json::Value>, Vec<u8>),
) -> Result<(), OperatorError> {
    // The old instance first: it may hold files (an LSM backend's) the new one opens.
    *op = Box::new(Rebuilding);
    let mut fresh = (r.rebuild)()?;
    let changes: Vec<(&str, &str)> = r
        .applied
        .iter()
        .map(|(p, v)| (p.as_str(), v.as_str()))
        .collect();
    if !changes.is_empty() {
        fresh.set_params(&changes).map_err(|e| {
            OperatorError::internal(
                name,
                format!("a rebuilt instance refused the params it had: {e}"),
            )
        })?;
    }
    fresh.restore(RestoreIn {
        epoch,
        inline,
        files: vec![Box::new(std::io::Cursor::new(full))],
    })?;
    *op = fresh;
    Ok(())
}

/// The first rescale of instance `r.instance`, added while the query runs (`crate::grow`) at
/// the barrier of `epoch` that rescales its operator to `to` instances: it owns nothing, and
/// takes its key groups from their owners. Its event-time progress and the rest of what an
/// instance keeps inline are theirs (a param changed while running, such as a window's
/// `allowed_lateness`, moved their lateness cutoff in a way a fresh instance cannot
/// recompute), its counters none of theirs: it is rebuilt as a resumed instance of their
/// combined metadata would be, then takes the key groups.
pub(crate) fn rescale_added(
    name: &str,
    op: &mut Box<dyn Operator>,
    r: &mut Rescaler,
    epoch: Epoch,
    to: usize,
) -> Result<(), OperatorError> {
    r.slots = r.slots.max(to);
    let takes = senders_to(r.instance, r.active, to, r.slots);
    r.active = to;
    if takes.is_empty() {
        return Ok(());
    }
    let began = std::time::Instant::now();
    let (inline, pieces) = receive_all(name, r, epoch, takes)?;
    let taken_bytes: usize = pieces.iter().map(|(_, bytes)| bytes.len()).sum();
    // Counters go whole to instance 0 of a resumed run: never this one (beyond the first).
    let combine = Combine::Resume {
        instance: r.instance.max(1),
    };
    let meta = op.rescale_inline(&inline, combine).map_err(|e| {
        OperatorError::internal(name, format!("its instances cannot be combined: {e}"))
    })?;
    let directly = op.moves_key_groups();
    if directly {
        // Empty, with their metadata; then their key groups, as a running instance takes them.
        let mut empty = Memory::new(epoch);
        op.snapshot(&mut empty)?;
        rebuild(name, op, r, (epoch, meta, empty.bytes))?;
        op.take_key_groups(pieces, inline)?;
    } else {
        let full = join_full(name, pieces)?;
        rebuild(name, op, r, (epoch, meta, full))?;
    }
    r.full_next = true;
    tracing::info!(
        operator = name,
        instance = r.instance,
        to,
        epoch = epoch.0,
        directly,
        taken_bytes,
        took_ms = began.elapsed().as_millis(),
        "key groups moved to an instance added while running"
    );
    Ok(())
}

/// Hands `pieces` (one per entry of `gives`, in order) to the instances of `gives`.
fn hand_all(
    name: &str,
    r: &Rescaler,
    epoch: Epoch,
    gives: Vec<(usize, KeyGroupRange)>,
    pieces: Vec<Vec<u8>>,
    inline: &Option<serde_json::Value>,
) -> Result<(), OperatorError> {
    for ((j, range), bytes) in gives.into_iter().zip(pieces) {
        let handoff = Handoff {
            epoch,
            from: r.instance,
            range,
            bytes,
            inline: inline.clone(),
        };
        // An instance added while the query runs is reached through the growth's inboxes.
        let added = match (r.mates.get(j), &r.grows) {
            (None, Some(g)) => Some(g.mate(name, r.instance, j)),
            _ => None,
        };
        let mate = r.mates.get(j).or(added.as_ref()).ok_or_else(|| {
            OperatorError::internal(
                name,
                format!("instance {j} is gone: it cannot take its key groups"),
            )
        })?;
        // Its instance stopped, or its process went away: a failure of the run (recovered as
        // any), not of anduin's logic.
        mate.hand(handoff).map_err(|why| OperatorError::Execution {
            operator: name.to_string(),
            message: format!(
                "cannot hand key groups {range} to instance {j} at the rescale of epoch {}: {why}",
                epoch.0
            ),
        })?;
    }
    Ok(())
}

/// The handoffs of `takes` (instance, the range it hands this one), waited for: the givers'
/// inline values and the pieces with their ranges, in the order of `takes`.
#[allow(clippy::type_complexity)]
fn receive_all(
    name: &str,
    r: &mut Rescaler,
    epoch: Epoch,
    takes: Vec<(usize, KeyGroupRange)>,
) -> Result<
    (
        Vec<Option<serde_json::Value>>,
        Vec<(KeyGroupRange, Vec<u8>)>,
    ),
    OperatorError,
> {
    let mut inline = Vec::with_capacity(takes.len());
    let mut pieces = Vec::with_capacity(takes.len());
    for (k, range) in takes {
        let handoff = receive(name, r, epoch, k)?;
        if handoff.range != range {
            return Err(OperatorError::internal(
                name,
                format!(
                    "instance {k} handed over {} instead of {range}",
                    handoff.range
                ),
            ));
        }
        inline.push(handoff.inline);
        pieces.push((range, handoff.bytes));
    }
    Ok((inline, pieces))
}

/// The handoff of rescale `epoch` from instance `from`, waiting for it (handoffs of a later
/// rescale that arrive meanwhile are kept for it).
fn receive(
    name: &str,
    r: &mut Rescaler,
    epoch: Epoch,
    from: usize,
) -> Result<Handoff, OperatorError> {
    if let Some(at) = r
        .early
        .iter()
        .position(|h| h.epoch == epoch && h.from == from)
    {
        return Ok(r.early.swap_remove(at));
    }
    let deadline = r.patience.map(|p| std::time::Instant::now() + p);
    loop {
        match r.inbox.recv_timeout(Duration::from_millis(100)) {
            Ok(h) if h.epoch == epoch && h.from == from => return Ok(h),
            Ok(h) => r.early.push(h),
            Err(RecvTimeoutError::Timeout)
                if !r.abort.load(Ordering::Relaxed)
                    && deadline.is_none_or(|d| std::time::Instant::now() < d) => {}
            Err(RecvTimeoutError::Timeout) if !r.abort.load(Ordering::Relaxed) => {
                return Err(OperatorError::internal(
                    name,
                    format!(
                        "instance {from} did not hand over its key groups of the rescale of epoch \
                         {} within {:?}: its process may be gone (the run fails, and recovers \
                         from its last checkpoint)",
                        epoch.0,
                        r.patience.unwrap_or_default()
                    ),
                ))
            }
            Err(_) => {
                return Err(OperatorError::internal(
                    name,
                    format!(
                        "instance {from} never handed over its key groups (the run is failing)"
                    ),
                ))
            }
        }
    }
}

/// A snapshot kept in memory: the operator's full state at a rescale.
struct Memory {
    epoch: Epoch,
    inline: Option<serde_json::Value>,
    bytes: Vec<u8>,
}

impl Memory {
    fn new(epoch: Epoch) -> Self {
        Self {
            epoch,
            inline: None,
            bytes: Vec::new(),
        }
    }
}

impl SnapshotOut for Memory {
    fn epoch(&self) -> Epoch {
        self.epoch
    }

    fn full_due(&self) -> bool {
        true
    }

    fn inline(&mut self, value: serde_json::Value) {
        self.inline = Some(value);
    }

    fn stream(&mut self, _kind: SnapshotKind) -> Result<&mut dyn Write, OperatorError> {
        Ok(&mut self.bytes)
    }
}

/// Stands in for an operator while its replacement is built.
struct Rebuilding;

impl Operator for Rebuilding {
    fn name(&self) -> &str {
        "(being rebuilt)"
    }

    fn process_batch(
        &mut self,
        _input: usize,
        _batch: arrow::record_batch::RecordBatch,
        _out: &mut dyn anduin_operator_api::Collector,
    ) -> Result<(), OperatorError> {
        Err(OperatorError::internal(
            "(being rebuilt)",
            "an operator being rebuilt was given rows",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The instance owning `kg` when `active` instances own them all.
    fn owner(active: usize, kg: u16, slots: usize) -> usize {
        (0..slots)
            .find(|&i| owned(active, i).contains(anduin_state::KeyGroup(kg)))
            .expect("every key group has an owner")
    }

    #[test]
    fn every_key_group_is_handed_from_its_old_owner_to_its_new_one_and_no_other() {
        let slots = 6;
        for from in 1..=slots {
            for to in 1..=slots {
                for kg in 0..DEFAULT_MAX_KEY_GROUPS.get() {
                    let (old, new) = (owner(from, kg, slots), owner(to, kg, slots));
                    let in_kg = |r: &KeyGroupRange| r.contains(anduin_state::KeyGroup(kg));
                    for i in 0..slots {
                        let takes = senders_to(i, from, to, slots);
                        let taken: Vec<usize> = takes
                            .iter()
                            .filter(|(_, r)| in_kg(r))
                            .map(|(k, _)| *k)
                            .collect();
                        let expected = if i == new && old != new {
                            vec![old]
                        } else {
                            vec![]
                        };
                        assert_eq!(
                            taken, expected,
                            "{from} -> {to}: key group {kg}, instance {i}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn idle_instances_own_nothing_and_the_owners_own_everything() {
        for active in 1..=8 {
            let total: u16 = (0..8).map(|i| owned(active, i).len()).sum();
            assert_eq!(total, DEFAULT_MAX_KEY_GROUPS.get(), "{active} owners");
            assert!((active..8).all(|i| owned(active, i).is_empty()));
        }
    }

    #[test]
    fn a_barrier_rescales_only_the_operator_it_names() {
        let update = |operator: &str, param: &str, value: &str| anduin_types::ControlUpdate {
            seq: 1,
            operator: operator.into(),
            param: param.into(),
            value: value.into(),
            onto: Vec::new(),
        };
        let mut b = Barrier::checkpoint(Epoch(3), false);
        b.control = vec![update("w", PARALLELISM, "4"), update("j", "lower", "-1s")];
        assert_eq!(rescaled_to(&b, "w"), Some(4));
        assert_eq!(rescaled_to(&b, "j"), None);
        assert_eq!(rescaled_to(&b, "x"), None);
    }
}
