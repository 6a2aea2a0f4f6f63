//! A reader throttled to 50 rows a second would take 100 seconds over 5000 rows; `anduin
//! ctl set q in rate 1000000` lifts the throttle while it runs, and the run ends with every
//! row written once, in order. A rate out of range is refused and changes nothing.

use crate::common;

use std::fmt::Write as _;
use std::process::{Command, Stdio};

use common::{ctl, start_with_api, stdout_ok, wait_until};

const QUERY: &str = r#"
type name = "R" {
  column name = "id", type = "int"
  column name = "v", type = "int"
}
operator name = "in", type = "reader" {
  param path = "in.csv"
  param rate = 50
  output name = "rows", type = "R"
}
operator name = "out", type = "writer" {
  input name = "rows"
  param path = "out.csv"
}
"#;

const ROWS: usize = 5000;

#[test]
fn a_new_rate_set_while_running_lifts_the_throttle() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    std::fs::write(d.join("q.flow"), QUERY).expect("writes");
    std::fs::create_dir(d.join("rt")).expect("a runtime dir");
    let mut input = String::from("id,v\n");
    for i in 0..ROWS {
        writeln!(input, "{i},{}", i % 7).expect("formats");
    }
    std::fs::write(d.join("in.csv"), &input).expect("writes");

    let mut command = Command::new(env!("CARGO_BIN_EXE_anduin"));
    command
        .args(["run", "q.flow", "-q"])
        .current_dir(d)
        .env("XDG_RUNTIME_DIR", d.join("rt"))
        .env_remove("RUST_LOG")
        .stdout(Stdio::null());
    let (mut run, api, _stderr) = start_with_api(command);
    let client = anduin_api::Client::new(&api, None).expect("an address");
    wait_until("the first rows", || {
        client.metrics("q").is_ok_and(|m| {
            m.instances
                .iter()
                .any(|i| i.operator == "out" && i.rows_in > 0)
        })
    });
    let params = stdout_ok(&ctl(d, &api, &["params", "q", "in"]));
    assert!(params.contains("rate"), "{params}");

    for bad in ["0", "-3", "fast"] {
        let out = ctl(d, &api, &["set", "q", "in", "rate", bad]);
        assert_ne!(out.status.code(), Some(0), "rate {bad} must be refused");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("in.rate:"), "{stderr}");
    }
    let applied = stdout_ok(&ctl(d, &api, &["set", "q", "in", "rate", "1000000"]));
    assert!(applied.contains("applied at epoch"), "{applied}");

    // At 50 rows a second the rest would take over a minute: the run ends well before.
    let mut status = None;
    wait_until("the run to end at the new rate", || {
        status = run.0.try_wait().expect("waits");
        status.is_some()
    });
    assert_eq!(status.and_then(|s| s.code()), Some(0));
    let written = std::fs::read_to_string(d.join("out.csv")).expect("an output");
    assert_eq!(written, input, "every row once, in order");
}
