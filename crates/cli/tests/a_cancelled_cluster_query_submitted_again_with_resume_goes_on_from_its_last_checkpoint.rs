//! A query cancelled on a cluster keeps its checkpoints while no other query takes its name:
//! `anduin submit --resume` of the same query goes on from the last complete one (as Flink's
//! `run -s` from a savepoint), and its output holds every generated row exactly once. Without
//! a checkpoint to resume from, or into a query that cannot take the checkpoint's state,
//! `--resume` is refused, saying so. After the query had finished, `--resume` restores its
//! last checkpoint so that its sinks commit what they had not (nothing here), runs nothing,
//! and the output stays the same (it was refused: a commit lost after the last checkpoint
//! could not be made).

use crate::common;

use common::cluster::{all_generated, LocalCluster};
use common::{anduin, anduin_ok, output_rows, wait_until};

const COUNT: u64 = 24_000;

/// The generator of [`all_generated`], paced to 3 000 rows a second, into `${OUTPUT}`.
fn paced() -> String {
    all_generated(COUNT)
        .replace(
            "param count = 24000",
            "param count = 24000\n  param rate = 3000",
        )
        .replace("param path = \"all.csv\"", "param path = \"${OUTPUT}\"")
}

/// `anduin submit FILE --name q --resume` to `cluster`, which must be refused saying `why`.
fn resume_refused(cluster: &LocalCluster, dir: &std::path::Path, file: &str, why: &str) {
    let refused = anduin(
        dir,
        &[
            "submit",
            file,
            "--name",
            "q",
            "--coordinator",
            &cluster.addr,
            "--resume",
            "--var",
            "OUTPUT=out",
        ],
    );
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success() && said.contains(why), "{said}");
}

#[test]
fn a_cancelled_cluster_query_submitted_again_with_resume_goes_on_from_its_last_checkpoint() {
    let work = tempfile::tempdir().expect("tempdir");
    let dir = work.path();
    std::fs::write(dir.join("all.flow"), all_generated(COUNT)).expect("query");
    anduin_ok(dir, &["run", "all.flow"]);
    let expected = output_rows(&dir.join("all.csv"));
    assert_eq!(expected.len() as u64, COUNT);
    let query = paced();
    assert!(query.contains("rate = 3000"), "{query}");
    std::fs::write(dir.join("q.flow"), query).expect("query");

    let cluster = LocalCluster::start(2, 8);
    let flags = ["--var", "OUTPUT=out", "--checkpoint-every", "2000"];
    // Nothing to resume yet.
    resume_refused(
        &cluster,
        dir,
        "q.flow",
        "--resume: there is no complete checkpoint",
    );

    let first = cluster.submit(dir, "q.flow", &flags);
    wait_until("the third checkpoint", || {
        cluster.status("q")["last_checkpoint"]
            .as_u64()
            .is_some_and(|e| e >= 3)
    });
    anduin_ok(dir, &["cancel", "q", "--coordinator", &cluster.addr]);
    let out = first.wait_output();
    assert!(
        !out.status.success(),
        "a cancelled query's submission fails"
    );
    assert_eq!(cluster.status("q")["state"], "cancelled");
    // Its control plane (the API, the web UI) says so too, not `failed`.
    let client = anduin_api::Client::new(&cluster.api(), None).expect("an address");
    wait_until("the API says cancelled", || {
        client
            .query("q")
            .is_ok_and(|i| i.state == anduin_runtime::control::QueryState::Cancelled)
    });
    let kept = cluster.status("q")["last_checkpoint"]
        .as_u64()
        .expect("a checkpoint");

    // Another query under its name cannot take its checkpoint (its source's seed differs):
    // refused, and the cancelled query is still there.
    std::fs::write(
        dir.join("changed.flow"),
        paced().replace("param rate = 3000", "param rate = 3000\n  param seed = 7"),
    )
    .expect("query");
    resume_refused(
        &cluster,
        dir,
        "changed.flow",
        "cannot be restored into this query: operator \"gen\"",
    );
    assert_eq!(cluster.status("q")["state"], "cancelled");

    let mut again: Vec<&str> = flags.to_vec();
    again.push("--resume");
    let out = cluster.submit(dir, "q.flow", &again).wait_output();
    let logs = cluster.logs();
    assert!(
        out.status.success(),
        "{}\n{logs}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log = cluster.coordinator_log();
    let resumed = format!("anduin: query q resumes from checkpoint {kept} ");
    assert!(log.contains(&resumed), "{resumed}\n{log}");
    let got = output_rows(&dir.join("out"));
    assert_eq!(
        got.len(),
        expected.len(),
        "rows lost or written twice\n{logs}"
    );
    assert!(
        got == expected,
        "the output differs from an uninterrupted run"
    );

    // It finished: resumed, it only commits what its last checkpoint holds.
    let again = anduin(
        dir,
        &[
            "submit",
            "q.flow",
            "--name",
            "q",
            "--coordinator",
            &cluster.addr,
            "--resume",
            "--wait",
            "--var",
            "OUTPUT=out",
        ],
    );
    let logs = cluster.logs();
    assert!(
        again.status.success(),
        "{}\n{logs}",
        String::from_utf8_lossy(&again.stderr)
    );
    // The whole log: `logs` keeps each process's last lines only.
    assert!(
        cluster
            .coordinator_log()
            .contains("which says every input ended: its sinks commit what it holds"),
        "{logs}"
    );
    assert!(
        output_rows(&dir.join("out")) == expected,
        "the output changed\n{logs}"
    );
}
