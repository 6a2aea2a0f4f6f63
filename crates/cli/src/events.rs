//! `anduin run --events FILE`: the run's engine events as JSON lines (one object per line,
//! `{"event":"checkpoint_completed","epoch":3,"finished":false}`), for scripts and tests that
//! wait for a checkpoint. Most are written as they happen; `late_rows` and `rejected` once, as
//! the run ends. `--events -` writes them to stderr (stdout may carry the query's output).
//!
//! The file is checked against everything else the run reads and writes
//! ([`crate::preflight::check_events_file`]) and locked as an output ([`crate::locks`]) before
//! it is opened here. An events file that cannot be written stops the run at its first failed
//! write: a script waiting for an event that never comes would otherwise wait forever, and a
//! run that goes on without the events it was asked for is a silent wrong answer.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use anduin_runtime::{EngineEvent, Events, Subscriber};
use anyhow::{anyhow, Context, Result};

/// Where the events go, and the first write that failed.
struct Sink {
    out: Box<dyn Write + Send>,
    failed: Option<std::io::Error>,
}

/// Writes each event as a JSON line; at the first failed write, stops the run and writes no
/// more.
struct JsonLines {
    sink: Mutex<Sink>,
    stop: Arc<AtomicBool>,
}

impl Subscriber for JsonLines {
    fn event(&self, event: &EngineEvent) {
        let Ok(mut sink) = self.sink.lock() else {
            return;
        };
        if sink.failed.is_some() {
            return;
        }
        let mut line = match serde_json::to_string(event) {
            Ok(l) => l,
            Err(e) => {
                sink.failed = Some(std::io::Error::other(e));
                self.stop.store(true, Ordering::SeqCst);
                return;
            }
        };
        line.push('\n');
        // One write per line, so that a reader never sees half an event from a run that
        // is still going.
        if let Err(e) = sink.out.write_all(line.as_bytes()) {
            tracing::debug!(error = %e, "cannot write an event: stopping the run");
            sink.failed = Some(e);
            self.stop.store(true, Ordering::SeqCst);
        }
    }
}

/// The run's subscribers, and the events file among them.
pub struct RunEvents {
    /// For the runtime.
    pub events: Events,
    file: Option<(PathBuf, Arc<JsonLines>)>,
}

impl RunEvents {
    /// Why the events file could not be written, naming it, if a write failed.
    pub fn failure(&self) -> Option<anyhow::Error> {
        let (path, lines) = self.file.as_ref()?;
        let sink = lines.sink.lock().ok()?;
        let e = sink.failed.as_ref()?;
        let name = if path == Path::new("-") {
            "the events (`--events -`) to stderr".to_string()
        } else {
            format!("the events file `{}`", path.display())
        };
        Some(anyhow!(
            "cannot write {name}: {e}; the run was stopped at the first event it could not write (everything read until then was processed and written; with --checkpoint-store, the next run resumes from the last checkpoint)"
        ))
    }
}

/// The run's subscribers: the log, and `path` if given (`-` is stderr, since stdout may
/// carry the query's output). The file is created or emptied: call this once it is checked
/// and locked. A failed write to it sets `stop`.
pub fn open(path: Option<&Path>, stop: Arc<AtomicBool>) -> Result<RunEvents> {
    let events = Events::logged();
    let Some(path) = path else {
        return Ok(RunEvents { events, file: None });
    };
    let out: Box<dyn Write + Send> = if path == Path::new("-") {
        Box::new(std::io::stderr())
    } else {
        Box::new(
            File::create(path)
                .with_context(|| format!("cannot create the events file `{}`", path.display()))?,
        )
    };
    let lines = Arc::new(JsonLines {
        sink: Mutex::new(Sink { out, failed: None }),
        stop,
    });
    Ok(RunEvents {
        events: events.with(Arc::clone(&lines) as Arc<dyn Subscriber>),
        file: Some((path.to_path_buf(), lines)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One of each event, as docs/cli.md lists them: adding an event means adding it here,
    /// and the test then says whether the docs name it and its fields.
    fn every_event() -> Vec<EngineEvent> {
        vec![
            EngineEvent::CheckpointStarted {
                epoch: 1,
                full: true,
                last: false,
            },
            EngineEvent::CheckpointCompleted {
                epoch: 1,
                finished: false,
            },
            EngineEvent::CheckpointFailed {
                epoch: 2,
                reason: "disk full".into(),
            },
            EngineEvent::CheckpointExpired {
                epoch: 2,
                waiting: vec![1, 3],
            },
            EngineEvent::CheckpointStale { age_ms: 61_000 },
            EngineEvent::RestoreChosen {
                epoch: 1,
                states: 3,
            },
            EngineEvent::TaskStarted {
                task: 0,
                name: "src".into(),
            },
            EngineEvent::TaskFinished {
                task: 0,
                name: "src".into(),
            },
            EngineEvent::TaskFailed {
                task: 0,
                name: "src".into(),
                error: "boom".into(),
                own: true,
            },
            EngineEvent::EdgeFailed {
                edge: "channel 4 (m -> out, port 0)".into(),
                error: "the consumer refused the edge: enough".into(),
            },
            EngineEvent::ParamChanged {
                operator: "w".into(),
                param: "parallelism".into(),
                old: "2".into(),
                new: "4".into(),
                epoch: 7,
                from: "ctl".into(),
            },
            EngineEvent::LateRows {
                operator: "w".into(),
                rows: 4,
            },
            EngineEvent::Rejected {
                records: 1,
                rows: 2,
            },
        ]
    }

    #[test]
    fn the_docs_name_every_event_and_its_fields() {
        let docs = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/cli.md"),
        )
        .expect("docs/cli.md");
        let row = docs
            .lines()
            .find(|l| l.starts_with("| `--events FILE`"))
            .expect("docs/cli.md has a row for --events");
        for event in every_event() {
            let json = serde_json::to_value(&event).expect("an event is JSON");
            let object = json.as_object().expect("an object");
            let name = object["event"].as_str().expect("a name");
            let mut fields: Vec<&str> = object
                .keys()
                .map(String::as_str)
                .filter(|k| *k != "event")
                .collect();
            fields.sort_unstable();
            let listed = row
                .split_once(&format!("`{name}` ("))
                .and_then(|(_, rest)| rest.split_once(')'))
                .map(|(inside, _)| {
                    let mut names: Vec<&str> =
                        inside.split(", ").map(|f| f.trim_matches('`')).collect();
                    names.sort_unstable();
                    names
                });
            assert_eq!(
                listed,
                Some(fields),
                "docs/cli.md's --events row lists `{name}` and its fields as they are"
            );
        }
    }

    #[test]
    fn a_failed_write_stops_the_run_once_and_later_events_are_not_written() {
        struct Full(Arc<Mutex<usize>>);
        impl Write for Full {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                *self.0.lock().expect("count") += 1;
                Err(std::io::Error::from_raw_os_error(28))
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let writes = Arc::new(Mutex::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let lines = Arc::new(JsonLines {
            sink: Mutex::new(Sink {
                out: Box::new(Full(Arc::clone(&writes))),
                failed: None,
            }),
            stop: Arc::clone(&stop),
        });
        let run = RunEvents {
            events: Events::default().with(Arc::clone(&lines) as Arc<dyn Subscriber>),
            file: Some((PathBuf::from("/dev/full"), lines)),
        };
        assert!(run.failure().is_none());
        for e in every_event() {
            run.events.publish(e);
        }
        assert!(stop.load(Ordering::SeqCst));
        assert_eq!(*writes.lock().expect("count"), 1, "one write tried");
        let message = format!("{:#}", run.failure().expect("a failure"));
        assert!(
            message.starts_with("cannot write the events file `/dev/full`: "),
            "{message}"
        );
    }
}
