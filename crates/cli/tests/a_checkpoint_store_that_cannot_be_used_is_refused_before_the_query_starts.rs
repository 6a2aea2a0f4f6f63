//! `--checkpoint-store` that names no usable store stops `anduin run` before anything is
//! written, with an error naming the store and what is wrong: an unknown scheme (listing the
//! supported ones), a missing bucket, a server that does not answer, no credentials.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

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
  param path = "out.csv"
}
"#;

/// Every AWS variable a run could read from the test's environment.
const AWS: &[&str] = &[
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT",
    "AWS_ENDPOINT_URL_S3",
    "AWS_PROFILE",
];

fn run(dir: &Path, store: &str, env: &[(&str, String)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_anduin"));
    c.args(["run", "q.flow", "--checkpoint-store", store])
        .args(["--checkpoint-cache", "cache"])
        .current_dir(dir)
        .env_remove("RUST_LOG");
    for v in AWS {
        c.env_remove(v);
    }
    c.envs(env.iter().map(|(k, v)| (k, v)));
    c.output().expect("runs")
}

fn refused(dir: &Path, out: &Output, code: i32, wanted: &[&str]) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{stderr}");
    for w in wanted {
        assert!(stderr.contains(w), "`{w}` not in: {stderr}");
    }
    assert!(
        !dir.join("out.csv").exists(),
        "nothing was written: {stderr}"
    );
}

#[test]
fn an_unknown_scheme_is_refused_naming_the_supported_ones() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("q.flow"), QUERY).expect("query");
    let out = run(dir.path(), "gs://bucket/q", &[]);
    refused(
        dir.path(),
        &out,
        2,
        &[
            "gs://bucket/q",
            "unsupported scheme `gs://`",
            "s3://bucket/prefix",
            "file:///",
        ],
    );
}

#[test]
fn a_missing_bucket_a_silent_server_and_missing_credentials_are_refused_naming_the_store() {
    let s3 = S3Server::start();
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("q.flow"), QUERY).expect("query");

    let out = run(dir.path(), "s3://no-such-bucket/q", &s3.env());
    refused(
        dir.path(),
        &out,
        1,
        &["checkpoint store s3://no-such-bucket/q: cannot list its checkpoints"],
    );

    // A port nobody listens on (bound, then closed).
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("binds");
    let port = closed.local_addr().expect("addr").port();
    drop(closed);
    let mut env = s3.env();
    env.retain(|(k, _)| *k != "AWS_ENDPOINT_URL");
    env.push(("AWS_ENDPOINT_URL", format!("http://127.0.0.1:{port}")));
    let store = format!("s3://{BUCKET}/q");
    let out = run(dir.path(), &store, &env);
    refused(
        dir.path(),
        &out,
        1,
        &[&format!(
            "checkpoint store {store}: cannot list its checkpoints"
        )],
    );

    let endpoint = vec![("AWS_ENDPOINT_URL", s3.endpoint.clone())];
    let out = run(dir.path(), &store, &endpoint);
    refused(
        dir.path(),
        &out,
        1,
        &[&format!("checkpoint store {store}: cannot connect: no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")],
    );

    // The same store with the server's credentials works.
    let out = run(dir.path(), &store, &s3.env());
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
