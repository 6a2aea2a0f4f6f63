//! probe40: `server = 'nats://user:password@host:port'`, as docs/connectors.md writes it, was
//! not logged in with (the client library reads no login from the URL): a server asking for
//! one refused the query with "authorization violation", and the message printed the
//! password. Now the user and password of the URL (percent-decoded) log the client in, and
//! messages show the password as `***`.

use crate::common;

use std::time::Duration;

use common::anduin;
use common::nats::NatsServer;

const PASSWORD: &str = "p@ss word";
/// [`PASSWORD`] as a URL writes it.
const ENCODED: &str = "p%40ss%20word";

fn query(server: &str) -> String {
    format!(
        "CREATE TABLE events (ts TIMESTAMP, value BIGINT) WITH (connector = 'nats', server = '{server}', stream = 'EVENTS', format = 'csv', bounded = 'true');
CREATE TABLE copied WITH (connector = 'nats', server = '{server}', stream = 'OUT', subject = 'out', format = 'csv');
INSERT INTO copied SELECT * FROM events;"
    )
}

#[test]
fn a_nats_server_asking_for_a_login_takes_the_user_and_password_of_the_url() {
    let server = NatsServer::start_with_login("reader", PASSWORD);
    server.stream("EVENTS", &["events"], Duration::from_secs(120));
    server.stream("OUT", &["out"], Duration::from_secs(120));
    let rows = common::nats::events(0, 200);
    server.publish("events", &rows);
    let hostport = server.url.trim_start_matches("nats://");
    let dir = tempfile::tempdir().expect("tempdir");

    let url = format!("nats://reader:{ENCODED}@{hostport}");
    std::fs::write(dir.path().join("q.sql"), query(&url)).expect("query");
    let out = anduin(dir.path(), &["run", "q.sql", "--no-api"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(server.read("OUT"), rows);

    // A wrong password is refused by the server; the message names the user, not the
    // password.
    let wrong = format!("nats://reader:wrong-{ENCODED}@{hostport}");
    std::fs::write(dir.path().join("q.sql"), query(&wrong)).expect("query");
    let out = anduin(dir.path(), &["run", "q.sql", "--no-api"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("authorization"), "{stderr}");
    assert!(stderr.contains("nats://reader:***@"), "{stderr}");
    assert!(
        !stderr.contains("wrong-"),
        "the password is not shown: {stderr}"
    );
}
