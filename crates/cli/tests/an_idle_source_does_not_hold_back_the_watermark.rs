//! A window over two sources, one of which (stdin, kept open) sends nothing: with
//! `idle_timeout` the silent source is marked idle and the windows of the other one fire
//! while the query runs. A late row on stdin wakes the source up; it is dropped as late, and
//! once the source is idle again the windows go on firing, each with exactly the generator's
//! rows.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

const QUERY: &str = r#"
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param count = 100000000
  param rate = 4000
  param event_time = "ts"
  output name = "generated", type = "Event"
}
operator name = "live", type = "reader" {
  param path = "-"
  param event_time = "ts"
  param idle_timeout = "100ms"
  output name = "typed", type = "Event"
}
operator name = "both", type = "union" {
  input name = "generated"
  input name = "typed"
  output name = "all", type = "Event"
}
operator name = "perSecond", type = "window" {
  input name = "all"
  param kind = "tumbling"
  param size = "1s"
  param time = "ts"
  param aggregates = "COUNT(*) AS n"
  output name = "counts"
}
operator name = "out", type = "writer" {
  input name = "counts"
  param path = "-"
}
"#;

#[test]
fn an_idle_source_does_not_hold_back_the_watermark() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("q.flow"), QUERY).expect("query");
    let mut child = Command::new(env!("CARGO_BIN_EXE_anduin"))
        .args(["run", "q.flow", "-q"])
        .current_dir(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("anduin starts");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(b"ts,sensor,value\n").expect("header");
    stdin.flush().expect("flush");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut windows = Vec::new();
    let mut next_window = |windows: &mut Vec<(i64, i64)>| {
        let line = lines
            .next()
            .expect("a window fires while stdin stays open")
            .expect("a line");
        if line.starts_with("window_start") {
            return;
        }
        let cols: Vec<i64> = line
            .split(',')
            .map(|c| c.parse().expect("a number"))
            .collect();
        windows.push((cols[0], cols[2]));
    };
    while windows.len() < 2 {
        next_window(&mut windows);
    }
    // A row far behind the watermark: the source is active again, the row late.
    stdin.write_all(b"1700000000500,1,1\n").expect("a late row");
    stdin.flush().expect("flush");
    while windows.len() < 6 {
        next_window(&mut windows);
    }
    let _ = child.kill();
    let _ = child.wait();
    drop(stdin);
    // The generator's events come one per millisecond: 1000 per window, in order.
    for (i, (start, n)) in windows.iter().enumerate() {
        assert_eq!(*start, 1_700_000_000_000 + 1000 * i as i64, "{windows:?}");
        assert_eq!(
            *n, 1000,
            "window {i} has only the generator's rows: {windows:?}"
        );
    }
}
