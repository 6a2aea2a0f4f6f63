//! The event loop of a task headed by a source: poll, batch up with a linger time, push
//! through the chain; with checkpoints, inject barriers when the coordinator says so and
//! keep taking part in checkpoints after the input is exhausted, until the last barrier.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anduin_operator_api::{OperatorError, RowOrigins, Source, SourcePoll};
use anduin_types::{Barrier, BarrierKind, ControlUpdate, Epoch, Message, Watermark};
use arrow::compute::concat_batches;
use arrow::record_batch::RecordBatch;
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, TryRecvError};

use crate::chain::{end_outlets, send_to_outlets, Chain};
use crate::channel::Route;
use crate::control::Control;
use crate::error::TaskFailure;
use crate::protocol::{Command, Event, WriteJob};
use crate::snapshot::{take, Slot, Taken};
use crate::stats::Counters;

/// How long a source waits for input at most before checking for a stop request.
const IDLE_CHECK: Duration = Duration::from_millis(100);

/// What a source task needs to take part in checkpoints.
pub(crate) struct SourceCheckpointing {
    pub task: usize,
    /// The source's index in the query (names its snapshot files).
    pub index: usize,
    /// Which instance of the source this is, and of how many (names its position's key in
    /// the manifest, as for operators).
    pub instance: usize,
    pub parallelism: usize,
    pub dir: anduin_checkpoint::CheckpointDir,
    pub events: Sender<Event>,
    pub jobs: Sender<WriteJob>,
    /// Ask for a checkpoint after this many rows since the last barrier.
    pub every_rows: Option<u64>,
}

/// A source and the chain fused behind it.
pub(crate) struct SourceTask {
    pub name: String,
    pub source: Box<dyn Source>,
    pub counters: Arc<Counters>,
    /// Channels for the source's output when it is not fused with the chain.
    pub outlets: Vec<Route>,
    pub chain: Chain,
    pub batch_size: usize,
    pub linger: Duration,
    /// Stop cleanly (Ctrl-C).
    pub stop: Arc<AtomicBool>,
    /// It read its input to the end before any stop was asked: a stop asked afterwards (the
    /// run's flag, shared by every source) does not make it a stopped source, whose event
    /// time stays open for a resume; it completes its event time at the last barrier.
    pub read_to_end: bool,
    /// Another task failed: stop without finishing.
    pub abort: Arc<AtomicBool>,
    pub checkpointing: Option<SourceCheckpointing>,
    /// Barriers to inject and commits, from the checkpoint coordinator or the control plane
    /// (with neither, `None`).
    pub commands: Option<Receiver<Command>>,
    /// Which instance of the source this is (names it to the control plane).
    pub instance: usize,
    /// The control plane, told of the changes applied and of the end of the input.
    pub control: Option<Arc<Control>>,
    /// Where linger and idle timeouts read the time.
    pub clock: anduin_types::SharedClock,
    /// Whether the chain wants the origins of rows (see [`Chain::wants_origins`]).
    pub origins: bool,
    /// The last watermark emitted, when the source has event time.
    pub watermark: Option<Watermark>,
    /// The consumers were told that this source is idle (no row for its idle timeout).
    pub idle: bool,
    /// The last checkpoint barrier this source injected: a coordinator that took over from
    /// another may ask again for one already injected, which is then not injected twice.
    pub last_injected: Option<Epoch>,
    /// Its part in splits while the query runs (`None`: the run cannot split).
    pub stage: Option<crate::pipelining::Stage>,
}

/// Rows waiting to be sent as one batch.
#[derive(Default)]
struct Pending {
    batches: Vec<RecordBatch>,
    /// Where the rows of `batches` were read, when the chain wants to know.
    origins: Option<RowOrigins>,
    rows: usize,
    since: Option<Instant>,
}

/// What the command loop decided.
enum Next {
    Continue,
    /// The last barrier went out: end.
    Finished,
}

impl SourceTask {
    /// Runs until the source is exhausted (and, with checkpoints, the last barrier has gone
    /// out), a stop is requested, or something fails. Returns whether the run was stopped:
    /// the source stopped reading, or an operator of its chain gave up the end of its input
    /// (see [`Chain::gave_up`]).
    pub(crate) fn run(mut self) -> Result<bool, TaskFailure> {
        let mut pending = Pending::default();
        if self.origins {
            self.source.want_origins();
        }
        let mut stopped = false;
        let mut rows_since_barrier: u64 = 0;
        let mut asked = false;
        let idle_after = self
            .source
            .watermarks()
            .and_then(|spec| spec.idle_timeout_ms)
            .map(Duration::from_millis);
        let clock = Arc::clone(&self.clock);
        let mut last_row = clock.now();
        loop {
            if self.abort.load(Ordering::Relaxed) {
                return Ok(false);
            }
            if let Next::Finished =
                self.handle_commands(&mut pending, &mut rows_since_barrier, &mut asked)?
            {
                return Ok(self.chain.gave_up());
            }
            if self.stop.load(Ordering::Relaxed) {
                stopped = true;
                break;
            }
            // The source waits on real time; how long is the clock's to say.
            let wait = match pending.since {
                Some(t) => self
                    .linger
                    .saturating_sub(clock.now().saturating_duration_since(t))
                    .min(IDLE_CHECK),
                None => IDLE_CHECK,
            };
            // No longer than the chain's next timer (a processing-time window's end).
            let wait = self.chain.timer_due_in().map_or(wait, |due| wait.min(due));
            let deadline = Instant::now() + wait;
            let want = self.batch_size.saturating_sub(pending.rows).max(1);
            match self.source.poll(want, deadline)? {
                SourcePoll::Batch(b) if b.num_rows() > 0 => {
                    last_row = clock.now();
                    self.set_idle(false)?;
                    rows_since_barrier += b.num_rows() as u64;
                    pending.since.get_or_insert_with(|| clock.now());
                    pending.rows += b.num_rows();
                    if self.origins {
                        let o = self
                            .source
                            .take_origins()
                            .filter(|o| o.len() == b.num_rows());
                        pending.origins = match (pending.origins.take(), o) {
                            // Known for every row so far, and for these.
                            (Some(mut all), Some(o)) => {
                                all.append(o);
                                Some(all)
                            }
                            (None, o) if pending.batches.is_empty() => o,
                            _ => None,
                        };
                    }
                    pending.batches.push(b);
                    if pending.rows >= self.batch_size {
                        self.flush(&mut pending)?;
                    }
                }
                SourcePoll::Batch(_) | SourcePoll::Idle => {}
                SourcePoll::Exhausted => break,
            }
            let elapsed = |t: Instant| clock.now().saturating_duration_since(t);
            if pending.since.is_some_and(|t| elapsed(t) >= self.linger) {
                self.flush(&mut pending)?;
            }
            if self.chain.timer_due_in() == Some(Duration::ZERO) {
                self.chain.timers()?;
            }
            // With every polled row sent, event time may move on over what the source skipped.
            if pending.rows == 0 && self.emit_progress()? {
                last_row = clock.now();
            }
            if pending.rows == 0 && idle_after.is_some_and(|t| elapsed(last_row) >= t) {
                self.set_idle(true)?;
            }
            if let Some(c) = &self.checkpointing {
                if !asked && c.every_rows.is_some_and(|n| rows_since_barrier >= n) {
                    asked = true;
                    let _ = c.events.send(Event::WantCheckpoint);
                }
            }
        }
        self.flush(&mut pending)?;
        if !stopped {
            self.read_to_end = true;
            self.exhausted()?;
        }
        if self.checkpointing.is_some() {
            // A last checkpoint records where the source stopped, so that a stopped query
            // resumes there and an exhausted one knows it is done.
            self.drain_checkpoints(&mut pending, stopped)?;
            return Ok(stopped || self.chain.gave_up());
        }
        // Without checkpoints an end is final, also after Ctrl-C: every window fires.
        self.end(true)?;
        Ok(stopped || self.chain.gave_up())
    }

    /// The input is exhausted (or a stop was asked for): keep answering the coordinator
    /// until the last barrier.
    fn drain_checkpoints(
        &mut self,
        pending: &mut Pending,
        stopped: bool,
    ) -> Result<(), TaskFailure> {
        let c = self
            .checkpointing
            .as_ref()
            .expect("called with checkpoints");
        let _ = c.events.send(Event::SourceExhausted {
            task: c.task,
            stopped,
        });
        // An exhausted input sends no more rows, but completes its event time only at the last
        // checkpoint, when every source is done: until then its consumers count it idle, so
        // that the others' event time goes on. An operator waiting for this input's end (a
        // lookup join's side table) went on at `Message::Exhausted`, sent before.
        if !stopped {
            self.set_idle(true)?;
        }
        let Some(commands) = self.commands.clone() else {
            return Err(OperatorError::internal(
                &self.name,
                "a source taking part in checkpoints has no command channel",
            )
            .into());
        };
        loop {
            if self.abort.load(Ordering::Relaxed) {
                return Ok(());
            }
            let wait = (self.chain.timer_due_in()).map_or(IDLE_CHECK, |due| due.min(IDLE_CHECK));
            match commands.recv_timeout(wait) {
                Ok(cmd) => {
                    if let Next::Finished = self.command(cmd, pending)? {
                        return Ok(());
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    if self.chain.timer_due_in() == Some(Duration::ZERO) {
                        self.chain.timers()?;
                    }
                }
                // The coordinator is gone (the run is failing): end as without checkpoints.
                Err(RecvTimeoutError::Disconnected) => return Ok(self.end(true)?),
            }
        }
    }

    fn handle_commands(
        &mut self,
        pending: &mut Pending,
        rows_since_barrier: &mut u64,
        asked: &mut bool,
    ) -> Result<Next, TaskFailure> {
        loop {
            let Some(commands) = &self.commands else {
                return Ok(Next::Continue);
            };
            let cmd = match commands.try_recv() {
                Ok(cmd) => cmd,
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => return Ok(Next::Continue),
            };
            if matches!(cmd, Command::Inject { .. } | Command::Finish { .. }) {
                *rows_since_barrier = 0;
                *asked = false;
            }
            if let Next::Finished = self.command(cmd, pending)? {
                return Ok(Next::Finished);
            }
        }
    }

    fn command(&mut self, cmd: Command, pending: &mut Pending) -> Result<Next, TaskFailure> {
        if let Command::Inject { epoch, .. } | Command::Finish { epoch, .. } = &cmd {
            if let Some(last) = self.last_injected.filter(|last| epoch <= last) {
                // A coordinator that took over from another asks again for a barrier the
                // source injected already, or numbers its checkpoints from one the other had
                // begun: injecting it twice would confuse every aligning task, and the
                // tasks acknowledged it to the coordinator before. The checkpoint cannot
                // complete: the source says so, and the next one comes after.
                tracing::debug!(source = %self.name, epoch = epoch.0, last = last.0, "barrier already injected");
                if let Some(c) = &self.checkpointing {
                    let _ = c.events.send(Event::Failed {
                        epoch: *epoch,
                        task: c.task,
                        reason: format!(
                            "source {} had injected the barrier of checkpoint {} already (a coordinator before this one began it)",
                            self.name, last.0
                        ),
                    });
                }
                return Ok(Next::Continue);
            }
            self.last_injected = Some(*epoch);
        }
        match cmd {
            Command::Commit(epoch) => {
                self.chain.commit(epoch)?;
                if let Some(stage) = &self.stage {
                    stage.commit(epoch);
                }
                Ok(Next::Continue)
            }
            // Only once every source has ended (this one waits for it in
            // `await_final_commit`): the tasks split off this one hear it.
            Command::LastFailed(epoch) => {
                if let Some(stage) = &self.stage {
                    stage.last_failed(epoch);
                }
                Ok(Next::Continue)
            }
            Command::Inject {
                epoch,
                full,
                control,
            } => {
                self.flush(pending)?;
                self.barrier(epoch, BarrierKind::Checkpoint { full }, control)?;
                Ok(Next::Continue)
            }
            Command::Control { epoch, control } => {
                self.flush(pending)?;
                self.barrier(epoch, BarrierKind::Control, control)?;
                Ok(Next::Continue)
            }
            Command::Finish {
                epoch,
                full,
                control,
            } => {
                self.flush(pending)?;
                // An exhausted input completes event time before the last checkpoint, so that
                // the windows it fires are in that checkpoint's output; a stopped query keeps
                // them open, to resume. Read to its end first, a source is exhausted, whatever
                // stop came after (it said so to the coordinator, whose last checkpoint is
                // then the end of its input).
                let stopped = !self.read_to_end && self.stop.load(Ordering::Relaxed);
                if !stopped {
                    self.complete_event_time()?;
                }
                self.barrier(epoch, BarrierKind::Checkpoint { full }, control)?;
                if let Some(c) = &self.checkpointing {
                    let _ = c.events.send(Event::SourceFinished {
                        task: c.task,
                        epoch,
                        stopped,
                    });
                }
                if self.chain.commits_only_with_checkpoints() {
                    self.await_final_commit(epoch)?;
                }
                self.end(false)?;
                Ok(Next::Finished)
            }
        }
    }

    /// Sends a barrier through the chain and the outlets. A checkpoint's records the
    /// source's position first and hands the snapshots to the committer; then the source
    /// applies the changes meant for it, and the barrier carries them on.
    fn barrier(
        &mut self,
        epoch: Epoch,
        kind: BarrierKind,
        control: Vec<ControlUpdate>,
    ) -> Result<(), TaskFailure> {
        let barrier = Barrier {
            epoch,
            kind,
            control,
        };
        let BarrierKind::Checkpoint { full } = barrier.kind else {
            self.apply_control(&barrier)?;
            send_to_outlets(
                &mut self.outlets,
                Message::Barrier(barrier.clone()),
                &self.name,
            )?;
            self.chain.control(&barrier)?;
            let with = crate::pipelining::Splitting {
                source: Some((&self.name, &mut self.outlets, &self.counters)),
                checkpoint: None,
                idle: self.idle,
            };
            return crate::pipelining::split(self.stage.as_mut(), &mut self.chain, &barrier, with);
        };
        let c = self
            .checkpointing
            .as_ref()
            .expect("checkpoint barriers come only with checkpoints");
        let dir = c.dir.prepare_epoch(epoch);
        let mut snapshots = Vec::new();
        let slot = Slot::new(
            epoch,
            full,
            &dir,
            (c.index, c.instance, c.parallelism),
            &self.name,
        );
        let mut failure = match take(slot, |slot| self.source.snapshot(slot))? {
            Taken::Done(s) => {
                snapshots.push(s);
                None
            }
            Taken::Failed(why) => Some(why),
        };
        self.apply_control(&barrier)?;
        send_to_outlets(
            &mut self.outlets,
            Message::Barrier(barrier.clone()),
            &self.name,
        )?;
        let chain_failure = self.chain.barrier(&barrier, &dir, &mut snapshots)?;
        failure = failure.or(chain_failure);
        let c = self
            .checkpointing
            .as_ref()
            .expect("checkpoint barriers come only with checkpoints");
        let with = crate::pipelining::Splitting {
            source: Some((&self.name, &mut self.outlets, &self.counters)),
            checkpoint: Some((&c.dir, &c.jobs, &c.events)),
            idle: self.idle,
        };
        crate::pipelining::split(self.stage.as_mut(), &mut self.chain, &barrier, with)?;
        let job = WriteJob {
            epoch,
            task: c.task,
            snapshots,
            failure,
        };
        c.jobs
            .send(job)
            .map_err(|_| TaskFailure::CommitterGone { epoch: epoch.0 })
    }

    /// The chain commits only with checkpoints: waits for the commit of `epoch`, the last
    /// checkpoint, or to hear that it failed and none follows. The senders to the coordinator
    /// and the committer go first, so that a last checkpoint that fails ends the coordinator,
    /// and with it this wait.
    fn await_final_commit(&mut self, epoch: Epoch) -> Result<(), TaskFailure> {
        self.checkpointing = None;
        let Some(commands) = self.commands.clone() else {
            return Ok(());
        };
        let abort = Arc::clone(&self.abort);
        crate::final_commit::await_chain_commit(
            &commands,
            epoch,
            Some(&abort),
            &mut self.chain,
            self.stage.as_ref(),
        )
    }

    /// Applies the changes of `barrier` meant for the source.
    fn apply_control(&mut self, barrier: &Barrier) -> Result<(), OperatorError> {
        for u in barrier.control.iter().filter(|u| u.operator == self.name) {
            if u.param == crate::pipelining::PIPELINE {
                // A source heads its task: there is nothing before it to split from.
                tracing::info!(operator = %self.name, instance = self.instance, "`pipeline = \"split\"` on a source, which heads its task already: nothing to split");
            } else {
                self.source
                    .set_param(&u.param, &u.value)
                    .map_err(|e| refused_after_validation(&self.name, u, &e))?;
            }
            if let Some(control) = &self.control {
                control.applied(u.seq, self.instance, barrier.epoch);
            }
        }
        Ok(())
    }

    /// Ends the outlets and the chain; with `drain`, event time is completed first (every
    /// window fires).
    fn end(&mut self, drain: bool) -> Result<(), OperatorError> {
        if drain {
            self.complete_event_time()?;
        }
        self.counters.add_metrics(self.source.metrics());
        if let Some(control) = &self.control {
            control.ended(&self.name, self.instance);
        }
        end_outlets(&mut self.outlets, &self.name)?;
        self.chain.end_of_input()
    }

    /// At the end of a bounded input event time is complete: the watermark goes to +∞ (also
    /// for a source without event time, so that windows behind it fire).
    fn complete_event_time(&mut self) -> Result<(), OperatorError> {
        self.emit_watermark(Watermark::MAX)
    }

    /// The source is read to its end: its consumers hear that no row will come again (before
    /// its event time completes, which with checkpoints waits for the last one), and so do
    /// the operators fused after it.
    fn exhausted(&mut self) -> Result<(), OperatorError> {
        tracing::debug!(source = %self.name, instance = self.instance, "source exhausted");
        send_to_outlets(&mut self.outlets, Message::Exhausted, &self.name)?;
        self.chain.input_exhausted(0, true)
    }

    /// Tells the consumers that the source became idle or active again, if it changed.
    fn set_idle(&mut self, idle: bool) -> Result<(), OperatorError> {
        if self.idle == idle {
            return Ok(());
        }
        self.idle = idle;
        tracing::debug!(source = %self.name, idle, "source event time idleness changed");
        send_to_outlets(&mut self.outlets, Message::Idle(idle), &self.name)?;
        self.chain.idle(idle)
    }

    /// Moves the watermark to the source's event-time progress (minus the delay), if it
    /// reports one and that is later than the last watermark. Only called with no row
    /// pending, so that no row sent later is behind it. Returns whether it moved.
    fn emit_progress(&mut self) -> Result<bool, OperatorError> {
        let Some(spec) = self.source.watermarks() else {
            return Ok(false);
        };
        let Some(t) = self.source.event_time_progress() else {
            return Ok(false);
        };
        let wm = spec.watermark_after(t);
        if self.watermark.is_some_and(|last| wm <= last) {
            return Ok(false);
        }
        self.emit_watermark(wm)?;
        Ok(true)
    }

    /// Sends `wm` downstream if it is later than the last one sent (an idle source becomes
    /// active again).
    fn emit_watermark(&mut self, wm: Watermark) -> Result<(), OperatorError> {
        if self.watermark.is_some_and(|last| wm <= last) {
            return Ok(());
        }
        self.set_idle(false)?;
        self.watermark = Some(wm);
        self.counters.set_watermark(wm.0);
        send_to_outlets(&mut self.outlets, Message::Watermark(wm), &self.name)?;
        self.chain.watermark(wm)
    }

    /// Sends what is pending in batches of at most `batch_size` rows.
    fn flush(&mut self, pending: &mut Pending) -> Result<(), OperatorError> {
        pending.since = None;
        pending.rows = 0;
        let batches = std::mem::take(&mut pending.batches);
        let origins = pending.origins.take();
        let Some(first) = batches.first() else {
            return Ok(());
        };
        let whole = if batches.len() == 1 {
            first.clone()
        } else {
            concat_batches(&first.schema(), &batches).map_err(|e| OperatorError::Execution {
                operator: self.name.clone(),
                message: e.to_string(),
            })?
        };
        let mut offset = 0;
        while offset < whole.num_rows() {
            let len = self.batch_size.min(whole.num_rows() - offset);
            let slice = whole.slice(offset, len);
            // A source that keeps a watermark per split moves it by its progress (after the
            // flush), never by the largest event time of one split's rows.
            let watermark = self
                .source
                .watermarks()
                .filter(|_| !self.source.watermark_per_split())
                .and_then(|spec| {
                    max_event_time(&slice, spec.column).map(|t| spec.watermark_after(t))
                });
            let slice_origins = match &origins {
                Some(o) if offset == 0 && len == o.len() => Some(o.clone()),
                Some(o) => Some(o.slice(offset, len)),
                None => None,
            };
            self.chain
                .push_from_source(&mut self.outlets, &self.counters, slice, slice_origins)?;
            if let Some(wm) = watermark {
                self.emit_watermark(wm)?;
            }
            offset += len;
        }
        Ok(())
    }
}

/// An instance refused a change that the control plane had validated: the validation and
/// the operator disagree, a bug.
pub(crate) fn refused_after_validation(
    operator: &str,
    update: &ControlUpdate,
    e: &anduin_operator_api::ControlError,
) -> OperatorError {
    OperatorError::internal(
        operator,
        format!(
            "change #{} (param `{}` = {:?}) passed validation but the running instance refused it: {e}",
            update.seq, update.param, update.value
        ),
    )
}

/// The largest value of column `column` (an int or a millisecond timestamp), if any.
fn max_event_time(batch: &RecordBatch, column: usize) -> Option<i64> {
    use arrow::array::{Int64Array, TimestampMillisecondArray};
    let col = batch.columns().get(column)?;
    if let Some(a) = col.as_any().downcast_ref::<TimestampMillisecondArray>() {
        return arrow::compute::max(a);
    }
    col.as_any()
        .downcast_ref::<Int64Array>()
        .and_then(arrow::compute::max)
}
