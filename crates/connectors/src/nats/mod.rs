//! `nats`: a NATS JetStream stream as a source (no input, one output) or as a sink (one
//! input, no output), on the `async-nats` client.
//!
//! The source reads a stream's messages (those of a subject, when given) in stream order with
//! an ordered pull consumer, decodes CSV or JSON payloads with the file reader's decoders,
//! takes event time from a column (decoded, or the message's publish time with
//! `metadata.timestamp`), sends undecodable messages to the dead letters with
//! their stream and sequence, and keeps the next stream sequence in the checkpoints. With
//! `bounded`, it stops at the stream's last sequence as of its first start. See [`source`].
//!
//! The sink publishes one message a row to a subject of a stream, each with a `Nats-Msg-Id`
//! that a resumed run gives the same row again: exactly once within the stream's duplicate
//! window. See [`sink`] and [`dedup`].
//!
//! Neither creates streams: a missing stream, like a server that does not answer, fails the
//! start saying what to do; a stream gone while the query runs fails it too, once the source
//! has found it missing for `connect.timeout` (a lost server is waited for).

mod connection;
mod dedup;
mod error;
mod feedback;
mod sink;
mod source;

use std::sync::Arc;
use std::time::Duration;

use anduin_graph::{Arity, Binding, OperatorSignature, ParamKind, ParamSpec};
use anduin_operator_api::{Bound, Params};
use anduin_spec::OperatorDef;
use anduin_types::{Diagnostic, Diagnostics};
use arrow::datatypes::SchemaRef;

pub use error::{ConnectFailure, NatsError, RemadeFound, Role};
pub use feedback::feeds_back;

use crate::codec::TimestampFormat;
use crate::kafka::decode::RecordDecoder;
use crate::kafka::encode::RowEncoder;

/// Params only a source takes.
const SOURCE_ONLY: &[&str] = &[
    "max_record_bytes",
    "bounded",
    "metadata.timestamp",
    "on_error",
    "event_time",
    "watermark",
    "idle_timeout",
];

/// Params only a sink takes.
const SINK_ONLY: &[&str] = &["timestamp_format", "min_duplicate_window", "delivery"];

/// The `nats` operator type.
pub const SIGNATURE: OperatorSignature = OperatorSignature {
    kind: "nats",
    doc: "reads rows from a NATS JetStream stream (no input, one output) or writes rows to one (one input, no output)",
    inputs: Arity::AtMost(1),
    outputs: Arity::AtMost(1),
    stateful: true,
    params: &[
        crate::reader::MAX_RECORD_BYTES,
        ParamSpec {
            name: "server",
            required: true,
            kind: ParamKind::Text,
            default: None,
            doc: "the server, `nats://[user:password@]host:port` or `nats://token@host:port` (comma-separated for a cluster)",
        },
        ParamSpec {
            name: "stream",
            required: true,
            kind: ParamKind::Text,
            default: None,
            doc: "the JetStream stream read or written (it must exist)",
        },
        ParamSpec {
            name: "subject",
            required: false,
            kind: ParamKind::Text,
            default: None,
            doc: "source: the subject filter (wildcards allowed; default: every message of the stream); sink: the subject published to (required, one of the stream's)",
        },
        ParamSpec {
            name: "format",
            required: false,
            kind: ParamKind::OneOf(&["csv", "json", "jsonl"]),
            default: Some("csv"),
            doc: "a message's payload: CSV records (no header, columns in the type's order; a payload of several lines gives a row each), or one JSON object (`jsonl` is a synonym; a payload of several objects is rejected whole)",
        },
        ParamSpec {
            name: "csv.field-delimiter",
            required: false,
            kind: ParamKind::Text,
            default: Some(","),
            doc: "csv: the field separator, one character",
        },
        ParamSpec {
            name: "connect.timeout",
            required: false,
            kind: ParamKind::Duration,
            default: Some("10s"),
            doc: "how long the start waits for the server before it fails; also how long a running source waits for its stream to be made again once the server says it is gone",
        },
        ParamSpec {
            name: "bounded",
            required: false,
            kind: ParamKind::Bool,
            default: Some("false"),
            doc: "source: stop at the stream's last message as of the first start (for tests and backfills)",
        },
        ParamSpec {
            name: "metadata.timestamp",
            required: false,
            kind: ParamKind::Text,
            default: None,
            doc: "source: a timestamp column filled with each message's publish time (when the stream stored it) instead of decoded from its payload; it may be the event time",
        },
        ParamSpec {
            name: "on_error",
            required: false,
            kind: ParamKind::OneOf(&["dead_letter", "fail"]),
            default: Some("dead_letter"),
            doc: "source: an undecodable message goes to the dead letters (with its stream and sequence), or stops the query",
        },
        anduin_operator_api::event_time::EVENT_TIME_PARAMS[0],
        anduin_operator_api::event_time::EVENT_TIME_PARAMS[1],
        anduin_operator_api::event_time::EVENT_TIME_PARAMS[2],
        ParamSpec {
            name: "timestamp_format",
            required: false,
            kind: ParamKind::OneOf(&["epoch_ms", "rfc3339"]),
            default: Some("epoch_ms"),
            doc: "sink: how timestamps are written",
        },
        ParamSpec {
            name: "min_duplicate_window",
            required: false,
            kind: ParamKind::Duration,
            default: Some("1m"),
            doc: "sink, with checkpoints: the shortest duplicate window of the stream the sink accepts (a resumed run's rows written again later than the window are stored twice)",
        },
        ParamSpec {
            name: "delivery",
            required: false,
            kind: ParamKind::OneOf(&["exactly-once", "at-least-once"]),
            default: Some("exactly-once"),
            doc: "sink: `exactly-once` gives each row a message id that a resumed run gives it again (its input must come in one order on every run: one ordered chain from one source instance); `at-least-once` gives each run ids of its own, so a resumed run writes again the rows after its checkpoint (any input)",
        },
    ],
};

/// Checks a `nats` operator's params against what it is (a source without inputs, a sink
/// with one), and binds it.
pub fn bind(
    op: &OperatorDef,
    inputs: &[(&str, SchemaRef)],
    declared: &[Option<SchemaRef>],
) -> Result<Binding<Bound>, Diagnostics> {
    let p = Params::new(op);
    match (inputs.first(), op.outputs.len()) {
        (None, 1) => {
            only(op, &p, SINK_ONLY, "a sink")?;
            bind_source(op, &p, declared)
        }
        (Some(_), 0) => {
            only(op, &p, SOURCE_ONLY, "a source")?;
            bind_sink(op, &p)
        }
        _ => Err(Diagnostic::error(
            op.pos,
            format!(
                "operator \"{}\" of type `nats` is a source (no input, one output) or a sink (one input, no output)",
                op.name
            ),
        )
        .into()),
    }
}

/// Refuses the params of the other role.
fn only(op: &OperatorDef, p: &Params<'_>, others: &[&str], role: &str) -> Result<(), Diagnostics> {
    match op.params.iter().find(|x| others.contains(&x.name.as_str())) {
        Some(x) => Err(p
            .error(
                x.name.as_str(),
                format!("only {role} takes `{}`", x.name.as_str()),
            )
            .into()),
        None => Ok(()),
    }
}

/// `server` and `stream`, which must not be blank.
fn server_and_stream(p: &Params<'_>) -> Result<(String, String), Diagnostics> {
    let server = p.required("server").to_string();
    if server.trim().is_empty() {
        return Err(p
            .error("server", "no server given: `nats://host:port`")
            .into());
    }
    let stream = p.required("stream").to_string();
    if stream.trim().is_empty() || stream.contains(['.', '*', '>', ' ']) {
        return Err(p
            .error(
                "stream",
                "a stream's name: not blank, without `.`, `*`, `>` or spaces",
            )
            .into());
    }
    Ok((server, stream))
}

/// `connect.timeout`: 0 would fail every start before the server could answer.
fn connect_timeout(p: &Params<'_>) -> Result<Duration, Diagnostics> {
    crate::kafka::connect_timeout(p, 1, "1ms (a start waits that long for the server)")
}

fn bind_source(
    op: &OperatorDef,
    p: &Params<'_>,
    declared: &[Option<SchemaRef>],
) -> Result<Binding<Bound>, Diagnostics> {
    let schema = crate::declared_source_schema(op, declared)?;
    let watermarks = anduin_operator_api::event_time::watermark_spec(p, &schema)?;
    let format = crate::kafka::format(p)?;
    let timestamp_column = crate::kafka::timestamp_column(p, &schema)?;
    let (server, stream) = server_and_stream(p)?;
    if let Some(s) = p.text("subject").filter(|s| !s.as_str().trim().is_empty()) {
        if let Some(problem) = dedup::subject_problem(s.as_str()) {
            return Err(p
                .error(
                    "subject",
                    format!("`{}` is not a NATS subject filter: {problem}", s.as_str()),
                )
                .into());
        }
    }
    let config = source::SourceConfig {
        name: op.name.to_string(),
        server,
        stream,
        subject: p
            .text("subject")
            .map(|s| s.to_string())
            .filter(|s| !s.trim().is_empty()),
        connect_timeout: connect_timeout(p)?,
        bounded: p.bool_or("bounded", false),
        fail_on_error: p.str_or("on_error", "dead_letter") == "fail",
        watermarks,
    };
    let max_record = p.byte_size_or("max_record_bytes", crate::codec::DEFAULT_MAX_RECORD_BYTES)?;
    let out = Arc::clone(&schema);
    Ok(Binding {
        bound: Bound::Source(Arc::new(move |ctx| {
            let decoder = RecordDecoder::new(
                Arc::clone(&out),
                format,
                timestamp_column,
                config.watermarks.map(|w| w.column),
                max_record,
            );
            let s = source::NatsSource::open(config.clone(), decoder, ctx)
                .map_err(|e| e.for_operator(&config.name))?;
            Ok(Box::new(s))
        })),
        outputs: vec![schema],
        warnings: Diagnostics::default(),
        partition_by: Vec::new(),
    })
}

fn bind_sink(op: &OperatorDef, p: &Params<'_>) -> Result<Binding<Bound>, Diagnostics> {
    let format = crate::kafka::format(p)?;
    let (server, stream) = server_and_stream(p)?;
    let subject = match p.text("subject") {
        Some(s)
            if !s.as_str().trim().is_empty()
                && !s.as_str().contains(['*', '>'])
                && dedup::subject_problem(s.as_str()).is_none() =>
        {
            s.to_string()
        }
        Some(_) => {
            return Err(p
                .error(
                    "subject",
                    "a sink publishes to one subject, without wildcards: tokens separated by single dots, no whitespace",
                )
                .into())
        }
        None => {
            return Err(Diagnostic::error(
                op.pos,
                format!(
                    "operator \"{}\": a `nats` sink needs `subject`, the subject it publishes to",
                    op.name
                ),
            )
            .into())
        }
    };
    let ts = match p.str_or("timestamp_format", "epoch_ms").as_str() {
        "rfc3339" => TimestampFormat::Rfc3339,
        _ => TimestampFormat::EpochMillis,
    };
    let config = sink::SinkConfig {
        name: op.name.to_string(),
        server,
        stream,
        subject,
        connect_timeout: connect_timeout(p)?,
        min_duplicate_window: Duration::from_millis(
            p.duration_ms_or("min_duplicate_window", 60_000),
        ),
        exactly_once: p.str_or("delivery", "exactly-once").as_str() != "at-least-once",
    };
    Ok(Binding {
        bound: Bound::Operator(Arc::new(move |ctx| {
            let s = sink::NatsSink::open(config.clone(), RowEncoder::new(format, ts), ctx)
                .map_err(|e| e.for_operator(&config.name))?;
            Ok(Box::new(s))
        })),
        outputs: vec![],
        warnings: Diagnostics::default(),
        partition_by: Vec::new(),
    })
}

/// Refuses a `subject` that none of the stream's `subjects` stands for (with wildcards: that
/// stands for none of theirs, as JetStream would refuse the consumer), saying what it means
/// for `role`.
fn check_subject(
    role: Role,
    subject: &str,
    stream: &str,
    subjects: &[String],
) -> Result<(), NatsError> {
    if subjects.iter().any(|s| dedup::subjects_overlap(s, subject)) {
        return Ok(());
    }
    Err(NatsError::SubjectOutsideStream {
        role,
        subject: subject.to_string(),
        stream: stream.to_string(),
        subjects: subjects.join(", "),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subject_outside_the_stream_is_refused_saying_what_it_means_for_a_source_or_a_sink() {
        let subjects = ["events.>".to_string()];
        check_subject(Role::Source, "events.a", "EVENTS", &subjects).expect("kept");
        check_subject(Role::Source, "*.a", "EVENTS", &subjects).expect("overlaps");
        // Issue 19 (probe40 L6): a wildcard filter outside the stream got JetStream's raw
        // error.
        let wildcard = check_subject(Role::Source, "other.*", "EVENTS", &subjects)
            .expect_err("refused")
            .to_string();
        assert!(
            wildcard.starts_with("subject `other.*` is not one of stream `EVENTS`'s subjects"),
            "{wildcard}"
        );
        let source = check_subject(Role::Source, "other", "EVENTS", &subjects)
            .expect_err("refused")
            .to_string();
        assert!(
            source.starts_with("subject `other` is not one of stream `EVENTS`'s subjects (events.>): the source would read none"),
            "{source}"
        );
        assert!(!source.contains("sink"), "{source}");
        let sink = check_subject(Role::Sink, "other", "EVENTS", &subjects)
            .expect_err("refused")
            .to_string();
        assert!(
            sink.contains("what the sink published would not be stored"),
            "{sink}"
        );
    }
}
