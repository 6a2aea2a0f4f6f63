//! What the runtime's scenario tests share: a slow generated query and its checkpoint
//! settings; gated sensor readings and a committing sink (`readings`). Each test uses a part
//! of it.
#![allow(dead_code)]

pub mod readings;

use std::path::Path;
use std::time::Duration;

use anduin_checkpoint::Validated;
use anduin_graph::LogicalGraph;
use anduin_operator_api::Bound;
use anduin_registry::BuiltinCatalog;
use anduin_runtime::{CheckpointSettings, Checkpointing, EngineEvent, Faults};

/// Rows forever, slowly (2 000 a second), through a filter into a discard.
pub const SLOW_EVENTS: &str = r#"
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "events", type = "generator" {
  param profile = "events"
  param rate = 2000
  output name = "events", type = "Event"
}
operator name = "low", type = "filter" {
  input name = "events"
  param condition = "value < 42"
  output name = "low", type = "Event"
}
operator name = "drop", type = "discard" {
  input name = "low"
}
"#;

/// `src` (a `.flow` query) checked into a graph.
pub fn graph(src: &str) -> LogicalGraph<Bound> {
    let spec = anduin_spec::parse_flow(src).expect("parses");
    anduin_graph::check(&spec, &BuiltinCatalog)
        .expect("checks")
        .0
}

/// Checkpoints into `dir` every `interval` (none: only the last one, at a stop), resuming
/// from `restore`.
pub fn checkpointing(
    dir: &Path,
    interval: Option<Duration>,
    restore: Option<Validated>,
) -> Checkpointing {
    Checkpointing {
        settings: CheckpointSettings {
            dir: dir.to_path_buf(),
            store: None,
            interval,
            every_rows: None,
            keep: 3,
            full_every: 5,
            warn_after: Duration::from_secs(3600),
            timeout: None,
        },
        restore,
        commit_only: false,
        faults: Faults::default(),
        remote: None,
    }
}

/// The epochs of the checkpoints `events` say completed.
pub fn completed(events: &[EngineEvent]) -> Vec<u64> {
    events
        .iter()
        .filter_map(|e| match e {
            EngineEvent::CheckpointCompleted { epoch, .. } => Some(*epoch),
            _ => None,
        })
        .collect()
}
