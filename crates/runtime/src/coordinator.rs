//! The checkpoint coordinator of an embedded run: triggers checkpoints (on a period, or when
//! a source has emitted N rows), tracks the tasks' acknowledgements, writes the manifest that
//! completes a checkpoint, tells the sinks to commit, applies retention, and warns when the
//! last complete checkpoint gets old. One checkpoint is in flight at a time.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anduin_checkpoint::decide::{is_stale, snapshot_kind, AckOutcome, AckTracker};
use anduin_checkpoint::plan::PlanFingerprint;
use anduin_checkpoint::{FileEntry, Manifest, OperatorState, StateFileRef, Store, MANIFEST_FORMAT};
use anduin_types::{Epoch, SnapshotKind};
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use tracing::{info, warn};

use crate::config::CheckpointSettings;
use crate::faults::Faults;
use crate::protocol::{Command, Event, OpState};
use crate::stats::CheckpointCounters;

/// A checkpoint in flight.
struct InFlight {
    epoch: Epoch,
    full: bool,
    /// The sources end after this checkpoint's barrier.
    last: bool,
    /// Every source ended because its input did (not because of a stop request).
    finished: bool,
    operators: BTreeMap<String, OperatorState>,
    files: Vec<FileEntry>,
}

/// The coordinator's state.
pub(crate) struct Coordinator {
    pub store: Store,
    pub settings: CheckpointSettings,
    pub plan: PlanFingerprint,
    /// Every task's command channel, by task id.
    pub tasks: BTreeMap<usize, Sender<Command>>,
    /// The tasks headed by a source.
    pub sources: BTreeSet<usize>,
    pub next_epoch: u64,
    /// The manifest of the last complete checkpoint (restored or taken in this run).
    pub last: Option<Manifest>,
    pub counters: Arc<CheckpointCounters>,
    pub faults: Faults,
}

impl Coordinator {
    /// Runs until every task, and the committer, have dropped their event senders.
    pub(crate) fn run(mut self, events: Receiver<Event>) {
        let started = Instant::now();
        let mut tracker = AckTracker::default();
        let mut in_flight: Option<InFlight> = None;
        let mut exhausted: BTreeSet<usize> = BTreeSet::new();
        let mut any_stopped = false;
        let mut finishing = false;
        let mut wanted = false;
        let mut force_full = true;
        let mut since_full: u64 = 0;
        let mut next_tick = self.settings.interval.map(|i| started + i);
        let mut last_complete: Option<Instant> = None;
        let mut last_warning: Option<Instant> = None;
        loop {
            let now = Instant::now();
            let wait = next_tick
                .map(|t| t.saturating_duration_since(now))
                .unwrap_or(Duration::from_secs(1))
                .min(Duration::from_secs(1));
            match events.recv_timeout(wait) {
                Ok(Event::Ack {
                    epoch,
                    task,
                    states,
                    files,
                }) => {
                    if let Some(f) = in_flight.as_mut().filter(|f| f.epoch == epoch) {
                        f.files.extend(files);
                        for s in states {
                            let entry = self.operator_state(s, epoch);
                            f.operators.insert(entry.0, entry.1);
                        }
                    }
                    if let AckOutcome::Complete(epoch) = tracker.ack(epoch, task) {
                        let f = in_flight
                            .take()
                            .expect("the completed checkpoint was in flight");
                        match self.complete(f) {
                            Ok(()) => {
                                last_complete = Some(Instant::now());
                                force_full = false;
                            }
                            Err(reason) => {
                                self.failed(epoch, &reason);
                                force_full = true;
                            }
                        }
                    }
                }
                Ok(Event::Failed {
                    epoch,
                    task,
                    reason,
                }) => {
                    if let AckOutcome::Failed { epoch, reason } = tracker.fail(epoch, reason) {
                        in_flight = None;
                        self.failed(epoch, &format!("task {task}: {reason}"));
                        force_full = true;
                    }
                }
                Ok(Event::SourceExhausted { task, stopped }) => {
                    exhausted.insert(task);
                    any_stopped |= stopped;
                }
                Ok(Event::WantCheckpoint) => wanted = true,
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return,
            }
            let now = Instant::now();
            if let (Some(t), Some(i)) = (next_tick, self.settings.interval) {
                if now >= t {
                    wanted = true;
                    next_tick = Some(now + i);
                }
            }
            if in_flight.is_none() && !finishing {
                let last = !self.sources.is_empty() && exhausted == self.sources;
                if wanted || last {
                    let full = force_full
                        || snapshot_kind(since_full, self.settings.full_every)
                            == SnapshotKind::Full;
                    since_full = if full { 1 } else { since_full + 1 };
                    in_flight = self.trigger(&mut tracker, full, last, last && !any_stopped);
                    wanted = false;
                    finishing = last && in_flight.is_some();
                    if in_flight.is_none() {
                        force_full = true;
                    }
                }
            }
            self.warn_if_stale(started, last_complete, &mut last_warning);
        }
    }

    /// The manifest entry of one operator's contribution: its file appended to its chain.
    fn operator_state(&self, s: OpState, epoch: Epoch) -> (String, OperatorState) {
        let files = match s.file {
            None => Vec::new(),
            Some((kind, file)) => {
                let mut chain = match kind {
                    SnapshotKind::Full => Vec::new(),
                    SnapshotKind::Changes => self
                        .last
                        .as_ref()
                        .and_then(|m| m.operators.get(&s.name))
                        .map(|o| o.files.clone())
                        .unwrap_or_default(),
                };
                chain.push(StateFileRef {
                    epoch: epoch.0,
                    file,
                });
                chain
            }
        };
        (
            s.name,
            OperatorState {
                inline: s.inline,
                files,
            },
        )
    }

    /// Starts checkpoint `next_epoch`: creates its directory and injects its barrier at
    /// every source. `None` if it could not start (reported, and the next one is full).
    fn trigger(
        &mut self,
        tracker: &mut AckTracker,
        full: bool,
        last: bool,
        finished: bool,
    ) -> Option<InFlight> {
        let epoch = Epoch(self.next_epoch);
        self.next_epoch += 1;
        if let Err(e) = self.store.begin(epoch) {
            self.failed(epoch, &e.to_string());
            return None;
        }
        tracker.begin(epoch, self.tasks.keys().copied());
        self.counters.started();
        for t in &self.sources {
            if let Some(tx) = self.tasks.get(t) {
                let cmd = if last {
                    Command::Finish { epoch, full }
                } else {
                    Command::Inject { epoch, full }
                };
                // A source that has stopped (the query is failing) no longer listens.
                let _ = tx.send(cmd);
            }
        }
        info!(epoch = epoch.0, full, last, "checkpoint started");
        Some(InFlight {
            epoch,
            full,
            last,
            finished,
            operators: BTreeMap::new(),
            files: Vec::new(),
        })
    }

    /// Every task acknowledged: writes the manifest, commits the sinks, applies retention.
    fn complete(&mut self, f: InFlight) -> Result<(), String> {
        self.faults
            .checkpoint_write(f.epoch)
            .map_err(|e| format!("writing the manifest: {e}"))?;
        let manifest = Manifest {
            format: MANIFEST_FORMAT,
            epoch: f.epoch.0,
            created_unix_ms: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_millis() as u64)
                .unwrap_or(0),
            finished: f.finished,
            plan: self.plan.clone(),
            files: f.files,
            operators: f.operators,
        };
        self.store.complete(&manifest).map_err(|e| e.to_string())?;
        self.counters.completed(f.epoch);
        info!(
            epoch = f.epoch.0,
            full = f.full,
            last = f.last,
            finished = f.finished,
            "checkpoint complete"
        );
        for tx in self.tasks.values() {
            let _ = tx.send(Command::Commit(f.epoch));
        }
        self.last = Some(manifest);
        if let Err(e) = self.store.retain(self.settings.keep) {
            warn!(error = %e, "cannot delete old checkpoints");
        }
        Ok(())
    }

    fn failed(&mut self, epoch: Epoch, reason: &str) {
        self.counters.failed();
        warn!(
            epoch = epoch.0,
            reason, "checkpoint failed; the query goes on and the previous checkpoint stays intact"
        );
        if let Err(e) = self.store.delete(epoch) {
            warn!(epoch = epoch.0, error = %e, "cannot remove the failed checkpoint's files");
        }
    }

    fn warn_if_stale(
        &self,
        started: Instant,
        last: Option<Instant>,
        last_warning: &mut Option<Instant>,
    ) {
        let threshold = self.settings.warn_after;
        let now = Instant::now();
        let ms = |i: Instant| i.duration_since(started).as_millis() as u64;
        if is_stale(ms(now), last.map(ms), 0, threshold.as_millis() as u64)
            && last_warning.is_none_or(|w| now.duration_since(w) >= threshold)
        {
            let age = now.duration_since(last.unwrap_or(started));
            self.counters.stale();
            warn!(
                age_s = age.as_secs(),
                threshold_s = threshold.as_secs(),
                "the last complete checkpoint is older than the threshold: a failure now would replay that much input"
            );
            *last_warning = Some(now);
        }
    }
}
