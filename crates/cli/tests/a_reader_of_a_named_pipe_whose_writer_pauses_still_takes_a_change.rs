//! A reader of a named pipe whose writer pauses (holds the pipe open and writes nothing) still
//! takes the changes of its query: the pipe is read on a thread of its own, so the reader's
//! task injects the change's barrier while it waits. The rows written before the change are
//! filtered by the old condition, those after it by the new one.
//!
//! Found by the re-probe of session 30: the reader waited in `read` on the pipe, no barrier
//! got past it, and `ctl set` answered after 30 s that the change had not reached every
//! instance ("held back, for instance by a slow output").

use crate::common;

use std::io::Write;
use std::process::{Command, Stdio};

use common::{ctl, output_rows, start_with_api, stdout_ok, wait_until};

const QUERY: &str = r#"
type name = "Event" {
  column name = "ts", type = "int"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "src", type = "reader" {
  param path = "in.csv"
  output name = "rows", type = "Event"
}
operator name = "f", type = "filter" {
  input name = "rows"
  param condition = "value % 2 = 0"
  output name = "kept", type = "Event"
}
operator name = "out", type = "writer" {
  input name = "kept"
  param path = "out.csv"
}
"#;

fn mkfifo(path: &std::path::Path) {
    let c = std::ffi::CString::new(path.to_string_lossy().as_bytes()).expect("a path");
    // SAFETY: a valid NUL-terminated path; mkfifo only reads it.
    let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
    assert_eq!(rc, 0, "mkfifo {}", path.display());
}

/// Rows `from..=to`: `ts`, `sensor`, `value` = the row's number.
fn rows(from: u32, to: u32) -> String {
    (from..=to)
        .map(|i| format!("{i},{},{i}\n", i % 3))
        .collect()
}

#[test]
fn a_reader_of_a_named_pipe_whose_writer_pauses_still_takes_a_change() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    std::fs::create_dir(d.join("rt")).expect("a runtime dir");
    std::fs::write(d.join("q.flow"), QUERY).expect("query");
    let fifo = d.join("in.csv");
    mkfifo(&fifo);
    // The writer: the header and rows 1..=40, then (told to) rows 41..=80, then the end. The
    // reader opens the pipe twice (a check while the query is built, then to read): a write
    // that meets the check's open before it closes stays in the pipe for the reading one.
    let (go_on, told) = crossbeam_channel::bounded::<()>(1);
    let writer = std::thread::spawn(move || {
        let first = format!("ts,sensor,value\n{}", rows(1, 40));
        let mut pipe = loop {
            let mut pipe = std::fs::OpenOptions::new()
                .write(true)
                .open(&fifo)
                .expect("the pipe opens");
            if pipe.write_all(first.as_bytes()).is_ok() {
                break pipe;
            }
        };
        let _ = told.recv();
        pipe.write_all(rows(41, 80).as_bytes())
            .expect("the reader reads on");
    });
    let mut command = Command::new(env!("CARGO_BIN_EXE_anduin"));
    command
        .args(["run", "q.flow", "-q"])
        .current_dir(d)
        .env("XDG_RUNTIME_DIR", d.join("rt"))
        .env_remove("RUST_LOG")
        .stdout(Stdio::null());
    let (run, api, _stderr) = start_with_api(command);
    let client = anduin_api::Client::new(&api, None).expect("an address");
    let rows_in = || {
        client.metrics("q").map_or(0, |m| {
            m.instances
                .iter()
                .filter(|i| i.operator == "f")
                .map(|i| i.rows_in)
                .sum::<u64>()
        })
    };
    wait_until("the first 40 rows filtered", || rows_in() == 40);
    // The writer pauses: the change still reaches the filter.
    let applied = stdout_ok(&ctl(
        d,
        &api,
        &["set", "q", "f", "condition", "value % 2 = 1"],
    ));
    assert!(applied.contains("applied at epoch"), "{applied}");
    go_on.send(()).expect("the writer waits");
    writer.join().expect("the writer wrote");
    let out = run.wait_output();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Even values of 1..=40, then odd ones of 41..=80.
    let mut expected: Vec<String> = (1..=40u32)
        .filter(|i| i % 2 == 0)
        .chain((41..=80).filter(|i| i % 2 == 1))
        .map(|i| format!("{i},{},{i}", i % 3))
        .collect();
    expected.sort();
    assert_eq!(output_rows(&d.join("out.csv")), expected);
}
