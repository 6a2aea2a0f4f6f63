//! The committer: makes tasks' snapshot files durable (fsync, rename) off the data path, then
//! acknowledges their share of the checkpoint to the coordinator.

use std::sync::Arc;

use anduin_operator_api::DeadLetter;
use crossbeam_channel::{Receiver, Sender};
use tracing::debug;

use crate::faults::Faults;
use crate::protocol::{Event, OpState, WriteJob};

/// Runs until every task has dropped its sender.
/// Rejects (malformed records, rejected rows) are made durable before each acknowledgement:
/// those written before the task's barrier are in `dead_letter` by then.
pub(crate) fn run_committer(
    jobs: Receiver<WriteJob>,
    events: Sender<Event>,
    faults: Faults,
    dead_letter: Arc<DeadLetter>,
) {
    for job in jobs {
        let WriteJob {
            epoch,
            task,
            snapshots,
            failure,
        } = job;
        if let Some(reason) = failure {
            // Dropping the snapshots removes their files.
            drop(snapshots);
            if events
                .send(Event::Failed {
                    epoch,
                    task,
                    reason,
                })
                .is_err()
            {
                return;
            }
            continue;
        }
        let mut states = Vec::with_capacity(snapshots.len());
        let mut files = Vec::new();
        let mut failure = None;
        for s in snapshots {
            let file = match s.file {
                None => None,
                Some((kind, f)) => {
                    if failure.is_some() {
                        f.abandon();
                        continue;
                    }
                    let committed = match faults.checkpoint_write(epoch) {
                        Err(e) => {
                            f.abandon();
                            Err(e.to_string())
                        }
                        Ok(()) => f.commit().map_err(|e| e.to_string()),
                    };
                    match committed {
                        Ok(entry) => {
                            let name = entry.name.clone();
                            files.push(entry);
                            Some((kind, name))
                        }
                        Err(e) => {
                            failure = Some(format!("operator \"{}\": {e}", s.name));
                            continue;
                        }
                    }
                }
            };
            states.push(OpState {
                name: s.name,
                inline: s.inline,
                file,
            });
        }
        if failure.is_none() && dead_letter.count() > 0 {
            if let Err(e) = dead_letter.sync() {
                failure = Some(format!("cannot make the dead-letter file durable: {e}"));
            }
        }
        let event = match failure {
            Some(reason) => Event::Failed {
                epoch,
                task,
                reason,
            },
            None => Event::Ack {
                epoch,
                task,
                states,
                files,
            },
        };
        debug!(epoch = epoch.0, task, "snapshot durable");
        if events.send(event).is_err() {
            return;
        }
    }
}
