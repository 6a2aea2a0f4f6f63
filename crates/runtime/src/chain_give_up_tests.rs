//! A chain whose operator gave up the end of its input after a stop (or whose producer
//! upstream did): the operators after it do not end — a sink would commit what no checkpoint
//! covers — and every outlet from there on says `Message::GaveUp` before its `End`.

use std::sync::{Arc, Mutex};

use anduin_operator_api::{Collector, Operator, OperatorError};
use anduin_types::Message;
use arrow::record_batch::RecordBatch;
use crossbeam_channel::Receiver;

use super::{Chain, Link};
use crate::channel::{channel, Envelope, Route};

type Log = Arc<Mutex<Vec<String>>>;

/// Logs the end of its input; gives up there if `gives_up`.
struct Ender {
    name: &'static str,
    gives_up: bool,
    ended: bool,
    log: Log,
}

impl Operator for Ender {
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

    fn on_end_of_input(&mut self, _out: &mut dyn Collector) -> Result<(), OperatorError> {
        self.ended = true;
        let entry = format!("{} end", self.name);
        self.log.lock().expect("not poisoned").push(entry);
        Ok(())
    }

    fn gave_up(&self) -> Option<String> {
        (self.gives_up && self.ended).then(|| "it gave up matching 3 rows".into())
    }
}

/// A chain of one operator per name (those in `giving_up` give up at their end), each with
/// one outlet, and what the outlets receive.
fn chain(
    names: &[&'static str],
    giving_up: &[&str],
    log: &Log,
) -> (Chain, Vec<Receiver<Envelope>>) {
    let mut links = Vec::new();
    let mut receivers = Vec::new();
    for (index, name) in names.iter().enumerate() {
        let (outlet, rx) = channel(8);
        let op = Ender {
            name,
            gives_up: giving_up.contains(name),
            ended: false,
            log: Arc::clone(log),
        };
        links.push(Link::for_test(
            index,
            Box::new(op),
            vec![vec![Route::One(outlet)]],
        ));
        receivers.push(rx);
    }
    (Chain::new(links, None), receivers)
}

/// The kinds of the messages `rx` received.
fn kinds(rx: &Receiver<Envelope>) -> Vec<&'static str> {
    rx.try_iter()
        .map(|e| match e.msg {
            Message::GaveUp => "gave up",
            Message::End => "end",
            _ => "other",
        })
        .collect()
}

#[test]
fn after_an_operator_that_gave_up_none_ends_and_every_outlet_says_so_before_its_end() {
    let log: Log = Arc::default();
    let (mut chain, rx) = chain(&["filter", "pattern", "sink"], &["pattern"], &log);
    assert!(!chain.gave_up());
    chain.end_of_input().expect("ends");
    assert_eq!(
        *log.lock().expect("not poisoned"),
        ["filter end", "pattern end"],
        "the sink after the pattern does not end (it would commit)"
    );
    assert_eq!(kinds(&rx[0]), ["end"]);
    assert_eq!(kinds(&rx[1]), ["gave up", "end"]);
    assert_eq!(kinds(&rx[2]), ["gave up", "end"]);
    assert!(chain.gave_up(), "the run ends as stopped");
}

#[test]
fn a_chain_whose_producer_gave_up_ends_no_operator_and_passes_it_on() {
    let log: Log = Arc::default();
    let (mut chain, rx) = chain(&["window", "sink"], &[], &log);
    chain.upstream_gave_up();
    assert!(chain.gave_up(), "the run ends as stopped");
    chain.end_of_input().expect("ends");
    assert!(log.lock().expect("not poisoned").is_empty(), "none ended");
    assert_eq!(kinds(&rx[0]), ["gave up", "end"]);
    assert_eq!(kinds(&rx[1]), ["gave up", "end"]);
}

#[test]
fn without_giving_up_every_operator_ends_and_the_outlets_only_end() {
    let log: Log = Arc::default();
    let (mut chain, rx) = chain(&["window", "sink"], &[], &log);
    chain.end_of_input().expect("ends");
    assert_eq!(
        *log.lock().expect("not poisoned"),
        ["window end", "sink end"]
    );
    assert_eq!(kinds(&rx[0]), ["end"]);
    assert_eq!(kinds(&rx[1]), ["end"]);
    assert!(!chain.gave_up());
}
