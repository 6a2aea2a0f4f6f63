//! Bad input on the cluster's ports, from raw TCP connections to real processes: the
//! coordinator's port and an executor's data port are sent garbage, a truncated frame, a frame
//! header announcing a huge body, a frame of the other plane (a data-plane frame where the
//! coordinator awaits a proof, a control message where an executor awaits a hello), and the
//! handshake of another protocol version. Each connection is turned away — with a `Refused`
//! frame saying why where the process sends one (another version: naming both), closed in
//! any case, the reason in the process's log — and nothing else is affected: the coordinator
//! still runs and a query submitted through it afterwards runs to completion with the
//! embedded run's output, at its first attempt although its executor was probed mid-run.
//!
//! The query reads a named pipe, so that its executor waits, listening, until the probes are
//! done (no timing).

use crate::common;

use std::io::Write;
use std::net::{Shutdown, TcpStream};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::time::Duration;

use anduin_wire::{encode, Frame, FrameError, FrameReader, Hello, PROTOCOL_VERSION};
use common::cluster::{children, listening_port, LocalCluster, Setup};
use common::{anduin_ok, output_rows, wait_until};

const QUERY: &str = r#"
type name = "Event" {
  column name = "ts", type = "int"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "R", type = "reader" {
  param path = "${FIFO}"
  output name = "r", type = "Event"
}
operator name = "out", type = "writer" {
  input name = "r"
  param path = "${OUTPUT}"
}
"#;

/// How a probed connection ended.
#[derive(Debug)]
struct Ending {
    /// The reason of the `Refused` frame that came, if one did.
    refused: Option<String>,
    /// The other frames that came before the end (their kinds).
    others: Vec<String>,
}

/// Reads what the process sends on `stream` until it closes the connection (a reset counts
/// as closed: the process did not read all that was sent). A connection still open after 30
/// seconds (the processes give a silent peer 10) fails the test.
fn ending(stream: &TcpStream, what: &str) -> Ending {
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("a read timeout");
    let mut reader = FrameReader::new(stream.try_clone().expect("a clone"));
    let mut ending = Ending {
        refused: None,
        others: Vec::new(),
    };
    loop {
        match reader.read_frame() {
            Ok(None) => return ending,
            Ok(Some(Frame::Refused { reason })) => ending.refused = Some(reason),
            Ok(Some(other)) => ending.others.push(format!("{other:?}")),
            Err(FrameError::Io(e)) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                return ending
            }
            Err(e) => panic!("{what}: the connection was not closed: {e} ({ending:?})"),
        }
    }
}

/// A frame's bytes.
fn bytes(frame: &Frame) -> Vec<u8> {
    encode(frame).expect("a frame that encodes")
}

/// The bytes of a control message (JSON in a `message` frame).
fn message(json: &serde_json::Value) -> Vec<u8> {
    bytes(&Frame::Message {
        body: serde_json::to_vec(json).expect("JSON"),
    })
}

/// The first 8 bytes (the header) of `frame`, its body's length said to be `len`.
fn header_announcing(frame: &[u8], len: u32) -> Vec<u8> {
    let mut header = frame.get(..8).expect("a header").to_vec();
    header.splice(4..8, len.to_le_bytes());
    header
}

/// A hello of the data plane at protocol `version`.
fn hello(version: u16) -> Frame {
    Frame::Hello(Hello {
        version,
        query: "q".into(),
        edge: 0,
        from_instance: 0,
        to_instance: 1,
        attempt: 1,
        from_epoch: 0,
        incarnation: 0,
    })
}

/// A connection to the coordinator at `addr`, its challenge read: the nonce and the
/// coordinator's control protocol version.
fn challenged(addr: &str) -> (TcpStream, FrameReader<TcpStream>, Vec<u8>, u64) {
    let stream = TcpStream::connect(addr).expect("connects to the coordinator");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("a read timeout");
    let mut reader = FrameReader::new(stream.try_clone().expect("a clone"));
    let Ok(Some(Frame::Message { body })) = reader.read_frame() else {
        panic!("the coordinator's first frame is not a message");
    };
    let challenge: serde_json::Value = serde_json::from_slice(&body).expect("JSON");
    let nonce: Vec<u8> = serde_json::from_value(challenge["nonce"].clone()).expect("a nonce");
    let version = challenge["version"].as_u64().expect("a version");
    (stream, reader, nonce, version)
}

/// What each probe of the coordinator sends after its challenge, the proof of the right
/// version ready; whether it then closes its side.
fn coordinator_probes(nonce: &[u8], version: u64) -> Vec<(&'static str, Vec<u8>, bool)> {
    let proof = anduin_wire::auth::proof(None, nonce);
    let valid = message(&serde_json::json!({ "proof": proof, "version": version }));
    vec![
        (
            "garbage",
            b"GET / HTTP/1.1\r\nHost: anduin\r\n\r\n\x00\xff\xfe garbage".to_vec(),
            false,
        ),
        (
            "a truncated frame",
            valid.get(..valid.len() / 2).expect("half").to_vec(),
            true,
        ),
        (
            "a header announcing 4 GiB",
            header_announcing(&valid, u32::MAX),
            false,
        ),
        (
            "a header announcing 1 MiB (more than a proof)",
            header_announcing(&valid, 1 << 20),
            false,
        ),
        (
            "a frame of the data plane",
            bytes(&hello(PROTOCOL_VERSION)),
            false,
        ),
        (
            "a data frame",
            bytes(&Frame::Data {
                seq: 1,
                ipc: vec![0; 64],
            }),
            false,
        ),
        ("nothing", Vec::new(), true),
        (
            "a proof then a message that is not JSON",
            {
                let mut b = valid.clone();
                b.extend(bytes(&Frame::Message {
                    body: b"\xff{not json".to_vec(),
                }));
                b
            },
            false,
        ),
        (
            "a proof then a message of no kind",
            {
                let mut b = valid;
                b.extend(message(
                    &serde_json::json!({ "Launch": { "missiles": true } }),
                ));
                b
            },
            false,
        ),
    ]
}

/// Probes the coordinator at `addr`, which must turn each probe away; what it logs must say
/// why (`log` reads it).
fn probe_the_coordinator(addr: &str, log: impl Fn() -> String) {
    let count = coordinator_probes(&[], 1).len();
    for i in 0..count {
        let (stream, _reader, nonce, version) = challenged(addr);
        let probes = coordinator_probes(&nonce, version);
        let (what, sent, close) = probes.into_iter().nth(i).expect("as many probes");
        (&stream).write_all(&sent).expect("sent");
        if close {
            stream.shutdown(Shutdown::Write).expect("half-closed");
        }
        let end = ending(&stream, what);
        assert!(end.others.is_empty(), "{what}: then came {:?}", end.others);
        if what == "nothing" {
            let why = end.refused.unwrap_or_default();
            assert!(why.contains("closed the connection"), "{what}: {why}");
        }
    }
    // Another version: refused, saying both.
    for theirs in [0, 1, 3, u64::from(u32::MAX)] {
        let (stream, _reader, nonce, ours) = challenged(addr);
        assert_eq!(ours, 2, "the coordinator speaks control protocol 2");
        let proof = anduin_wire::auth::proof(None, &nonce);
        let proof = if theirs == 0 {
            // An anduin of before versions: its proof says none.
            serde_json::json!({ "proof": proof })
        } else {
            serde_json::json!({ "proof": proof, "version": theirs })
        };
        (&stream).write_all(&message(&proof)).expect("sent");
        let what = format!("a proof of control protocol {theirs}");
        let end = ending(&stream, &what);
        let why = end
            .refused
            .unwrap_or_else(|| panic!("{what}: closed without a refusal"));
        assert!(
            why.contains(&format!("speaks control protocol {theirs}"))
                && why.contains(&format!("speaks {ours}")),
            "{what}: {why}"
        );
    }
    // Why, in the coordinator's log (written once the connection is closed): eight failed
    // connections, each saying why, and five refused.
    wait_until("the coordinator's log of the probes", || {
        log().matches("a connection failed").count() >= 8
    });
    let log = log();
    for why in [
        "does not speak anduin's wire protocol",
        "closed the connection in the middle of a frame",
        "frame of 4294967295 bytes is larger than the limit",
        "where at most 4096 are taken",
        "a frame of the data plane on a control connection",
        "a malformed cluster message",
        "the peer closed the connection",
        "speaks control protocol 0",
        "speaks control protocol 1",
        "speaks control protocol 3",
    ] {
        assert!(
            log.to_lowercase().contains(why),
            "the coordinator's log does not say `{why}`:\n{log}"
        );
    }
}

/// Probes the executor listening on `port`, which must turn each probe away.
fn probe_the_executor(port: u16) {
    let addr = format!("127.0.0.1:{port}");
    let good = bytes(&hello(PROTOCOL_VERSION));
    let probes: Vec<(&str, Vec<u8>, bool, &str)> = vec![
        (
            "garbage",
            b"GET / HTTP/1.1\r\n\r\n\x00\xff".to_vec(),
            false,
            "does not speak anduin's wire protocol",
        ),
        (
            "a truncated hello",
            good.get(..good.len() - 3).expect("most").to_vec(),
            true,
            "middle of a frame",
        ),
        (
            "a header announcing 4 GiB",
            header_announcing(&good, u32::MAX),
            false,
            "4294967295",
        ),
        (
            "a control message",
            message(&serde_json::json!({ "proof": [1, 2, 3], "version": 1 })),
            false,
            "expected a hello frame first, got message",
        ),
        (
            "a data frame",
            bytes(&Frame::Data {
                seq: 1,
                ipc: vec![0; 64],
            }),
            false,
            "expected a hello frame first, got data",
        ),
    ];
    for (what, sent, close, why) in probes {
        let stream = TcpStream::connect(&addr).expect("connects to the executor");
        (&stream).write_all(&sent).expect("sent");
        if close {
            stream.shutdown(Shutdown::Write).expect("half-closed");
        }
        let end = ending(&stream, what);
        assert!(end.others.is_empty(), "{what}: then came {:?}", end.others);
        let refused = end
            .refused
            .unwrap_or_else(|| panic!("{what}: closed without a refusal"));
        assert!(refused.contains(why), "{what}: {refused}");
    }
    // A hello of another version, its challenge answered: refused, saying both versions.
    let theirs = PROTOCOL_VERSION + 1;
    let stream = TcpStream::connect(&addr).expect("connects to the executor");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("a read timeout");
    (&stream).write_all(&bytes(&hello(theirs))).expect("sent");
    let mut reader = FrameReader::new(stream.try_clone().expect("a clone"));
    let Ok(Some(Frame::Message { body: nonce })) = reader.read_frame() else {
        panic!("the executor did not challenge the hello");
    };
    let proof = anduin_wire::auth::proof(None, &nonce);
    (&stream)
        .write_all(&bytes(&Frame::Message { body: proof }))
        .expect("sent");
    drop(reader);
    let what = format!("a hello of protocol {theirs}");
    let refused = ending(&stream, &what)
        .refused
        .unwrap_or_else(|| panic!("{what}: closed without a refusal"));
    assert!(
        refused.contains(&format!("version {theirs}"))
            && refused.contains(&format!("speaks {PROTOCOL_VERSION}")),
        "{what}: {refused}"
    );
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_string_lossy().as_bytes()).expect("a path");
    // SAFETY: a valid NUL-terminated path; mkfifo only reads it.
    let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
    assert_eq!(rc, 0, "mkfifo {}", path.display());
}

/// Writes `rows` into the pipe `fifo` once, for the reader's open that reads, then closes it
/// (the reader opens it twice: a check while the query is built, then to read).
fn feed(fifo: std::path::PathBuf, rows: Vec<u8>) {
    std::thread::spawn(move || loop {
        let Ok(mut pipe) = std::fs::OpenOptions::new().write(true).open(&fifo) else {
            return;
        };
        if pipe.write_all(&rows).is_err() {
            continue; // the check had closed it already
        }
        loop {
            let mut unread: libc::c_int = 0;
            // SAFETY: FIONREAD writes one int: the bytes still in the pipe.
            let rc = unsafe { libc::ioctl(pipe.as_raw_fd(), libc::FIONREAD, &mut unread) };
            if rc != 0 || unread == 0 {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    });
}

#[test]
fn a_coordinator_and_an_executor_turn_away_malformed_frames_and_other_protocols_and_run_on() {
    let work = tempfile::tempdir().expect("tempdir");
    std::fs::write(work.path().join("q.flow"), QUERY).expect("query");
    let mut rows = String::from("ts,sensor,value\n");
    for i in 1..=200 {
        rows.push_str(&format!("{i},{},{}\n", i % 7, i * 3));
    }
    std::fs::write(work.path().join("rows.csv"), &rows).expect("rows");
    anduin_ok(
        work.path(),
        &[
            "run",
            "q.flow",
            "--var",
            "FIFO=rows.csv",
            "--var",
            "OUTPUT=reference.csv",
        ],
    );
    let expected = output_rows(&work.path().join("reference.csv"));
    assert_eq!(expected.len(), 200, "the reference has every row");

    // Its log at the level that names why a connection failed, whatever the environment says.
    let mut cluster = LocalCluster::start_with(
        1,
        4,
        Setup {
            env: vec![("RUST_LOG".into(), "warn".into())],
            ..Setup::default()
        },
    );
    probe_the_coordinator(&cluster.addr, || cluster.coordinator_log());
    assert!(
        matches!(cluster.coordinator.0.try_wait(), Ok(None)),
        "the coordinator died of the probes\n{}",
        cluster.logs()
    );
    assert_eq!(
        cluster.workers_joined(),
        1,
        "the worker is still registered"
    );

    // A query through it; its executor, waiting for the pipe, probed too.
    mkfifo(&work.path().join("fifo"));
    let submit = cluster.submit(
        work.path(),
        "q.flow",
        &["--var", "FIFO=fifo", "--var", "OUTPUT=out"],
    );
    let worker = cluster.workers[0].pid();
    let mut port = None;
    wait_until("the executor listening", || {
        port = children(worker).into_iter().find_map(listening_port);
        port.is_some()
    });
    probe_the_executor(port.expect("found"));
    feed(work.path().join("fifo"), rows.into_bytes());
    let out = submit.wait_output();
    let logs = cluster.logs();
    assert!(
        out.status.success(),
        "{}\n{logs}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(output_rows(&work.path().join("out")), expected, "{logs}");
    let status = cluster.status("q");
    assert_eq!(status["state"], "finished", "{status}");
    assert_eq!(
        status["attempt"], 1,
        "the probes of its executor cost the query an attempt: {status}\n{logs}"
    );
}
