//! Network edges on loopback: what a hostile or broken peer gets, and that credit bounds what
//! a producer sends.

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anduin_types::{Message, Watermark};
use anduin_wire::{Frame, Hello, PROTOCOL_VERSION};
use arrow::array::StringArray;
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;

use super::listener::Expecting;
use super::{outbound, EdgeListener, Failures};
use crate::channel::Envelope;
use anduin_wire::{write_frame, FrameReader};

fn hello(query: &str, edge: u32) -> Hello {
    Hello {
        version: PROTOCOL_VERSION,
        query: query.into(),
        edge,
        from_instance: 0,
        to_instance: 1,
        attempt: 0,
        from_epoch: 0,
        incarnation: 0,
    }
}

/// Sends what the producer puts on `rx` to the listener at `addr`, as a producer's bridge.
fn send_to(
    rx: crossbeam_channel::Receiver<Envelope>,
    addr: SocketAddr,
    hello: Hello,
) -> Result<(), super::NetError> {
    outbound::Outbound {
        rx,
        peers: super::Peers::new([(1, addr)]),
        to: crate::topology::WorkerId(1),
        hello,
        secret: None,
        resumption: None,
        to_copy: false,
    }
    .run()
}

/// A listener expecting edge 7 of query "q", and the consumer's queue of that edge.
fn listening() -> (
    Arc<EdgeListener>,
    crossbeam_channel::Receiver<Envelope>,
    Failures,
) {
    listening_with(None)
}

/// [`listening`], with a cluster secret.
fn listening_with(
    secret: Option<&[u8]>,
) -> (
    Arc<EdgeListener>,
    crossbeam_channel::Receiver<Envelope>,
    Failures,
) {
    let listener = EdgeListener::bind(
        SocketAddr::from(([127, 0, 0, 1], 0)),
        4,
        secret.map(Arc::from),
    )
    .expect("binds");
    // Unknown edges are refused at once here (a cluster's wait for late wiring is 30 s).
    listener.wait_for_unknown_edges(std::time::Duration::ZERO);
    let (tx, rx) = crossbeam_channel::bounded(4);
    let failures = Failures::new(Arc::new(AtomicBool::new(false)), crate::Events::default());
    listener.expect(
        &hello("q", 7),
        Expecting {
            tx,
            name: "edge 7".into(),
            failures: failures.clone(),
            schema: Some(Arc::new(Schema::new(vec![Field::new(
                "v",
                DataType::Int64,
                false,
            )]))),
            restored: 0,
            resumable: None,
            notices: None,
            from_copy: false,
        },
    );
    (listener, rx, failures)
}

/// Sends `bytes` to the listener and returns the first frame it answers.
fn answer_to(listener: &EdgeListener, bytes: &[u8]) -> Option<Frame> {
    let mut s = TcpStream::connect(listener.local_addr()).expect("connects");
    s.write_all(bytes).expect("writes");
    FrameReader::new(s).read_frame().ok().flatten()
}

/// Opens an edge with `hello`, answers the challenge as a process with `secret` would, and
/// returns the connection, with the listener's answer to the handshake.
fn open_edge(
    listener: &EdgeListener,
    hello: Hello,
    secret: Option<&[u8]>,
) -> (TcpStream, Option<Frame>) {
    let mut s = TcpStream::connect(listener.local_addr()).expect("connects");
    s.write_all(&frame(&Frame::Hello(hello))).expect("writes");
    let mut r = FrameReader::new(s.try_clone().expect("clones"));
    let nonce = match r.read_frame() {
        Ok(Some(Frame::Message { body })) => body,
        other => return (s, other.ok().flatten()),
    };
    let proof = anduin_wire::auth::proof(secret, &nonce);
    s.write_all(&frame(&Frame::Message { body: proof }))
        .expect("answers");
    let answer = r.read_frame().ok().flatten();
    (s, answer)
}

fn frame(f: &Frame) -> Vec<u8> {
    anduin_wire::encode(f).expect("encodes")
}

fn refusal(f: Option<Frame>) -> String {
    match f {
        Some(Frame::Refused { reason }) => reason,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn a_listener_refuses_strangers_and_still_accepts_its_edge() {
    let (listener, rx, _) = listening();
    let why = refusal(answer_to(&listener, b"GET / HTTP/1.1\r\n\r\n"));
    assert!(why.contains("does not speak anduin"), "{why}");
    let old = Hello {
        version: PROTOCOL_VERSION + 1,
        ..hello("q", 7)
    };
    let why = refusal(open_edge(&listener, old, None).1);
    assert!(why.contains("protocol version"), "{why}");
    let why = refusal(open_edge(&listener, hello("other", 7), None).1);
    assert!(why.contains("no query \"other\""), "{why}");
    let why = refusal(open_edge(&listener, hello("q", 8), None).1);
    assert!(why.contains("no edge 8"), "{why}");
    let why = refusal(answer_to(&listener, &frame(&Frame::End { seq: 1 })));
    assert!(why.contains("hello frame first"), "{why}");

    // The right edge after all that.
    let (to_bridge, from_producer) = crossbeam_channel::unbounded();
    for (seq, msg) in [(1, Message::Watermark(Watermark(5))), (2, Message::End)] {
        to_bridge.send(Envelope { seq, msg }).expect("queued");
    }
    send_to(from_producer, listener.local_addr(), hello("q", 7)).expect("sends");
    let got: Vec<u64> = rx.iter().map(|e| e.seq).collect();
    assert_eq!(got, vec![1, 2]);
    // A second producer for the same edge is refused: it is connected already.
    let why = refusal(open_edge(&listener, hello("q", 7), None).1);
    assert!(why.contains("no edge 7"), "{why}");
}

#[test]
fn a_producer_without_the_cluster_secret_is_refused_before_it_learns_anything() {
    let (listener, rx, _) = listening_with(Some(b"s3cret"));
    for secret in [None, Some(&b"guess"[..])] {
        let why = refusal(open_edge(&listener, hello("q", 7), secret).1);
        assert!(why.contains("cluster's secret"), "{why}");
    }
    // The one that knows it gets the edge.
    let (_s, answer) = open_edge(&listener, hello("q", 7), Some(b"s3cret"));
    assert!(matches!(answer, Some(Frame::Hello(_))), "{answer:?}");
    drop(rx);
}

#[test]
fn a_producer_sends_no_more_than_its_credit() {
    let server = std::net::TcpListener::bind("127.0.0.1:0").expect("binds");
    let addr = server.local_addr().expect("addr");
    // Five messages queued before the bridge starts: only credit holds them back.
    let (to_bridge, from_producer) = crossbeam_channel::unbounded();
    for seq in 1..=5 {
        let msg = Message::Watermark(Watermark(seq as i64));
        to_bridge.send(Envelope { seq, msg }).expect("queued");
    }
    let producer = std::thread::spawn(move || send_to(from_producer, addr, hello("q", 7)));
    let (stream, _) = server.accept().expect("accepts");
    let mut reader = FrameReader::new(stream.try_clone().expect("clones"));
    let mut writer = stream;
    assert!(matches!(reader.read_frame(), Ok(Some(Frame::Hello(_)))));
    write_frame(&mut writer, &Frame::Message { body: vec![1; 32] }).expect("challenges");
    assert!(matches!(
        reader.read_frame(),
        Ok(Some(Frame::Message { .. }))
    ));
    write_frame(&mut writer, &Frame::Hello(hello("q", 7))).expect("answers");
    write_frame(&mut writer, &Frame::Credit { messages: 2 }).expect("grants");
    for seq in 1..=2 {
        assert!(
            matches!(reader.read_frame(), Ok(Some(Frame::Watermark { seq: s, .. })) if s == seq)
        );
    }
    // Had it sent a third message without credit, it would arrive before the end.
    write_frame(
        &mut writer,
        &Frame::Refused {
            reason: "enough".into(),
        },
    )
    .expect("refuses");
    assert!(matches!(reader.read_frame(), Ok(None) | Err(_)));
    let result = producer.join().expect("no panic");
    assert!(matches!(result, Err(super::NetError::Refused(r)) if r == "enough"));
    drop(to_bridge);
}

#[test]
fn a_gap_in_the_sequence_fails_the_edge_naming_it() {
    let (listener, rx, failures) = listening();
    let (mut s, answer) = open_edge(&listener, hello("q", 7), None);
    assert!(matches!(answer, Some(Frame::Hello(_))));
    let mut bytes = frame(&Frame::Watermark { seq: 1, ms: 1 });
    bytes.extend(frame(&Frame::Watermark { seq: 3, ms: 3 }));
    s.write_all(&bytes).expect("writes");
    assert_eq!(rx.recv().expect("the first arrives").seq, 1);
    // The consumer's queue closes after the failure is recorded.
    assert!(rx.recv().is_err());
    let failure = failures.take().expect("recorded").to_string();
    assert!(
        failure.contains("message 3 arrived after message 1"),
        "{failure}"
    );
    assert!(failure.contains("edge 7"), "{failure}");
}

#[test]
fn a_damaged_frame_fails_the_edge_and_nothing_of_it_is_delivered() {
    let (listener, rx, failures) = listening();
    let (mut s, answer) = open_edge(&listener, hello("q", 7), None);
    assert!(matches!(answer, Some(Frame::Hello(_))));
    let mut damaged = frame(&Frame::Watermark { seq: 1, ms: 1 });
    let mid = damaged.len() / 2;
    damaged[mid] ^= 0x55;
    let bytes = damaged;
    s.write_all(&bytes).expect("writes");
    assert!(
        rx.recv().is_err(),
        "nothing of a damaged frame reaches the task"
    );
    let failure = failures.take().expect("recorded").to_string();
    assert!(failure.contains("damaged"), "{failure}");
}

#[test]
fn rows_of_another_type_fail_the_edge_and_do_not_reach_the_task() {
    let (listener, rx, failures) = listening();
    let (mut s, answer) = open_edge(&listener, hello("q", 7), None);
    assert!(matches!(answer, Some(Frame::Hello(_))));
    let strings = RecordBatch::try_new(
        Arc::new(Schema::new(vec![Field::new("v", DataType::Utf8, false)])),
        vec![Arc::new(StringArray::from(vec!["x"]))],
    )
    .expect("a batch");
    let data = super::codec::to_frame(1, &Message::Data(strings)).expect("encodes");
    let bytes = frame(&data);
    s.write_all(&bytes).expect("writes");
    assert!(rx.recv().is_err(), "the rows never reach the task");
    let failure = failures.take().expect("recorded").to_string();
    assert!(failure.contains("column `v` is Utf8"), "{failure}");
}

#[test]
fn a_producer_that_comes_before_its_consumer_is_wired_waits_for_it() {
    let listener =
        EdgeListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)), 4, None).expect("binds");
    let (to_bridge, from_producer) = crossbeam_channel::unbounded();
    to_bridge
        .send(Envelope {
            seq: 1,
            msg: Message::End,
        })
        .expect("queued");
    let addr = listener.local_addr();
    // The producer connects first; the consumer's end is expected only once it is there.
    let producer = std::thread::spawn(move || send_to(from_producer, addr, hello("q", 7)));
    let (tx, rx) = crossbeam_channel::bounded(4);
    let failures = Failures::new(Arc::new(AtomicBool::new(false)), crate::Events::default());
    listener.expect(
        &hello("q", 7),
        Expecting {
            tx,
            name: "edge 7".into(),
            failures,
            schema: None,
            restored: 0,
            resumable: None,
            notices: None,
            from_copy: false,
        },
    );
    assert_eq!(rx.recv().expect("the end arrives").seq, 1);
    producer.join().expect("no panic").expect("the edge ran");
}
