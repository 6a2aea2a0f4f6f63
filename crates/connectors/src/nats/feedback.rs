//! Whether a `nats` sink publishes what a `nats` source of the same query reads (a feedback
//! loop: the query would read its own output again, and write it again, without end), from
//! their params alone: the same stream on a server they share, and the sink's subject among
//! those the source reads. Servers are compared by address (`nats://`, a user and a password
//! left out; `localhost` as `127.0.0.1`; port 4222 when none is given); two names of one
//! machine that do not look alike are not told apart.

use anduin_graph::FeedbackLoop;
use anduin_spec::OperatorDef;

use super::dedup::subject_matches;

/// What sink `sink` and source `source` share when the sink publishes what the source reads
/// (`subject \`events.out\` of stream \`EVENTS\` on nats://…`), and what to do, or `None`.
/// Both must be `nats` operators (`None` otherwise).
pub fn feeds_back(source: &OperatorDef, sink: &OperatorDef) -> Option<FeedbackLoop> {
    if source.kind.as_str() != "nats" || sink.kind.as_str() != "nats" {
        return None;
    }
    let text = |op: &OperatorDef, name: &str| op.param(name).map(|p| p.value.as_text().to_string());
    let stream = text(sink, "stream")?;
    if text(source, "stream")?.trim() != stream.trim() {
        return None;
    }
    let (read_from, written_to) = (text(source, "server")?, text(sink, "server")?);
    let read_from = addresses(&read_from);
    let shared = addresses(&written_to)
        .into_iter()
        .find(|a| read_from.contains(a))?;
    let subject = text(sink, "subject")?;
    let subject = subject.trim();
    let reads = match text(source, "subject").filter(|s| !s.trim().is_empty()) {
        None => true,
        Some(filter) => subject_matches(filter.trim(), subject),
    };
    reads.then(|| FeedbackLoop {
        shared: format!(
            "subject `{subject}` of stream `{}` on nats://{shared}",
            stream.trim()
        ),
        fix: "Write to another stream or subject, or filter the source on subjects the sink does not write".to_string(),
    })
}

/// The addresses (`host:port`, lowercase) a `server` param names: comma-separated URLs with or
/// without a scheme and a user, `localhost` as `127.0.0.1`, port 4222 by default.
fn addresses(server: &str) -> Vec<String> {
    crate::addresses::normalized(server, "4222")
}

#[cfg(test)]
mod tests {
    use super::*;
    use anduin_spec::{Param, Text, Value};

    fn op(inputs: bool, server: &str, stream: &str, subject: Option<&str>) -> OperatorDef {
        let mut params = vec![("server", server), ("stream", stream)];
        if let Some(s) = subject {
            params.push(("subject", s));
        }
        OperatorDef {
            name: Text::unplaced(if inputs { "out" } else { "in" }),
            kind: Text::unplaced("nats"),
            params: params
                .into_iter()
                .map(|(n, v)| Param {
                    name: Text::unplaced(n),
                    value: Value::String(Text::unplaced(v)),
                })
                .collect(),
            inputs: vec![],
            outputs: vec![],
            control: None,
            pos: anduin_types::Pos::default(),
        }
    }

    #[test]
    fn a_sink_publishing_a_subject_its_source_reads_on_a_shared_server_feeds_back() {
        // Issue 19 (M2): a sink writing into the stream its own source reads was not refused.
        let server = "nats://127.0.0.1:4222";
        let sink = op(true, server, "EVENTS", Some("events.out"));
        for filter in [None, Some("events.>"), Some("events.*"), Some("events.out")] {
            assert_eq!(
                feeds_back(&op(false, server, "EVENTS", filter), &sink).map(|f| f.shared),
                Some(
                    "subject `events.out` of stream `EVENTS` on nats://127.0.0.1:4222".to_string()
                ),
                "{filter:?}"
            );
        }
        for (source, why) in [
            (
                op(false, server, "EVENTS", Some("events.in")),
                "another subject",
            ),
            (op(false, server, "OTHER", None), "another stream"),
            (
                op(false, "nats://10.0.0.9:4222", "EVENTS", None),
                "another server",
            ),
            (
                op(false, "nats://127.0.0.1:4223", "EVENTS", None),
                "another port",
            ),
        ] {
            assert_eq!(feeds_back(&source, &sink), None, "{why}");
        }
        let same = [
            "localhost",
            "nats://user:secret@LOCALHOST:4222",
            "tls://127.0.0.1",
            "nats://10.0.0.9:4222, nats://127.0.0.1:4222",
        ];
        for server in same {
            assert!(
                feeds_back(&op(false, server, "EVENTS", None), &sink).is_some(),
                "{server}"
            );
        }
    }
}
