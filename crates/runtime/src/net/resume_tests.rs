//! Resumable edges on loopback: a consumer restored elsewhere gets what its checkpoint does
//! not cover from the producer's backup; a restored producer's replay reaches a running
//! consumer without a row twice; a checkpoint whose barrier comes mid-replay is given up (its
//! barrier still delivered).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anduin_types::{Barrier, Epoch, Message};
use anduin_wire::{Hello, PROTOCOL_VERSION};
use arrow::array::{Array, Int64Array};
use arrow::record_batch::RecordBatch;
use crossbeam_channel::{Receiver, Sender};

use super::listener::{Expecting, Resumable};
use super::{outbound, EdgeListener, Failures, NetError, Peers};
use crate::channel::Envelope;
use crate::config::Resumption;
use crate::protocol::Event;
use crate::topology::WorkerId;

fn hello(from_epoch: u64) -> Hello {
    Hello {
        version: PROTOCOL_VERSION,
        query: "q".into(),
        edge: 7,
        from_instance: 0,
        to_instance: 1,
        attempt: 1,
        from_epoch,
        incarnation: 0,
    }
}

pub(super) fn rows(from: i64, to: i64) -> Message {
    let a = Int64Array::from_iter_values(from..to);
    Message::Data(RecordBatch::try_from_iter([("v", Arc::new(a) as _)]).expect("batch"))
}

pub(super) fn barrier(e: u64) -> Message {
    Message::Barrier(Barrier::checkpoint(Epoch(e), false))
}

/// A consumer's end restored from `restored`, on a listener of its own: its queue, and where
/// it reports checkpoints it gives up.
fn consumer(restored: u64) -> (Arc<EdgeListener>, Receiver<Envelope>, Receiver<Event>) {
    let listener =
        EdgeListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)), 4, None).expect("binds");
    let (tx, rx) = crossbeam_channel::bounded(64);
    let (reports, reported) = crossbeam_channel::unbounded();
    listener.expect(
        &hello(0),
        Expecting {
            tx,
            name: "edge 7".into(),
            failures: Failures::new(Arc::new(AtomicBool::new(false)), crate::Events::default()),
            schema: None,
            restored,
            resumable: Some(Resumable { task: 3, reports }),
            notices: None,
            from_copy: false,
        },
    );
    (listener, rx, reported)
}

/// A resumable producer end restored from `from`: where its task puts messages, and its
/// bridge's thread.
fn producer(
    from: u64,
    peers: &Arc<Peers>,
    completed: &Arc<AtomicU64>,
) -> (
    Sender<Envelope>,
    std::thread::JoinHandle<Result<(), NetError>>,
) {
    producer_of(0, from, peers, completed)
}

/// [`producer`], of incarnation `incarnation`.
fn producer_of(
    incarnation: u64,
    from: u64,
    peers: &Arc<Peers>,
    completed: &Arc<AtomicU64>,
) -> (
    Sender<Envelope>,
    std::thread::JoinHandle<Result<(), NetError>>,
) {
    producer_with(incarnation, from, peers, completed, (false, 64 << 20))
}

/// [`producer_of`], feeding a copy of a hot standby when `to_copy` (see
/// [`outbound::Outbound::to_copy`]), with an upstream backup of `limit` bytes.
fn producer_with(
    incarnation: u64,
    from: u64,
    peers: &Arc<Peers>,
    completed: &Arc<AtomicU64>,
    (to_copy, limit): (bool, usize),
) -> (
    Sender<Envelope>,
    std::thread::JoinHandle<Result<(), NetError>>,
) {
    let (tx, rx) = crossbeam_channel::bounded(4);
    let (reports, _) = crossbeam_channel::unbounded();
    let out = outbound::Outbound {
        rx,
        peers: Arc::clone(peers),
        to: WorkerId(1),
        hello: Hello {
            incarnation,
            ..hello(from)
        },
        secret: None,
        resumption: Some(Resumption {
            completed: Arc::clone(completed),
            backup_limit: limit,
            backup_budget: super::BackupBudget::new(usize::MAX),
            wait: Duration::from_secs(60),
            peers: Arc::clone(peers),
            reports,
            incarnation,
        }),
        to_copy,
    };
    (tx, std::thread::spawn(move || out.run()))
}

fn put(tx: &Sender<Envelope>, msgs: impl IntoIterator<Item = Message>) {
    for msg in msgs {
        tx.send(Envelope { seq: 0, msg })
            .expect("the bridge takes it");
    }
}

/// What arrives on `rx` until (and with) the barrier of `epoch` or the end.
fn take_until(rx: &Receiver<Envelope>, epoch: Option<u64>) -> Vec<Message> {
    let mut got = Vec::new();
    loop {
        let msg = rx.recv().expect("a message arrives").msg;
        let stop = match &msg {
            Message::Barrier(b) => Some(b.epoch.0) == epoch,
            Message::End => true,
            _ => false,
        };
        got.push(msg);
        if stop {
            return got;
        }
    }
}

/// Takes `n` rows from `rx`.
fn take_rows(rx: &Receiver<Envelope>, n: usize) -> Vec<Message> {
    let mut got = Vec::new();
    while values(&got).len() < n {
        got.push(rx.recv().expect("a message arrives").msg);
    }
    got
}

pub(super) fn values(ms: &[Message]) -> Vec<i64> {
    ms.iter()
        .filter_map(|m| match m {
            Message::Data(b) => Some(b),
            _ => None,
        })
        .flat_map(|b| {
            let a = b
                .column(0)
                .as_any()
                .downcast_ref::<Int64Array>()
                .expect("ints");
            (0..a.len()).map(|i| a.value(i)).collect::<Vec<_>>()
        })
        .collect()
}

fn epochs(ms: &[Message]) -> Vec<u64> {
    ms.iter()
        .filter_map(|m| match m {
            Message::Barrier(b) => Some(b.epoch.0),
            _ => None,
        })
        .collect()
}

#[test]
fn a_consumer_restored_elsewhere_gets_from_the_producer_what_its_checkpoint_does_not_cover() {
    let (first, first_rx, _) = consumer(0);
    let peers = Peers::new([(1, first.local_addr())]);
    let completed = Arc::new(AtomicU64::new(0));
    let (tx, bridge) = producer(0, &peers, &completed);
    put(
        &tx,
        [
            rows(0, 30),
            barrier(1),
            rows(30, 60),
            barrier(2),
            rows(60, 70),
        ],
    );
    let got = take_rows(&first_rx, 70);
    assert_eq!(values(&got), (0..70).collect::<Vec<_>>());
    // Checkpoint 1 completes; then the consumer's worker dies, and its task is restored from
    // checkpoint 1 in another process.
    completed.store(1, Ordering::SeqCst);
    first.shutdown();
    let (second, second_rx, _) = consumer(1);
    peers.redirect(1, second.local_addr());
    drop(first_rx);
    put(&tx, [rows(70, 80), Message::End]);
    let got = take_until(&second_rx, None);
    assert_eq!(
        values(&got),
        (30..80).collect::<Vec<_>>(),
        "the rows after checkpoint 1, once each"
    );
    assert_eq!(epochs(&got), vec![2]);
    completed.store(2, Ordering::SeqCst);
    bridge
        .join()
        .expect("no panic")
        .expect("the edge ran to its end");
}

#[test]
fn a_restored_producer_s_replay_reaches_a_running_consumer_without_a_row_twice() {
    let (listener, rx, reported) = consumer(0);
    let peers = Peers::new([(1, listener.local_addr())]);
    let completed = Arc::new(AtomicU64::new(0));
    let (tx, first) = producer(0, &peers, &completed);
    put(&tx, [rows(0, 30), barrier(1), rows(30, 50)]);
    let mut got = take_rows(&rx, 50);
    // The producer's worker dies; its task is restored from checkpoint 1 elsewhere and
    // replays the same rows in other batches. Checkpoint 3 is injected while the replay is
    // still behind what the consumer had: it is given up; checkpoint 4 is consistent.
    drop(tx);
    assert!(matches!(
        first.join().expect("no panic"),
        Err(NetError::ProducerGone)
    ));
    let (tx, second) = producer(1, &peers, &completed);
    put(
        &tx,
        [
            rows(30, 35),
            rows(35, 45),
            barrier(3),
            rows(45, 70),
            barrier(4),
            Message::End,
        ],
    );
    got.extend(take_until(&rx, None));
    assert_eq!(values(&got), (0..70).collect::<Vec<_>>(), "each row once");
    // Barrier 3 still goes on (alignment downstream must not wait for it), its checkpoint
    // given up.
    assert_eq!(epochs(&got), vec![1, 3, 4]);
    match reported.try_recv() {
        Ok(Event::Failed { epoch, task, .. }) => {
            assert_eq!((epoch, task), (Epoch(3), 3));
        }
        other => panic!("checkpoint 3 should be given up, got {other:?}"),
    }
    completed.store(4, Ordering::SeqCst);
    second
        .join()
        .expect("no panic")
        .expect("the edge ran to its end");
}

#[test]
fn a_restored_producer_that_replays_less_than_was_received_fails_the_edge() {
    let (listener, rx, _) = consumer(0);
    let peers = Peers::new([(1, listener.local_addr())]);
    let completed = Arc::new(AtomicU64::new(0));
    let (tx, first) = producer(0, &peers, &completed);
    put(&tx, [rows(0, 30), barrier(1), rows(30, 50)]);
    take_rows(&rx, 50);
    drop(tx);
    let _ = first.join();
    let (tx, second) = producer(1, &peers, &completed);
    put(&tx, [rows(30, 40), Message::End]);
    completed.store(1, Ordering::SeqCst);
    let _ = second.join();
    // Nothing past row 50 arrives, and no end: the consumer is not told its input is
    // complete when rows are missing. Its queue closes instead, so that its task fails (it
    // once waited for ever for a producer that had ended).
    match rx.recv_timeout(Duration::from_secs(120)) {
        Err(crossbeam_channel::RecvTimeoutError::Disconnected) => {}
        Ok(env) => panic!("nothing more arrives, got {:?}", env.msg),
        Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
            panic!("the consumer's queue stayed open: its task would wait for ever")
        }
    }
    // No producer takes the edge up again (refused at once: the listener waits for no
    // unknown edge).
    listener.wait_for_unknown_edges(Duration::ZERO);
    let (tx, third) = producer_of(2, 1, &peers, &completed);
    put(&tx, [rows(30, 60), Message::End]);
    drop(tx);
    assert!(third.join().expect("no panic").is_err(), "the edge is gone");
}

#[test]
fn a_stale_producer_cannot_take_the_edge_back_from_its_restored_instance() {
    let (listener, rx, _) = consumer(0);
    let peers = Peers::new([(1, listener.local_addr())]);
    let completed = Arc::new(AtomicU64::new(0));
    // The producer's instance was restored elsewhere (incarnation 1) and streams to the
    // consumer; then the old one (incarnation 0, its worker was only paused) comes back.
    let (tx, restored) = producer_of(1, 0, &peers, &completed);
    put(&tx, [rows(0, 30), barrier(1)]);
    let mut got = take_until(&rx, Some(1));
    let (stale_tx, stale) = producer_of(0, 0, &peers, &completed);
    put(&stale_tx, [rows(0, 30)]);
    match stale.join().expect("no panic") {
        Err(NetError::Refused(why)) => assert!(why.contains("stale"), "{why}"),
        other => panic!("the stale producer must be refused, got {other:?}"),
    }
    put(&tx, [rows(30, 40), Message::End]);
    got.extend(take_until(&rx, None));
    assert_eq!(values(&got), (0..40).collect::<Vec<_>>(), "each row once");
    completed.store(1, Ordering::SeqCst);
    restored
        .join()
        .expect("no panic")
        .expect("the edge ran to its end");
}

/// Sends `msgs`, failing (instead of hanging) when the bridge does not take one for a long
/// time: the bound only turns a hang into a failure, it is never what makes the test pass.
fn put_unblocked(tx: &Sender<Envelope>, msgs: impl IntoIterator<Item = Message>) {
    for msg in msgs {
        tx.send_timeout(Envelope { seq: 0, msg }, Duration::from_secs(60))
            .expect("the producer is not held up by its lost consumer");
    }
}

#[test]
fn a_producer_is_not_held_up_by_a_lost_copy_while_its_backup_has_room() {
    let (first, first_rx, _) = consumer(0);
    let peers = Peers::new([(1, first.local_addr())]);
    let completed = Arc::new(AtomicU64::new(0));
    let (tx, bridge) = producer_with(0, 0, &peers, &completed, (true, 64 << 20));
    put(&tx, [rows(0, 10), barrier(1)]);
    let got = take_until(&first_rx, Some(1));
    assert_eq!(values(&got), (0..10).collect::<Vec<_>>());
    // The copy's worker dies. The producer's queue holds 4 messages: without draining into
    // the backup, the 5th send would wait for the copy to come back.
    first.shutdown();
    drop(first_rx);
    put_unblocked(
        &tx,
        (1..40).flat_map(|i| [rows(i * 10, i * 10 + 10), barrier(i as u64 + 1)]),
    );
    put_unblocked(&tx, [Message::End]);
    // Restored from checkpoint 0 (none completed): it gets everything, once, in order.
    let (second, second_rx, _) = consumer(0);
    peers.redirect(1, second.local_addr());
    let got = take_until(&second_rx, None);
    assert_eq!(values(&got), (0..400).collect::<Vec<_>>());
    assert_eq!(epochs(&got), (1..=40).collect::<Vec<_>>());
    completed.store(40, Ordering::SeqCst);
    bridge
        .join()
        .expect("no panic")
        .expect("the edge ran to its end");
}

#[test]
fn a_producer_feeding_a_lost_copy_waits_once_the_backup_is_full_and_loses_nothing() {
    let (first, first_rx, _) = consumer(0);
    let peers = Peers::new([(1, first.local_addr())]);
    let completed = Arc::new(AtomicU64::new(0));
    // Room for a few batches of 10 rows only.
    let limit = 3 * super::resume::size(&rows(0, 10));
    let (tx, bridge) = producer_with(0, 0, &peers, &completed, (true, limit));
    // Connected first (a consumer closing during the handshake is a refusal, not a loss).
    put(&tx, [rows(0, 10)]);
    take_rows(&first_rx, 10);
    // The copy is lost: its worker is known gone (the connection is cut) and nothing
    // listens where it is to be restored yet.
    let nowhere = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port");
    peers.redirect(1, nowhere);
    first.shutdown();
    drop(first_rx);
    // More than the backup and the queue hold: the producer waits (on another thread) once
    // both are full, as for a slow consumer; the message taken without room is held.
    let sender = std::thread::spawn(move || {
        put(&tx, (1..20).map(|i| rows(i * 10, i * 10 + 10)));
        put(&tx, [Message::End]);
    });
    let (second, second_rx, _) = consumer(0);
    peers.redirect(1, second.local_addr());
    let got = take_until(&second_rx, None);
    assert_eq!(
        values(&got),
        (0..200).collect::<Vec<_>>(),
        "each row once, in order"
    );
    sender.join().expect("the sender ran");
    bridge
        .join()
        .expect("no panic")
        .expect("the edge ran to its end");
}

#[test]
fn a_consumer_whose_process_closes_the_connection_unanswered_is_waited_for_as_a_lost_one() {
    // The consumer's process is going away: its socket still takes connections, and reads
    // the producer's hello, but closes each without a word.
    let dying = std::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).expect("binds");
    let dying_at = dying.local_addr().expect("an address");
    let (closed, closed_one) = crossbeam_channel::unbounded();
    std::thread::spawn(move || {
        for conn in dying.incoming().flatten() {
            let _ = anduin_wire::FrameReader::new(conn).read_frame();
            if closed.send(()).is_err() {
                return;
            }
        }
    });
    let peers = Peers::new([(1, dying_at)]);
    let completed = Arc::new(AtomicU64::new(0));
    let (tx, bridge) = producer(0, &peers, &completed);
    put(&tx, [rows(0, 10), barrier(1)]);
    closed_one
        .recv()
        .expect("the producer reached the dying process");
    // Restored elsewhere, the consumer gets the stream: the edge did not fail meanwhile.
    let (restored, restored_rx, _) = consumer(0);
    peers.redirect(1, restored.local_addr());
    put(&tx, [rows(10, 20), Message::End]);
    let got = take_until(&restored_rx, None);
    assert_eq!(values(&got), (0..20).collect::<Vec<_>>());
    completed.store(1, Ordering::SeqCst);
    bridge
        .join()
        .expect("no panic")
        .expect("the edge ran to its end");
}
