//! Issue 11, items 3 and 4: the engine reads the time from the clock it is given, and tells
//! what happens as typed events. On a manual clock, a checkpoint whose interval is ten seconds
//! comes when the test moves the clock ten seconds, not before the real ten seconds would
//! have passed; each is published as started and completed (the first full, the next a
//! changelog), and a stop ends with a last checkpoint and every task finished.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anduin_checkpoint::Store;
use anduin_operator_api::BuildContext;
use anduin_runtime::{run, EngineEvent, Events, Recorded, RunConfig};
use anduin_types::ManualClock;

use crate::common;
use common::completed;

/// Polls until `what` holds; gives up after a minute (the awaited event never came).
fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !condition() {
        assert!(
            std::time::Instant::now() < deadline,
            "gave up waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn checkpoints_follow_the_injected_clock_and_are_published_as_events() {
    let graph = common::graph(common::SLOW_EVENTS);
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = Arc::new(ManualClock::new());
    let recorded = Arc::new(Recorded::default());
    let stop = Arc::new(AtomicBool::new(false));
    let config = RunConfig {
        stop: Arc::clone(&stop),
        clock: Arc::clone(&clock) as anduin_types::SharedClock,
        events: Events::default()
            .with(Arc::clone(&recorded) as Arc<dyn anduin_runtime::Subscriber>),
        checkpointing: Some(common::checkpointing(
            dir.path(),
            Some(Duration::from_secs(10)),
            None,
        )),
        ..RunConfig::default()
    };
    let ctx = BuildContext {
        checkpointing: true,
        ..BuildContext::default()
    };
    let runner = std::thread::spawn(move || run(&graph, &config, &ctx));

    wait_until("every task to start", || {
        recorded
            .events()
            .iter()
            .filter(|e| matches!(e, EngineEvent::TaskStarted { .. }))
            .count()
            == 1
    });
    for epoch in 1..=2u64 {
        assert_eq!(
            completed(&recorded.events()).len() as u64,
            epoch - 1,
            "no checkpoint before the clock moves"
        );
        clock.advance(Duration::from_secs(10));
        wait_until("the checkpoint the clock made due", || {
            completed(&recorded.events()).contains(&epoch)
        });
    }
    stop.store(true, Ordering::Relaxed);
    let summary = runner
        .join()
        .expect("the run does not panic")
        .expect("the run stops cleanly");
    assert!(summary.stopped);

    let events = recorded.events();
    let checkpoints: Vec<&EngineEvent> = events
        .iter()
        .filter(|e| {
            matches!(
                e,
                EngineEvent::CheckpointStarted { .. } | EngineEvent::CheckpointCompleted { .. }
            )
        })
        .collect();
    assert_eq!(
        checkpoints,
        vec![
            &EngineEvent::CheckpointStarted {
                epoch: 1,
                full: true,
                last: false
            },
            &EngineEvent::CheckpointCompleted {
                epoch: 1,
                finished: false
            },
            &EngineEvent::CheckpointStarted {
                epoch: 2,
                full: false,
                last: false
            },
            &EngineEvent::CheckpointCompleted {
                epoch: 2,
                finished: false
            },
            &EngineEvent::CheckpointStarted {
                epoch: 3,
                full: false,
                last: true
            },
            &EngineEvent::CheckpointCompleted {
                epoch: 3,
                finished: false
            },
        ]
    );
    assert!(events
        .iter()
        .any(|e| matches!(e, EngineEvent::TaskFinished { .. })));
    assert!(!events
        .iter()
        .any(|e| matches!(e, EngineEvent::TaskFailed { .. })));
    let (_, restore) = Store::open(dir.path())
        .expect("store")
        .choose_restore()
        .expect("lists");
    assert_eq!(restore.expect("a checkpoint").manifest.epoch, 3);
}
