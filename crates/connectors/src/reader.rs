//! `reader`: rows from CSV or JSON Lines files, a glob of files, or stdin.
//!
//! Files are read as splits ([`crate::file_splits`]): one per file at parallelism 1; with
//! `parallelism` N, byte ranges at record boundaries that the N instances share, each
//! checkpointing the splits it has left (dealt again at a restore at another parallelism).
//!
//! A malformed record never stops the query and is never lost: it goes to the dead-letter
//! output with its file, line and reason (or, with `on_error = "fail"`, stops the query with
//! that error). With `event_time`, a record whose event time is empty is malformed, unless
//! `on_null_event_time = "drop"` says to drop it (counted in the run's summary). A record
//! longer than `max_record_bytes` is malformed too, and costs its first line only.
//!
//! With `rate`, the reader is a throttled source: it reads no faster than that many rows per
//! second (on the run's clock), reading before each batch only about as many bytes as the
//! rows then due take (from the average length of the rows read so far), so that a row is
//! never held back after it was read: a checkpoint's position stays exact. `rate` can change
//! while the query runs.

use std::sync::Arc;
use std::time::Instant;

use anduin_graph::{Arity, Binding, OperatorSignature, ParamKind, ParamSpec};
use anduin_spec::OperatorDef;
use anduin_types::Diagnostics;
use arrow::array::Array;
use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use serde::Deserialize;

use crate::codec::{CsvDecoder, CsvOptions, Decoded, JsonDecoder};
use crate::declared_source_schema;
use crate::file_splits::boundary::{Boundary, Dialect};
use crate::file_splits::input::{read_prefix, Next, SplitError, SplitInput, UNSIZED};
use crate::file_splits::plan::{plan, reshare, share, PlannedFile};
use crate::file_splits::Split;
use crate::input::{Chunk, Input};
use crate::pace::Pace;
use anduin_operator_api::Bound;
use anduin_operator_api::Params;
use anduin_operator_api::{
    ControlError, OperatorError, RescaleError, RestoreIn, RowOrigins, SnapshotOut, Source,
    SourcePoll,
};
use anduin_operator_api::{DeadLetter, RejectedRecord};

/// The `reader` operator type.
pub const SIGNATURE: OperatorSignature = OperatorSignature {
    kind: "reader",
    doc: "reads rows of its output type from CSV or JSON Lines files, or stdin",
    inputs: Arity::Exactly(0),
    outputs: Arity::Exactly(1),
    stateful: true,
    params: &[
        anduin_operator_api::event_time::EVENT_TIME_PARAMS[0],
        anduin_operator_api::event_time::EVENT_TIME_PARAMS[1],
        anduin_operator_api::event_time::EVENT_TIME_PARAMS[2],
        ParamSpec {
            name: "path",
            required: true,
            kind: ParamKind::Text,
            default: None,
            doc: "a file, a glob such as \"data/*.csv\" (files read in name order), or \"-\" for stdin",
        },
        ParamSpec {
            name: "format",
            required: false,
            kind: ParamKind::OneOf(&["csv", "jsonl", "json"]),
            default: Some("csv"),
            doc: "`csv`, or `jsonl` (one JSON object per line; `json` is a synonym)",
        },
        ParamSpec {
            name: "header",
            required: false,
            kind: ParamKind::Bool,
            default: Some("true"),
            doc: "csv: the first line of each file names the columns (matched to the type by name); with `false`, columns are taken in order",
        },
        ParamSpec {
            name: "delimiter",
            required: false,
            kind: ParamKind::Text,
            default: Some(","),
            doc: "csv: the field separator, one character (\"\\t\" for tabs)",
        },
        ParamSpec {
            name: "on_error",
            required: false,
            kind: ParamKind::OneOf(&["dead_letter", "fail"]),
            default: Some("dead_letter"),
            doc: "what a malformed record does: `dead_letter` sends it to the dead-letter file and goes on; `fail` stops the query",
        },
        MAX_RECORD_BYTES,
        ParamSpec {
            name: "on_null_event_time",
            required: false,
            kind: ParamKind::OneOf(&["malformed", "drop"]),
            default: Some("malformed"),
            doc: "with `event_time`, what a record whose event time is empty (or null) does: `malformed` makes it a malformed record (see `on_error`); `drop` drops it, counted as `null_event_time_rows` in the run's summary",
        },
        ParamSpec {
            name: "parallelism",
            required: false,
            kind: ParamKind::Int,
            default: Some("1"),
            doc: "how many instances read the files (default: the query's --parallelism): the files are cut into byte ranges at record boundaries, shared between the instances",
        },
        ParamSpec {
            name: "min_split_bytes",
            required: false,
            kind: ParamKind::Text,
            default: Some("1MB"),
            doc: "with parallelism above 1: the smallest byte range a file is cut into (\"1MB\", \"64KB\", \"4096\")",
        },
        ParamSpec {
            name: "rate",
            required: false,
            kind: ParamKind::Number,
            default: None,
            doc: "read at most this many rows per second (0.001 to 1e12), on average, in bursts of about one read; without it, as fast as possible. Adjustable while running",
        },
    ],
};

/// The params a running reader can change.
pub const ADJUSTABLE: &[&str] = &["rate"];

/// The bound on a record's length, a param of every reading connector (files, Kafka, NATS).
pub(crate) const MAX_RECORD_BYTES: ParamSpec = ParamSpec {
    name: "max_record_bytes",
    required: false,
    kind: ParamKind::Text,
    default: Some("1MB"),
    doc: "the longest record read (\"1MB\", \"64KB\", \"4096\"; powers of 1024): a longer one, such as a quote that is never closed, is malformed from its first line on and reading goes on with the next line (a message of a broker: the whole message is)",
};

/// The smallest split of a file read in parallel, unless `min_split_bytes` says otherwise.
const DEFAULT_MIN_SPLIT: usize = 1 << 20;

/// The bytes read for each row due, before any row was read (a guess; then the average).
const FIRST_ROW_BYTES: u64 = 64;

/// What the reader does with a row whose event time is null.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NullEventTime {
    /// The record is malformed: the decoder rejects it.
    Malformed,
    /// The row is dropped and counted.
    Drop,
}

#[derive(Clone, Copy, Debug)]
enum Format {
    Csv(CsvOptions),
    Json,
}

/// Checks this operator's params and inputs as the query declares them, and binds it to a
/// factory of instances (called by the registry's catalog).
pub fn bind(
    op: &OperatorDef,
    declared: &[Option<SchemaRef>],
) -> Result<Binding<Bound>, Diagnostics> {
    let p = Params::new(op);
    let schema = declared_source_schema(op, declared)?;
    let watermarks = anduin_operator_api::event_time::watermark_spec(&p, &schema)?;
    let format = match p.str_or("format", "csv").as_str() {
        "jsonl" | "json" => Format::Json,
        _ => {
            let delimiter = p.delimiter()?;
            Format::Csv(CsvOptions {
                delimiter,
                has_header: p.bool_or("header", true),
            })
        }
    };
    let fail_on_error = p.str_or("on_error", "dead_letter") == "fail";
    let max_record = p.byte_size_or("max_record_bytes", crate::codec::DEFAULT_MAX_RECORD_BYTES)?;
    let null_event_time = match p.str_or("on_null_event_time", "malformed").as_str() {
        "drop" => NullEventTime::Drop,
        _ => NullEventTime::Malformed,
    };
    if p.text("on_null_event_time").is_some() && watermarks.is_none() {
        return Err(p
            .error(
                "on_null_event_time",
                "`on_null_event_time` needs `param event_time = \"…\"` (the event-time column)",
            )
            .into());
    }
    // The decoder rejects a record without event time; with `drop`, the reader drops its row.
    let required_time = watermarks
        .filter(|_| null_event_time == NullEventTime::Malformed)
        .map(|w| w.column);
    let dropped_time = watermarks
        .filter(|_| null_event_time == NullEventTime::Drop)
        .map(|w| w.column);
    let rate = match p.number("rate") {
        Some(r) if !crate::pace::valid_rate(r) => {
            return Err(p.error("rate", crate::pace::RATE_RANGE).into())
        }
        r => r,
    };
    if p.int("parallelism").is_some_and(|n| n < 1) {
        return Err(p.error("parallelism", "must be at least 1").into());
    }
    let min_split = p.byte_size_or("min_split_bytes", DEFAULT_MIN_SPLIT)? as u64;
    let dialect = match format {
        Format::Csv(o) => Dialect::Csv {
            delimiter: o.delimiter,
            max_record: max_record as u64,
        },
        Format::Json => Dialect::Lines,
    };
    let path = p.required("path").to_string();
    let name = op.name.to_string();
    let out = Arc::clone(&schema);
    Ok(Binding {
        bound: Bound::Source(Arc::new(move |ctx| {
            let mut pace = Pace::default();
            pace.set_clock(Arc::clone(&ctx.clock));
            let config = |message| OperatorError::Config {
                operator: name.clone(),
                message,
            };
            let (bytes, files) = if path == "-" {
                // One instance reads stdin; any other has nothing to read.
                let bytes = match ctx.instance {
                    0 => Bytes::Stdin(Input::open(&path).map_err(config)?),
                    _ => Bytes::Splits(SplitInput::new(dialect, Vec::new())),
                };
                (bytes, Vec::new())
            } else {
                let files = planned_files(&path).map_err(config)?;
                let all = plan(&files, ctx.parallelism, min_split, true);
                let mine = share(&all, ctx.instance, ctx.parallelism);
                (Bytes::Splits(SplitInput::new(dialect, mine)), files)
            };
            let decoder = match format {
                Format::Csv(o) => {
                    let d = CsvDecoder::new(Arc::clone(&out), o).with_max_record_bytes(max_record);
                    Decoder::Csv(Box::new(match required_time {
                        Some(column) => d.with_event_time(column),
                        None => d,
                    }))
                }
                Format::Json => {
                    let d = JsonDecoder::new(Arc::clone(&out)).with_max_record_bytes(max_record);
                    Decoder::Json(Box::new(match required_time {
                        Some(column) => d.with_event_time(column),
                        None => d,
                    }))
                }
            };
            Ok(Box::new(Reader {
                name: name.clone(),
                bytes,
                files,
                decoder,
                dead_letter: Arc::clone(&ctx.dead_letter),
                fail_on_error,
                watermarks,
                dropped_time,
                null_time_rows: 0,
                origins: None,
                want_origins: false,
                file: Arc::from(""),
                rate,
                pace,
                rows: 0,
                bytes_read: 0,
            }))
        })),
        outputs: vec![schema],
        warnings: Diagnostics::default(),
        partition_by: Vec::new(),
    })
}

/// The files `path` names, each checked to be readable, with their sizes ([`UNSIZED`] for
/// a named pipe). An error names the file.
fn planned_files(path: &str) -> Result<Vec<PlannedFile>, String> {
    let mut files = Vec::new();
    for f in crate::input::resolve(path)? {
        let shown = f.display().to_string();
        let file = std::fs::File::open(&f)
            .map_err(|e| format!("cannot open input file `{shown}`: {e}"))?;
        let meta = file
            .metadata()
            .map_err(|e| format!("cannot read the size of input file `{shown}`: {e}"))?;
        files.push(PlannedFile {
            path: shown,
            size: if meta.is_file() { meta.len() } else { UNSIZED },
        });
    }
    Ok(files)
}

/// Where a reader's bytes come from.
enum Bytes {
    /// Stdin, read as it comes (one instance).
    Stdin(Input),
    /// This instance's splits of the files.
    Splits(SplitInput),
}

/// What the next read gave, from either kind of input.
enum Piece<'a> {
    Start(String, Option<Boundary>),
    Data(&'a [u8]),
    End,
    Idle,
    Done,
}

enum Decoder {
    Csv(Box<CsvDecoder>),
    Json(Box<JsonDecoder>),
}

impl Decoder {
    fn start_file(&mut self, source: &str) {
        match self {
            Decoder::Csv(d) => d.start_file(source),
            Decoder::Json(d) => d.start_file(source),
        }
    }

    fn decode(&mut self, bytes: &[u8]) -> Result<Decoded, crate::codec::CodecError> {
        match self {
            Decoder::Csv(d) => d.decode(bytes),
            Decoder::Json(d) => d.decode(bytes),
        }
    }

    fn finish_file(&mut self) -> Result<Decoded, crate::codec::CodecError> {
        match self {
            Decoder::Csv(d) => d.finish_file(),
            Decoder::Json(d) => d.finish_file(),
        }
    }

    fn consumed_offset(&self) -> u64 {
        match self {
            Decoder::Csv(d) => d.consumed_offset(),
            Decoder::Json(d) => d.consumed_offset(),
        }
    }

    /// Whether the file's header is still to be read before a split that starts later in it.
    fn needs_header(&self) -> bool {
        match self {
            Decoder::Csv(d) => !d.has_layout(),
            Decoder::Json(_) => false,
        }
    }

    /// Stands at `at`, the first record of a split, without reading what comes before.
    fn jump_to(&mut self, at: Boundary) {
        match self {
            Decoder::Csv(d) => d.jump_to(at.offset, at.line),
            Decoder::Json(d) => d.jump_to(at.offset, at.line),
        }
    }
}

/// Where a reader instance is, as a checkpoint's manifest keeps it: the splits it has left.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Position {
    /// The splits not read to their end, the one being read first (from where it stands).
    splits: Vec<Split>,
    /// Rows without an event time so far.
    null_event_time_rows: u64,
}

/// Where a reader was, as checkpoints before files were read in parallel kept it: one
/// instance reading its files in order.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct SequentialPosition {
    /// The index of the file being read.
    file: u64,
    /// Its path (none past the last file).
    path: Option<String>,
    /// The bytes of it consumed.
    offset: u64,
    /// Rows without an event time so far.
    null_event_time_rows: u64,
}

/// Either form of a reader's position.
#[derive(Debug, serde::Deserialize)]
#[serde(untagged)]
enum SavedPosition {
    Splits(Position),
    Sequential(SequentialPosition),
}

/// A running reader.
struct Reader {
    name: String,
    bytes: Bytes,
    /// The files, as planned at this start (empty for stdin).
    files: Vec<PlannedFile>,
    decoder: Decoder,
    dead_letter: Arc<DeadLetter>,
    fail_on_error: bool,
    watermarks: Option<anduin_operator_api::WatermarkSpec>,
    /// With `on_null_event_time = "drop"`: the event-time column, whose null rows are dropped.
    dropped_time: Option<usize>,
    /// Rows dropped for a null event time (over every run, as checkpointed).
    null_time_rows: u64,
    /// With [`Source::want_origins`]: the origins of the rows of the last batch polled.
    origins: Option<RowOrigins>,
    /// Whether [`Source::want_origins`] was called.
    want_origins: bool,
    /// The name of the file being read.
    file: Arc<str>,
    /// Rows per second at most, if throttled.
    rate: Option<f64>,
    /// When rows are due, with `rate`.
    pace: Pace,
    /// Rows emitted by this run.
    rows: u64,
    /// Bytes of whole records read by this run (for the average length of a row).
    bytes_read: u64,
}

impl Reader {
    /// With `rate`, how many bytes the next read may take: about what the rows due take
    /// (at least one byte), or `None` when no row is due before `deadline`. Without it, any.
    fn read_budget(&mut self, deadline: Instant) -> Option<usize> {
        let Some(rate) = self.rate else {
            return Some(usize::MAX);
        };
        let due = self.pace.due_before(rate, self.rows, deadline)?;
        let per_row = self
            .bytes_read
            .checked_div(self.rows)
            .map_or(FIRST_ROW_BYTES, |b| b.max(1));
        let bytes = (due - self.rows).saturating_mul(per_row).max(1);
        Some(usize::try_from(bytes).unwrap_or(usize::MAX))
    }

    /// The next file starts.
    fn start_file(&mut self, name: &str) {
        self.decoder.start_file(name);
        self.file = Arc::from(name);
    }

    /// Sends rejects to the dead letter (or fails), and returns the good rows.
    fn take(&mut self, decoded: Decoded) -> Result<Option<SourcePoll>, OperatorError> {
        for r in decoded.rejected {
            if self.fail_on_error {
                return Err(OperatorError::BadRecord {
                    operator: self.name.clone(),
                    source_name: r.source,
                    line: r.line,
                    reason: r.reason,
                });
            }
            let record = RejectedRecord {
                source: r.source,
                line: r.line,
                reason: r.reason,
                record: r.record,
            };
            self.dead_letter
                .reject(&self.name, &record)
                .map_err(|e| self.dead_letter.write_error(&self.name, e))?;
        }
        let mut origins = match decoded.batch.as_ref() {
            Some(b) if self.want_origins && decoded.lines.len() == b.num_rows() => {
                Some(RowOrigins::new(Arc::clone(&self.file), decoded.lines))
            }
            _ => None,
        };
        let batch = match (decoded.batch, self.dropped_time) {
            (Some(b), Some(column)) => Some(self.drop_null_times(b, column, &mut origins)?),
            (batch, _) => batch,
        };
        self.origins = origins;
        Ok(batch.filter(|b| b.num_rows() > 0).map(SourcePoll::Batch))
    }

    /// `batch` without its rows whose event time (column `column`) is null, counted; their
    /// origins go too.
    fn drop_null_times(
        &mut self,
        batch: RecordBatch,
        column: usize,
        origins: &mut Option<RowOrigins>,
    ) -> Result<RecordBatch, OperatorError> {
        let times = batch.column(column);
        if times.null_count() == 0 {
            return Ok(batch);
        }
        self.null_time_rows += times.null_count() as u64;
        let error = |e: arrow::error::ArrowError| OperatorError::Execution {
            operator: self.name.clone(),
            message: format!("dropping the rows without an event time: {e}"),
        };
        let keep = arrow::compute::is_not_null(times.as_ref()).map_err(error)?;
        if let Some(o) = origins.as_mut() {
            *o = o.filter(&keep);
        }
        arrow::compute::filter_record_batch(&batch, &keep).map_err(error)
    }

    fn codec_error(&self, e: crate::codec::CodecError) -> OperatorError {
        OperatorError::Config {
            operator: self.name.clone(),
            message: e.to_string(),
        }
    }

    fn split_error(&self, e: SplitError) -> OperatorError {
        split_error(&self.name, e)
    }

    /// A split of `path` starts at `first` (`None`: stdin, from its start): the decoder starts
    /// the file and, for a split that starts later in it, reads the file's header (CSV) and
    /// stands at its first record, leaving what comes before to the other splits.
    fn start_split(&mut self, path: &str, first: Option<Boundary>) -> Result<(), OperatorError> {
        self.start_file(path);
        let Some(first) = first.filter(|f| f.offset > 0) else {
            return Ok(());
        };
        if self.decoder.needs_header() {
            let mut failed = None;
            let decoder = &mut self.decoder;
            read_prefix(path, first.offset, |bytes| {
                // The rows of this prefix belong to another split: only the header counts.
                if let Err(e) = decoder.decode(bytes) {
                    failed = Some(e);
                    return false;
                }
                decoder.needs_header()
            })
            .map_err(|e| self.split_error(e))?;
            if let Some(e) = failed {
                return Err(self.codec_error(e));
            }
        }
        self.decoder.jump_to(first);
        Ok(())
    }

    /// The splits left of `saved`, a checkpoint's position (in either form).
    fn splits_of(&self, saved: SavedPosition) -> Result<(Vec<Split>, u64), String> {
        match saved {
            SavedPosition::Splits(p) => Ok((p.splits, p.null_event_time_rows)),
            SavedPosition::Sequential(p) => {
                let file = usize::try_from(p.file).unwrap_or(usize::MAX);
                if file > self.files.len() {
                    return Err(format!(
                        "the checkpoint was reading file {} of {}",
                        file + 1,
                        self.files.len()
                    ));
                }
                if let (Some(expected), Some(actual)) = (p.path.as_deref(), self.files.get(file)) {
                    if actual.path != expected {
                        return Err(format!(
                            "file {} was `{expected}` and is now `{}`",
                            file + 1,
                            actual.path
                        ));
                    }
                }
                let mut splits: Vec<Split> = self
                    .files
                    .iter()
                    .skip(file)
                    .map(|f| Split::new(&f.path, 0, f.size, f.size))
                    .collect();
                if let (Some(first), true) = (splits.first_mut(), p.offset > 0) {
                    first.resume_at(p.offset);
                }
                Ok((splits, p.null_event_time_rows))
            }
        }
    }

    fn changed_input(&self, what: String) -> OperatorError {
        OperatorError::Config {
            operator: self.name.clone(),
            message: format!(
                "the input changed since the checkpoint: {what}; restore cannot resume exactly where it stopped (start over with --from-scratch)"
            ),
        }
    }
}

/// A split's error as the operator's: a read that failed, or a file that changed.
fn split_error(operator: &str, e: SplitError) -> OperatorError {
    match e {
        SplitError::Io { path, cause } => OperatorError::Io {
            operator: operator.to_string(),
            path: path.into(),
            source: cause,
        },
        e @ SplitError::Changed { .. } => OperatorError::Config {
            operator: operator.to_string(),
            message: format!("the input changed: {e}"),
        },
    }
}

impl Source for Reader {
    fn name(&self) -> &str {
        &self.name
    }

    fn watermarks(&self) -> Option<anduin_operator_api::WatermarkSpec> {
        self.watermarks
    }

    fn metrics(&self) -> Vec<(&'static str, u64)> {
        match self.dropped_time {
            Some(_) => vec![("null_event_time_rows", self.null_time_rows)],
            None => Vec::new(),
        }
    }

    fn want_origins(&mut self) {
        if let Decoder::Csv(d) = &mut self.decoder {
            d.record_lines();
        }
        self.want_origins = true;
    }

    fn take_origins(&mut self) -> Option<RowOrigins> {
        self.origins.take()
    }

    fn can_resume(&self) -> Result<(), String> {
        match self.bytes {
            Bytes::Splits(_) => Ok(()),
            Bytes::Stdin(_) => Err("it reads stdin, which cannot be read again after a failure: exactly-once recovery needs files".into()),
        }
    }

    fn snapshot(&mut self, out: &mut dyn SnapshotOut) -> Result<(), OperatorError> {
        let Bytes::Splits(input) = &self.bytes else {
            return Err(OperatorError::internal(
                &self.name,
                "a reader of stdin cannot be checkpointed",
            ));
        };
        let position = Position {
            splits: input.position(Some(self.decoder.consumed_offset())),
            null_event_time_rows: self.null_time_rows,
        };
        out.inline_typed(&self.name, &position)
    }

    fn restore(&mut self, state: RestoreIn) -> Result<(), OperatorError> {
        let saved: SavedPosition = state.inline_as(&self.name)?;
        let (splits, null_rows) = self
            .splits_of(saved)
            .map_err(|what| self.changed_input(what))?;
        self.null_time_rows = null_rows;
        match &mut self.bytes {
            Bytes::Splits(input) => input.replace(splits),
            Bytes::Stdin(_) => {
                return Err(OperatorError::internal(
                    &self.name,
                    "a reader of stdin cannot resume from a checkpoint",
                ))
            }
        }
        Ok(())
    }

    /// The splits every old instance had left, dealt again over `parallelism` instances
    /// (the rows dropped for a null event time go whole to instance 0).
    fn rescale_inline(
        &self,
        parts: &[Option<serde_json::Value>],
        instance: usize,
        parallelism: usize,
    ) -> Result<Option<serde_json::Value>, RescaleError> {
        let mut left = Vec::new();
        let mut null_rows = 0;
        for (k, part) in parts.iter().enumerate() {
            let Some(value) = part else { continue };
            let corrupt = |why: String| RescaleError::Corrupt { instance: k, why };
            let saved = SavedPosition::deserialize(value).map_err(|e| corrupt(e.to_string()))?;
            let (splits, n) = self.splits_of(saved).map_err(corrupt)?;
            left.push(splits);
            null_rows += n;
        }
        let position = Position {
            splits: reshare(left, instance, parallelism),
            null_event_time_rows: if instance == 0 { null_rows } else { 0 },
        };
        serde_json::to_value(&position)
            .map(Some)
            .map_err(|e| RescaleError::Corrupt {
                instance,
                why: e.to_string(),
            })
    }

    fn poll(&mut self, _max_rows: usize, deadline: Instant) -> Result<SourcePoll, OperatorError> {
        loop {
            let Some(budget) = self.read_budget(deadline) else {
                return Ok(SourcePoll::Idle);
            };
            let name = &self.name;
            let piece = match &mut self.bytes {
                Bytes::Stdin(input) => {
                    match input
                        .next_at_most(deadline, budget)
                        .map_err(|e| OperatorError::Io {
                            operator: name.clone(),
                            path: "input".into(),
                            source: e,
                        })? {
                        Chunk::Done => Piece::Done,
                        Chunk::Idle => Piece::Idle,
                        Chunk::FileStart(path) => Piece::Start(path, None),
                        Chunk::Data(bytes) => Piece::Data(bytes),
                        Chunk::FileEnd => Piece::End,
                    }
                }
                Bytes::Splits(input) => match input
                    .next_at_most(budget, deadline)
                    .map_err(|e| split_error(name, e))?
                {
                    Next::Start { path, first } => Piece::Start(path, Some(first)),
                    Next::Data(bytes) => Piece::Data(bytes),
                    Next::End => Piece::End,
                    Next::Idle => Piece::Idle,
                    Next::Done => Piece::Done,
                },
            };
            let decoded = match piece {
                Piece::Done => return Ok(SourcePoll::Exhausted),
                Piece::Idle => return Ok(SourcePoll::Idle),
                Piece::Start(path, first) => {
                    self.start_split(&path, first)?;
                    continue;
                }
                Piece::Data(bytes) => {
                    let before = self.decoder.consumed_offset();
                    let decoded = self.decoder.decode(bytes);
                    // The bytes of whole records (a record cut by the read is counted
                    // once complete), for the average length of a row.
                    self.bytes_read += self.decoder.consumed_offset().saturating_sub(before);
                    decoded
                }
                Piece::End => self.decoder.finish_file(),
            };
            let decoded = decoded.map_err(|e| self.codec_error(e))?;
            if let Some(poll) = self.take(decoded)? {
                if let SourcePoll::Batch(b) = &poll {
                    self.rows += b.num_rows() as u64;
                }
                return Ok(poll);
            }
            // Input without rows (a line too long to keep, being skipped; blank lines) must
            // not hold the source past its deadline: the runtime checks for a stop then.
            if Instant::now() >= deadline {
                return Ok(SourcePoll::Idle);
            }
        }
    }

    fn adjustable_params(&self) -> &'static [&'static str] {
        ADJUSTABLE
    }

    /// A new rate counts from now: the next row comes one interval of the new rate after
    /// the change (rows the old rate had not allowed yet are not owed).
    fn set_param(&mut self, param: &str, value: &str) -> Result<(), ControlError> {
        let rate = crate::pace::changed_rate(&self.name, param, value, ADJUSTABLE)?;
        self.rate = Some(rate);
        self.pace.change(self.rows);
        Ok(())
    }
}
