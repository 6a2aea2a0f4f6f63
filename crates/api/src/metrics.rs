//! `GET /metrics`: every served query's [`QueryMetrics`] in the Prometheus (OpenMetrics)
//! text format, written by `prometheus-client`.
//!
//! Names follow Prometheus's conventions: `anduin_` and the subject, the unit in the name
//! (`_seconds`, `_bytes`), `_total` on counters. Per operator instance (labels `query`,
//! `operator`, `instance`): `anduin_operator_rows_in_total`, `anduin_operator_rows_out_total`,
//! `anduin_operator_batches_in_total`, `anduin_operator_busy_seconds_total`,
//! `anduin_operator_blocked_seconds_total` (waiting on a full output: backpressure),
//! `anduin_operator_input_queue_messages`, `anduin_operator_watermark_seconds` (event time,
//! Unix seconds), `anduin_operator_watermark_lag_seconds` (wall time minus watermark),
//! `anduin_operator_late_rows_total`, `anduin_operator_state_bytes`. Per query (label
//! `query`; per operator also `operator`): `anduin_operator_dead_letters_total`, `anduin_query_dead_letters_total`, `anduin_query_control_changes_total`, and
//! with checkpoints `anduin_checkpoints_started_total`, `anduin_checkpoints_completed_total`,
//! `anduin_checkpoints_failed_total`, `anduin_checkpoint_last_epoch`,
//! `anduin_checkpoint_last_duration_seconds`, `anduin_checkpoint_last_size_bytes`,
//! `anduin_checkpoint_last_age_seconds`. A figure the runtime does not measure (`None`) is
//! left out, and a metric with no figure at all is not described either; so are the dead
//! letters of a query whose figures are not gathered where it is served (a cluster's
//! coordinator: [`QueryMetrics::not_gathered`]).

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Unit;

use crate::QueryMetrics;

/// The content type of `GET /metrics`.
pub(crate) const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

type Labels = Vec<(&'static str, String)>;

/// A figure: a count, or a fraction (seconds).
#[derive(Debug, Clone, Copy)]
enum Figure {
    Count(u64),
    Float(f64),
}

/// One metric and its samples.
#[derive(Debug)]
struct Family {
    name: &'static str,
    help: &'static str,
    unit: Option<Unit>,
    counter: bool,
    samples: Vec<(Labels, Figure)>,
}

impl Family {
    fn counter(name: &'static str, help: &'static str, unit: Option<Unit>) -> Self {
        Self {
            name,
            help,
            unit,
            counter: true,
            samples: Vec::new(),
        }
    }

    fn gauge(name: &'static str, help: &'static str, unit: Option<Unit>) -> Self {
        Self {
            counter: false,
            ..Self::counter(name, help, unit)
        }
    }

    fn add(&mut self, labels: &Labels, figure: Option<Figure>) {
        if let Some(f) = figure {
            self.samples.push((labels.clone(), f));
        }
    }
}

fn seconds(ns: u64) -> Figure {
    // Precision: f64 holds nanoseconds exactly up to 104 days of busy time.
    #[allow(clippy::cast_precision_loss)]
    Figure::Float(ns as f64 / 1e9)
}

fn millis_as_seconds(ms: i64) -> Figure {
    #[allow(clippy::cast_precision_loss)]
    Figure::Float(ms as f64 / 1e3)
}

/// A watermark that is a time (not the "none yet" or "input ended" sentinel).
fn as_time(ms: i64) -> Option<i64> {
    (ms != i64::MIN && ms != i64::MAX).then_some(ms)
}

/// The figures of a scrape, as metric families.
#[derive(Debug)]
struct Scrape(Vec<Family>);

fn families(queries: &[(String, QueryMetrics)], now_ms: i64) -> Vec<Family> {
    use Figure::Count;
    let mut rows_in = Family::counter(
        "anduin_operator_rows_in",
        "Rows an operator instance received.",
        None,
    );
    let mut rows_out = Family::counter(
        "anduin_operator_rows_out",
        "Rows an operator instance emitted (for a sink, wrote).",
        None,
    );
    let mut batches = Family::counter(
        "anduin_operator_batches_in",
        "Batches an operator instance received.",
        None,
    );
    let mut busy = Family::counter(
        "anduin_operator_busy",
        "Time an operator instance spent processing.",
        Some(Unit::Seconds),
    );
    let mut blocked = Family::counter(
        "anduin_operator_blocked",
        "Time an operator instance spent waiting for room on a full output (backpressure).",
        Some(Unit::Seconds),
    );
    let mut queue = Family::gauge(
        "anduin_operator_input_queue_messages",
        "Messages waiting in an operator instance's input channels.",
        None,
    );
    let mut watermark = Family::gauge(
        "anduin_operator_watermark",
        "The last watermark an operator instance forwarded, in event time (Unix seconds).",
        Some(Unit::Seconds),
    );
    let mut lag = Family::gauge(
        "anduin_operator_watermark_lag",
        "How far an operator instance's watermark is behind the wall clock.",
        Some(Unit::Seconds),
    );
    let mut late = Family::counter(
        "anduin_operator_late_rows",
        "Rows an operator instance dropped as late.",
        None,
    );
    let mut state = Family::gauge(
        "anduin_operator_state",
        "Bytes of an operator instance's state.",
        Some(Unit::Bytes),
    );
    let mut dead = Family::counter(
        "anduin_query_dead_letters",
        "Records and rows a query sent to the dead letters.",
        None,
    );
    let mut dead_by = Family::counter(
        "anduin_operator_dead_letters",
        "Records and rows an operator sent to the dead letters.",
        None,
    );
    let mut changes = Family::counter(
        "anduin_query_control_changes",
        "Param changes applied to a query.",
        None,
    );
    let mut started = Family::counter(
        "anduin_checkpoints_started",
        "Checkpoints a query began.",
        None,
    );
    let mut completed = Family::counter(
        "anduin_checkpoints_completed",
        "Checkpoints a query completed.",
        None,
    );
    let mut failed = Family::counter(
        "anduin_checkpoints_failed",
        "Checkpoints of a query that failed.",
        None,
    );
    let mut last_epoch = Family::gauge(
        "anduin_checkpoint_last_epoch",
        "The epoch of a query's last complete checkpoint.",
        None,
    );
    let mut last_duration = Family::gauge(
        "anduin_checkpoint_last_duration",
        "How long a query's last complete checkpoint took, barrier to manifest.",
        Some(Unit::Seconds),
    );
    let mut last_size = Family::gauge(
        "anduin_checkpoint_last_size",
        "The bytes of state files a query's last complete checkpoint wrote.",
        Some(Unit::Bytes),
    );
    let mut last_age = Family::gauge(
        "anduin_checkpoint_last_age",
        "How long ago a query's last checkpoint completed.",
        Some(Unit::Seconds),
    );
    for (query, m) in queries {
        let q: Labels = vec![("query", query.clone())];
        // Not gathered (a cluster's coordinator): unknown, not zero.
        dead.add(
            &q,
            m.not_gathered.is_none().then_some(Count(m.dead_letters)),
        );
        for (operator, n) in &m.dead_letters_by_operator {
            let l: Labels = vec![("query", query.clone()), ("operator", operator.clone())];
            dead_by.add(&l, Some(Count(*n)));
        }
        changes.add(&q, Some(Count(m.control_changes)));
        if let Some(c) = &m.checkpoints {
            started.add(&q, Some(Count(c.started)));
            completed.add(&q, Some(Count(c.completed)));
            failed.add(&q, Some(Count(c.failed)));
            last_epoch.add(&q, c.last_epoch.map(Count));
            last_duration.add(
                &q,
                c.last_duration_ms
                    .map(|ms| seconds(ms.saturating_mul(1_000_000))),
            );
            last_size.add(&q, c.last_size_bytes.map(Count));
            last_age.add(
                &q,
                c.last_completed_ms
                    .map(|t| millis_as_seconds(now_ms.saturating_sub(t))),
            );
        }
        for i in &m.instances {
            let l: Labels = vec![
                ("query", query.clone()),
                ("operator", i.operator.clone()),
                ("instance", i.instance.to_string()),
            ];
            rows_in.add(&l, Some(Count(i.rows_in)));
            rows_out.add(&l, Some(Count(i.rows_out)));
            batches.add(&l, i.batches_in.map(Count));
            busy.add(&l, i.busy_ns.map(seconds));
            blocked.add(&l, i.blocked_ns.map(seconds));
            queue.add(&l, i.queue_len.map(Count));
            let wm = i.watermark_ms.and_then(as_time);
            watermark.add(&l, wm.map(millis_as_seconds));
            lag.add(&l, wm.map(|w| millis_as_seconds(now_ms.saturating_sub(w))));
            late.add(&l, i.late_rows.map(Count));
            state.add(&l, i.state_bytes.map(Count));
        }
    }
    vec![
        rows_in,
        rows_out,
        batches,
        busy,
        blocked,
        queue,
        watermark,
        lag,
        late,
        state,
        dead_by,
        dead,
        changes,
        started,
        completed,
        failed,
        last_epoch,
        last_duration,
        last_size,
        last_age,
    ]
}

impl Collector for Scrape {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        for f in self.0.iter().filter(|f| !f.samples.is_empty()) {
            let kind = if f.counter {
                MetricType::Counter
            } else {
                MetricType::Gauge
            };
            let mut metric = encoder.encode_descriptor(f.name, f.help, f.unit.as_ref(), kind)?;
            for (labels, figure) in &f.samples {
                let sample = metric.encode_family(labels)?;
                match (f.counter, *figure) {
                    (true, Figure::Count(v)) => ConstCounter::new(v).encode(sample)?,
                    (true, Figure::Float(v)) => ConstCounter::new(v).encode(sample)?,
                    (false, Figure::Count(v)) => {
                        ConstGauge::new(i64::try_from(v).unwrap_or(i64::MAX)).encode(sample)?
                    }
                    (false, Figure::Float(v)) => ConstGauge::new(v).encode(sample)?,
                }
            }
        }
        Ok(())
    }
}

/// The exposition of `queries` (name and figures) at wall time `now_ms` (milliseconds since
/// the Unix epoch, for the watermark lag and checkpoint age), in the OpenMetrics text format.
pub fn render_prometheus(
    queries: &[(String, QueryMetrics)],
    now_ms: i64,
) -> Result<String, std::fmt::Error> {
    let mut registry = prometheus_client::registry::Registry::default();
    registry.register_collector(Box::new(Scrape(families(queries, now_ms))));
    let mut out = String::new();
    prometheus_client::encoding::text::encode(&mut out, &registry)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use anduin_runtime::control::{CheckpointMetrics, InstanceMetrics};

    fn parse(text: &str) -> prometheus_parse::Scrape {
        prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string())))
            .expect("the exposition parses")
    }

    fn value(s: &prometheus_parse::Scrape, metric: &str, labels: &[(&str, &str)]) -> Option<f64> {
        s.samples
            .iter()
            .find(|x| x.metric == metric && labels.iter().all(|(k, v)| x.labels.get(k) == Some(v)))
            .map(|x| match x.value {
                prometheus_parse::Value::Counter(v)
                | prometheus_parse::Value::Gauge(v)
                | prometheus_parse::Value::Untyped(v) => v,
                _ => f64::NAN,
            })
    }

    #[test]
    fn figures_are_exported_with_units_in_their_names_and_none_is_left_out() {
        let m = QueryMetrics {
            instances: vec![
                InstanceMetrics {
                    operator: "low".into(),
                    instance: 0,
                    rows_in: 10,
                    rows_out: 4,
                    busy_ns: Some(1_500_000_000),
                    watermark_ms: Some(1_000_000),
                    ..InstanceMetrics::default()
                },
                InstanceMetrics {
                    operator: "low".into(),
                    instance: 1,
                    rows_in: 7,
                    rows_out: 2,
                    watermark_ms: Some(i64::MIN),
                    ..InstanceMetrics::default()
                },
            ],
            checkpoints: Some(CheckpointMetrics {
                started: 3,
                completed: 2,
                failed: 1,
                last_epoch: Some(2),
                last_duration_ms: Some(250),
                last_size_bytes: Some(4096),
                last_completed_ms: Some(1_004_000),
                ..CheckpointMetrics::default()
            }),
            control_changes: 1,
            dead_letters: 3,
            dead_letters_by_operator: [("low".to_string(), 2), ("source".to_string(), 1)].into(),
            ..QueryMetrics::default()
        };
        let text = render_prometheus(&[("sensors".to_string(), m)], 1_010_000).expect("renders");
        let s = parse(&text);
        let low0 = [("query", "sensors"), ("operator", "low"), ("instance", "0")];
        let low1 = [("query", "sensors"), ("operator", "low"), ("instance", "1")];
        assert_eq!(
            value(&s, "anduin_operator_rows_in_total", &low0),
            Some(10.0)
        );
        assert_eq!(value(&s, "anduin_operator_rows_in_total", &low1), Some(7.0));
        assert_eq!(
            value(&s, "anduin_operator_rows_out_total", &low1),
            Some(2.0)
        );
        assert_eq!(
            value(&s, "anduin_operator_busy_seconds_total", &low0),
            Some(1.5)
        );
        assert_eq!(value(&s, "anduin_operator_busy_seconds_total", &low1), None);
        assert_eq!(
            value(&s, "anduin_operator_watermark_seconds", &low0),
            Some(1000.0)
        );
        assert_eq!(
            value(&s, "anduin_operator_watermark_lag_seconds", &low0),
            Some(10.0)
        );
        assert_eq!(
            value(&s, "anduin_operator_watermark_seconds", &low1),
            None,
            "no watermark yet"
        );
        let q = [("query", "sensors")];
        assert_eq!(value(&s, "anduin_checkpoints_failed_total", &q), Some(1.0));
        assert_eq!(
            value(&s, "anduin_checkpoint_last_duration_seconds", &q),
            Some(0.25)
        );
        assert_eq!(
            value(&s, "anduin_checkpoint_last_size_bytes", &q),
            Some(4096.0)
        );
        assert_eq!(
            value(&s, "anduin_checkpoint_last_age_seconds", &q),
            Some(6.0)
        );
        assert_eq!(
            value(&s, "anduin_query_control_changes_total", &q),
            Some(1.0)
        );
        assert_eq!(
            value(
                &s,
                "anduin_operator_dead_letters_total",
                &[("query", "sensors"), ("operator", "low")]
            ),
            Some(2.0)
        );
        // Never measured by anyone: not even described.
        assert!(!text.contains("anduin_operator_state_bytes"), "{text}");
        assert!(!text.contains("anduin_operator_blocked"), "{text}");
        assert!(text.ends_with("# EOF\n"), "{text}");
    }

    #[test]
    fn a_query_without_checkpoints_exports_no_checkpoint_figures() {
        let text =
            render_prometheus(&[("q".to_string(), QueryMetrics::default())], 0).expect("renders");
        assert!(!text.contains("checkpoint"), "{text}");
        assert_eq!(
            value(
                &parse(&text),
                "anduin_query_dead_letters_total",
                &[("query", "q")]
            ),
            Some(0.0)
        );
    }

    #[test]
    fn dead_letters_not_gathered_are_left_out_not_zero() {
        let m = QueryMetrics {
            not_gathered: Some("on the workers".into()),
            ..QueryMetrics::default()
        };
        let text = render_prometheus(&[("q".to_string(), m)], 0).expect("renders");
        assert!(!text.contains("dead_letters"), "{text}");
        assert!(
            text.contains("anduin_query_control_changes_total"),
            "{text}"
        );
    }
}
