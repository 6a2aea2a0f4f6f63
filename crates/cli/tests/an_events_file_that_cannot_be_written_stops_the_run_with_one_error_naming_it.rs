//! A probe found that `--events /dev/full` logged a warning per event and exited 0: a script
//! waiting on the events would wait forever, and the run had silently lost what it was asked
//! to report. The first failed write now stops the run (cleanly, as SIGTERM does), and the
//! run exits 1 with one error naming the file.

use crate::common;

use std::process::{Command, Stdio};

use common::{anduin, wait_until, ChildGuard, SLOW_GENERATOR};

fn assert_one_error(stderr: &str) {
    let error = "error: cannot write the events file `/dev/full`: No space left on device";
    assert_eq!(stderr.matches(error).count(), 1, "{stderr}");
    assert_eq!(stderr.matches("/dev/full").count(), 1, "{stderr}");
    assert!(!stderr.contains("WARN"), "{stderr}");
}

#[test]
fn an_events_file_that_cannot_be_written_stops_the_run_with_one_error_naming_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    std::fs::write(root.join("endless.flow"), SLOW_GENERATOR).expect("query");
    std::fs::write(
        root.join("bounded.flow"),
        SLOW_GENERATOR.replace("param rate = 50", "param count = 1000"),
    )
    .expect("query");

    // A bounded query: it exits 1, not 0.
    let out = anduin(
        root,
        &[
            "run",
            "bounded.flow",
            "--var",
            "OUTPUT=o1.csv",
            "--events",
            "/dev/full",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_one_error(&stderr);

    // An endless query ends by itself: nothing else stops it.
    let mut run = ChildGuard(
        Command::new(env!("CARGO_BIN_EXE_anduin"))
            .args([
                "run",
                "endless.flow",
                "--var",
                "OUTPUT=o2.csv",
                "--events",
                "/dev/full",
            ])
            .current_dir(root)
            .env_remove("RUST_LOG")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("anduin starts"),
    );
    let mut status = None;
    wait_until("the run to stop at its first failed event", || {
        status = run.0.try_wait().expect("the run's status");
        status.is_some()
    });
    assert_eq!(status.and_then(|s| s.code()), Some(1));
    let mut stderr = String::new();
    std::io::Read::read_to_string(run.0.stderr.as_mut().expect("stderr"), &mut stderr)
        .expect("stderr");
    assert_one_error(&stderr);
}
