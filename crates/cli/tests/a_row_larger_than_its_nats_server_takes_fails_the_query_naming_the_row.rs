//! probe40 L7: a row over the server's `max_payload` (1 MB by default) failed the query
//! with the client library's "max payload size exceeded", naming neither the row nor the
//! server. Now the message names the server, the row's beginning and size, and the limit.

use crate::common;

use std::time::Duration;

use common::anduin;
use common::nats::NatsServer;

#[test]
fn a_row_larger_than_its_nats_server_takes_fails_the_query_naming_the_row() {
    let server = NatsServer::start();
    server.stream("OUT", &["out"], Duration::from_secs(120));
    let dir = tempfile::tempdir().expect("tempdir");
    let big = format!("big-{}", "x".repeat(1_100_000));
    std::fs::write(
        dir.path().join("in.csv"),
        format!("ts,note\n1000,small\n2000,{big}\n"),
    )
    .expect("input");
    std::fs::write(
        dir.path().join("q.sql"),
        format!(
            "CREATE TABLE events (ts TIMESTAMP, note VARCHAR) WITH (connector = 'file', path = 'in.csv', format = 'csv', max_record_bytes = '4MB');
CREATE TABLE copied WITH (connector = 'nats', server = '{}', stream = 'OUT', subject = 'out', format = 'csv');
INSERT INTO copied SELECT * FROM events;",
            server.url
        ),
    )
    .expect("query");
    let out = anduin(dir.path(), &["run", "q.sql", "--no-api"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "publishing to subject `out` of stream `OUT` on the NATS server at {}: the row that begins \"",
            server.url
        )),
        "{stderr}"
    );
    assert!(stderr.contains(",big-xxxx"), "{stderr}");
    assert!(
        stderr.contains(
            "bytes encoded) is larger than the server takes (its `max_payload`: 1048576 bytes)"
        ),
        "{stderr}"
    );
    assert!(
        stderr.len() < 4000,
        "the row is not printed whole: {} bytes",
        stderr.len()
    );
}
