//! A chain of fused operators: batches pass from one to the next by function call, and leave
//! the chain through outlets to other tasks.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anduin_operator_api::{Collector, Operator, OperatorError, RowOrigins};
use anduin_types::{Barrier, BarrierKind, Epoch, Message, Watermark};
use arrow::record_batch::RecordBatch;

use crate::channel::{Route, SendError};
use crate::control::Control;
use crate::snapshot::{take, OpSnapshot, Slot, Taken};
use crate::source_task::refused_after_validation;
use crate::stats::{Counters, LIVE_EVERY};

/// One operator of a chain with where its outputs go outside the chain.
pub(crate) struct Link {
    /// The operator's index in the query (names its snapshot files).
    pub index: usize,
    /// Which instance of the operator this is, and of how many.
    pub instance: usize,
    pub parallelism: usize,
    pub name: String,
    pub op: Box<dyn Operator>,
    /// `outlets[port]`: channels to other tasks for output `port`.
    pub outlets: Vec<Vec<Route>>,
    pub counters: Arc<Counters>,
    /// Whether a link after this one uses the origins of rows (set by [`Chain::new`]).
    pub origins_after: bool,
    /// When its live figures were last asked for.
    pub live_at: Option<Instant>,
    /// How it hands over and takes key groups at a live rescale (the head of a task whose
    /// operator can be rescaled while it runs).
    pub rescaler: Option<crate::rescale::Rescaler>,
    /// How it takes and hands on partial matches at checkpoint barriers (a copy of a pattern
    /// that spreads them, `overflow_instances`).
    pub spreader: Option<crate::spread::Spreader>,
    /// The params changed so far (restored from a checkpoint, or changed while running), the
    /// latest value of each: an instance added while the query runs takes them.
    pub params: std::collections::BTreeMap<String, String>,
}

#[cfg(test)]
impl Link {
    /// Instance 0 of 1 of `op`, operator `index` of the query, with `outlets` (for tests).
    pub(crate) fn for_test(index: usize, op: Box<dyn Operator>, outlets: Vec<Vec<Route>>) -> Link {
        Link {
            index,
            instance: 0,
            parallelism: 1,
            name: op.name().to_string(),
            op,
            outlets,
            counters: Arc::new(Counters::default()),
            origins_after: false,
            live_at: None,
            rescaler: None,
            spreader: None,
            params: Default::default(),
        }
    }
}

/// What instances added while the query runs copy from a chain (`crate::grow`).
#[derive(Debug, PartialEq)]
pub(crate) struct Template {
    pub links: Vec<LinkTemplate>,
    /// How many instances own key groups before the barrier (the head's rescaler's count).
    pub owners: usize,
}

/// One link of a [`Template`].
#[derive(Debug, PartialEq)]
pub(crate) struct LinkTemplate {
    /// Its params as they are after the barrier.
    pub params: std::collections::BTreeMap<String, String>,
    /// Per output port, the shape of each route.
    pub routes: Vec<Vec<crate::channel::RouteShape>>,
}

/// Operators fused into one task. Output port 0 of each operator but the last feeds input 0
/// of the next one.
pub(crate) struct Chain {
    links: Vec<Link>,
    /// The control plane, told of the changes applied and of the end of the input.
    control: Option<Arc<Control>>,
    /// Asked before the end of the input is handled (it commits what sinks hold), with the
    /// name of the chain's task instance.
    end_gate: Option<(Arc<dyn crate::config::EndGate>, String)>,
    /// Test-only fault injection: the head fails once it has been given more than this many
    /// rows (see [`crate::RunConfig::fail_after`]).
    fail_after: Option<u64>,
    /// A producer of the head's input gave up the end of its input after a stop
    /// ([`Message::GaveUp`]): no operator of this chain handles the end of its input.
    upstream_gave_up: bool,
    /// The instance retired at a scale-down ([`Chain::retire`]).
    retired: bool,
}

impl Chain {
    pub(crate) fn new(mut links: Vec<Link>, control: Option<Arc<Control>>) -> Self {
        mark_origins(&mut links);
        for link in &mut links {
            for routes in &mut link.outlets {
                for r in routes.iter_mut() {
                    r.charge_to(&link.counters);
                }
            }
        }
        Self {
            links,
            control,
            end_gate: None,
            fail_after: None,
            upstream_gave_up: false,
            retired: false,
        }
    }

    /// Makes the head fail once it has been given more than `rows` rows, if its operator is
    /// the one `fail_after` names (test-only fault injection).
    pub(crate) fn with_injected_failure(mut self, fail_after: &[(String, u64)]) -> Self {
        if let Some(head) = self.links.first() {
            self.fail_after = fail_after
                .iter()
                .find(|(name, _)| *name == head.name)
                .map(|(_, rows)| *rows);
        }
        self
    }

    /// The chain's instance retires at the scale-down whose barrier has just left it (see
    /// `crate::grow`): its input ends next, and the control plane is not told that it did —
    /// the instance is no longer among the operators' (a later rescale may add a new one with
    /// its number).
    pub(crate) fn retire(&mut self) {
        self.control = None;
        self.retired = true;
    }

    /// Asks `gate` before the end of the input is handled; `task` names the task instance.
    pub(crate) fn with_end_gate(
        mut self,
        gate: Option<Arc<dyn crate::config::EndGate>>,
        task: String,
    ) -> Self {
        self.end_gate = gate.map(|g| (g, task));
        self
    }

    /// The names of its operators, upstream first.
    pub(crate) fn names(&self) -> Vec<&str> {
        self.links.iter().map(|l| l.name.as_str()).collect()
    }

    /// The `pipeline` changes `barrier` carries for this chain's operators, each with the
    /// instance it reaches: [`crate::pipelining::split`] reports them applied once it has
    /// carried them out.
    pub(crate) fn pipeline_changes(&self, barrier: &Barrier) -> Vec<(u64, usize)> {
        barrier
            .control
            .iter()
            .filter(|u| u.param == crate::pipelining::PIPELINE)
            .filter_map(|u| {
                let link = self.links.iter().find(|l| l.name == u.operator)?;
                Some((u.seq, link.instance))
            })
            .collect()
    }

    /// The control plane the chain tells of the changes applied, if any.
    pub(crate) fn control_plane(&self) -> Option<&Arc<Control>> {
        self.control.as_ref()
    }

    /// What an instance added at `barrier` copies from this chain: each link's params once
    /// the barrier's changes apply, its routes' shapes, and how many instances own key groups
    /// before the barrier.
    pub(crate) fn growth_template(&self, barrier: &Barrier) -> Result<Template, OperatorError> {
        let head = self
            .links
            .first()
            .ok_or_else(|| OperatorError::internal("?", "a task without operators grew"))?;
        let owners = head.rescaler.as_ref().map(|r| r.active).ok_or_else(|| {
            OperatorError::internal(&head.name, "a task whose head is not rescaled grew")
        })?;
        let links = self
            .links
            .iter()
            .map(|l| {
                let mut params = l.params.clone();
                for u in barrier.control.iter().filter(|u| {
                    u.operator == l.name
                        && u.param != crate::rescale::PARALLELISM
                        && u.param != crate::pipelining::PIPELINE
                }) {
                    params.insert(u.param.clone(), u.value.clone());
                }
                LinkTemplate {
                    params,
                    routes: l
                        .outlets
                        .iter()
                        .map(|port| port.iter().map(Route::shape).collect())
                        .collect(),
                }
            })
            .collect();
        Ok(Template { links, owners })
    }

    /// An instance added while the query runs takes its key groups (the rescale of `epoch` to
    /// `to` instances), before it reads anything.
    pub(crate) fn rescale_head(&mut self, epoch: Epoch, to: usize) -> Result<(), OperatorError> {
        let Some(link) = self.links.first_mut() else {
            return Ok(());
        };
        let Some(r) = link.rescaler.as_mut() else {
            return Err(OperatorError::internal(
                &link.name,
                "an instance added while running has no rescaler",
            ));
        };
        crate::rescale::rescale_added(&link.name, &mut link.op, r, epoch, to)
    }

    /// The index in the query of the operator of link `at`.
    pub(crate) fn link_index(&self, at: usize) -> Option<usize> {
        self.links.get(at).map(|l| l.index)
    }

    /// The operators from link `at` on leave this chain as a chain of their own (a split
    /// while the query runs: `crate::pipelining`), with their state, outlets and counters;
    /// `task` names the instance that will run them (its end gate asks under that name).
    /// The link before the cut then ends this chain: it feeds the new one through the route
    /// given to [`Chain::feed`].
    pub(crate) fn split_off(&mut self, at: usize, task: String) -> Chain {
        let tail = self.links.split_off(at.min(self.links.len()));
        mark_origins(&mut self.links);
        let end_gate = self.end_gate.as_ref().map(|(g, _)| Arc::clone(g));
        Chain::new(tail, self.control.clone()).with_end_gate(end_gate, task)
    }

    /// Output 0 of the chain's last operator also goes along `route` (to the operators a
    /// split took from after it), the time it waits on it counted as that operator's.
    /// Returns the route back when the chain has no operator.
    pub(crate) fn feed(&mut self, mut route: Route) -> Result<(), Route> {
        let Some(last) = self.links.last_mut() else {
            return Err(route);
        };
        route.charge_to(&last.counters);
        match last.outlets.first_mut() {
            Some(port) => port.push(route),
            None => last.outlets.push(vec![route]),
        }
        Ok(())
    }

    /// Processes a batch that arrived on input `input` of the chain's head.
    pub(crate) fn push(&mut self, input: usize, batch: RecordBatch) -> Result<(), OperatorError> {
        if let Some(left) = self.fail_after.as_mut() {
            let n = batch.num_rows() as u64;
            if n > *left {
                let name = self.links.first().map_or("chain", |l| l.name.as_str());
                return Err(OperatorError::Execution {
                    operator: name.to_string(),
                    message: "failed on purpose (test-only fault injection)".into(),
                });
            }
            *left -= n;
        }
        push_at(&mut self.links, input, batch, None).map(|_| ())
    }

    /// The counters of the chain's head, if it has operators.
    pub(crate) fn head_counters(&self) -> Option<&Counters> {
        self.links.first().map(|l| l.counters.as_ref())
    }

    /// Whether an operator of the chain names the input lines of rows it rejects: the source
    /// before it then records them.
    pub(crate) fn wants_origins(&self) -> bool {
        self.links.iter().any(|l| l.op.wants_origins())
    }

    /// Whether an operator of the chain commits only with checkpoints (see
    /// [`anduin_operator_api::Operator::commits_only_with_checkpoints`]): the task then waits
    /// for the last checkpoint's commit before ending the chain.
    pub(crate) fn commits_only_with_checkpoints(&self) -> bool {
        self.links
            .iter()
            .any(|l| l.op.commits_only_with_checkpoints())
    }

    /// Emits a batch as output port 0 of a source at the head of the chain (the source is not
    /// an operator of the chain; the chain's links come after it).
    pub(crate) fn push_from_source(
        &mut self,
        source_outlets: &mut [Route],
        source_counters: &Counters,
        batch: RecordBatch,
        origins: Option<RowOrigins>,
    ) -> Result<(), OperatorError> {
        source_counters.add_out(batch.num_rows());
        send_all(source_outlets, &batch, "source")?;
        if self.links.is_empty() {
            return Ok(());
        }
        push_at(&mut self.links, 0, batch, origins).map(|_| ())
    }

    /// How long until an operator of the chain wants its timer (zero: one is due), if any
    /// waits for the wall clock (see [`Operator::timer_due_in`]).
    pub(crate) fn timer_due_in(&self) -> Option<Duration> {
        self.links.iter().filter_map(|l| l.op.timer_due_in()).min()
    }

    /// Calls the timer of every operator whose timer is due, upstream first: what it emits
    /// goes through the links after it.
    pub(crate) fn timers(&mut self) -> Result<(), OperatorError> {
        for i in 0..self.links.len() {
            if self.links[i].op.timer_due_in() == Some(Duration::ZERO) {
                at_link(&mut self.links, i, |op, emit| op.on_timer(emit))?;
            }
        }
        Ok(())
    }

    /// Event time advanced to `wm` at the head: each operator may hold it back or forward it.
    pub(crate) fn watermark(&mut self, wm: Watermark) -> Result<(), OperatorError> {
        watermark_through(&mut self.links, wm)
    }

    /// Event time on input `port` of the head alone is now `wm` (+∞ while that input is idle
    /// or after it ended): told to the head before [`Chain::watermark`] gets the minimum.
    pub(crate) fn input_watermark(
        &mut self,
        port: usize,
        wm: Watermark,
    ) -> Result<(), OperatorError> {
        if self.links.is_empty() {
            return Ok(());
        }
        at_link(&mut self.links, 0, |op, emit| {
            op.handle_input_watermark(port, wm, emit)
        })
    }

    /// Input `port` of the head is exhausted (no row will come on it again; `all`: every input
    /// of the head now is): the head is told, and while each operator says that its output
    /// is exhausted too, its consumers in other tasks and the operator after it hear so.
    pub(crate) fn input_exhausted(&mut self, port: usize, all: bool) -> Result<(), OperatorError> {
        let mut input = port;
        for i in 0..self.links.len() {
            let done = at_link(&mut self.links, i, |op, emit| {
                op.on_input_exhausted(input, emit)
            })?;
            // An operator fused after another has one input, the output before it.
            if !(done && (all || i > 0)) {
                return Ok(());
            }
            let link = &mut self.links[i];
            tracing::debug!(operator = %link.name, instance = link.instance, "output exhausted");
            for o in link.outlets.iter_mut() {
                send_msg(o, Message::Exhausted, &link.name)?;
            }
            input = 0;
        }
        Ok(())
    }

    /// The task's event time became idle (`true`) or active again (`false`): every operator's
    /// consumers in other tasks are told.
    pub(crate) fn idle(&mut self, idle: bool) -> Result<(), OperatorError> {
        for link in &mut self.links {
            for o in link.outlets.iter_mut() {
                send_msg(o, Message::Idle(idle), &link.name)?;
            }
        }
        Ok(())
    }

    /// Input `port` of the head was lost (the task feeding it failed while the run goes on):
    /// the head goes on without it, or says why it cannot.
    pub(crate) fn input_lost(&mut self, port: usize) -> Result<(), OperatorError> {
        if self.links.is_empty() {
            return Err(OperatorError::internal("chain", "an input was lost"));
        }
        at_link(&mut self.links, 0, |op, emit| op.on_input_lost(port, emit))
    }

    /// Input `port`'s producer was lost and is being restored: the head may go on with other
    /// inputs meanwhile (a stream selector switches to another copy).
    pub(crate) fn input_suspended(&mut self, port: usize) -> Result<(), OperatorError> {
        if self.links.is_empty() {
            return Ok(());
        }
        at_link(&mut self.links, 0, |op, emit| {
            op.on_input_suspended(port, emit)
        })
    }

    /// Input `port`'s restored producer is back: its stream goes on where it stopped.
    pub(crate) fn input_resumed(&mut self, port: usize) -> Result<(), OperatorError> {
        if self.links.is_empty() {
            return Ok(());
        }
        at_link(&mut self.links, 0, |op, emit| {
            op.on_input_resumed(port, emit)
        })
    }

    /// A producer of the head's input gave up the end of its input after a stop
    /// ([`Message::GaveUp`]): at [`Chain::end_of_input`] no operator flushes, and the run
    /// ends as stopped ([`Chain::gave_up`]).
    pub(crate) fn upstream_gave_up(&mut self) {
        self.upstream_gave_up = true;
    }

    /// Every input of the head has ended: each operator in turn flushes, then its outlets end.
    /// Once an operator gave up the end of its input after a stop (or a producer upstream
    /// did), those after it do not flush — a sink would commit output that no checkpoint
    /// covers, and that the run resumed from the last one writes again — and the outlets
    /// say [`Message::GaveUp`] before they end.
    pub(crate) fn end_of_input(&mut self) -> Result<(), OperatorError> {
        if let Some((gate, task)) = &self.end_gate {
            gate.may_end(task)
                .map_err(|message| OperatorError::Execution {
                    operator: task.clone(),
                    message: format!("may not end its input: {message}"),
                })?;
        }
        let mut gave_up = self.upstream_gave_up;
        for i in 0..self.links.len() {
            if gave_up {
                tracing::info!(operator = %self.links[i].name, "not ended: an operator before it gave up the end of its input after a stop");
            } else {
                at_link(&mut self.links, i, |op, emit| op.on_end_of_input(emit))?;
            }
            let link = &mut self.links[i];
            gave_up |= link.op.gave_up().is_some();
            link.counters.add_metrics(link.op.metrics());
            if let Some(control) = &self.control {
                control.ended(&link.name, link.instance);
            }
            for o in link.outlets.iter_mut() {
                if gave_up {
                    send_msg(o, Message::GaveUp, &link.name)?;
                }
                // A retired instance sends no row again, and holds no key group: its event
                // time is complete. Without +∞ its consumers would take its end for a stop's
                // and hold their event time at its last watermark.
                if self.retired {
                    send_msg(o, Message::Watermark(Watermark::MAX), &link.name)?;
                }
                send_msg(o, Message::End, &link.name)?;
            }
        }
        Ok(())
    }
}

impl Chain {
    /// A checkpoint barrier reached the head: each operator in turn snapshots into `dir`
    /// (appending to `out`), then the barrier leaves through its outlets. Returns why the
    /// checkpoint could not be written, if it could not (a full disk): the operators after
    /// the one that failed still snapshot and the barrier still goes on, so that every task
    /// stays aligned and the query goes on; the checkpoint fails. Changes still to take
    /// effect do before a snapshot; those the barrier carries, after it has left the chain
    /// (see [`Operator::handle_param_changes`]).
    pub(crate) fn barrier(
        &mut self,
        barrier: &Barrier,
        dir: &Path,
        out: &mut Vec<OpSnapshot>,
    ) -> Result<Option<String>, OperatorError> {
        let full = matches!(barrier.kind, BarrierKind::Checkpoint { full: true });
        let mut failure = None;
        for i in 0..self.links.len() {
            param_changes_at(&mut self.links, i)?;
            if let Some(s) = self.links[i].spreader.as_mut() {
                let point = s.at_barrier(barrier.epoch);
                hand_over_at(&mut self.links, i, point)?;
            }
            let link = &mut self.links[i];
            let full_next = link
                .rescaler
                .as_mut()
                .is_some_and(|r| std::mem::take(&mut r.full_next));
            let slot = Slot::new(
                barrier.epoch,
                full || full_next,
                dir,
                (link.index, link.instance, link.parallelism),
                &link.name,
            );
            // An operator that gave up the end of its input after a stop takes no part in a
            // checkpoint any more: the checkpoint would take the work it gave up for done.
            let taken = match link.op.gave_up() {
                Some(why) => Taken::Failed(format!(
                    "operator \"{}\" gave up work after the run was asked to stop ({why}); a run resumed from the last complete checkpoint does it again",
                    link.name
                )),
                None => take(slot, |slot| link.op.snapshot(slot))?,
            };
            match taken {
                Taken::Done(s) => out.push(s),
                Taken::Failed(why) => {
                    failure.get_or_insert(why);
                }
            }
            apply_control(link, barrier, self.control.as_deref())?;
            for o in link.outlets.iter_mut() {
                send_msg(o, Message::Barrier(barrier.clone()), &link.name)?;
            }
        }
        self.changes_take_effect(barrier)?;
        Ok(failure)
    }

    /// A barrier that only carries param changes reached the head: each operator in turn
    /// applies those meant for it, then the barrier leaves through its outlets; then the
    /// changes take effect (see [`Operator::handle_param_changes`]).
    pub(crate) fn control(&mut self, barrier: &Barrier) -> Result<(), OperatorError> {
        for link in &mut self.links {
            apply_control(link, barrier, self.control.as_deref())?;
            for o in link.outlets.iter_mut() {
                send_msg(o, Message::Barrier(barrier.clone()), &link.name)?;
            }
        }
        self.changes_take_effect(barrier)
    }

    /// The changes `barrier` carried take effect in the operators they were meant for, now
    /// that it has left the chain: what they emit follows it.
    fn changes_take_effect(&mut self, barrier: &Barrier) -> Result<(), OperatorError> {
        for i in 0..self.links.len() {
            if barrier
                .control
                .iter()
                .any(|u| u.operator == self.links[i].name)
            {
                param_changes_at(&mut self.links, i)?;
            }
        }
        Ok(())
    }

    /// Whether an operator of the chain, or a producer upstream, gave up work after a stop
    /// (see [`Operator::gave_up`]): the run then ends as stopped, even when its sources read
    /// their input to the end.
    pub(crate) fn gave_up(&self) -> bool {
        self.upstream_gave_up || self.links.iter().any(|l| l.op.gave_up().is_some())
    }

    /// Checkpoint `epoch` is complete: sinks commit.
    pub(crate) fn commit(&mut self, epoch: Epoch) -> Result<(), OperatorError> {
        for link in &mut self.links {
            link.op.handle_commit(epoch)?;
        }
        Ok(())
    }
}

/// At a handoff point (a checkpoint barrier, before its snapshot, or after a batch): a copy
/// of a pattern that spreads its partial matches takes those the copy before it handed it
/// there, then hands on its oldest when it keeps more than its limit (see [`crate::spread`]).
fn hand_over_at(
    links: &mut [Link],
    i: usize,
    point: crate::spread::Point,
) -> Result<(), OperatorError> {
    let name = links[i].name.clone();
    let Some(s) = links[i].spreader.as_mut() else {
        return Ok(());
    };
    if let Some(handed) = s.take(point, &name)? {
        at_link(links, i, |op, emit| op.take_spread(handed, emit))?;
    }
    let link = &mut links[i];
    match link.spreader.as_mut() {
        Some(s) => s.give(point, &name, link.op.as_mut()),
        None => Ok(()),
    }
}

/// Tells each link whether a link after it uses the origins of rows.
fn mark_origins(links: &mut [Link]) {
    let mut after = false;
    for link in links.iter_mut().rev() {
        link.origins_after = after;
        after |= link.op.wants_origins();
    }
}

/// Lets the changed params of the operator of `links[i]` take effect, what it emits going
/// to its outlets and through the links after it (see [`Operator::handle_param_changes`]).
fn param_changes_at(links: &mut [Link], i: usize) -> Result<(), OperatorError> {
    at_link(links, i, |op, emit| op.handle_param_changes(emit))
}

/// Runs `f` on the operator of `links[i]` with the collector that sends what it emits to the
/// link's outlets and through the links after it.
/// Event time advanced to `wm` before `links`: each operator in turn is told and forwards
/// what it returns, until one forwards nothing.
fn watermark_through(links: &mut [Link], wm: Watermark) -> Result<(), OperatorError> {
    let mut current = Some(wm);
    for i in 0..links.len() {
        let Some(w) = current else {
            return Ok(());
        };
        current = at_link(links, i, |op, emit| op.handle_watermark(w, emit))?;
        let link = &mut links[i];
        if link.live_at.is_none_or(|t| t.elapsed() >= LIVE_EVERY) {
            link.live_at = Some(Instant::now());
            link.counters.set_live(link.op.metrics());
        }
        if let Some(w) = current {
            link.counters.set_watermark(w.0);
            for o in link.outlets.iter_mut() {
                send_msg(o, Message::Watermark(w), &link.name)?;
            }
        }
    }
    Ok(())
}

fn at_link<R>(
    links: &mut [Link],
    i: usize,
    f: impl FnOnce(&mut dyn Operator, &mut Emit<'_>) -> R,
) -> R {
    let (head, rest) = links.split_at_mut(i + 1);
    let Link {
        name,
        op,
        outlets,
        counters,
        origins_after,
        ..
    } = head.last_mut().expect("split at i + 1 leaves i + 1 links");
    let mut emit = Emit {
        outlets,
        counters,
        rest,
        name,
        origins_after: *origins_after,
        downstream: Duration::ZERO,
    };
    f(op.as_mut(), &mut emit)
}

/// Applies the changes of `barrier` meant for `link`'s operator, and says so.
fn apply_control(
    link: &mut Link,
    barrier: &Barrier,
    control: Option<&Control>,
) -> Result<(), OperatorError> {
    // A rescale first: it moves the state as it was before the barrier, and the param
    // changes the barrier carries then apply to the instances that hold it now (a snapshot,
    // which the move takes, must not see a change still to take effect).
    let mut updates: Vec<&anduin_types::ControlUpdate> = barrier
        .control
        .iter()
        .filter(|u| u.operator == link.name)
        .collect();
    updates.sort_by_key(|u| u.param != crate::rescale::PARALLELISM);
    for u in updates {
        if u.param == crate::rescale::PARALLELISM {
            let to = crate::rescale::rescaled_to(barrier, &link.name);
            let (Some(r), Some(to)) = (link.rescaler.as_mut(), to) else {
                return Err(OperatorError::internal(
                    &link.name,
                    format!("a rescale to {:?} instances reached an operator that cannot be rescaled while it runs (this is a bug: it was validated)", u.value),
                ));
            };
            crate::rescale::rescale(&link.name, &mut link.op, r, barrier.epoch, to)?;
        } else if u.param == crate::pipelining::PIPELINE {
            // Not the operator's: its task splits its chain once the barrier has left it, and
            // says it applied the change once the task listing shows the split
            // (`crate::pipelining::split`), not before.
            continue;
        } else {
            link.op
                .set_param(&u.param, &u.value)
                .map_err(|e| refused_after_validation(&link.name, u, &e))?;
            link.params.insert(u.param.clone(), u.value.clone());
            if let Some(r) = link.rescaler.as_mut() {
                r.applied.insert(u.param.clone(), u.value.clone());
            }
        }
        if let Some(control) = control {
            control.applied(u.seq, link.instance, barrier.epoch);
        }
    }
    Ok(())
}

/// Sends `msg` on every outlet of a source (they are outside any chain link).
pub(crate) fn send_to_outlets(
    outlets: &mut [Route],
    msg: Message,
    name: &str,
) -> Result<(), OperatorError> {
    send_msg(outlets, msg, name)
}

/// Ends the outlets of a source (they are outside any chain link).
pub(crate) fn end_outlets(outlets: &mut [Route], name: &str) -> Result<(), OperatorError> {
    send_msg(outlets, Message::End, name)
}

/// Feeds `batch` to the first of `links` (and, through its collector, to those after it).
/// Returns how long it took, all included; the operator's busy time is that without the
/// operators after it and without waiting for room on its outputs.
fn push_at(
    links: &mut [Link],
    input: usize,
    batch: RecordBatch,
    origins: Option<RowOrigins>,
) -> Result<Duration, OperatorError> {
    let Some((link, rest)) = links.split_first_mut() else {
        return Ok(Duration::ZERO);
    };
    let started = Instant::now();
    let rows = batch.num_rows();
    link.counters.add_in(rows);
    link.counters.add_batch();
    let blocked_before = link.counters.blocked();
    let Link {
        name,
        op,
        outlets,
        counters,
        origins_after,
        ..
    } = link;
    let mut emit = Emit {
        outlets,
        counters,
        rest,
        name,
        origins_after: *origins_after,
        downstream: Duration::ZERO,
    };
    op.process_batch_from(input, batch, origins, &mut emit)?;
    let all = started.elapsed();
    let blocked = Duration::from_nanos(counters.blocked().saturating_sub(blocked_before));
    let downstream = emit.downstream;
    counters.add_busy(all.saturating_sub(downstream).saturating_sub(blocked));
    // A copy of a pattern that spreads its partial matches hands over between barriers too.
    let Link { op, spreader, .. } = &mut links[0];
    let point = spreader
        .as_mut()
        .and_then(|s| s.read(rows, || crate::spread::rows_between_of(op.as_ref())));
    if let Some(point) = point {
        hand_over_at(links, 0, point)?;
    }
    Ok(all)
}

/// The collector of one link: sends to its outlets and calls the next link.
struct Emit<'a> {
    outlets: &'a mut Vec<Vec<Route>>,
    counters: &'a Counters,
    rest: &'a mut [Link],
    name: &'a str,
    origins_after: bool,
    /// Time spent in the operators after this one.
    downstream: Duration,
}

impl Collector for Emit<'_> {
    fn collect(&mut self, port: usize, batch: RecordBatch) -> Result<(), OperatorError> {
        self.collect_from(port, batch, None)
    }

    fn collect_from(
        &mut self,
        port: usize,
        batch: RecordBatch,
        origins: Option<RowOrigins>,
    ) -> Result<(), OperatorError> {
        self.counters.add_out(batch.num_rows());
        if let Some(outlets) = self.outlets.get_mut(port) {
            send_all(outlets, &batch, self.name)?;
        }
        if port == 0 && !self.rest.is_empty() {
            self.downstream += push_at(self.rest, 0, batch, origins)?;
        }
        Ok(())
    }

    fn wants_origins(&self) -> bool {
        self.origins_after
    }

    fn watermark(&mut self, watermark: Watermark) -> Result<(), OperatorError> {
        self.counters.set_watermark(watermark.0);
        for o in self.outlets.iter_mut() {
            send_msg(o, Message::Watermark(watermark), self.name)?;
        }
        watermark_through(self.rest, watermark)
    }
}

fn send_all(outlets: &mut [Route], batch: &RecordBatch, name: &str) -> Result<(), OperatorError> {
    if outlets.is_empty() {
        return Ok(());
    }
    send_msg(outlets, Message::Data(batch.clone()), name)
}

fn send_msg(outlets: &mut [Route], msg: Message, name: &str) -> Result<(), OperatorError> {
    for o in outlets.iter_mut() {
        o.send(&msg).map_err(|e| match e {
            SendError::Disconnected => OperatorError::DownstreamGone {
                operator: name.to_string(),
            },
            SendError::Partition(message) => OperatorError::Execution {
                operator: name.to_string(),
                message: format!("cannot split rows by key: {message}"),
            },
            SendError::Grow(message) => OperatorError::Execution {
                operator: name.to_string(),
                message: format!(
                    "cannot open channels to the instances added to the operator it feeds: {message}"
                ),
            },
        })?;
    }
    Ok(())
}

#[cfg(test)]
#[path = "chain_exhaustion_tests.rs"]
mod exhaustion_tests;

#[cfg(test)]
#[path = "chain_give_up_tests.rs"]
mod give_up_tests;

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use anduin_operator_api::{ControlError, SnapshotOut};
    use anduin_types::ControlUpdate;
    use arrow::array::Int64Array;
    use arrow::datatypes::{DataType, Field, Schema};

    use super::*;

    type Log = Arc<Mutex<Vec<String>>>;

    /// Logs what the chain asks of it; a change (or a start with one pending, as after a
    /// restore and the changes of its epoch) emits one row when it takes effect.
    struct Logged {
        name: &'static str,
        log: Log,
        pending: bool,
    }

    impl Logged {
        fn note(&self, what: &str) {
            let entry = format!("{} {what}", self.name);
            self.log.lock().expect("not poisoned").push(entry);
        }
    }

    impl Operator for Logged {
        fn name(&self) -> &str {
            self.name
        }

        fn process_batch(
            &mut self,
            _input: usize,
            _batch: RecordBatch,
            _out: &mut dyn Collector,
        ) -> Result<(), OperatorError> {
            self.note("batch");
            Ok(())
        }

        fn snapshot(&mut self, _out: &mut dyn SnapshotOut) -> Result<(), OperatorError> {
            self.note("snapshot");
            Ok(())
        }

        fn set_param(&mut self, _param: &str, _value: &str) -> Result<(), ControlError> {
            self.note("set");
            self.pending = true;
            Ok(())
        }

        fn on_end_of_input(&mut self, _out: &mut dyn Collector) -> Result<(), OperatorError> {
            self.note("end");
            Ok(())
        }

        fn metrics(&self) -> Vec<(&'static str, u64)> {
            vec![(
                "late_rows",
                self.log.lock().expect("not poisoned").len() as u64,
            )]
        }

        fn handle_param_changes(&mut self, out: &mut dyn Collector) -> Result<(), OperatorError> {
            if std::mem::take(&mut self.pending) {
                self.note("emits");
                let schema = Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, true)]));
                let rows = Arc::new(Int64Array::from(vec![1]));
                let batch = RecordBatch::try_new(schema, vec![rows]).expect("valid");
                out.collect(0, batch)?;
            }
            Ok(())
        }
    }

    /// Wants its timer in `due` (never with `None`); its timer emits one row and logs.
    struct Timed {
        due: Option<Duration>,
        log: Log,
    }

    impl Operator for Timed {
        fn name(&self) -> &str {
            "timed"
        }

        fn process_batch(
            &mut self,
            _input: usize,
            batch: RecordBatch,
            out: &mut dyn Collector,
        ) -> Result<(), OperatorError> {
            out.collect(0, batch)
        }

        fn timer_due_in(&self) -> Option<Duration> {
            self.due
        }

        fn on_timer(&mut self, out: &mut dyn Collector) -> Result<(), OperatorError> {
            self.log
                .lock()
                .expect("not poisoned")
                .push("timed fires".into());
            self.due = None;
            let schema = Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, true)]));
            let rows = Arc::new(Int64Array::from(vec![1]));
            out.collect(0, RecordBatch::try_new(schema, vec![rows]).expect("valid"))
        }
    }

    fn link_of(index: usize, op: Box<dyn Operator>) -> Link {
        Link {
            index,
            instance: 0,
            parallelism: 1,
            name: op.name().to_string(),
            op,
            outlets: Vec::new(),
            counters: Arc::new(Counters::default()),
            origins_after: false,
            live_at: None,
            rescaler: None,
            spreader: None,
            params: Default::default(),
        }
    }

    #[test]
    fn a_chain_waits_for_its_earliest_timer_and_fires_only_the_due_ones_through_the_links_after() {
        let log: Log = Arc::default();
        let timed = |due| {
            Box::new(Timed {
                due,
                log: Arc::clone(&log),
            }) as Box<dyn Operator>
        };
        let b = Box::new(Logged {
            name: "b",
            log: Arc::clone(&log),
            pending: false,
        });
        let later = Some(Duration::from_secs(5));
        let mut chain = Chain::new(
            vec![
                link_of(0, timed(later)),
                link_of(1, timed(None)),
                link_of(2, b),
            ],
            None,
        );
        assert_eq!(chain.timer_due_in(), later);
        chain.timers().expect("nothing due");
        assert!(log.lock().expect("not poisoned").is_empty());
        let mut chain = Chain::new(
            vec![
                link_of(0, timed(later)),
                link_of(1, timed(Some(Duration::ZERO))),
                link_of(
                    2,
                    Box::new(Logged {
                        name: "b",
                        log: Arc::clone(&log),
                        pending: false,
                    }),
                ),
            ],
            None,
        );
        assert_eq!(chain.timer_due_in(), Some(Duration::ZERO));
        chain.timers().expect("fires");
        assert_eq!(
            *log.lock().expect("not poisoned"),
            vec!["timed fires".to_string(), "b batch".to_string()]
        );
        assert_eq!(
            chain.timer_due_in(),
            later,
            "the fired timer is not due again"
        );
    }

    fn link(index: usize, op: Logged) -> Link {
        Link::for_test(index, Box::new(op), Vec::new())
    }

    /// Answers every task with `answer`.
    #[derive(Debug)]
    struct Gate(Result<(), String>);

    impl crate::config::EndGate for Gate {
        fn may_end(&self, _task: &str) -> Result<(), String> {
            self.0.clone()
        }
    }

    #[test]
    fn an_end_the_gate_refuses_reaches_no_operator_and_fails_naming_why() {
        let log: Log = Arc::default();
        let a = || Logged {
            name: "a",
            log: Arc::clone(&log),
            pending: false,
        };
        let refused = Some(Arc::new(Gate(Err("the part runs elsewhere".into()))) as _);
        let mut chain = Chain::new(vec![link(0, a())], None).with_end_gate(refused, "t #1".into());
        let err = chain.end_of_input().expect_err("refused");
        assert!(err.to_string().contains("the part runs elsewhere"), "{err}");
        assert!(
            log.lock().expect("not poisoned").is_empty(),
            "no operator ended"
        );
        let allowed = Some(Arc::new(Gate(Ok(()))) as _);
        let mut chain = Chain::new(vec![link(0, a())], None).with_end_gate(allowed, "t #1".into());
        chain.end_of_input().expect("allowed");
        assert_eq!(
            *log.lock().expect("not poisoned"),
            vec!["a end".to_string()]
        );
    }

    #[test]
    fn an_operator_s_figures_are_read_while_it_runs_as_event_time_advances() {
        let log: Log = Arc::default();
        log.lock().expect("not poisoned").push("before".into());
        let a = Logged {
            name: "a",
            log: Arc::clone(&log),
            pending: false,
        };
        let mut chain = Chain::new(vec![link(0, a)], None);
        let counters = Arc::clone(&chain.links[0].counters);
        assert!(counters.live.lock().expect("not poisoned").is_empty());
        chain.watermark(anduin_types::Watermark(5)).expect("passes");
        assert_eq!(
            counters.live.lock().expect("not poisoned").get("late_rows"),
            Some(&1),
            "what `metrics` says, before the end of the input"
        );
    }

    #[test]
    fn changes_take_effect_before_each_snapshot_and_after_the_barrier_has_left_the_chain() {
        let log: Log = Arc::default();
        let a = Logged {
            name: "a",
            log: Arc::clone(&log),
            // A change applied again after a restore, still to take effect.
            pending: true,
        };
        let b = Logged {
            name: "b",
            log: Arc::clone(&log),
            pending: false,
        };
        let mut chain = Chain::new(vec![link(0, a), link(1, b)], None);
        let barrier = Barrier {
            epoch: Epoch(3),
            kind: BarrierKind::Checkpoint { full: true },
            control: vec![ControlUpdate {
                seq: 1,
                operator: "a".into(),
                param: "x".into(),
                value: "1".into(),
                onto: Vec::new(),
            }],
        };
        let dir = tempfile::tempdir().expect("tempdir");
        let mut snapshots = Vec::new();
        let failure = chain
            .barrier(&barrier, dir.path(), &mut snapshots)
            .expect("the barrier passes");
        assert_eq!(failure, None);
        assert_eq!(
            *log.lock().expect("not poisoned"),
            vec![
                // The pending change's row goes before the barrier, through b too.
                "a emits",
                "b batch",
                "a snapshot",
                "a set",
                "b snapshot",
                // The barrier's change takes effect once b has passed the barrier.
                "a emits",
                "b batch",
            ]
        );
    }
}
