//! Issue 11, item 4: a run that resumes from a checkpoint says so as a typed event,
//! `RestoreChosen` with the checkpoint's epoch, before any task starts; a run from the
//! beginning does not. A generator stopped as soon as it starts takes one last checkpoint
//! (epoch 1, its position); the next run resumes from it and takes epoch 2.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anduin_checkpoint::{Store, Validated};
use anduin_operator_api::BuildContext;
use anduin_runtime::{run, EngineEvent, Events, Recorded, RunConfig};

use crate::common;
use common::completed;

/// Runs the query, asked to stop from the start, from `restore` if given; returns its events.
fn stopped_run(dir: &std::path::Path, restore: Option<Validated>) -> Vec<EngineEvent> {
    let graph = common::graph(common::SLOW_EVENTS);
    let recorded = Arc::new(Recorded::default());
    let config = RunConfig {
        stop: Arc::new(AtomicBool::new(true)),
        events: Events::default()
            .with(Arc::clone(&recorded) as Arc<dyn anduin_runtime::Subscriber>),
        checkpointing: Some(common::checkpointing(dir, None, restore)),
        ..RunConfig::default()
    };
    let ctx = BuildContext {
        checkpointing: true,
        ..BuildContext::default()
    };
    let summary = run(&graph, &config, &ctx).expect("the run stops cleanly");
    assert!(summary.stopped);
    recorded.events()
}

fn restores(events: &[EngineEvent]) -> Vec<(u64, usize)> {
    events
        .iter()
        .filter_map(|e| match e {
            EngineEvent::RestoreChosen { epoch, states } => Some((*epoch, *states)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_resumed_run_publishes_the_checkpoint_it_restores() {
    let dir = tempfile::tempdir().expect("tempdir");

    let first = stopped_run(dir.path(), None);
    assert_eq!(
        restores(&first),
        [],
        "a run from the beginning restores nothing"
    );
    assert_eq!(completed(&first), [1], "a stop takes a last checkpoint");

    let (_, restore) = Store::open(dir.path())
        .expect("store")
        .choose_restore()
        .expect("lists");
    let restore = restore.expect("checkpoint 1 is usable");
    assert_eq!(restore.manifest.epoch, 1);
    let states = restore.manifest.operators.len();
    assert!(states >= 1, "the generator's position is in it");

    let second = stopped_run(dir.path(), Some(restore));
    assert_eq!(restores(&second), [(1, states)]);
    assert!(
        matches!(second.first(), Some(EngineEvent::RestoreChosen { .. })),
        "the restore is chosen before any task starts: {second:?}"
    );
    assert_eq!(
        completed(&second),
        [2],
        "the resumed run goes on from epoch 2"
    );
}
