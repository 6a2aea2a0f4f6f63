//! A NATS source with `metadata.timestamp` fills that column with each message's publish time
//! (when the stream stored it) instead of decoding it from the payload, and takes it as event
//! time: the payload holds the other columns only.

use crate::common;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::anduin;
use common::nats::NatsServer;

const QUERY: &str = r#"
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "value", type = "int"
}
operator name = "in", type = "nats" {
  param server = "${SERVER}"
  param stream = "EVENTS"
  param format = "csv"
  param bounded = true
  param metadata.timestamp = "ts"
  param event_time = "ts"
  param watermark = "1s"
  output name = "events", type = "Event"
}
operator name = "out", type = "nats" {
  input name = "events"
  param server = "${SERVER}"
  param stream = "OUT"
  param subject = "out"
  param format = "csv"
}
"#;

fn now_ms() -> i64 {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970");
    i64::try_from(d.as_millis()).expect("fits")
}

#[test]
fn a_nats_source_takes_event_time_from_the_publish_time_of_its_messages() {
    let server = NatsServer::start();
    let window = Duration::from_secs(120);
    server.stream("EVENTS", &["events"], window);
    server.stream("OUT", &["out"], window);
    let before = now_ms();
    server.publish(
        "events",
        &["1".to_string(), "2".to_string(), "3".to_string()],
    );
    let after = now_ms();

    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("q.flow"), QUERY).expect("query");
    let var = format!("SERVER={}", server.url);
    let out = anduin(dir.path(), &["run", "q.flow", "--var", &var]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows = server.read("OUT");
    assert_eq!(rows.len(), 3, "{rows:?}");
    let mut last = before;
    for (i, row) in rows.iter().enumerate() {
        let (ts, value) = row.split_once(',').expect("two columns");
        assert_eq!(value, (i + 1).to_string(), "{rows:?}");
        let ts: i64 = ts.parse().expect("epoch ms");
        // The server's clock is this machine's; a publish time is stored to the millisecond.
        assert!(
            (last..=after).contains(&ts),
            "row {i}: {ts} outside the publishing, {before}..={after}: {rows:?}"
        );
        last = ts;
    }
}
