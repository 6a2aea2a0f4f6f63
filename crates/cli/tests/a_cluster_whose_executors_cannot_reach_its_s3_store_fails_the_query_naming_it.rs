//! A cluster's checkpoints in an S3-compatible store (a moto server on loopback) are reached
//! by every process with the settings of its own environment. A coordinator that cannot
//! reach the store does not start; workers whose executors cannot (here: a wrong endpoint)
//! fail the query — it does not hang — with an error that names the store and says that
//! every worker needs its settings; nothing is written.

use crate::common;

use std::process::Command;

use common::cluster::{LocalCluster, Setup};
use common::s3::{S3Server, BUCKET};

const QUERY: &str = r#"
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param count = 1000
  output name = "events", type = "Event"
}
operator name = "out", type = "writer" {
  input name = "events"
  param path = "${OUTPUT}"
}
"#;

/// An endpoint nobody listens on (a port bound, then closed).
fn closed_endpoint() -> String {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("binds");
    let port = closed.local_addr().expect("addr").port();
    drop(closed);
    format!("http://127.0.0.1:{port}")
}

#[test]
fn a_cluster_whose_executors_cannot_reach_its_s3_store_fails_the_query_naming_it() {
    let s3 = S3Server::start();
    let env: Vec<(String, String)> = s3
        .env()
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    let store = format!("s3://{BUCKET}/unreachable");
    let wrong = closed_endpoint();

    // The coordinator checks the store before it serves anything.
    let dir = tempfile::tempdir().expect("tempdir");
    let out = Command::new(env!("CARGO_BIN_EXE_anduin"))
        .args(["coordinator", "--listen", "127.0.0.1:0"])
        .arg("--state-dir")
        .arg(dir.path().join("state"))
        .args(["--checkpoint-store", &store])
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("AWS_ENDPOINT_URL", &wrong)
        .output()
        .expect("anduin runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "checkpoint store {store}: cannot list its checkpoints"
        )),
        "{stderr}"
    );

    // Its workers cannot.
    let cluster = LocalCluster::start_with(
        2,
        4,
        Setup {
            checkpoint_store: Some(store.clone()),
            env,
            worker_env: vec![("AWS_ENDPOINT_URL".into(), wrong)],
            ..Setup::default()
        },
    );
    let work = tempfile::tempdir().expect("tempdir");
    std::fs::write(work.path().join("q.flow"), QUERY).expect("query");
    let out = cluster
        .submit(work.path(), "q.flow", &["--var", "OUTPUT=out"])
        .wait_output();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let status = cluster.status("q");
    assert_eq!(status["state"], "failed", "{status}");
    let error = status["error"].as_str().unwrap_or_default();
    for wanted in [
        format!("checkpoint store {store}/q: cannot list its checkpoints"),
        "every worker needs the store's settings in its environment".to_string(),
    ] {
        assert!(error.contains(&wanted), "`{wanted}` not in: {error}");
        assert!(stderr.contains(&wanted), "`{wanted}` not in: {stderr}");
    }
    let output = work.path().join("out");
    assert!(
        !output.exists() || common::output_rows(&output).is_empty(),
        "nothing was written"
    );
}
