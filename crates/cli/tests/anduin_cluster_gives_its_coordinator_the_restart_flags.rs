//! `anduin cluster` gives its coordinator the restart flags (`--restart-attempts`,
//! `--restart-backoff`, `--restart-max-backoff`), before or after the query's run flags: a
//! query failing on every attempt is given up after the attempts asked for, without the
//! default waits (which add up to about two minutes over ten attempts, probe45). A value the
//! coordinator would refuse, or none, is refused before anything starts, naming the flag.

use crate::common;

use common::anduin;
use common::cluster::failing_at_start;

#[test]
fn anduin_cluster_gives_its_coordinator_the_restart_flags() {
    let work = tempfile::tempdir().expect("tempdir");
    failing_at_start(work.path());

    // A bad value, or (last, without its value) none: refused before anything starts (a
    // bare last one was dropped without a word, probe46).
    for (flags, says) in [
        (
            &["--restart-backoff", "soon"][..],
            "--restart-backoff soon:",
        ),
        (&["--restart-attempts", "0"][..], "--restart-attempts 0:"),
        (
            &["--no-chaining", "--restart-backoff"][..],
            "--restart-backoff needs a value",
        ),
    ] {
        let mut args = vec!["cluster", "q.sql", "--workers", "1"];
        args.extend_from_slice(flags);
        let bad = anduin(work.path(), &args);
        let said = String::from_utf8_lossy(&bad.stderr);
        assert!(
            !bad.status.success() && said.contains(says),
            "{flags:?}: {said}"
        );
    }

    let out = anduin(
        work.path(),
        &[
            "cluster",
            "q.sql",
            "--workers",
            "1",
            "--restart-attempts",
            "2",
            // After the run flags too.
            "--no-chaining",
            "--restart-backoff",
            "0s",
        ],
    );
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains("`out` is a file, but with checkpoints a writer writes part files"),
        "{said}"
    );
    // The coordinator's lines are the command's own.
    assert!(said.contains("query q failed after 2 attempts"), "{said}");
    assert!(
        !said.contains("recovering from the last checkpoint in"),
        "no wait between the attempts: {said}"
    );
}
