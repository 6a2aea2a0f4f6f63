//! `kafka`: a Kafka topic as a source (no input, one output) or as a sink (one input, no
//! output), on librdkafka (the `rdkafka` crate, built from the C sources it ships).
//!
//! The source reads a list of topics (or those whose names match `topic-pattern`), its
//! partitions dealt over the source's instances
//! (`parallelism`, or the query's `--parallelism`; a sink runs as one instance), from
//! the earliest offsets, the latest, a timestamp, or the checkpoint's; it decodes CSV or
//! JSON values with the file reader's decoders, takes event time from a column or from the
//! record timestamp, keeps a watermark per partition, and sends undecodable records to the
//! dead letters with their topic, partition and offset. With `bounded`, it stops at the end
//! offsets as of its first start. See [`source`].
//!
//! The sink writes one record a row, exactly once through Kafka transactions tied to
//! checkpoints, or at least once; a key from columns. See [`sink`].
//!
//! Its params are Flink's where Flink has one (`topic`, `properties.bootstrap.servers`,
//! `properties.*`, `scan.startup.mode`, `sink.delivery-guarantee`,
//! `sink.transactional-id-prefix`, `key.fields`, `csv.field-delimiter`).

pub(crate) mod decode;
mod deliveries;
pub(crate) mod encode;
mod error;
mod feedback;
mod journal;
mod metadata;
mod options;
mod outage;
mod position;
mod read_back;
mod sink;
mod source;
mod split_time;

use std::sync::Arc;

use anduin_graph::{Arity, Binding, OperatorSignature, ParamKind, ParamSpec};
use anduin_operator_api::{Bound, Params};
use anduin_spec::OperatorDef;
use anduin_types::{ColumnType, Diagnostic, Diagnostics};
use arrow::datatypes::SchemaRef;

pub use error::KafkaError;
pub use feedback::feeds_back;

use crate::codec::TimestampFormat;
use decode::{Format, RecordDecoder};
use encode::RowEncoder;
pub(crate) use options::connect_timeout;
use options::{Client, Delivery, Startup, Topics};

/// Params only a source takes.
const SOURCE_ONLY: &[&str] = &[
    "max_record_bytes",
    "topic-pattern",
    "scan.startup.mode",
    "scan.startup.timestamp-millis",
    "bounded",
    "metadata.timestamp",
    "on_error",
    "event_time",
    "watermark",
    "idle_timeout",
];

/// Params only a sink takes.
const SINK_ONLY: &[&str] = &[
    "sink.delivery-guarantee",
    "sink.transactional-id-prefix",
    "key.fields",
    "timestamp_format",
];

/// The `kafka` operator type.
pub const SIGNATURE: OperatorSignature = OperatorSignature {
    kind: "kafka",
    doc: "reads rows from Kafka topics (no input, one output) or writes rows to a Kafka topic (one input, no output)",
    inputs: Arity::AtMost(1),
    outputs: Arity::AtMost(1),
    stateful: true,
    params: &[
        crate::reader::MAX_RECORD_BYTES,
        ParamSpec {
            name: "topic",
            required: false,
            kind: ParamKind::Text,
            default: None,
            doc: "source: the topics read, comma-separated (or `topic-pattern`); sink: the topic written (required)",
        },
        ParamSpec {
            name: "topic-pattern",
            required: false,
            kind: ParamKind::Text,
            default: None,
            doc: "source, instead of `topic`: a regular expression; the topics whose whole names it matches when the source starts are read, in name order (never Kafka's own `__` topics)",
        },
        ParamSpec {
            name: "properties.bootstrap.servers",
            required: true,
            kind: ParamKind::Text,
            default: None,
            doc: "the brokers to start from, `host:port[,host:port…]`",
        },
        ParamSpec {
            name: "properties.*",
            required: false,
            kind: ParamKind::Text,
            default: None,
            doc: "any librdkafka setting, handed on as it is (`properties.security.protocol`, `properties.isolation.level`, …)",
        },
        ParamSpec {
            name: "format",
            required: false,
            kind: ParamKind::OneOf(&["csv", "json", "jsonl", "raw"]),
            default: Some("csv"),
            doc: "a record's value: `raw` (source: the value whole as the text of the one `string` column beside `metadata.timestamp`), CSV records (no header, columns in the type's order; a value of several lines gives a row each), or one JSON object (`jsonl` is a synonym; a value of several objects is rejected whole)",
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
            doc: "how long the start waits for the brokers before it fails",
        },
        ParamSpec {
            name: "scan.startup.mode",
            required: false,
            kind: ParamKind::OneOf(&["earliest-offset", "latest-offset", "timestamp"]),
            default: Some("earliest-offset"),
            doc: "source: where a fresh start reads from (a resumed run reads from the checkpoint's offsets)",
        },
        ParamSpec {
            name: "scan.startup.timestamp-millis",
            required: false,
            kind: ParamKind::Int,
            default: None,
            doc: "source, with `scan.startup.mode = 'timestamp'`: the first record at or after this time (epoch ms)",
        },
        ParamSpec {
            name: "bounded",
            required: false,
            kind: ParamKind::Bool,
            default: Some("false"),
            doc: "source: stop at the end offsets as of the first start (for tests and backfills)",
        },
        ParamSpec {
            name: "metadata.timestamp",
            required: false,
            kind: ParamKind::Text,
            default: None,
            doc: "source: a timestamp column filled with each record's Kafka timestamp instead of decoded from its value",
        },
        ParamSpec {
            name: "parallelism",
            required: false,
            kind: ParamKind::Int,
            default: Some("1"),
            doc: "source: how many instances read the topics (default: the query's --parallelism), partition i (in topic then partition order) by instance i mod N; an instance without a partition ends at once. A sink runs as one instance",
        },
        ParamSpec {
            name: "on_error",
            required: false,
            kind: ParamKind::OneOf(&["dead_letter", "fail"]),
            default: Some("dead_letter"),
            doc: "source: an undecodable record goes to the dead letters (with its topic, partition and offset), or stops the query",
        },
        anduin_operator_api::event_time::EVENT_TIME_PARAMS[0],
        anduin_operator_api::event_time::EVENT_TIME_PARAMS[1],
        anduin_operator_api::event_time::EVENT_TIME_PARAMS[2],
        ParamSpec {
            name: "sink.delivery-guarantee",
            required: false,
            kind: ParamKind::OneOf(&["exactly-once", "at-least-once"]),
            default: None,
            doc: "sink: exactly-once (Kafka transactions committed with checkpoints; the default with checkpoints) or at-least-once (the default without)",
        },
        ParamSpec {
            name: "sink.transactional-id-prefix",
            required: false,
            kind: ParamKind::Text,
            default: None,
            doc: "sink, exactly-once: instance i's transactional.id is `PREFIX-i` (default `anduin-QUERY-OPERATOR`); keep it across restarts",
        },
        ParamSpec {
            name: "key.fields",
            required: false,
            kind: ParamKind::Text,
            default: None,
            doc: "sink: the columns whose values, in the value's format, make each record's key (comma-separated); without, records have no key",
        },
        ParamSpec {
            name: "timestamp_format",
            required: false,
            kind: ParamKind::OneOf(&["epoch_ms", "rfc3339"]),
            default: Some("epoch_ms"),
            doc: "sink: how timestamps are written",
        },
    ],
};

/// Checks a `kafka` operator's params against what it is (a source without inputs, a sink
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
        (Some((_, schema)), 0) => {
            only(op, &p, SOURCE_ONLY, "a source")?;
            bind_sink(op, &p, schema)
        }
        _ => Err(Diagnostic::error(
            op.pos,
            format!(
                "operator \"{}\" of type `kafka` is a source (no input, one output) or a sink (one input, no output)",
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

/// The value format of `format` and `csv.field-delimiter` (the NATS connector's too).
pub(crate) fn format(p: &Params<'_>) -> Result<Format, Diagnostics> {
    match p.str_or("format", "csv").as_str() {
        "json" | "jsonl" => Ok(Format::Json),
        "raw" => Ok(Format::Raw),
        _ => {
            let d = p.str_or("csv.field-delimiter", ",");
            let d = match d.as_str() {
                "\\t" => "\t".to_string(),
                _ => d,
            };
            match d.as_bytes() {
                [b] if !matches!(b, b'"' | b'\r' | b'\n') => Ok(Format::Csv { delimiter: *b }),
                _ => Err(p
                    .error(
                        "csv.field-delimiter",
                        "expected one ASCII character other than a quote or a line break",
                    )
                    .into()),
            }
        }
    }
}

/// The column of `schema` that `metadata.timestamp` names, filled from each record's
/// timestamp (a Kafka record's, a NATS message's publish time) instead of decoded: `None`
/// without the param; refused when there is no such column or it is not a timestamp.
pub(crate) fn timestamp_column(
    p: &Params<'_>,
    schema: &SchemaRef,
) -> Result<Option<usize>, Diagnostics> {
    let Some(col) = p.text("metadata.timestamp") else {
        return Ok(None);
    };
    let found = schema
        .fields()
        .iter()
        .position(|f| f.name() == col.as_str());
    match found.and_then(|i| schema.fields().get(i).map(|f| (i, f))) {
        Some((i, f)) if ColumnType::from_arrow(f.data_type()) == Some(ColumnType::Timestamp) => {
            Ok(Some(i))
        }
        Some(_) => Err(p
            .error(
                "metadata.timestamp",
                format!("column `{col}` is not a timestamp"),
            )
            .into()),
        None => Err(p
            .error(
                "metadata.timestamp",
                format!("no column `{col}` in the output"),
            )
            .into()),
    }
}

/// Refuses a `raw` source whose output is not one `string` column (beside the
/// `metadata.timestamp` one): the value whole is that column's text.
fn check_raw_schema(
    p: &Params<'_>,
    schema: &SchemaRef,
    timestamp_column: Option<usize>,
) -> Result<(), Diagnostics> {
    let decoded: Vec<_> = schema
        .fields()
        .iter()
        .enumerate()
        .filter(|(i, _)| Some(*i) != timestamp_column)
        .map(|(_, f)| f)
        .collect();
    match decoded.as_slice() {
        [f] if ColumnType::from_arrow(f.data_type()) == Some(ColumnType::String) => Ok(()),
        _ => {
            let names: Vec<String> = decoded.iter().map(|f| format!("`{}`", f.name())).collect();
            Err(p
                .error(
                    "format",
                    format!(
                        "format `raw` reads each value whole into one `string` column (and a `timestamp` column with `metadata.timestamp`); the output has {}",
                        if names.is_empty() { "none".to_string() } else { names.join(", ") }
                    ),
                )
                .into())
        }
    }
}

fn bind_source(
    op: &OperatorDef,
    p: &Params<'_>,
    declared: &[Option<SchemaRef>],
) -> Result<Binding<Bound>, Diagnostics> {
    if p.int("parallelism").is_some_and(|n| n < 1) {
        return Err(p.error("parallelism", "must be at least 1").into());
    }
    let schema = crate::declared_source_schema(op, declared)?;
    let watermarks = anduin_operator_api::event_time::watermark_spec(p, &schema)?;
    let format = format(p)?;
    let timestamp_column = timestamp_column(p, &schema)?;
    if matches!(format, Format::Raw) {
        check_raw_schema(p, &schema, timestamp_column)?;
    }
    let topics = Topics::from_params(p)?;
    let config = source::SourceConfig {
        name: op.name.to_string(),
        client: Client::from_params(op, p)?,
        topics,
        pattern_shown: p.str_or("topic-pattern", ""),
        startup: Startup::from_params(p)?,
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
            let s = source::KafkaSource::open(config.clone(), decoder, ctx)
                .map_err(|e| e.for_operator(&config.name))?;
            Ok(Box::new(s))
        })),
        outputs: vec![schema],
        warnings: Diagnostics::default(),
        partition_by: Vec::new(),
    })
}

fn bind_sink(
    op: &OperatorDef,
    p: &Params<'_>,
    schema: &SchemaRef,
) -> Result<Binding<Bound>, Diagnostics> {
    // A sink's exactly-once output (one transactional id, one journal) is one instance's: it
    // takes `parallelism` only as the hot-standby rewrite sets it, 1.
    if p.int("parallelism").is_some_and(|n| n != 1) {
        return Err(p
            .error(
                "parallelism",
                "a Kafka sink runs as one instance: only a source takes `parallelism` above 1",
            )
            .into());
    }
    let format = format(p)?;
    if matches!(format, Format::Raw) {
        return Err(p
            .error(
                "format",
                "format `raw` is read by a source only: a sink writes `csv` or `json`",
            )
            .into());
    }
    let Some(topic) = p.text("topic").map(|t| t.to_string()) else {
        return Err(Diagnostic::error(
            op.pos,
            format!(
                "operator \"{}\": a `kafka` sink needs `topic`, the topic it writes",
                op.name
            ),
        )
        .into());
    };
    if topic.contains(',') || topic.trim().is_empty() {
        return Err(p.error("topic", "a sink writes one topic").into());
    }
    let mut key_columns = Vec::new();
    if let Some(keys) = p.text("key.fields") {
        for k in keys
            .as_str()
            .split(',')
            .map(str::trim)
            .filter(|k| !k.is_empty())
        {
            match schema.fields().iter().position(|f| f.name() == k) {
                Some(i) => key_columns.push(i),
                None => {
                    let names: Vec<&str> =
                        schema.fields().iter().map(|f| f.name().as_str()).collect();
                    return Err(p
                        .error(
                            "key.fields",
                            format!("no column `{k}`: the input has {}", names.join(", ")),
                        )
                        .into());
                }
            }
        }
    }
    let ts = match p.str_or("timestamp_format", "epoch_ms").as_str() {
        "rfc3339" => TimestampFormat::Rfc3339,
        _ => TimestampFormat::EpochMillis,
    };
    let config = sink::SinkConfig {
        name: op.name.to_string(),
        client: Client::from_params(op, p)?,
        topic,
        delivery: Delivery::from_params(p),
        transactional_prefix: p
            .text("sink.transactional-id-prefix")
            .map(|t| t.to_string()),
        key_columns,
    };
    Ok(Binding {
        bound: Bound::Operator(Arc::new(move |ctx| {
            let s = sink::KafkaSink::open(
                config.clone(),
                RowEncoder::new(format, ts),
                RowEncoder::new(format, ts),
                ctx,
            )
            .map_err(|e| e.for_operator(&config.name))?;
            Ok(Box::new(s))
        })),
        outputs: vec![],
        warnings: Diagnostics::default(),
        // Not split by keys: `--parallelism` leaves it at one instance.
        partition_by: vec![None],
    })
}
