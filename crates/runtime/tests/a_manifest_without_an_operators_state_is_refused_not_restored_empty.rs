//! A checkpoint's manifest that lacks the entry of an operator instance its query had (a
//! damaged or hand-edited manifest whose checksum still holds) must not restore that
//! operator empty — a source would read its input again from the start, a window would lose
//! its open windows — but refuse, naming the checkpoint, its manifest and the instance.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anduin_checkpoint::{Store, Validated};

use crate::common;
use anduin_operator_api::BuildContext;
use anduin_runtime::{run, RunConfig, RunSummary};
use anduin_types::Epoch;

/// Runs the query, asked to stop from the start, from `restore` if given.
fn stopped_run(
    dir: &std::path::Path,
    restore: Option<Validated>,
) -> Result<RunSummary, anduin_runtime::RuntimeError> {
    let graph = common::graph(common::SLOW_EVENTS);
    let config = RunConfig {
        stop: Arc::new(AtomicBool::new(true)),
        checkpointing: Some(common::checkpointing(dir, None, restore)),
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
