//! Network edges of a hot standby's copies without resumption (`anduin run
//! --loopback-workers`), on loopback: a lost copy's connection, closed or reset, ends its
//! stream as a lost copy's in-process channel does, and is not the run's failure; any other
//! producer's or consumer's still is.

use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anduin_types::{Message, Watermark};
use anduin_wire::{write_frame, Frame, FrameReader, Hello, PROTOCOL_VERSION};
use crossbeam_channel::Receiver;

use super::listener::Expecting;
use super::{outbound, EdgeListener, Failures, NetError, Peers};
use crate::channel::Envelope;
use crate::topology::WorkerId;

fn hello() -> Hello {
    Hello {
        version: PROTOCOL_VERSION,
        query: "q".into(),
        edge: 7,
        from_instance: 0,
        to_instance: 1,
        attempt: 0,
        from_epoch: 0,
        incarnation: 0,
    }
}

fn frame(f: &Frame) -> Vec<u8> {
    anduin_wire::encode(f).expect("encodes")
}

fn watermark(seq: u64) -> Envelope {
    Envelope {
        seq,
        msg: Message::Watermark(Watermark(seq as i64)),
    }
}

/// Closes `s` while what the peer sent last is still unread: the system resets the
/// connection instead of closing it. Returns once that is so (waits for unread bytes).
fn reset(s: TcpStream) {
    let mut byte = [0u8; 1];
    let unread = s.peek(&mut byte).expect("peeks");
    assert_eq!(unread, 1, "the peer sent something");
    drop(s);
}

/// A listener expecting edge 7 of query "q" (a window of 4 messages, credit going back two
/// at a time), without resumption, whose producer is a copy of a hot standby when
/// `from_copy`: the consumer's queue and the run's failures.
fn consumer(from_copy: bool) -> (Arc<EdgeListener>, Receiver<Envelope>, Failures) {
    let listener =
        EdgeListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)), 4, None).expect("binds");
    let (tx, rx) = crossbeam_channel::bounded(4);
    let failures = Failures::new(Arc::new(AtomicBool::new(false)), crate::Events::default());
    listener.expect(
        &hello(),
        Expecting {
            tx,
            name: "edge 7".into(),
            failures: failures.clone(),
            schema: None,
            restored: 0,
            resumable: None,
            notices: None,
            from_copy,
        },
    );
    (listener, rx, failures)
}

/// Opens edge 7 as a producer without a secret would.
fn open_edge(listener: &EdgeListener) -> TcpStream {
    let mut s = TcpStream::connect(listener.local_addr()).expect("connects");
    s.write_all(&frame(&Frame::Hello(hello()))).expect("writes");
    let mut r = FrameReader::new(s.try_clone().expect("clones"));
    let Ok(Some(Frame::Message { body: nonce })) = r.read_frame() else {
        panic!("challenged");
    };
    let proof = anduin_wire::auth::proof(None, &nonce);
    s.write_all(&frame(&Frame::Message { body: proof }))
        .expect("answers");
    assert!(matches!(r.read_frame(), Ok(Some(Frame::Hello(_)))));
    s
}

#[test]
fn a_reset_from_a_lost_copy_ends_its_stream_and_from_another_producer_fails_the_edge() {
    for from_copy in [true, false] {
        let (listener, rx, failures) = consumer(from_copy);
        let mut s = open_edge(&listener);
        let mut bytes = frame(&Frame::Watermark { seq: 1, ms: 1 });
        bytes.extend(frame(&Frame::Watermark { seq: 2, ms: 2 }));
        s.write_all(&bytes).expect("writes");
        assert_eq!(rx.recv().expect("the first arrives").seq, 1);
        assert_eq!(rx.recv().expect("the second arrives").seq, 2);
        // The credit the consumer grants for them is left unread: the producer's process
        // resets the connection as it goes.
        reset(s);
        assert!(
            rx.recv().is_err(),
            "from a copy: {from_copy}: the consumer's queue closes"
        );
        let failure = failures.take().map(|f| f.to_string());
        if from_copy {
            assert_eq!(failure, None, "a lost copy is not the run's failure");
        } else {
            let failure = failure.expect("recorded");
            assert!(failure.contains("reset"), "{failure}");
        }
    }
}

#[test]
fn a_producer_feeding_a_lost_copy_lets_its_edge_go_and_others_fail() {
    for to_copy in [true, false] {
        let server = TcpListener::bind("127.0.0.1:0").expect("binds");
        let addr = server.local_addr().expect("addr");
        let (to_bridge, from_producer) = crossbeam_channel::unbounded();
        to_bridge.send(watermark(1)).expect("queued");
        let out = outbound::Outbound {
            rx: from_producer,
            peers: Peers::new([(1, addr)]),
            to: WorkerId(1),
            hello: hello(),
            secret: None,
            resumption: None,
            to_copy,
        };
        let bridge = std::thread::spawn(move || out.run());
        // The copy's worker: the handshake, credit for 4 messages, then the copy is lost
        // with the first message unread (the connection is reset).
        let (stream, _) = server.accept().expect("accepts");
        let mut reader = FrameReader::new(stream.try_clone().expect("clones"));
        let mut writer = stream;
        assert!(matches!(reader.read_frame(), Ok(Some(Frame::Hello(_)))));
        write_frame(&mut writer, &Frame::Message { body: vec![1; 32] }).expect("challenges");
        assert!(matches!(
            reader.read_frame(),
            Ok(Some(Frame::Message { .. }))
        ));
        write_frame(&mut writer, &Frame::Hello(hello())).expect("answers");
        write_frame(&mut writer, &Frame::Credit { messages: 4 }).expect("grants");
        drop(reader);
        reset(writer);
        // The producer goes on: past its credit, the bridge finds the copy gone.
        for seq in 2..=6 {
            // (Refused once the bridge has let the producer's queue go.)
            let _ = to_bridge.send(watermark(seq));
        }
        let result = bridge.join().expect("no panic");
        if to_copy {
            assert!(result.is_ok(), "{result:?}");
            assert!(
                to_bridge.send(watermark(7)).is_err(),
                "the producer's outlet finds the copy gone, and drops what it sends there"
            );
        } else {
            assert!(
                matches!(&result, Err(e @ (NetError::Frame(_) | NetError::ConsumerGone)) if e.is_lost_peer()),
                "{result:?}"
            );
        }
    }
}
