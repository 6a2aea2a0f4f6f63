//! The typed events of the queries' lives ([`LifeEvent`]: every state transition, per-task
//! recoveries, whole-query rollbacks, checkpoints given up), appended as JSON lines to
//! `STATE_DIR/events.jsonl` as the coordinator feeds its queries' lives, for tools and tests
//! that follow what the coordinator decided:
//!
//! ```text
//! {"at_ms":1767000000000,"query":"q","event":"transition","from":"running","to":{"state":"checkpointing","epoch":3}}
//! ```
//!
//! A coordinator that a fence refused (a later leader superseded it: its catalog edit's place
//! was taken in the object store, or its checkpoint commit found a later leader's mark) says
//! so before it steps down, in a line of its own, with no query:
//!
//! ```text
//! {"at_ms":1767000000000,"event":"refused_by_fence","act":"catalog edit","term":3,"why":"edit 41 of the catalog at s3://… was written by another coordinator first: …"}
//! ```
//!
//! The file is opened for appending by every coordinator on the state directory (a restarted
//! one goes on after the lines of the one before). A line that cannot be written is logged and
//! skipped: the events are a record for observers, the catalog is what the coordinator
//! restarts from.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anduin_coordinator::life::LifeEvent;
use serde::Serialize;

/// The name of the events file in the coordinator's state directory.
pub const EVENTS_FILE: &str = "events.jsonl";

/// One line of the events file.
#[derive(Serialize)]
struct Line<'a> {
    /// When, in milliseconds since the Unix epoch.
    at_ms: u128,
    /// The query.
    query: &'a str,
    #[serde(flatten)]
    event: &'a LifeEvent,
}

/// The line of an act a fence refused.
#[derive(Serialize)]
struct Refused<'a> {
    at_ms: u128,
    event: &'static str,
    act: &'a str,
    term: Option<u64>,
    why: &'a str,
}

/// Milliseconds since the Unix epoch.
fn now_ms() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
}

/// The events file of a coordinator.
pub struct LifeEvents {
    path: PathBuf,
    file: Mutex<Option<File>>,
}

impl LifeEvents {
    /// The events file in `state_dir`, opened for appending (created if missing). A file that
    /// cannot be opened is said once; the coordinator runs on without it.
    pub fn open(state_dir: &Path) -> Self {
        let path = state_dir.join(EVENTS_FILE);
        let file = match OpenOptions::new().create(true).append(true).open(&path) {
            Ok(f) => Some(f),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "cannot open the events file: the queries' life events go only to the log");
                None
            }
        };
        Self {
            path,
            file: Mutex::new(file),
        }
    }

    /// Appends `event` of query `query`, one JSON line, written whole.
    pub fn append(&self, query: &str, event: &LifeEvent) {
        self.write(&Line {
            at_ms: now_ms(),
            query,
            event,
        });
    }

    /// Appends that a fence refused `act` of this coordinator, the leader of `term`, and
    /// why (a later leader superseded it).
    pub fn refused(&self, act: &str, term: Option<u64>, why: &str) {
        self.write(&Refused {
            at_ms: now_ms(),
            event: "refused_by_fence",
            act,
            term,
            why,
        });
    }

    /// Appends `line`, one JSON line, written whole.
    fn write(&self, line: &impl Serialize) {
        let mut line = match serde_json::to_vec(line) {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!(error = %e, "cannot encode an event");
                return;
            }
        };
        line.push(b'\n');
        let mut file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(f) = file.as_mut() {
            if let Err(e) = f.write_all(&line) {
                tracing::warn!(path = %self.path.display(), error = %e, "cannot append to the events file");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use anduin_types::Epoch;

    #[test]
    fn each_event_is_one_json_line_naming_its_query() {
        let dir = tempfile::tempdir().expect("tempdir");
        let events = LifeEvents::open(dir.path());
        events.append(
            "q",
            &LifeEvent::CheckpointAborted {
                epoch: Epoch(3),
                why: "a task failed".into(),
            },
        );
        drop(events);
        // A coordinator started again appends after it.
        let events = LifeEvents::open(dir.path());
        events.append(
            "q",
            &LifeEvent::WholeQueryRollback {
                to: Some(Epoch(2)),
                why: "per-task recovery is off".into(),
            },
        );
        let text = std::fs::read_to_string(dir.path().join(EVENTS_FILE)).expect("written");
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(lines
            .iter()
            .all(|l| l["query"] == "q" && l["at_ms"].is_u64()));
        assert_eq!(
            lines.first().map(|l| &l["event"]),
            Some(&"checkpoint_aborted".into())
        );
        assert_eq!(lines.last().map(|l| &l["to"]), Some(&2.into()));
    }

    #[test]
    fn an_act_a_fence_refused_is_a_line_with_its_term_and_no_query() {
        let dir = tempfile::tempdir().expect("tempdir");
        let events = LifeEvents::open(dir.path());
        events.refused(
            "catalog edit",
            Some(3),
            "edit 41 was written by another coordinator",
        );
        let text = std::fs::read_to_string(dir.path().join(EVENTS_FILE)).expect("written");
        let line: serde_json::Value = serde_json::from_str(text.trim()).expect("a JSON line");
        assert_eq!(line["event"], "refused_by_fence");
        assert_eq!(line["act"], "catalog edit");
        assert_eq!(line["term"], 3);
        assert!(line["why"].as_str().is_some_and(|w| w.contains("edit 41")));
        assert!(line.get("query").is_none());
    }
}
