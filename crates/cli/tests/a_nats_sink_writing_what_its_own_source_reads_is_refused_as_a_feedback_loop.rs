//! Issue 19 (M2): a NATS sink that publishes to a subject its own query's NATS source reads
//! (the same stream, on the same server) makes the query read its own output again and write
//! it again, without end. Such a query is refused before it runs (`check` and `run`), naming
//! both operators and what they share; a sink on a subject the source does not read, or on
//! another stream, is not.

use crate::common;

use common::anduin;

fn query(source_server: &str, source_subject: &str, sink_stream: &str) -> String {
    format!(
        r#"
type name = "Event" {{
  column name = "ts", type = "timestamp"
  column name = "value", type = "int"
}}
operator name = "in", type = "nats" {{
  param server = "{source_server}"
  param stream = "EVENTS"
  {source_subject}
  output name = "events", type = "Event"
}}
operator name = "low", type = "filter" {{
  input name = "events"
  param condition = "value < 50"
  output name = "kept", type = "Event"
}}
operator name = "out", type = "nats" {{
  input name = "kept"
  param server = "nats://127.0.0.1:4222"
  param stream = "{sink_stream}"
  param subject = "events.low"
}}
"#
    )
}

fn check(query: &str) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("q.flow"), query).expect("query");
    let out = anduin(dir.path(), &["check", "q.flow"]);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_nats_sink_writing_what_its_own_source_reads_is_refused_as_a_feedback_loop() {
    for (server, filter) in [
        ("nats://127.0.0.1:4222", ""),
        ("nats://localhost", r#"param subject = "events.>""#),
        ("127.0.0.1:4222", r#"param subject = "events.low""#),
    ] {
        let (code, stderr) = check(&query(server, filter, "EVENTS"));
        assert_eq!(code, Some(1), "{server} {filter}: {stderr}");
        for part in [
            r#"operator "out" (nats) writes to subject `events.low` of stream `EVENTS` on nats://127.0.0.1:4222, which source "in" (nats) at 6:1 reads"#,
            "(a feedback loop)",
            "Write to another stream or subject",
        ] {
            assert!(stderr.contains(part), "{part} not in {stderr}");
        }
    }
    for (server, filter, stream) in [
        (
            "nats://127.0.0.1:4222",
            r#"param subject = "events.raw""#,
            "EVENTS",
        ),
        ("nats://127.0.0.1:4222", "", "LOW"),
        ("nats://10.1.2.3:4222", "", "EVENTS"),
    ] {
        let (code, stderr) = check(&query(server, filter, stream));
        assert_eq!(code, Some(0), "{server} {filter} {stream}: {stderr}");
    }
}
