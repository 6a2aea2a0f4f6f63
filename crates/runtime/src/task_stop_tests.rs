//! A task of two inputs whose producers stop (a SIGTERM with checkpoints: no watermark of
//! +∞, then the end): the end of one does not let the other's event time carry the task's
//! past the stopped one's (probe41 H3). A finished producer's end does.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anduin_operator_api::{Collector, Operator, OperatorError};
use anduin_types::{Message, Watermark};
use arrow::datatypes::Schema;
use arrow::record_batch::RecordBatch;
use crossbeam_channel::Sender;

use super::{Inlet, OperatorTask};
use crate::chain::{Chain, Link};
use crate::channel::Envelope;

type Log = Arc<Mutex<Vec<String>>>;

/// Logs the watermarks and batches it is given.
struct Watcher {
    log: Log,
}

impl Operator for Watcher {
    fn name(&self) -> &str {
        "window"
    }

    fn process_batch(
        &mut self,
        _input: usize,
        _batch: RecordBatch,
        _out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        self.log.lock().expect("not poisoned").push("batch".into());
        Ok(())
    }

    fn handle_watermark(
        &mut self,
        watermark: Watermark,
        _out: &mut dyn Collector,
    ) -> Result<Option<Watermark>, OperatorError> {
        let entry = format!("watermark {}", watermark.0);
        self.log.lock().expect("not poisoned").push(entry);
        Ok(None)
    }
}

/// Polls `done` until it holds (a minute at most: reaching it means it never came).
fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Input A sends `a` (its last watermark, or +∞ then its end), input B stays open at 5000:
/// the watermarks the task's operator saw, once A's end was taken and a batch of B's after it.
fn watermarks_after_a_ends(a_finished: bool) -> Vec<String> {
    let log: Log = Arc::default();
    let (tx_a, rx_a) = crossbeam_channel::unbounded();
    let (tx_b, rx_b) = crossbeam_channel::unbounded();
    let op = Watcher {
        log: Arc::clone(&log),
    };
    let task = OperatorTask {
        name: "window".into(),
        inlets: vec![Inlet::new(rx_a, 0), Inlet::new(rx_b, 0)],
        chain: Chain::new(vec![Link::for_test(0, Box::new(op), Vec::new())], None),
        checkpointing: None,
        idle: false,
        stage: None,
        last_checkpoint: None,
        growth: None,
    };
    let running = std::thread::spawn(move || task.run());
    let send = |tx: &Sender<Envelope>, seq, msg| tx.send(Envelope { seq, msg }).expect("open");
    send(&tx_b, 1, Message::Watermark(Watermark(5000)));
    send(&tx_a, 1, Message::Watermark(Watermark(1000)));
    wait_for("both inputs' watermarks", || {
        log.lock()
            .expect("not poisoned")
            .contains(&"watermark 1000".to_string())
    });
    let mut seq = 2;
    if a_finished {
        send(&tx_a, seq, Message::Watermark(Watermark::MAX));
        seq += 1;
    }
    send(&tx_a, seq, Message::End);
    wait_for("A's end to be taken", || tx_a.is_empty());
    // Taken by the task's one thread after A's end: once it is seen, A's end was handled.
    let batch = RecordBatch::new_empty(Arc::new(Schema::empty()));
    send(&tx_b, 2, Message::Data(batch));
    wait_for("B's batch", || {
        log.lock()
            .expect("not poisoned")
            .contains(&"batch".to_string())
    });
    let seen = log.lock().expect("not poisoned").clone();
    send(&tx_b, 3, Message::End);
    running
        .join()
        .expect("the task ends")
        .expect("without failing");
    seen.into_iter()
        .filter(|e| e.starts_with("watermark"))
        .collect()
}

#[test]
fn the_end_of_a_stopped_input_leaves_the_task_s_event_time_at_that_input_s() {
    assert_eq!(watermarks_after_a_ends(false), ["watermark 1000"]);
}

#[test]
fn the_end_of_a_finished_input_lets_the_others_carry_the_task_s_event_time() {
    assert_eq!(
        watermarks_after_a_ends(true),
        ["watermark 1000", "watermark 5000"]
    );
}

/// What a chain of one operator sends on its outlet at the end of its input, retired or not.
fn sent_at_the_end(retired: bool) -> Vec<String> {
    let (outlet, rx) = crate::channel::channel(16);
    let route = crate::channel::Route::InTurn(crate::channel::InTurnRoute::new(vec![outlet]));
    let op = Watcher {
        log: Arc::default(),
    };
    let mut chain = Chain::new(
        vec![Link::for_test(0, Box::new(op), vec![vec![route]])],
        None,
    );
    if retired {
        chain.retire();
    }
    chain.end_of_input().expect("ends");
    rx.try_iter()
        .map(|e| match e.msg {
            Message::Watermark(w) if w == Watermark::MAX => "+∞".to_string(),
            Message::End => "end".to_string(),
            other => format!("{other:?}"),
        })
        .collect()
}

/// A stopped instance ends without +∞ (its consumers hold their event time at its last
/// watermark, above); one retired at a scale-down sends +∞ first: it holds no key group
/// and sends no row again, and its consumers' event time must go on without it.
#[test]
fn a_retired_instance_completes_its_event_time_before_its_end_and_a_stopped_one_does_not() {
    assert_eq!(sent_at_the_end(false), ["end"]);
    assert_eq!(sent_at_the_end(true), ["+∞", "end"]);
}
