//! anduin turns transparent huge pages off for its process (the allocator's memory, freed
//! and taken back as batches come and go, would cost the kernel 2 MiB of zeroing each time),
//! unless `ANDUIN_TRANSPARENT_HUGE_PAGES=1`: what the kernel says in `/proc/PID/status`.

use crate::common;

use std::process::Stdio;

use common::{anduin_in_tmpdir, wait_until, ChildGuard, SLOW_GENERATOR};

/// The `THP_enabled` line of process `pid`'s status.
fn thp_enabled(pid: u32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("THP_enabled:").map(|v| v.trim().to_string()))
}

#[test]
fn anduin_runs_without_transparent_huge_pages_unless_asked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    std::fs::write(root.join("slow.flow"), SLOW_GENERATOR).expect("query");
    // This test's own process is the baseline: a kernel without transparent huge pages, or
    // without the line, has nothing to say.
    if thp_enabled(std::process::id()).as_deref() != Some("1") {
        eprintln!("this kernel shows no transparent huge pages to turn off: nothing to check");
        return;
    }
    for (asked, expected) in [(None, "0"), (Some("1"), "1")] {
        let out = format!("out-{expected}.csv");
        let mut command = anduin_in_tmpdir(root, "t", &["run", "slow.flow", "--var"]);
        command.arg(format!("OUTPUT={out}"));
        if let Some(v) = asked {
            command.env("ANDUIN_TRANSPARENT_HUGE_PAGES", v);
        }
        let run = ChildGuard(
            command
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("anduin starts"),
        );
        // Once its output is open, main has long begun.
        wait_until("the run's output", || root.join(&out).exists());
        assert_eq!(
            thp_enabled(run.pid()).as_deref(),
            Some(expected),
            "ANDUIN_TRANSPARENT_HUGE_PAGES={asked:?}"
        );
    }
}
