//! Issue 22, point 4: rows that an event-time operator drops as late are counted in the run's
//! summary (`late_rows`), without `-v`.

use crate::common;

use common::{anduin_ok, repo};

#[test]
fn late_rows_are_counted_in_the_run_summary() {
    let dir = tempfile::tempdir().expect("tempdir");
    // With one row per batch, each row's watermark goes out before the next row: 1200 and
    // 900 come after the watermark reached 2500 and 3000.
    std::fs::write(
        dir.path().join("in.csv"),
        "ts,sensor,value\n1000,1,1\n2500,1,2\n1200,1,3\n3000,1,4\n900,1,5\n",
    )
    .expect("input");
    let flow = repo().join("examples/q2.flow");
    let out = anduin_ok(
        dir.path(),
        &[
            "run",
            flow.to_str().expect("utf-8 path"),
            "--var",
            "INPUT=in.csv",
            "--var",
            "OUTPUT=o.csv",
            "--batch-size",
            "1",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("q2      [window] 5 rows in, 3 rows out; late_rows 2"),
        "{stderr}"
    );
    assert!(stderr.contains("anduin: no malformed records"), "{stderr}");
}
