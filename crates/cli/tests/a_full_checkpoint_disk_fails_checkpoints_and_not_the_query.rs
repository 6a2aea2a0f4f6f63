//! Issue 22, point 8: with its checkpoint directory on a full file system, a query stopped
//! with "No space left on device", although the docs promise that such a checkpoint fails
//! alone. Here the checkpoint directory is a real, tiny file system (a tmpfs mounted in a
//! private mount namespace made for the run, so nothing is left mounted whatever happens):
//! every checkpoint taken while the window holds state fails, the query goes on to the
//! output of a run without checkpoints, the failed checkpoints leave no file behind, and the
//! checkpoint after them is a full one.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::{anduin_ok, output_rows};

const GENERATE: &str = r#"
type name = "Event" {
  column name = "ts", type = "int"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param count = 200000
  output name = "events", type = "Event"
}
operator name = "out", type = "writer" {
  input name = "events"
  param path = "${OUTPUT}"
}
"#;

/// One window per (sensor, value) over the whole input: state grows to ~40 000 keys and
/// is released only when the input ends.
const WINDOWED: &str = r#"
CREATE TABLE events (ts BIGINT, sensor BIGINT, value BIGINT)
WITH (connector = 'file', path = '${INPUT}', event_time = 'ts', watermark = '1 second');
CREATE TABLE out WITH (connector = 'file', path = '${OUTPUT}');
INSERT INTO out
SELECT window_start, sensor, value, COUNT(*) AS n
FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(ts), INTERVAL '1' HOUR))
GROUP BY window_start, window_end, sensor, value;
"#;

/// Runs `script` (sh) in a private mount namespace: as root with `unshare -m`, otherwise
/// in a user namespace (`unshare -rm`).
fn in_mount_namespace(dir: &Path, script: &str) -> std::process::Output {
    let mut last = None;
    for flags in [&["-m"][..], &["-r", "-m"][..]] {
        let out = Command::new("unshare")
            .args(flags)
            .args(["sh", "-c", script])
            .current_dir(dir)
            .env_remove("RUST_LOG")
            .output()
            .expect("unshare (util-linux) runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        if stderr.contains("unshare failed") || stderr.contains("Operation not permitted") {
            last = Some(out);
            continue;
        }
        return out;
    }
    panic!(
        "this test mounts a tiny tmpfs in a private mount namespace and could not make one (run it as root or with unprivileged user namespaces): {:?}",
        last.map(|o| String::from_utf8_lossy(&o.stderr).to_string())
    );
}

#[test]
fn checkpoints_on_a_full_file_system_fail_alone_and_leave_nothing_behind() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    std::fs::write(root.join("gen.flow"), GENERATE).expect("query");
    std::fs::write(root.join("w.sql"), WINDOWED).expect("query");
    anduin_ok(
        root,
        &["run", "gen.flow", "--var", "OUTPUT=in.csv", "--quiet"],
    );
    anduin_ok(
        root,
        &[
            "run",
            "w.sql",
            "--var",
            "INPUT=in.csv",
            "--var",
            "OUTPUT=ref.csv",
            "--quiet",
        ],
    );
    std::fs::create_dir(root.join("ck")).expect("mount point");
    // 16 KiB: the lock file, a manifest and one small snapshot file fit (a page each);
    // a window snapshot of a thousand keys (~47 KB) does not.
    let script = format!(
        "mount -t tmpfs -o size=16k tmpfs ck || exit 97
         '{anduin}' run w.sql --var INPUT=in.csv --var OUTPUT=out --checkpoint-dir ck \
           --checkpoint-every 1000 --batch-size 1000 --checkpoint-full-every 100
         rc=$?
         (cd ck && find . | sort) > listing
         exit $rc",
        anduin = env!("CARGO_BIN_EXE_anduin")
    );
    let out = in_mount_namespace(root, &script);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "the query goes on: {stderr}");
    assert_eq!(
        output_rows(&root.join("out")),
        output_rows(&root.join("ref.csv")),
        "every row arrives, exactly once"
    );
    assert!(
        stderr.contains("checkpoint failed") && stderr.contains("No space left on device"),
        "{stderr}"
    );
    let failed: u64 = stderr
        .lines()
        .find_map(|l| {
            l.strip_prefix("anduin: checkpoints: 1 complete, ")
                .and_then(|r| r.split(' ').next())
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or_else(|| panic!("one complete checkpoint (the last) and some failed: {stderr}"));
    assert!(failed >= 1, "{stderr}");
    // What stays on the small disk: the lock, the lineage and the one complete checkpoint. Nothing of the
    // failed ones; the checkpoint after them is full (although --checkpoint-full-every 100
    // would otherwise have it write only changes).
    let listing = std::fs::read_to_string(root.join("listing")).expect("listing");
    let files: Vec<&str> = listing.lines().collect();
    let last = files
        .iter()
        .find(|f| f.ends_with("MANIFEST.json"))
        .map(|f| f.trim_end_matches("/MANIFEST.json"))
        .unwrap_or_else(|| panic!("a complete checkpoint: {listing}"));
    let window_file = format!("{last}/001-insert1_window.full");
    for f in &files {
        assert!(
            [".", "./LOCK", "./lineage", last].contains(f) || f.starts_with(&format!("{last}/")),
            "only the lock, the lineage and the complete checkpoint remain: {listing}"
        );
    }
    assert!(files.contains(&window_file.as_str()), "{listing}");
}
