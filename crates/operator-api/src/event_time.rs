//! Event time of a source: which column holds it, and how far the watermark trails the
//! largest event time seen (bounded out-of-orderness).

use anduin_graph::{ParamKind, ParamSpec};
use anduin_types::{duration_ms, parse_duration_ms, ColumnType, Diagnostics, Watermark};
use arrow::datatypes::Schema;

use crate::params::Params;

/// The params every source takes for event time.
pub const EVENT_TIME_PARAMS: [ParamSpec; 3] = [
    ParamSpec {
        name: "event_time",
        required: false,
        kind: ParamKind::Text,
        default: None,
        doc: "the column that holds each row's event time (a timestamp, or an int of epoch milliseconds); the source then emits watermarks",
    },
    ParamSpec {
        name: "watermark",
        required: false,
        kind: ParamKind::Text,
        default: Some("0s"),
        doc: "how far the watermark trails the largest event time seen: a duration (\"2s\") or \"ts - 2s\"; rows more out of order than that are late",
    },
    ParamSpec {
        name: "idle_timeout",
        required: false,
        kind: ParamKind::Duration,
        default: None,
        doc: "after this long (wall-clock time) without a row, the source is idle: operators downstream leave it out of their watermark until its next row",
    },
];

/// How a source derives watermarks from its rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatermarkSpec {
    /// The index of the event-time column.
    pub column: usize,
    /// The watermark is the largest event time seen minus this many milliseconds.
    pub delay_ms: i64,
    /// After this many milliseconds of wall-clock time without a row, the source is idle.
    pub idle_timeout_ms: Option<u64>,
}

impl WatermarkSpec {
    /// The watermark once rows up to `max_event_time` were seen: that minus the delay, down
    /// to `i64::MIN`, and below +∞ (`i64::MAX`, which only the end of the input reaches: a
    /// row at `i64::MAX` may still follow one).
    ///
    /// # Examples
    /// ```
    /// use anduin_operator_api::WatermarkSpec;
    /// use anduin_types::Watermark;
    /// let spec = WatermarkSpec { column: 0, delay_ms: 2000, idle_timeout_ms: None };
    /// assert_eq!(spec.watermark_after(10_000), Watermark(8000));
    /// assert_eq!(spec.watermark_after(i64::MIN + 5), Watermark::MIN);
    /// let no_delay = WatermarkSpec { delay_ms: 0, ..spec };
    /// assert_eq!(no_delay.watermark_after(i64::MAX), Watermark(i64::MAX - 1));
    /// ```
    pub fn watermark_after(&self, max_event_time: i64) -> Watermark {
        Watermark(
            max_event_time
                .saturating_sub(self.delay_ms)
                .min(Watermark::MAX.0 - 1),
        )
    }
}

/// The event times of column `column` of `batch` (an int of epoch milliseconds or a
/// millisecond timestamp), nulls and other types as `None`.
pub fn event_times(batch: &arrow::record_batch::RecordBatch, column: usize) -> Vec<Option<i64>> {
    use arrow::array::{Int64Array, TimestampMillisecondArray};
    let Some(col) = batch.columns().get(column) else {
        return vec![None; batch.num_rows()];
    };
    if let Some(a) = col.as_any().downcast_ref::<TimestampMillisecondArray>() {
        return a.iter().collect();
    }
    if let Some(a) = col.as_any().downcast_ref::<Int64Array>() {
        return a.iter().collect();
    }
    vec![None; batch.num_rows()]
}

/// Reads `event_time` and `watermark` against the source's output schema.
pub fn watermark_spec(
    p: &Params<'_>,
    schema: &Schema,
) -> Result<Option<WatermarkSpec>, Diagnostics> {
    let Some(col) = p.text("event_time") else {
        for param in ["watermark", "idle_timeout"] {
            if p.text(param).is_some() {
                return Err(p
                    .error(
                        param,
                        format!(
                            "`{param}` needs `param event_time = \"…\"` (the event-time column)"
                        ),
                    )
                    .into());
            }
        }
        return Ok(None);
    };
    let col = col.to_string();
    let Some((column, field)) = schema
        .fields()
        .iter()
        .enumerate()
        .find(|(_, f)| *f.name() == col)
    else {
        let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        return Err(p
            .error(
                "event_time",
                format!("no column `{col}`: the output has {}", names.join(", ")),
            )
            .into());
    };
    if !matches!(
        ColumnType::from_arrow(field.data_type()),
        Some(ColumnType::Timestamp | ColumnType::Int)
    ) {
        return Err(p
            .error("event_time", format!("column `{col}` is {}, but event time must be a timestamp or an int of epoch milliseconds", field.data_type()))
            .into());
    }
    let text = p.str_or("watermark", "0s");
    let delay = match text.split_once('-') {
        Some((c, d)) if c.trim() == col => duration_ms(d.trim()),
        Some(_) => Err(format!("`{text}` is not `{col} - DURATION`")),
        None => duration_ms(&text),
    };
    let delay = match delay {
        Ok(ms) => ms,
        Err(why) => {
            return Err(p
                .error(
                    "watermark",
                    format!("expected a duration such as \"2s\" or \"{col} - 2s\": {why}"),
                )
                .into())
        }
    };
    let idle_timeout_ms = match p.text("idle_timeout") {
        None => None,
        Some(t) => match parse_duration_ms(t.as_str()) {
            Some(ms) if ms > 0 => Some(ms),
            _ => {
                return Err(p
                    .error(
                        "idle_timeout",
                        format!("expected a positive duration such as \"5s\", found \"{t}\""),
                    )
                    .into())
            }
        },
    };
    Ok(Some(WatermarkSpec {
        column,
        delay_ms: i64::try_from(delay).unwrap_or(i64::MAX),
        idle_timeout_ms,
    }))
}
