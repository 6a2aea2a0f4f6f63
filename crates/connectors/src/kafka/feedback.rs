//! Whether a `kafka` sink writes a topic that a `kafka` source of the same query reads (a
//! feedback loop: the query would read its own output again, and write it again, without
//! end), from their params alone: a broker both name in `properties.bootstrap.servers`, and
//! the sink's `topic` among the source's `topic` list or matched by its `topic-pattern` (as
//! the source picks topics: the whole name, never one of Kafka's own `__` topics). Brokers are
//! compared by address (lowercase, `localhost` as `127.0.0.1`, port 9092 when none is given);
//! two names of one machine that do not look alike are not told apart.

use anduin_graph::FeedbackLoop;
use anduin_spec::OperatorDef;

use super::options::{pattern_picks, topics};

/// What sink `sink` and source `source` share when the sink writes a topic the source reads
/// (`topic \`events\` of the Kafka cluster at 127.0.0.1:9092`), and what to do, or `None`.
/// Both must be `kafka` operators (`None` otherwise).
pub fn feeds_back(source: &OperatorDef, sink: &OperatorDef) -> Option<FeedbackLoop> {
    if source.kind.as_str() != "kafka" || sink.kind.as_str() != "kafka" {
        return None;
    }
    let text = |op: &OperatorDef, name: &str| op.param(name).map(|p| p.value.as_text().to_string());
    let servers = "properties.bootstrap.servers";
    let read_from = brokers(&text(source, servers)?);
    let shared = brokers(&text(sink, servers)?)
        .into_iter()
        .find(|b| read_from.contains(b))?;
    let topic = text(sink, "topic")?;
    let topic = topic.trim();
    let (reads, param) = match (text(source, "topic"), text(source, "topic-pattern")) {
        (Some(list), _) => (topics(&list).iter().any(|t| t == topic), "topic"),
        (None, Some(pattern)) => (
            // The whole name, as the source matches it (an invalid pattern is the source's
            // binding's to refuse).
            regex::Regex::new(&format!("^(?:{pattern})$")).is_ok_and(|r| pattern_picks(&r, topic)),
            "topic-pattern",
        ),
        (None, None) => return None,
    };
    reads.then(|| FeedbackLoop {
        shared: format!("topic `{topic}` of the Kafka cluster at {shared}"),
        fix: format!("Write to another topic, or leave `{topic}` out of the source's `{param}`"),
    })
}

/// The brokers (`host:port`, lowercase) a `properties.bootstrap.servers` param names:
/// comma-separated, with or without a scheme, `localhost` as `127.0.0.1`, port 9092 by
/// default.
fn brokers(servers: &str) -> Vec<String> {
    crate::addresses::normalized(servers, "9092")
}

#[cfg(test)]
mod tests {
    use super::*;
    use anduin_spec::{Param, Text, Value};

    fn op(name: &str, params: &[(&str, &str)]) -> OperatorDef {
        OperatorDef {
            name: Text::unplaced(name),
            kind: Text::unplaced("kafka"),
            params: params
                .iter()
                .map(|(n, v)| Param {
                    name: Text::unplaced(*n),
                    value: Value::String(Text::unplaced(*v)),
                })
                .collect(),
            inputs: vec![],
            outputs: vec![],
            control: None,
            pos: anduin_types::Pos::default(),
        }
    }

    const SERVERS: &str = "properties.bootstrap.servers";

    #[test]
    fn a_sink_writing_a_topic_its_source_reads_on_a_shared_broker_feeds_back() {
        let sink = op("out", &[(SERVERS, "127.0.0.1:9092"), ("topic", "events")]);
        for (param, value) in [
            ("topic", "events"),
            ("topic", "audit, events"),
            ("topic-pattern", "ev.*"),
            ("topic-pattern", "events|audit"),
        ] {
            let source = op("in", &[(SERVERS, "localhost"), (param, value)]);
            let found = feeds_back(&source, &sink).expect("a loop");
            assert_eq!(
                found.shared, "topic `events` of the Kafka cluster at 127.0.0.1:9092",
                "{param} {value}"
            );
            assert!(found.fix.contains(&format!("`{param}`")), "{found:?}");
        }
        for (params, why) in [
            (
                vec![(SERVERS, "127.0.0.1:9092"), ("topic", "events-raw")],
                "another topic",
            ),
            (
                vec![(SERVERS, "127.0.0.1:9092"), ("topic-pattern", "ev")],
                "a pattern matches whole names",
            ),
            (
                vec![(SERVERS, "127.0.0.1:9093"), ("topic", "events")],
                "another port",
            ),
            (
                vec![(SERVERS, "10.0.0.9:9092"), ("topic", "events")],
                "another broker",
            ),
        ] {
            assert_eq!(feeds_back(&op("in", &params), &sink), None, "{why}");
        }
        let source = op(
            "in",
            &[
                (SERVERS, "10.0.0.9:9092, LOCALHOST:9092"),
                ("topic", "events"),
            ],
        );
        assert!(feeds_back(&source, &sink).is_some(), "one broker shared");
    }
}
