//! A checkpoint's manifest that lacks the entry of an operator instance its query had (a
//! damaged or hand-edited manifest whose checksum still holds) must not restore that
//! operator empty — a source would read its input again from the start, a window would lose
//! its open windows — but refuse, naming the checkpoint, its manifest and the instance.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use anduin_checkpoint::{Store, Validated};
use anduin_operator_api::BuildContext;
use anduin_registry::BuiltinCatalog;
use anduin_runtime::{run, CheckpointSettings, Checkpointing, Faults, RunConfig, RunSummary};
use anduin_types::Epoch;

const QUERY: &str = r#"
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

/// Runs the query, asked to stop from the start, from `restore` if given.
fn stopped_run(
    dir: &std::path::Path,
    restore: Option<Validated>,
) -> Result<RunSummary, anduin_runtime::RuntimeError> {
    let spec = anduin_spec::parse_flow(QUERY).expect("parses");
    let (graph, _) = anduin_graph::check(&spec, &BuiltinCatalog).expect("checks");
    let config = RunConfig {
        stop: Arc::new(AtomicBool::new(true)),
        checkpointing: Some(Checkpointing {
            settings: CheckpointSettings {
                dir: dir.to_path_buf(),
                interval: None,
                every_rows: None,
                keep: 3,
                full_every: 5,
                warn_after: Duration::from_secs(3600),
            },
            restore,
            faults: Faults::default(),
        }),
        ..RunConfig::default()
    };
    let ctx = BuildContext {
        checkpointing: true,
        ..BuildContext::default()
    };
    run(&graph, &config, &ctx)
}

#[test]
fn a_manifest_without_an_operators_state_is_refused_not_restored_empty() {
    let dir = tempfile::tempdir().expect("tempdir");
    stopped_run(dir.path(), None).expect("the first run stops cleanly");

    let store = Store::open(dir.path()).expect("store");
    let mut manifest = store
        .manifest(Epoch(1))
        .expect("reads")
        .expect("a stop takes checkpoint 1");
    assert!(
        manifest.operators.remove("events").is_some(),
        "the generator's position is in the checkpoint: {:?}",
        manifest.operators.keys()
    );
    store.complete(&manifest).expect("rewrites the manifest");
    let (_, restore) = store.choose_restore().expect("lists");
    let restore = restore.expect("the manifest still validates");

    let e = stopped_run(dir.path(), Some(restore)).expect_err("must not restore it empty");
    let message = e.to_string();
    for part in [
        "checkpoint 1",
        "MANIFEST.json",
        "\"events\"",
        "--from-scratch",
    ] {
        assert!(message.contains(part), "{part:?} not in: {message}");
    }
}
