//! A chain told that its head's inputs are exhausted: each operator in turn hears of it while
//! the one before says that its output is exhausted too, and the consumers of each such
//! operator get `Message::Exhausted`.

use std::sync::{Arc, Mutex};

use anduin_operator_api::{Collector, Operator, OperatorError};
use anduin_types::Message;
use arrow::record_batch::RecordBatch;
use crossbeam_channel::Receiver;

use super::{Chain, Link};
use crate::channel::{channel, Envelope, Route};

type Log = Arc<Mutex<Vec<String>>>;

/// Logs each input it hears is exhausted; says its output is exhausted once they are if
/// `passes`.
struct Ending {
    name: &'static str,
    passes: bool,
    log: Log,
}

impl Operator for Ending {
    fn name(&self) -> &str {
        self.name
    }

    fn process_batch(
        &mut self,
        _input: usize,
        _batch: RecordBatch,
        _out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        Ok(())
    }

    fn on_input_exhausted(
        &mut self,
        input: usize,
        _out: &mut dyn Collector,
    ) -> Result<bool, OperatorError> {
        let entry = format!("{} {input}", self.name);
        self.log.lock().expect("not poisoned").push(entry);
        Ok(self.passes)
    }
}

/// A link of `op` with one outlet, and what that outlet receives.
fn link(index: usize, op: Ending) -> (Link, Receiver<Envelope>) {
    let (outlet, rx) = channel(8);
    let link = Link::for_test(index, Box::new(op), vec![vec![Route::One(outlet)]]);
    (link, rx)
}

fn exhausted(rx: &Receiver<Envelope>) -> usize {
    rx.try_iter()
        .filter(|e| matches!(e.msg, Message::Exhausted))
        .count()
}

#[test]
fn exhaustion_goes_down_a_chain_while_each_operator_says_its_output_is_exhausted_too() {
    let log: Log = Arc::default();
    let op = |name, passes| Ending {
        name,
        passes,
        log: Arc::clone(&log),
    };
    let (head, head_rx) = link(0, op("join", true));
    let (window, window_rx) = link(1, op("window", false));
    let (after, after_rx) = link(2, op("after", true));
    let mut chain = Chain::new(vec![head, window, after], None);

    // One input of two: the head hears of it, and nothing goes on.
    chain.input_exhausted(1, false).expect("told");
    assert_eq!(*log.lock().expect("not poisoned"), ["join 1"]);
    assert_eq!(exhausted(&head_rx), 0);

    // Both: the head's output is exhausted; the window's is not (it may hold rows until
    // event time ends), so the operator after it hears nothing.
    chain.input_exhausted(0, true).expect("told");
    assert_eq!(
        *log.lock().expect("not poisoned"),
        ["join 1", "join 0", "window 0"]
    );
    assert_eq!(exhausted(&head_rx), 1);
    assert_eq!(exhausted(&window_rx), 0);
    assert_eq!(exhausted(&after_rx), 0);
}
