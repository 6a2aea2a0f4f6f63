//! From a hostile probe: a bounded query whose checkpoint store refused every write after its
//! first checkpoint (`chattr +i`) never finished, embedded or on a cluster: its last
//! barrier — the one the sources end their input with — is injected only once that
//! checkpoint has begun, and none could begin any more, so the sources waited for it for
//! ever. Now the last barrier goes out all the same: the query finishes as a run without
//! checkpoints does (each sink commits what it holds at the end of its input), with the
//! output of an uninterrupted run. The refusal is injected (`--inject-checkpoints-denied-from`,
//! for tests): no checkpoint can begin, the last included.

use crate::common;

use common::cluster::{windowed_reference, LocalCluster};
use common::{anduin_ok, output_rows};

const FLAGS: [&str; 6] = [
    "--parallelism",
    "2",
    "--checkpoint-every",
    "4000",
    "--inject-checkpoints-denied-from",
    "1",
];

#[test]
fn an_embedded_run_whose_checkpoints_can_no_longer_begin_still_finishes() {
    let work = tempfile::tempdir().expect("tempdir");
    let expected = windowed_reference(work.path(), 11, 30_000, 20_000);
    let mut args = vec![
        "run",
        "q.flow",
        "--var",
        "OUTPUT=out",
        "--checkpoint-store",
        "checkpoints",
    ];
    args.extend(FLAGS);
    anduin_ok(work.path(), &args);
    let got = output_rows(&work.path().join("out"));
    assert_eq!(got.len(), expected.len(), "rows lost or duplicated");
    assert!(
        got == expected,
        "the output differs from the uninterrupted run"
    );
}

#[test]
fn a_cluster_query_whose_checkpoints_can_no_longer_begin_still_finishes() {
    let work = tempfile::tempdir().expect("tempdir");
    let expected = windowed_reference(work.path(), 11, 30_000, 20_000);
    let cluster = LocalCluster::start(2, 8);
    let mut args = vec!["--var", "OUTPUT=out"];
    args.extend(FLAGS);
    let out = cluster.submit(work.path(), "q.flow", &args).wait_output();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}\n{}", cluster.logs());
    assert_eq!(cluster.status("q")["state"], "finished");
    assert!(
        cluster
            .coordinator_log()
            .contains("finished, but its last checkpoint failed"),
        "{}",
        cluster.logs()
    );
    let got = output_rows(&work.path().join("out"));
    assert_eq!(got.len(), expected.len(), "rows lost or duplicated");
    assert!(
        got == expected,
        "the output differs from the uninterrupted run"
    );
}
