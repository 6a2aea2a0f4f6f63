//! The dead-letter output: where malformed input records and rows an operator cannot process
//! go, so that none is lost silently.
//!
//! One JSON object per line. A malformed input record (from a source):
//! `{"operator":…,"source":…,"line":…,"reason":…,"record":…}`. A rejected row (from an
//! operator: an expression failed on it, its event time is missing or out of range):
//! `{"operator":…,"reason":…,"expression":…,"at":…,"row":{…},"source":…,"line":…}`, where
//! `expression`, `at` (the expression's `FILE:LINE:COL` in the query), `source` and `line`
//! (where the row was read, when known) are left out when unknown.
//! The file is created (or truncated) on the first reject of a run; a run without any leaves
//! an existing file alone.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// One rejected record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RejectedRecord {
    /// The input file (or `-` for stdin).
    pub source: String,
    /// 1-based line where the record starts.
    pub line: u64,
    /// Why it was rejected.
    pub reason: String,
    /// The record's text, without its line terminator.
    pub record: String,
}

/// One row that an operator could not process and sent to the dead letters instead of
/// stopping the query.
#[derive(Debug, Clone, PartialEq)]
pub struct RejectedRow {
    /// Why it was rejected (the expression's error, "event time is null", …).
    pub reason: String,
    /// The expression that failed on the row, if one did.
    pub expression: Option<String>,
    /// Where that expression stands in the query, `FILE:LINE:COL`, when known.
    pub at: Option<String>,
    /// The row's values as a JSON object (column name -> value); see [`row_as_json`].
    pub row: serde_json::Value,
    /// The input file and 1-based line the row was read from, when known.
    pub origin: Option<(String, u64)>,
}

/// Row `row` of `batch` as a JSON object, column name -> value (nulls included), for a
/// [`RejectedRow`]. A value JSON cannot hold (a NaN) is written as its text; a timestamp
/// too far from 1970 for a calendar date (beyond about ±262 000 years), as its epoch
/// milliseconds.
pub fn row_as_json(batch: &arrow::record_batch::RecordBatch, row: usize) -> serde_json::Value {
    let mut object = serde_json::Map::new();
    if row >= batch.num_rows() {
        return serde_json::Value::Object(object);
    }
    let options = arrow::util::display::FormatOptions::default().with_null("null");
    for (field, column) in batch.schema().fields().iter().zip(batch.columns()) {
        let value = if column.is_null(row) {
            serde_json::Value::Null
        } else if let Some(ms) = beyond_the_calendar(column.as_ref(), row) {
            ms.into()
        } else {
            let text = arrow::util::display::ArrayFormatter::try_new(column.as_ref(), &options)
                .map(|f| f.value(row).to_string())
                .unwrap_or_else(|e| format!("<{e}>"));
            match field.data_type() {
                d if d.is_integer() || d.is_floating() => {
                    serde_json::from_str::<serde_json::Number>(&text)
                        .map(serde_json::Value::Number)
                        .unwrap_or(serde_json::Value::String(text))
                }
                arrow::datatypes::DataType::Boolean => serde_json::Value::Bool(text == "true"),
                _ => serde_json::Value::String(text),
            }
        };
        object.insert(field.name().clone(), value);
    }
    serde_json::Value::Object(object)
}

/// The epoch milliseconds of a millisecond timestamp that has no calendar date.
fn beyond_the_calendar(column: &dyn arrow::array::Array, row: usize) -> Option<i64> {
    use arrow::array::TimestampMillisecondArray;
    use arrow::datatypes::TimestampMillisecondType;
    let ms = column
        .as_any()
        .downcast_ref::<TimestampMillisecondArray>()?
        .value(row);
    arrow::temporal_conversions::as_datetime::<TimestampMillisecondType>(ms)
        .is_none()
        .then_some(ms)
}

/// How many of the last rejects a [`DeadLetter`] keeps for [`DeadLetter::recent`].
pub const RECENT_KEPT: usize = 20;

/// One of the last rejects, as the control plane shows it: who rejected what and why,
/// without the record's values (which stay in the dead-letter file).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RecentReject {
    /// When it was rejected, in milliseconds since the Unix epoch.
    pub time_ms: i64,
    /// The operator that rejected it.
    pub operator: String,
    /// Why.
    pub reason: String,
    /// Where the failing expression stands in the query (`FILE:LINE:COL`), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    /// The input file the record or row was read from, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Its 1-based line there, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
}

/// Where rejected records go.
#[derive(Debug)]
pub enum DeadLetterTarget {
    /// A JSON Lines file, created on the first record.
    File(PathBuf),
    /// Standard error (when there is no output file to put a `.rejected` file beside).
    Stderr,
}

/// The dead-letter output of a query, shared by its sources.
#[derive(Debug)]
pub struct DeadLetter {
    target: DeadLetterTarget,
    writer: Mutex<Option<BufWriter<File>>>,
    count: AtomicU64,
    rows: AtomicU64,
    /// Per operator, how many it rejected.
    by_operator: Mutex<std::collections::BTreeMap<String, u64>>,
    /// The last [`RECENT_KEPT`] rejects, oldest first.
    recent: Mutex<std::collections::VecDeque<RecentReject>>,
    /// Append to an existing file instead of creating it.
    append: bool,
    /// Set on a copy's view ([`DeadLetter::for_copy`]): where its rejects go, once per set of
    /// copies.
    copy: Option<CopyView>,
    /// Per operator of a hot standby and instance, how many rejects its copies wrote.
    written_by_copies: Mutex<std::collections::BTreeMap<(String, String), u64>>,
}

/// The dead letters of one instance of a copy of a hot standby. Copies are deterministic:
/// fed the same rows, the `n`th row each rejects is the same row, so the `n`th reject is
/// written by whichever copy gets there first, once. A lost copy's share is written by its
/// twins as they pass it.
#[derive(Debug)]
struct CopyView {
    shared: Arc<DeadLetter>,
    /// The operator's instance (`i/parallelism`): instance `i` of every copy gets the same rows.
    instance: String,
    /// Per operator of this copy (`X_replica_K`), how many it rejected.
    own: Mutex<std::collections::BTreeMap<String, u64>>,
}

impl DeadLetter {
    /// A dead-letter output writing to `target`; the file is replaced by the first reject.
    pub fn new(target: DeadLetterTarget) -> Self {
        Self {
            target,
            writer: Mutex::new(None),
            count: AtomicU64::new(0),
            rows: AtomicU64::new(0),
            by_operator: Mutex::default(),
            recent: Mutex::default(),
            append: false,
            copy: None,
            written_by_copies: Mutex::default(),
        }
    }

    /// The dead letters of instance `instance` (of `parallelism`) of a task that runs copies
    /// of a hot standby (operators `X_replica_K`): a row every copy rejects is written once,
    /// as operator `X`'s, as a run without hot standby writes it.
    pub fn for_copy(self: &Arc<Self>, instance: usize, parallelism: usize) -> Arc<Self> {
        let shared = Arc::clone(self.copy.as_ref().map_or(self, |c| &c.shared));
        Arc::new(Self {
            copy: Some(CopyView {
                shared,
                instance: format!("{instance}/{parallelism}"),
                own: Mutex::default(),
            }),
            ..Self::new(DeadLetterTarget::Stderr)
        })
    }

    /// The dead-letter output this one writes to: its own, or a copy's shared one.
    fn out(&self) -> &Self {
        self.copy.as_ref().map_or(self, |c| &c.shared)
    }

    /// For a copy's view, whether its reject is the first of its copies' (to be written),
    /// and under which operator's name.
    fn first_of_copies<'a>(&self, operator: &'a str) -> (bool, &'a str) {
        let Some(copy) = &self.copy else {
            return (true, operator);
        };
        let of = match operator.rsplit_once("_replica_") {
            Some((of, k)) if !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()) => of,
            _ => operator,
        };
        let mut own = copy
            .own
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let n = own.entry(operator.to_string()).or_insert(0);
        *n += 1;
        let mut written = copy
            .shared
            .written_by_copies
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let seen = written
            .entry((of.to_string(), copy.instance.clone()))
            .or_insert(0);
        if *n > *seen {
            *seen = *n;
            (true, of)
        } else {
            (false, of)
        }
    }

    /// Whether the file could be created (its directory exists and is writable), checked
    /// without touching it, so that a query can refuse to start.
    pub fn check_writable(&self) -> std::io::Result<()> {
        match &self.out().target {
            DeadLetterTarget::File(p) => crate::fs_check::check_creatable(p),
            DeadLetterTarget::Stderr => Ok(()),
        }
    }

    /// A dead-letter output for a run that resumes from a checkpoint: rejects are appended to
    /// what earlier runs wrote. (Records rejected between the checkpoint and a failure are
    /// read again and reported again: the dead-letter file is at-least-once.)
    pub fn resume(target: DeadLetterTarget) -> Self {
        Self {
            target,
            writer: Mutex::new(None),
            count: AtomicU64::new(0),
            rows: AtomicU64::new(0),
            by_operator: Mutex::default(),
            recent: Mutex::default(),
            append: true,
            copy: None,
            written_by_copies: Mutex::default(),
        }
    }

    /// Records a malformed input record of source `operator`.
    pub fn reject(&self, operator: &str, r: &RejectedRecord) -> std::io::Result<()> {
        if self.copy.is_some() {
            return self.out().reject(operator, r);
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        self.count_for(operator);
        self.remember(RecentReject {
            time_ms: now_ms(),
            operator: operator.to_string(),
            reason: r.reason.clone(),
            at: None,
            source: Some(r.source.clone()),
            line: Some(r.line),
        });
        let line = serde_json::json!({
            "operator": operator,
            "source": r.source,
            "line": r.line,
            "reason": r.reason,
            "record": r.record,
        });
        self.write(&line)
    }

    /// Records a row that operator `operator` could not process.
    pub fn reject_row(&self, operator: &str, r: &RejectedRow) -> std::io::Result<()> {
        if self.copy.is_some() {
            return match self.first_of_copies(operator) {
                (true, of) => self.out().reject_row(of, r),
                (false, _) => Ok(()),
            };
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        self.count_for(operator);
        self.rows.fetch_add(1, Ordering::Relaxed);
        self.remember(RecentReject {
            time_ms: now_ms(),
            operator: operator.to_string(),
            reason: r.reason.clone(),
            at: r.at.clone(),
            source: r.origin.as_ref().map(|(s, _)| s.clone()),
            line: r.origin.as_ref().map(|(_, l)| *l),
        });
        let mut object = serde_json::Map::new();
        object.insert("operator".into(), operator.into());
        object.insert("reason".into(), r.reason.clone().into());
        if let Some(e) = &r.expression {
            object.insert("expression".into(), e.clone().into());
        }
        if let Some(at) = &r.at {
            object.insert("at".into(), at.clone().into());
        }
        object.insert("row".into(), r.row.clone());
        if let Some((source, line)) = &r.origin {
            object.insert("source".into(), source.clone().into());
            object.insert("line".into(), (*line).into());
        }
        self.write(&serde_json::Value::Object(object))
    }

    fn write(&self, value: &serde_json::Value) -> std::io::Result<()> {
        let line = value.to_string();
        match &self.target {
            DeadLetterTarget::Stderr => {
                eprintln!("rejected: {line}");
                Ok(())
            }
            DeadLetterTarget::File(path) => {
                let mut guard = self
                    .writer
                    .lock()
                    .map_err(|_| std::io::Error::other("dead-letter writer poisoned"))?;
                if guard.is_none() {
                    let file = std::fs::OpenOptions::new()
                        .create(true)
                        .append(self.append)
                        .write(true)
                        .truncate(!self.append)
                        .open(path)?;
                    *guard = Some(BufWriter::new(file));
                }
                let w = guard.as_mut().expect("created just above");
                w.write_all(line.as_bytes())?;
                w.write_all(b"\n")
            }
        }
    }

    fn count_for(&self, operator: &str) {
        let mut by = self
            .by_operator
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match by.get_mut(operator) {
            Some(n) => *n += 1,
            None => {
                by.insert(operator.to_string(), 1);
            }
        }
    }

    fn remember(&self, reject: RecentReject) {
        let mut recent = self
            .recent
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if recent.len() == RECENT_KEPT {
            recent.pop_front();
        }
        recent.push_back(reject);
    }

    /// The last [`RECENT_KEPT`] rejects of this run, oldest first.
    pub fn recent(&self) -> Vec<RecentReject> {
        self.out()
            .recent
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .cloned()
            .collect()
    }

    /// Per operator, how many records and rows it rejected so far.
    pub fn by_operator(&self) -> std::collections::BTreeMap<String, u64> {
        self.out()
            .by_operator
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// How many records and rows were rejected so far, of both kinds.
    pub fn count(&self) -> u64 {
        self.out().count.load(Ordering::Relaxed)
    }

    /// How many of [`DeadLetter::count`] are rows an operator rejected (the rest are
    /// malformed input records).
    pub fn rejected_rows(&self) -> u64 {
        self.out().rows.load(Ordering::Relaxed)
    }

    /// The file, if rejects go to one.
    pub fn path(&self) -> Option<&Path> {
        match &self.out().target {
            DeadLetterTarget::File(p) => Some(p),
            DeadLetterTarget::Stderr => None,
        }
    }

    /// Makes what was written so far durable (flushed and synced to disk): a checkpoint
    /// calls it before it completes, so that rejects before the checkpoint, which a resumed
    /// run does not read again, are not lost with the process.
    pub fn sync(&self) -> std::io::Result<()> {
        self.with_writer(|w| {
            w.flush()?;
            w.get_ref().sync_data()
        })
    }

    /// The error of operator `operator` whose reject could not be written (`e`), naming the
    /// dead-letter file.
    pub fn write_error(&self, operator: &str, e: std::io::Error) -> crate::OperatorError {
        crate::OperatorError::Execution {
            operator: operator.to_string(),
            message: format!(
                "cannot write the dead-letter file `{}`: {e}",
                self.path()
                    .map(|p| p.display().to_string())
                    .unwrap_or_else(|| "stderr".into())
            ),
        }
    }

    /// Writes out what is buffered.
    pub fn flush(&self) -> std::io::Result<()> {
        self.with_writer(BufWriter::flush)
    }

    /// `f` on the file's writer, if the file was created.
    fn with_writer(
        &self,
        f: impl FnOnce(&mut BufWriter<File>) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let mut guard = self
            .out()
            .writer
            .lock()
            .map_err(|_| std::io::Error::other("dead-letter writer poisoned"))?;
        guard.as_mut().map_or(Ok(()), f)
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(reason: &str) -> RejectedRow {
        RejectedRow {
            reason: reason.into(),
            expression: None,
            at: None,
            row: serde_json::json!({}),
            origin: None,
        }
    }

    #[test]
    fn a_row_every_copy_rejects_is_written_once_as_the_operator_s_and_a_lost_copy_s_share_by_its_twin(
    ) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("rejected.jsonl");
        let dl = Arc::new(DeadLetter::new(DeadLetterTarget::File(path.clone())));
        let (one, two) = (dl.for_copy(0, 2), dl.for_copy(0, 2));
        let other_instance = dl.for_copy(1, 2);
        // Copy 1 is ahead, then lost after its second reject; copy 2 catches up and goes on.
        for reason in ["a", "b"] {
            one.reject_row("f_replica_1", &row(reason))
                .expect("written");
        }
        for reason in ["a", "b", "c"] {
            two.reject_row("f_replica_2", &row(reason))
                .expect("written");
        }
        other_instance
            .reject_row("f_replica_2", &row("x"))
            .expect("written");
        dl.reject_row("g", &row("plain")).expect("written");
        two.flush().expect("flushed");
        let text = std::fs::read_to_string(&path).expect("the file");
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("json"))
            .collect();
        let got: Vec<(&str, &str)> = lines
            .iter()
            .map(|l| {
                (
                    l["operator"].as_str().expect("operator"),
                    l["reason"].as_str().expect("reason"),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("f", "a"),
                ("f", "b"),
                ("f", "c"),
                ("f", "x"),
                ("g", "plain")
            ]
        );
        assert_eq!(
            (dl.count(), one.count()),
            (5, 5),
            "a view counts the shared output"
        );
        assert_eq!(dl.by_operator().get("f"), Some(&4));
    }

    #[test]
    fn the_last_rejects_are_kept_with_their_reasons_oldest_first() {
        let dl = DeadLetter::new(DeadLetterTarget::Stderr);
        for line in 1..=(RECENT_KEPT as u64 + 3) {
            dl.reject(
                "source",
                &RejectedRecord {
                    source: "in.csv".into(),
                    line,
                    reason: format!("bad line {line}"),
                    record: String::new(),
                },
            )
            .expect("stderr takes it");
        }
        dl.reject_row(
            "m",
            &RejectedRow {
                reason: "Divide by zero error".into(),
                expression: Some("a / b".into()),
                at: Some("q.flow:9:21".into()),
                row: serde_json::json!({}),
                origin: None,
            },
        )
        .expect("stderr takes it");
        let recent = dl.recent();
        assert_eq!(recent.len(), RECENT_KEPT);
        assert_eq!(recent[0].line, Some(5), "the oldest four are dropped");
        let last = recent.last().expect("kept");
        assert_eq!(
            (
                last.operator.as_str(),
                last.reason.as_str(),
                last.at.as_deref()
            ),
            ("m", "Divide by zero error", Some("q.flow:9:21"))
        );
        assert_eq!(last.source, None);
    }

    #[test]
    fn the_file_is_replaced_by_the_first_reject_and_holds_json_lines() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("out.csv.rejected");
        std::fs::write(&path, "stale\n").expect("write");
        let dl = DeadLetter::new(DeadLetterTarget::File(path.clone()));
        dl.check_writable().expect("writable");
        assert!(path.exists(), "nothing is touched before a reject");
        assert!(
            DeadLetter::new(DeadLetterTarget::File(dir.path().join("no/such/dir/x")))
                .check_writable()
                .is_err()
        );
        dl.reject(
            "source",
            &RejectedRecord {
                source: "in.csv".into(),
                line: 7,
                reason: "column `value`: `x` is not an int".into(),
                record: "1,2,x".into(),
            },
        )
        .expect("writes");
        dl.flush().expect("flushes");
        let text = std::fs::read_to_string(&path).expect("reads");
        let v: serde_json::Value = serde_json::from_str(text.trim()).expect("json");
        assert_eq!(v["line"], 7);
        assert_eq!(v["record"], "1,2,x");
        assert_eq!(dl.count(), 1);
    }

    #[test]
    fn a_rejected_row_names_its_expression_position_values_and_origin() {
        use arrow::array::{Float64Array, Int64Array, StringArray};
        use arrow::datatypes::{DataType, Field, Schema};
        use std::sync::Arc;
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("out.rejected");
        let dl = DeadLetter::new(DeadLetterTarget::File(path.clone()));
        let schema = Arc::new(Schema::new(vec![
            Field::new("a", DataType::Int64, true),
            Field::new("b", DataType::Int64, true),
            Field::new("s", DataType::Utf8, true),
            Field::new("f", DataType::Float64, true),
        ]));
        let batch = arrow::record_batch::RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int64Array::from(vec![Some(1), Some(7)])),
                Arc::new(Int64Array::from(vec![Some(2), Some(0)])),
                Arc::new(StringArray::from(vec![Some("x"), None])),
                Arc::new(Float64Array::from(vec![1.5, f64::NAN])),
            ],
        )
        .expect("batch");
        let row = row_as_json(&batch, 1);
        assert_eq!(row["a"], 7);
        assert_eq!(row["s"], serde_json::Value::Null);
        assert_eq!(row["f"], "NaN");
        dl.reject_row(
            "m",
            &RejectedRow {
                reason: "Divide by zero error".into(),
                expression: Some("a / b".into()),
                at: Some("q.flow:9:21".into()),
                row,
                origin: Some(("in.csv".into(), 3)),
            },
        )
        .expect("writes");
        dl.flush().expect("flushes");
        let v: serde_json::Value =
            serde_json::from_str(std::fs::read_to_string(&path).expect("reads").trim())
                .expect("json");
        assert_eq!(v["operator"], "m");
        assert_eq!(v["expression"], "a / b");
        assert_eq!(v["at"], "q.flow:9:21");
        assert_eq!(v["row"]["b"], 0);
        assert_eq!(v["line"], 3);
        assert_eq!((dl.count(), dl.rejected_rows()), (1, 1));
    }

    #[test]
    fn a_timestamp_without_a_calendar_date_is_written_as_its_milliseconds() {
        use arrow::array::TimestampMillisecondArray;
        use arrow::datatypes::{DataType, Field, Schema, TimeUnit};
        use std::sync::Arc;
        let schema = Arc::new(Schema::new(vec![Field::new(
            "ts",
            DataType::Timestamp(TimeUnit::Millisecond, None),
            false,
        )]));
        let batch = arrow::record_batch::RecordBatch::try_new(
            schema,
            vec![Arc::new(TimestampMillisecondArray::from(vec![
                i64::MAX,
                i64::MIN,
                0,
            ]))],
        )
        .expect("batch");
        assert_eq!(row_as_json(&batch, 0)["ts"], i64::MAX);
        assert_eq!(row_as_json(&batch, 1)["ts"], i64::MIN);
        assert_eq!(row_as_json(&batch, 2)["ts"], "1970-01-01T00:00:00");
    }
}
