//! The event loop of a task with inputs: wait on every input channel (and the coordinator's
//! commands), feed the chain, track the minimum watermark, align checkpoint barriers, finish
//! when every input has ended.

use std::time::Duration;

use anduin_operator_api::OperatorError;
use anduin_types::{BarrierKind, Message, Watermark};
use crossbeam_channel::{Receiver, Select, Sender};

use crate::align::{Aligner, Alignment};
use crate::chain::Chain;
use crate::channel::{Envelope, Notice};
use crate::error::TaskFailure;
use crate::event_time::{exhausted_ports, task_time, InputTime, TaskTime};
use crate::pipelining::{split, Splitting, Stage};
use crate::protocol::{Command, WriteJob};

/// One input channel of a task and the head's input port it feeds.
pub(crate) struct Inlet {
    pub rx: Receiver<Envelope>,
    pub port: usize,
    /// The last sequence number seen (messages arrive in order, each exactly once).
    pub last_seq: u64,
    pub watermark: Watermark,
    /// Its producer's event time is idle.
    pub idle: bool,
    pub ended: bool,
    /// Its producer sent the watermark of +∞ (its input is finished, not stopped).
    pub finished: bool,
    /// Its producer ended without +∞ (a stop): its event time stays where it stopped.
    pub stopped: bool,
    /// Its producer said that no row will come again ([`Message::Exhausted`]; a watermark of
    /// +∞ says so too). Unlike `idle`, final.
    pub exhausted: bool,
    /// What its network end says of its producer (a resumable edge into a head that goes on
    /// without an input).
    pub notices: Option<Receiver<Notice>>,
    /// Its producer is lost and being restored ([`Notice::ProducerLost`]): alignment does not
    /// wait for it meanwhile.
    pub suspended: bool,
}

impl Inlet {
    /// Channel `rx` into input `port` of the head, nothing read from it yet.
    pub(crate) fn new(rx: Receiver<Envelope>, port: usize) -> Self {
        Self {
            rx,
            port,
            last_seq: 0,
            watermark: Watermark::MIN,
            idle: false,
            ended: false,
            finished: false,
            stopped: false,
            exhausted: false,
            notices: None,
            suspended: false,
        }
    }
}

/// What a task needs to take part in checkpoints.
pub(crate) struct TaskCheckpointing {
    pub task: usize,
    pub dir: anduin_checkpoint::CheckpointDir,
    pub commands: Receiver<Command>,
    pub jobs: Sender<WriteJob>,
    /// To the coordinator (a split announces the task it starts).
    pub events: Sender<crate::protocol::Event>,
}

/// A task whose head has inputs.
pub(crate) struct OperatorTask {
    pub name: String,
    pub inlets: Vec<Inlet>,
    pub chain: Chain,
    pub checkpointing: Option<TaskCheckpointing>,
    /// Its event time is idle (and its consumers were told so): a task split off an idle one
    /// starts so.
    pub idle: bool,
    /// Its part in splits while the query runs (`None`: the run cannot split).
    pub stage: Option<Stage>,
    /// The last checkpoint barrier that passed the chain: with an operator that commits only
    /// with checkpoints, the end of input waits for its commit.
    pub last_checkpoint: Option<anduin_types::Epoch>,
    /// Its part in tasks getting instances beyond those planned while the query runs (`None`:
    /// the run cannot grow its tasks).
    pub growth: Option<crate::grow::GrowPart>,
}

/// Where the next message came from.
enum From {
    Inlet(usize),
    /// The notices of an inlet's network end.
    Notice(usize),
    Coordinator,
    /// No message came before an operator's timer was due.
    Timer,
}

impl OperatorTask {
    /// Runs until every input has ended (then flushes) or something fails. Returns whether
    /// an operator of its chain gave up the end of its input after a stop (see
    /// [`Chain::gave_up`]): the run then ends as stopped.
    pub(crate) fn run(mut self) -> Result<bool, TaskFailure> {
        // An instance added while the query runs starts at the event time of the others, and
        // takes its key groups first.
        let mut watermark = Watermark::MIN;
        if let Some((epoch, to, w)) = self.growth.as_mut().and_then(|g| g.start.take()) {
            if w > Watermark::MIN {
                self.chain.watermark(w)?;
                watermark = w;
            }
            self.chain.rescale_head(epoch, to)?;
        }
        let mut aligner = Aligner::new(self.inlets.len());
        let mut time = Time {
            watermark,
            ports: Vec::new(),
            exhausted: Vec::new(),
            idle: self.idle,
        };
        let mut coordinator_open = self.checkpointing.is_some();
        // The latest checkpoint committed (a commit may come before the input's end).
        let mut committed = None;
        // The last checkpoint failed and none completes any more (this may come before the
        // input's end too): no commit is waited for.
        let mut last_failed = None;
        while self.open() > 0 {
            // Timers due while messages kept coming (a processing-time window's end).
            if self.chain.timer_due_in() == Some(Duration::ZERO) {
                self.chain.timers()?;
            }
            let (from, msg) = self.next_message(&aligner, coordinator_open)?;
            let idx = match from {
                From::Timer => {
                    self.chain.timers()?;
                    continue;
                }
                From::Notice(i) => {
                    self.notice(i, msg, &mut aligner)?;
                    continue;
                }
                From::Coordinator => {
                    match msg {
                        Some(Got::Command(Command::Commit(epoch))) => {
                            committed = committed.max(Some(epoch));
                            self.chain.commit(epoch)?;
                            if let Some(stage) = &self.stage {
                                stage.commit(epoch);
                            }
                        }
                        Some(Got::Command(Command::LastFailed(epoch))) => {
                            last_failed = Some(epoch);
                            if let Some(stage) = &self.stage {
                                stage.last_failed(epoch);
                            }
                        }
                        Some(Got::Command(_)) => {}
                        _ => coordinator_open = false,
                    }
                    continue;
                }
                From::Inlet(i) => i,
            };
            let Some(Got::Envelope(env)) = msg else {
                // The producer stopped without an End: it failed, and says why itself. A head
                // that goes on without the input (a stream selector over replicas) takes it as
                // the input's end.
                let port = self.inlets.get(idx).map_or(0, |i| i.port);
                match self.chain.input_lost(port) {
                    Ok(()) => {}
                    // The head cannot go on without the input (the default).
                    Err(e) if e.is_internal() => return Err(TaskFailure::UpstreamGone { port }),
                    // It could, but cannot now (every replica lost).
                    Err(e) => return Err(e.into()),
                }
                let inlet = self
                    .inlets
                    .get_mut(idx)
                    .expect("indices come from the inlets");
                inlet.ended = true;
                inlet.idle = false;
                inlet.watermark = Watermark::MAX;
                let outcome = aligner.on_end(idx);
                self.aligned(outcome, &mut aligner)?;
                // The lost input sends no watermark of +∞: when it was the last open one
                // and the others finished, their +∞ goes on now (the windows after fire).
                let others_finished = self
                    .inlets
                    .iter()
                    .enumerate()
                    .all(|(i, inlet)| i == idx || inlet.finished);
                if self.open() > 0 || others_finished {
                    self.advance(&mut time)?;
                }
                continue;
            };
            let inlet = self
                .inlets
                .get_mut(idx)
                .expect("indices come from the inlets");
            debug_assert_eq!(
                env.seq,
                inlet.last_seq + 1,
                "channel messages arrive in order"
            );
            inlet.last_seq = env.seq;
            let port = inlet.port;
            if let Some(c) = self.chain.head_counters() {
                c.set_queue_len(inlet.rx.len());
            }
            match env.msg {
                Message::Data(batch) => self.chain.push(port, batch)?,
                Message::Watermark(w) => {
                    let finished = w == Watermark::MAX;
                    inlet.finished |= finished;
                    inlet.exhausted |= finished;
                    inlet.watermark = inlet.watermark.max(w);
                    if finished {
                        self.exhaust(&mut time)?;
                    }
                    self.advance(&mut time)?;
                }
                Message::Exhausted => {
                    inlet.exhausted = true;
                    self.exhaust(&mut time)?;
                }
                Message::Idle(idle) => {
                    inlet.idle = idle;
                    self.advance(&mut time)?;
                }
                Message::Barrier(b) => {
                    let outcome = aligner.on_barrier(idx, b);
                    self.aligned(outcome, &mut aligner)?;
                }
                Message::GaveUp => self.chain.upstream_gave_up(),
                Message::End => {
                    inlet.ended = true;
                    inlet.idle = false;
                    // A finished producer sent +∞ before its end. A stopped one did not: its
                    // event time stays where it stopped, and the others' does not carry the
                    // task's past it — the windows it would fire lack the rows the stopped
                    // input has yet to read, which the resumed run reads (probe41 H3: partial
                    // windows after a stop, at parallelism 2, written by an at-least-once sink).
                    inlet.stopped = !inlet.finished;
                    if inlet.finished {
                        inlet.watermark = Watermark::MAX;
                    }
                    let outcome = aligner.on_end(idx);
                    self.aligned(outcome, &mut aligner)?;
                    if self.open() > 0 {
                        self.advance(&mut time)?;
                    }
                }
                _ => {}
            }
        }
        // Commits that arrive after the last barrier are not waited for: the sinks commit
        // everything at the end of their input, except those that commit only with
        // checkpoints, which wait for the last one's (unless they heard it failed).
        if self.chain.commits_only_with_checkpoints() {
            let waiting = self
                .last_checkpoint
                .filter(|last| committed < Some(*last) && last_failed.is_none());
            if let (Some(c), Some(last)) = (self.checkpointing.take(), waiting) {
                let TaskCheckpointing { commands, .. } = c;
                crate::final_commit::await_chain_commit(
                    &commands,
                    last,
                    None,
                    &mut self.chain,
                    self.stage.as_ref(),
                )?;
            }
        }
        self.chain.end_of_input()?;
        Ok(self.chain.gave_up())
    }

    /// Input `i`'s network end said `notice` (`None`: it has no more to say): a lost
    /// producer no longer holds alignment up, and the head hears of it; a restored one takes
    /// part again.
    fn notice(
        &mut self,
        i: usize,
        notice: Option<Got>,
        aligner: &mut Aligner,
    ) -> Result<(), TaskFailure> {
        let inlet = self
            .inlets
            .get_mut(i)
            .expect("indices come from the inlets");
        let port = inlet.port;
        match notice {
            Some(Got::Notice(Notice::ProducerLost)) if !inlet.suspended && !inlet.ended => {
                inlet.suspended = true;
                self.chain.input_suspended(port)?;
                let outcome = aligner.on_end(i);
                self.aligned(outcome, aligner)
            }
            Some(Got::Notice(Notice::ProducerBack)) if inlet.suspended => {
                inlet.suspended = false;
                aligner.on_resume(i);
                Ok(self.chain.input_resumed(port)?)
            }
            Some(_) => Ok(()),
            None => {
                inlet.notices = None;
                Ok(())
            }
        }
    }

    /// Waits for the next message from an input that is not held back by alignment, or a
    /// command from the coordinator.
    fn next_message(
        &self,
        aligner: &Aligner,
        coordinator_open: bool,
    ) -> Result<(From, Option<Got>), OperatorError> {
        let mut select = Select::new();
        let mut map = Vec::new();
        for (i, inlet) in self.inlets.iter().enumerate() {
            if !inlet.ended && !aligner.is_blocked(i) {
                select.recv(&inlet.rx);
                map.push(From::Inlet(i));
            }
        }
        for (i, inlet) in self.inlets.iter().enumerate() {
            if let Some(rx) = inlet.notices.as_ref().filter(|_| !inlet.ended) {
                select.recv(rx);
                map.push(From::Notice(i));
            }
        }
        let commands = self.checkpointing.as_ref().map(|c| &c.commands);
        if let (Some(rx), true) = (commands, coordinator_open) {
            select.recv(rx);
            map.push(From::Coordinator);
        }
        if map.is_empty() {
            return Err(OperatorError::internal(
                &self.name,
                "no input to wait for (barrier alignment)",
            ));
        }
        // Wait no longer than the chain's next timer.
        let op = match self.chain.timer_due_in() {
            Some(due) => match select.select_timeout(due) {
                Ok(op) => op,
                Err(_) => return Ok((From::Timer, None)),
            },
            None => select.select(),
        };
        let k = op.index();
        match map.get(k) {
            Some(From::Inlet(i)) => {
                let inlet = self.inlets.get(*i).expect("mapped from the inlets");
                Ok((From::Inlet(*i), op.recv(&inlet.rx).ok().map(Got::Envelope)))
            }
            Some(From::Notice(i)) => {
                let inlet = self.inlets.get(*i).expect("mapped from the inlets");
                let rx = inlet.notices.as_ref().expect("mapped only when present");
                Ok((From::Notice(*i), op.recv(rx).ok().map(Got::Notice)))
            }
            Some(From::Coordinator) => {
                let rx = commands.expect("mapped only when present");
                Ok((From::Coordinator, op.recv(rx).ok().map(Got::Command)))
            }
            Some(From::Timer) | None => Err(OperatorError::Execution {
                operator: self.name.clone(),
                message: "select returned an unknown index".into(),
            }),
        }
    }

    /// How many inputs have not ended.
    fn open(&self) -> usize {
        self.inlets.iter().filter(|i| !i.ended).count()
    }

    /// When a barrier is aligned: snapshot the chain (a checkpoint's), apply the changes it
    /// carries, and forward it. A rescale beyond a task's instances adds instances (instance
    /// 0 of the task starts them before the barrier goes on) and channels from them (their
    /// consumers read those once the barrier has gone on): see `crate::grow`.
    fn aligned(&mut self, outcome: Alignment, aligner: &mut Aligner) -> Result<(), TaskFailure> {
        let Alignment::Aligned(barrier) = outcome else {
            return Ok(());
        };
        let rescales = barrier
            .control
            .iter()
            .any(|u| u.param == crate::rescale::PARALLELISM);
        let seqs: Vec<u64> = barrier
            .control
            .iter()
            .filter(|u| u.param == crate::rescale::PARALLELISM)
            .map(|u| u.seq)
            .collect();
        if let Some(g) = self.growth.as_ref().filter(|_| !barrier.control.is_empty()) {
            // Every rescale, in barrier order, numbers and places what it adds alike; every
            // change is noted for the instances added later.
            g.ctx.apply(&barrier);
        }
        if let Some(g) = self.growth.as_ref().filter(|_| rescales) {
            let commands = g.ctx.grow((g.at, g.watermark), &barrier, &self.chain)?;
            if let Some(stage) = self.stage.as_mut() {
                stage.downstream.extend(commands);
            }
        }
        let epoch = barrier.epoch;
        let retires = self
            .growth
            .as_ref()
            .filter(|_| rescales)
            .is_some_and(|g| g.ctx.retires(g.at, &barrier));
        self.pass(barrier)?;
        if let Some(g) = self.growth.as_ref().filter(|_| rescales) {
            let added = g.ctx.take_inlets(g.at, epoch, &seqs);
            aligner.add(added.len());
            self.inlets.extend(added);
        }
        if retires {
            tracing::info!(task = %self.name, epoch = epoch.0, "retires: a scale-down left it no key group, and it was added while running");
            self.chain.retire();
        }
        Ok(())
    }

    /// An aligned barrier passes the chain.
    fn pass(&mut self, barrier: anduin_types::Barrier) -> Result<(), TaskFailure> {
        if barrier.kind == BarrierKind::Control {
            self.chain.control(&barrier)?;
            let with = Splitting {
                source: None,
                checkpoint: None,
                idle: self.idle,
            };
            return split(self.stage.as_mut(), &mut self.chain, &barrier, with);
        }
        let Some(c) = &self.checkpointing else {
            return Err(OperatorError::Execution {
                operator: self.name.clone(),
                message: "a checkpoint barrier arrived in a run without checkpoints".into(),
            }
            .into());
        };
        let dir = c.dir.prepare_epoch(barrier.epoch);
        self.last_checkpoint = Some(barrier.epoch);
        let mut snapshots = Vec::new();
        let failure = self.chain.barrier(&barrier, &dir, &mut snapshots)?;
        let with = Splitting {
            source: None,
            checkpoint: Some((&c.dir, &c.jobs, &c.events)),
            idle: self.idle,
        };
        split(self.stage.as_mut(), &mut self.chain, &barrier, with)?;
        c.jobs
            .send(WriteJob {
                epoch: barrier.epoch,
                task: c.task,
                snapshots,
                failure,
            })
            .map_err(|_| TaskFailure::CommitterGone {
                epoch: barrier.epoch.0,
            })
    }

    /// Tells the head of each input port whose every inlet is now exhausted, once (the last
    /// one told is told that every port is).
    fn exhaust(&mut self, time: &mut Time) -> Result<(), OperatorError> {
        let ports = self
            .inlets
            .iter()
            .map(|i| i.port)
            .max()
            .map_or(0, |p| p + 1);
        time.exhausted.resize(ports, false);
        let inputs: Vec<(usize, bool)> =
            self.inlets.iter().map(|i| (i.port, i.exhausted)).collect();
        let now = exhausted_ports(&inputs, ports);
        for (port, now) in now.into_iter().enumerate() {
            if now && !time.exhausted[port] {
                time.exhausted[port] = true;
                let all = time.exhausted.iter().all(|e| *e);
                tracing::debug!(task = %self.name, port, all, "input exhausted");
                self.chain.input_exhausted(port, all)?;
            }
        }
        Ok(())
    }

    /// Forwards the minimum watermark over the inputs that are not idle if it moved, and
    /// tells the consumers when the task becomes idle or active.
    fn advance(&mut self, time: &mut Time) -> Result<(), OperatorError> {
        let inputs: Vec<InputTime> = self
            .inlets
            .iter()
            .map(|i| InputTime {
                watermark: i.watermark,
                idle: i.idle,
                // A stopped input counts at its last watermark, as if still open.
                ended: i.ended && !i.stopped,
            })
            .collect();
        // Each input port's own event time first (an operator with a control input releases
        // the rows its control stream has caught up with), then the minimum.
        let ports = self
            .inlets
            .iter()
            .map(|i| i.port)
            .max()
            .map_or(0, |p| p + 1);
        time.ports.resize(ports, Watermark::MIN);
        for port in 0..ports {
            let of_port: Vec<InputTime> = self
                .inlets
                .iter()
                .zip(&inputs)
                .filter(|(i, _)| i.port == port)
                .map(|(_, t)| *t)
                .collect();
            let w = match task_time(&of_port) {
                TaskTime::At(w) => w,
                TaskTime::Idle => Watermark::MAX,
            };
            if time.ports[port] != w {
                time.ports[port] = w;
                self.chain.input_watermark(port, w)?;
            }
        }
        match task_time(&inputs) {
            TaskTime::Idle => {
                if !time.idle {
                    time.idle = true;
                    self.idle = true;
                    self.chain.idle(true)?;
                }
            }
            TaskTime::At(w) => {
                if time.idle {
                    time.idle = false;
                    self.idle = false;
                    self.chain.idle(false)?;
                }
                if w > time.watermark {
                    time.watermark = w;
                    self.chain.watermark(w)?;
                    if let Some(g) = self.growth.as_mut() {
                        g.watermark = w;
                    }
                }
            }
        }
        Ok(())
    }
}

/// The event time a task has forwarded.
struct Time {
    watermark: Watermark,
    /// Per input port of the head, the event time it was last told of.
    ports: Vec<Watermark>,
    /// Per input port of the head, whether it was told that the port is exhausted.
    exhausted: Vec<bool>,
    /// The consumers were told that this task is idle.
    idle: bool,
}

/// A received message.
enum Got {
    Envelope(Envelope),
    Command(Command),
    Notice(Notice),
}

#[cfg(test)]
#[path = "task_stop_tests.rs"]
mod stop_tests;
