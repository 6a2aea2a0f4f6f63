//! `writer`: rows to a CSV or JSON Lines file, or stdout; the changes of an updating stream
//! as a changelog or an upsert log (`mode`, see [`crate::changelog`]).
//!
//! Without checkpoints, writing to a file is buffered and flushed at the end of input. With
//! checkpoints, `path` is a directory of part files, committed when the checkpoint that
//! covers them completes (see [`super::parts`]): exactly once. Stdout is at-least-once: rows
//! printed after the last checkpoint are printed again after a restore.
//!
//! With `partition_by`, `path` is a directory with a directory per partition value
//! (`path/dt=2026-12-01/hm=10:15/part-…`), as Flink's partitioned filesystem sink: see
//! [`crate::partitioned`].
//!
//! `path` can change while the query runs (a meta query, paper §4.5: the re-targeted
//! writer): at the barrier that carries the change, the old output is completed — a file is
//! written out and flushed (with its CSV header even if no row came); with checkpoints the
//! barrier's snapshot has already closed the old directory's part for that epoch, and the old
//! directory's pending parts are still committed by the checkpoints that cover them — and the
//! rows after the barrier go to the new output, created (or emptied) as at the start. Every
//! row is written once, in the old output or in the new one. After a restore, a change the
//! checkpoint recorded reopens the new output as it was at that checkpoint.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anduin_graph::{Arity, Binding, OperatorSignature, ParamKind, ParamSpec};
use anduin_spec::OperatorDef;
use anduin_types::{Diagnostics, Epoch};
use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;

use crate::changelog::Mode;
use crate::codec::{CsvEncoder, JsonLinesEncoder, TimestampFormat};
use crate::partitioned::{PartitionedSetup, PartitionedWriter};
use crate::parts::Parts;
use anduin_operator_api::Bound;
use anduin_operator_api::Params;
use anduin_operator_api::{Collector, ControlError, Operator, OperatorError, SnapshotOut};

/// The `writer` operator type.
pub const SIGNATURE: OperatorSignature = OperatorSignature {
    kind: "writer",
    doc: "writes its input to a CSV or JSON Lines file, or stdout",
    inputs: Arity::Exactly(1),
    outputs: Arity::Exactly(0),
    stateful: true,
    params: &[
        ParamSpec {
            name: "path",
            required: true,
            kind: ParamKind::Text,
            default: None,
            doc: "the output file (created or truncated), or \"-\" for stdout; adjustable while running",
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
            doc: "csv: write a header line with the column names",
        },
        ParamSpec {
            name: "delimiter",
            required: false,
            kind: ParamKind::Text,
            default: Some(","),
            doc: "csv: the field separator, one character",
        },
        ParamSpec {
            name: "timestamp_format",
            required: false,
            kind: ParamKind::OneOf(&["epoch_ms", "rfc3339"]),
            default: Some("epoch_ms"),
            doc: "how timestamps are written: epoch milliseconds, or RFC 3339 text in UTC (2023-11-14T22:13:20.000Z)",
        },
        ParamSpec {
            name: "mode",
            required: false,
            kind: ParamKind::OneOf(&["append", "changelog", "upsert"]),
            default: Some("append"),
            doc: "append (rows of an append-only stream as they are), changelog (every change of an updating stream, with an `op` column first: +I, -U, +U, -D), or upsert (the same without the -U rows, by `primary_key`)",
        },
        ParamSpec {
            name: "partition_by",
            required: false,
            kind: ParamKind::Text,
            default: None,
            doc: "columns, comma-separated: `path` becomes a directory with a directory per value of them (`path/dt=2026-12-01/hm=10:15/`), each holding part files committed with checkpoints (at the end of input without); the files hold the other columns; append mode only; `path` then cannot change while running",
        },
        ParamSpec {
            name: "primary_key",
            required: false,
            kind: ParamKind::Text,
            default: None,
            doc: "upsert: the columns that identify a row, comma-separated (for a GROUP BY, its grouping columns)",
        },
    ],
};

/// The params a running writer can change.
pub const ADJUSTABLE: &[&str] = &["path"];

/// How much encoded output is buffered before a write.
pub(crate) const FLUSH_AT: usize = 1 << 20;

#[derive(Clone, Copy)]
pub(crate) enum Format {
    Csv { delimiter: u8, header: bool },
    Json,
}

/// Checks this operator's params and inputs as the query declares them, and binds it to a
/// factory of instances (called by the registry's catalog).
pub fn bind(op: &OperatorDef, inputs: &[(&str, SchemaRef)]) -> Result<Binding<Bound>, Diagnostics> {
    let p = Params::new(op);
    let (_, schema) = inputs.first().expect("arity checked: one input");
    let mode = Mode::parse(
        &p.str_or("mode", "append"),
        p.text("primary_key").as_ref().map(|t| t.as_str()),
        schema,
    )
    .map_err(|(param, message)| Diagnostics::from(p.error(param, message)))?;
    let schema = mode.written_schema(schema);
    let format = match p.str_or("format", "csv").as_str() {
        "jsonl" | "json" => Format::Json,
        _ => {
            let delimiter = p.delimiter()?;
            Format::Csv {
                delimiter,
                header: p.bool_or("header", true),
            }
        }
    };
    let ts = match p.str_or("timestamp_format", "epoch_ms").as_str() {
        "rfc3339" => TimestampFormat::Rfc3339,
        _ => TimestampFormat::EpochMillis,
    };
    let path = p.required("path").to_string();
    let name = op.name.to_string();
    if let Some(columns) = p.text("partition_by") {
        let setup = partitioned_setup(
            &p,
            &name,
            &path,
            columns.as_str(),
            &mode,
            &schema,
            format,
            ts,
        )?;
        return Ok(Binding {
            bound: Bound::Operator(Arc::new(move |ctx| {
                Ok(Box::new(PartitionedWriter::open(
                    setup.clone(),
                    ctx.checkpointing,
                    ctx.restore_epoch,
                )?))
            })),
            outputs: vec![],
            warnings: Diagnostics::default(),
            partition_by: Vec::new(),
        });
    }
    Ok(Binding {
        bound: Bound::Operator(Arc::new(move |ctx| {
            let out = open_output(&name, &path, format, ctx.checkpointing, ctx.restore_epoch)?;
            Ok(Box::new(Writer {
                name: name.clone(),
                path: PathBuf::from(&path),
                out,
                format,
                ts,
                encoder: new_encoder(format, ts),
                buf: Vec::with_capacity(FLUSH_AT + FLUSH_AT / 4),
                schema: Arc::clone(&schema),
                mode: mode.clone(),
                encoded_any: false,
                checkpointing: ctx.checkpointing,
                restore_epoch: ctx.restore_epoch,
                snapshotted: false,
                retired: Vec::new(),
            }))
        })),
        outputs: vec![],
        warnings: Diagnostics::default(),
        partition_by: Vec::new(),
    })
}

/// The setup of a writer partitioned by `columns` (the `partition_by` param).
#[allow(clippy::too_many_arguments)]
fn partitioned_setup(
    p: &Params<'_>,
    name: &str,
    path: &str,
    columns: &str,
    mode: &Mode,
    schema: &SchemaRef,
    format: Format,
    ts: TimestampFormat,
) -> Result<PartitionedSetup, Diagnostics> {
    if *mode != Mode::Append {
        return Err(p
            .error(
                "partition_by",
                "a partitioned writer writes append-only streams (mode = \"append\")",
            )
            .into());
    }
    if path == "-" {
        return Err(p
            .error(
                "partition_by",
                "stdout cannot be partitioned: give `path` a directory",
            )
            .into());
    }
    let mut partition = Vec::new();
    for c in columns.split(',').map(str::trim).filter(|c| !c.is_empty()) {
        let i = schema.index_of(c).map_err(|_| {
            let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
            p.error(
                "partition_by",
                format!("unknown column `{c}`: the input has {}", names.join(", ")),
            )
        })?;
        if partition.iter().any(|(j, _)| *j == i) {
            return Err(p
                .error("partition_by", format!("column `{c}` is named twice"))
                .into());
        }
        partition.push((i, c.to_string()));
    }
    if partition.is_empty() {
        return Err(p.error("partition_by", "name at least one column").into());
    }
    let kept: Vec<usize> = (0..schema.fields().len())
        .filter(|i| !partition.iter().any(|(j, _)| j == i))
        .collect();
    if kept.is_empty() {
        return Err(p
            .error(
                "partition_by",
                "every column is a partition column: the files would hold nothing",
            )
            .into());
    }
    Ok(PartitionedSetup {
        name: name.to_string(),
        root: PathBuf::from(path),
        format,
        ts,
        ext: extension(format),
        partition,
        kept,
    })
}

/// The output at `path` of writer `name`, prepared: part files in a directory brought back to
/// checkpoint `restore` (or emptied for a fresh start) with checkpoints, a file checked to be
/// creatable (made, or truncated, by the first write) without, or stdout for `-`.
fn open_output(
    name: &str,
    path: &str,
    format: Format,
    checkpointing: bool,
    restore: Option<Epoch>,
) -> Result<Output, OperatorError> {
    let config = |message: String| OperatorError::Config {
        operator: name.to_string(),
        message,
    };
    if path == "-" {
        return Ok(Output::Stdout(std::io::stdout()));
    }
    if checkpointing {
        let parts = Parts::open(Path::new(path), extension(format), restore)
            .map_err(|e| config(format!("cannot prepare the output directory `{path}`: {e}")))?;
        return Ok(Output::Parts(parts));
    }
    // Checked now, created (or truncated) by the first write: a query that fails to start
    // leaves its outputs as they were.
    anduin_operator_api::fs_check::check_creatable(Path::new(path))
        .map_err(|e| config(format!("cannot create output file `{path}`: {e}")))?;
    Ok(Output::File(None))
}

/// The extension of part files in `format`.
fn extension(format: Format) -> &'static str {
    match format {
        Format::Csv { .. } => "csv",
        Format::Json => "jsonl",
    }
}

/// Checks, without changing anything, that a writer could write to `path` (as `anduin run`
/// checks an output before it starts, and the control plane a new path before it sends it):
/// a file that can be created or replaced, or with checkpoints a directory of part files
/// that exists or can be made. `-` (stdout) always can.
pub fn check_output_place(path: &Path, checkpointing: bool) -> Result<(), String> {
    if path == Path::new("-") {
        return Ok(());
    }
    if path.as_os_str().is_empty() {
        return Err("the path is empty".into());
    }
    if !checkpointing {
        return anduin_operator_api::fs_check::check_creatable(path).map_err(|e| e.to_string());
    }
    if path.is_file() {
        return Err(format!(
            "`{}` is a file, but with checkpoints a writer writes part files into a directory of that name",
            path.display()
        ));
    }
    // The directory, or the nearest existing one above it, must be writable.
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map_err(|e| format!("cannot read the current directory: {e}"))?
            .join(path)
    };
    let existing = absolute
        .ancestors()
        .find(|a| a.exists())
        .unwrap_or(Path::new("/"));
    match std::fs::metadata(existing) {
        Ok(m) if m.is_dir() && !m.permissions().readonly() => Ok(()),
        Ok(m) if m.is_dir() => Err(format!(
            "the directory `{}` is not writable",
            existing.display()
        )),
        Ok(_) => Err(format!(
            "`{}` is not a directory, so no directory can be made under it",
            existing.display()
        )),
        Err(e) => Err(format!("`{}`: {e}", existing.display())),
    }
}

pub(crate) fn new_encoder(format: Format, ts: TimestampFormat) -> Encoder {
    match format {
        Format::Csv { delimiter, header } => Encoder::Csv(CsvEncoder::new(delimiter, header, ts)),
        Format::Json => Encoder::Json(JsonLinesEncoder::new(ts)),
    }
}

/// Where a writer writes.
enum Output {
    /// A file, opened by the first write.
    File(Option<File>),
    Stdout(std::io::Stdout),
    /// Part files in a directory, committed with checkpoints.
    Parts(Parts),
}

pub(crate) enum Encoder {
    Csv(CsvEncoder),
    Json(JsonLinesEncoder),
}

/// A running writer.
struct Writer {
    name: String,
    path: PathBuf,
    out: Output,
    format: Format,
    ts: TimestampFormat,
    encoder: Encoder,
    buf: Vec<u8>,
    /// What is written (for a changelog or an upsert, with the `op` column first).
    schema: SchemaRef,
    /// How changes are written.
    mode: Mode,
    encoded_any: bool,
    /// Whether the query takes checkpoints (a new path is then a directory of parts).
    checkpointing: bool,
    /// The checkpoint the run resumed from: a change it recorded, applied again before the
    /// first barrier, reopens the new directory as it was at that checkpoint.
    restore_epoch: Option<Epoch>,
    /// Whether a barrier's snapshot was taken in this run (a change after it is a new one).
    snapshotted: bool,
    /// Directories of parts written before a change of `path`, until their pending parts
    /// are committed.
    retired: Vec<Parts>,
}

impl Writer {
    fn io_error(&self, e: std::io::Error) -> OperatorError {
        OperatorError::Io {
            operator: self.name.clone(),
            path: self.path.clone(),
            source: e,
        }
    }

    fn encode(&mut self, batch: &RecordBatch) {
        if let Output::Parts(p) = &self.out {
            // Each part is a whole file: a new part starts with its own header.
            if !p.has_current() && self.buf.is_empty() {
                self.encoder = new_encoder(self.format, self.ts);
            }
        }
        self.encoded_any = true;
        match &mut self.encoder {
            Encoder::Csv(e) => e.encode(batch, &mut self.buf),
            Encoder::Json(e) => e.encode(batch, &mut self.buf),
        }
    }

    fn write_out(&mut self) -> Result<(), OperatorError> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let res = match &mut self.out {
            Output::File(f) => match f {
                Some(f) => f.write_all(&self.buf),
                None => File::create(&self.path).and_then(|mut created| {
                    let res = created.write_all(&self.buf);
                    *f = Some(created);
                    res
                }),
            },
            Output::Stdout(s) => {
                let mut lock = s.lock();
                lock.write_all(&self.buf).and_then(|()| lock.flush())
            }
            Output::Parts(p) => p.write(&self.buf),
        };
        self.buf.clear();
        res.map_err(|e| OperatorError::Io {
            operator: self.name.clone(),
            path: self.path.clone(),
            source: e,
        })
    }

    /// Completes a file or stdout output as the end of input does: what is buffered is
    /// written and flushed, and a file that got no row still gets its header. (Part files
    /// were closed by the barrier's snapshot and wait for their commit.)
    fn finish_plain(&mut self) -> Result<(), OperatorError> {
        if !self.encoded_any && !matches!(self.out, Output::Parts(_)) {
            // A query that produced nothing still writes its CSV header.
            self.encode(&RecordBatch::new_empty(Arc::clone(&self.schema)));
        }
        self.write_out()?;
        let res = match &mut self.out {
            Output::File(Some(f)) => f.flush(),
            Output::File(None) => File::create(&self.path).map(|_| ()),
            Output::Stdout(s) => s.flush(),
            Output::Parts(_) => Ok(()),
        };
        res.map_err(|e| self.io_error(e))
    }

    /// `path` changes to `new` at a barrier (see the module's documentation).
    fn retarget(&mut self, new: &str) -> Result<(), ControlError> {
        let name = self.name.clone();
        let invalid = |message: String| ControlError::Invalid {
            operator: name.clone(),
            param: "path".into(),
            message,
        };
        if new.is_empty() {
            return Err(invalid("the path is empty".into()));
        }
        if Path::new(new) == self.path {
            return Ok(());
        }
        // A change applied again after a restore comes before the first barrier: its
        // directory is brought back to the checkpoint; a new change starts it afresh.
        let restore = if self.snapshotted {
            None
        } else {
            self.restore_epoch
        };
        let out = open_output(&self.name, new, self.format, self.checkpointing, restore)
            .map_err(|e| invalid(e.to_string()))?;
        self.finish_plain().map_err(|e| invalid(e.to_string()))?;
        let old = std::mem::replace(&mut self.out, out);
        if let Output::Parts(p) = old {
            if p.has_current() {
                // Rows came after the barrier's snapshot: cannot happen, since a change
                // rides on the barrier that closed the part.
                tracing::warn!(operator = %self.name, "a part was open at a change of path; its rows will be written again after a restore");
            }
            self.retired.push(p);
        }
        tracing::info!(operator = %self.name, old = %self.path.display(), new, "the writer writes to a new path");
        self.path = PathBuf::from(new);
        self.encoder = new_encoder(self.format, self.ts);
        self.encoded_any = false;
        Ok(())
    }

    /// Commits the parts pending for checkpoint `epoch` (and earlier) in the current
    /// directory and in those written before a change of path.
    fn commit(&mut self, epoch: Epoch) -> Result<(), OperatorError> {
        let mut res = Ok(());
        if let Output::Parts(p) = &mut self.out {
            res = p.commit(epoch);
        }
        for p in &mut self.retired {
            res = res.and_then(|()| p.commit(epoch));
        }
        self.retired.retain(Parts::has_pending);
        res.map_err(|e| self.io_error(e))
    }
}

impl Drop for Writer {
    /// A query that fails leaves what it produced until then in a plain output file (as a
    /// Unix filter does), not a file short of the rows still in the buffer. Part files are
    /// left to the checkpoints: a pending part is committed only by one.
    fn drop(&mut self) {
        if matches!(self.out, Output::File(_) | Output::Stdout(_)) && !self.buf.is_empty() {
            if let Err(e) = self.write_out() {
                tracing::warn!(operator = %self.name, error = %e, "could not write the last rows of a failed run");
            }
        }
    }
}

impl Operator for Writer {
    fn name(&self) -> &str {
        &self.name
    }

    fn process_batch(
        &mut self,
        _input: usize,
        batch: RecordBatch,
        _out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        if self.mode == Mode::Append {
            self.encode(&batch);
        } else {
            let rows = self.mode.rows(&batch, &self.schema).map_err(|message| {
                OperatorError::Execution {
                    operator: self.name.clone(),
                    message,
                }
            })?;
            self.encode(&rows);
        }
        // Stdout is for people watching: write each batch as it comes.
        if self.buf.len() >= FLUSH_AT || matches!(self.out, Output::Stdout(_)) {
            self.write_out()?;
        }
        Ok(())
    }

    fn on_end_of_input(&mut self, _out: &mut dyn Collector) -> Result<(), OperatorError> {
        self.finish_plain()?;
        // The input ended after the last checkpoint's barrier, which closed the parts: the
        // query succeeded, so what is pending is committed. (Should rows have come after
        // that barrier, their part is named after no checkpoint and a restore removes it:
        // the rows are produced again.)
        if let Output::Parts(p) = &mut self.out {
            let closed = p.close_for(Epoch(u64::MAX)).map(drop);
            closed.map_err(|e| self.io_error(e))?;
        }
        self.commit(Epoch(u64::MAX))
    }

    fn adjustable_params(&self) -> &'static [&'static str] {
        ADJUSTABLE
    }

    fn set_param(&mut self, param: &str, value: &str) -> Result<(), ControlError> {
        if param != "path" {
            return Err(ControlError::NotAdjustable {
                operator: self.name.clone(),
                param: param.to_string(),
                adjustable: ADJUSTABLE.join(", "),
            });
        }
        self.retarget(value)
    }

    fn snapshot(&mut self, out: &mut dyn SnapshotOut) -> Result<(), OperatorError> {
        self.snapshotted = true;
        self.write_out()?;
        let epoch = out.epoch();
        if let Output::Parts(p) = &mut self.out {
            let mut pending = p.close_for(epoch).map_err(|e| OperatorError::Io {
                operator: self.name.clone(),
                path: self.path.clone(),
                source: e,
            })?;
            // The parts of earlier paths still waiting for their checkpoint, with their
            // directory, and every directory that holds some: a restore brings them back to
            // the checkpoint (the manifest keeps only the latest path, not every one between).
            let mut dirs = vec![self.path.display().to_string()];
            for r in &self.retired {
                pending.extend(r.pending_paths());
                if r.has_pending() {
                    dirs.push(r.dir().display().to_string());
                }
            }
            out.inline(serde_json::json!({ "pending": pending, "dirs": dirs }));
        }
        Ok(())
    }

    fn restore(&mut self, state: anduin_operator_api::RestoreIn) -> Result<(), OperatorError> {
        // The current directory was brought back to the checkpoint when the writer was
        // created (and one given by a change, when the change is applied again); the other
        // directories the checkpoint's parts wait in are brought back here.
        let dirs: Vec<PathBuf> = state
            .inline
            .as_ref()
            .and_then(|v| v.get("dirs"))
            .and_then(|d| d.as_array())
            .map(|d| {
                d.iter()
                    .filter_map(|p| p.as_str())
                    .map(PathBuf::from)
                    .collect()
            })
            .unwrap_or_default();
        for dir in dirs.iter().filter(|d| **d != self.path) {
            Parts::open(dir, extension(self.format), Some(state.epoch)).map_err(|e| {
                OperatorError::Io {
                    operator: self.name.clone(),
                    path: dir.clone(),
                    source: e,
                }
            })?;
        }
        Ok(())
    }

    fn handle_commit(&mut self, epoch: Epoch) -> Result<(), OperatorError> {
        self.commit(epoch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use anduin_operator_api::BuildContext;
    use arrow::array::Int64Array;
    use arrow::datatypes::{DataType, Field, Schema};

    use crate::test_fakes::{At, Nowhere};

    /// A checkpoint that keeps what the writer puts inline.
    struct Kept(u64, Option<serde_json::Value>);

    impl SnapshotOut for Kept {
        fn epoch(&self) -> Epoch {
            Epoch(self.0)
        }
        fn full_due(&self) -> bool {
            true
        }
        fn inline(&mut self, value: serde_json::Value) {
            self.1 = Some(value);
        }
        fn stream(
            &mut self,
            _kind: anduin_types::SnapshotKind,
        ) -> Result<&mut dyn std::io::Write, OperatorError> {
            Err(OperatorError::Execution {
                operator: "test".into(),
                message: "no stream".into(),
            })
        }
    }

    fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, true)]))
    }

    fn batch(rows: std::ops::Range<i64>) -> RecordBatch {
        RecordBatch::try_new(schema(), vec![Arc::new(Int64Array::from_iter_values(rows))])
            .expect("a batch")
    }

    /// A writer of `path`, with checkpoints resumed from `restore` if `checkpointing`.
    fn writer(path: &Path, checkpointing: bool, restore: Option<Epoch>) -> Box<dyn Operator> {
        let src = format!(
            "operator name = \"out\", type = \"writer\" {{\n  input name = \"s\"\n  param path = \"{}\"\n}}\n",
            path.display()
        );
        let spec = anduin_spec::parse_flow(&src).expect("parses");
        let op = spec.operators.first().expect("one operator");
        let binding = bind(op, &[("s", schema())]).expect("binds");
        let Bound::Operator(factory) = binding.bound else {
            panic!("an operator")
        };
        factory(&BuildContext {
            checkpointing,
            restore_epoch: restore,
            ..BuildContext::default()
        })
        .expect("builds")
    }

    fn write(w: &mut Box<dyn Operator>, rows: std::ops::Range<i64>) {
        w.process_batch(0, batch(rows), &mut Nowhere)
            .expect("writes");
    }

    /// The rows of a file, or of the committed parts of a directory in name order.
    fn rows(path: &Path) -> Vec<String> {
        let mut files = vec![path.to_path_buf()];
        if path.is_dir() {
            files = std::fs::read_dir(path)
                .expect("lists")
                .map(|e| e.expect("entry").path())
                .filter(|p| {
                    !p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with('.'))
                })
                .collect();
            files.sort();
        }
        files
            .iter()
            .flat_map(|f| {
                let text = std::fs::read_to_string(f).expect("reads");
                let mut lines = text.lines().map(str::to_string);
                assert_eq!(lines.next().as_deref(), Some("n"), "a header in {f:?}");
                lines.collect::<Vec<_>>()
            })
            .collect()
    }

    fn numbers(range: std::ops::Range<i64>) -> Vec<String> {
        range.map(|n| n.to_string()).collect()
    }

    #[test]
    fn a_new_file_gets_the_rows_after_the_change_and_the_old_one_is_complete() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let (old, new, empty) = (
            tmp.path().join("old.csv"),
            tmp.path().join("new.csv"),
            tmp.path().join("empty.csv"),
        );
        let mut w = writer(&old, false, None);
        assert_eq!(w.adjustable_params(), ["path"]);
        write(&mut w, 0..3);
        w.set_param("path", &new.display().to_string())
            .expect("a new file");
        assert_eq!(rows(&old), numbers(0..3), "written out at the change");
        write(&mut w, 3..5);
        // A file that gets no row still gets its header.
        w.set_param("path", &empty.display().to_string())
            .expect("another");
        w.set_param("path", &new.display().to_string().replace("new", "last"))
            .expect("and another");
        w.on_end_of_input(&mut Nowhere).expect("ends");
        assert_eq!(rows(&new), numbers(3..5));
        assert!(rows(&empty).is_empty());
        assert!(rows(&tmp.path().join("last.csv")).is_empty());
    }

    #[test]
    fn a_place_that_cannot_be_written_is_refused_and_the_writer_goes_on() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let old = tmp.path().join("old.csv");
        let mut w = writer(&old, false, None);
        write(&mut w, 0..2);
        for bad in [
            tmp.path().join("missing/new.csv").display().to_string(),
            tmp.path().display().to_string(),
            String::new(),
        ] {
            let e = w.set_param("path", &bad).expect_err("refused");
            assert!(matches!(e, ControlError::Invalid { .. }), "{e}");
        }
        assert!(
            w.set_param("format", "json").is_err(),
            "only the path changes"
        );
        write(&mut w, 2..4);
        w.on_end_of_input(&mut Nowhere).expect("ends");
        assert_eq!(rows(&old), numbers(0..4));
        assert_eq!(
            check_output_place(&tmp.path().join("missing/x"), true),
            Ok(()),
            "a directory of parts is made with its parents"
        );
        let file = tmp.path().join("f");
        std::fs::write(&file, "x").expect("writes");
        assert!(check_output_place(&file, true).is_err());
        assert!(check_output_place(&file.join("below"), true).is_err());
        assert!(check_output_place(&file.join("below"), false).is_err());
        assert_eq!(check_output_place(Path::new("-"), true), Ok(()));
    }

    #[test]
    fn with_checkpoints_the_old_directory_is_committed_by_its_checkpoint_and_the_new_one_restored()
    {
        let tmp = tempfile::tempdir().expect("tempdir");
        let (old, new) = (tmp.path().join("old"), tmp.path().join("new"));
        let mut w = writer(&old, true, None);
        write(&mut w, 0..3);
        w.snapshot(&mut At(1)).expect("snapshots");
        // The change rides on barrier 1: snapshot first, then the new path.
        w.set_param("path", &new.display().to_string())
            .expect("a new directory");
        write(&mut w, 3..5);
        assert!(
            rows(&old).is_empty(),
            "pending until checkpoint 1 completes"
        );
        w.handle_commit(Epoch(1)).expect("commits");
        assert_eq!(rows(&old), numbers(0..3));
        w.snapshot(&mut At(2)).expect("snapshots");
        w.handle_commit(Epoch(2)).expect("commits");
        assert_eq!(rows(&new), numbers(3..5));
        write(&mut w, 5..7);
        w.snapshot(&mut At(3)).expect("snapshots");
        // Killed before checkpoint 3 completes: resumed from 2, the change applied again
        // before the first barrier brings the new directory back to checkpoint 2.
        drop(w);
        let mut w = writer(&old, true, Some(Epoch(2)));
        w.set_param("path", &new.display().to_string())
            .expect("applied again");
        assert_eq!(rows(&old), numbers(0..3));
        assert_eq!(rows(&new), numbers(3..5));
        write(&mut w, 5..7);
        w.on_end_of_input(&mut Nowhere).expect("ends");
        assert_eq!(rows(&new), numbers(3..7));
        assert_eq!(rows(&old), numbers(0..3));
    }

    #[test]
    fn a_restore_commits_the_parts_waiting_in_a_directory_the_manifest_no_longer_names() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let (a, b, c) = (
            tmp.path().join("a"),
            tmp.path().join("b"),
            tmp.path().join("c"),
        );
        let mut w = writer(&a, true, None);
        w.set_param("path", &b.display().to_string()).expect("to b");
        write(&mut w, 0..3);
        // Barrier 1 closes b's part; the change to c rides on it.
        let mut kept = Kept(1, None);
        w.snapshot(&mut kept).expect("snapshots");
        w.set_param("path", &c.display().to_string()).expect("to c");
        write(&mut w, 3..5);
        // Killed after checkpoint 1 completed, before its commit: b's part is pending.
        drop(w);
        assert!(rows(&b).is_empty());
        // The manifest keeps only the latest path (c, applied after the snapshot of 1): the
        // resumed writer starts at a, restores, then goes to c; b is brought back from the
        // snapshot's list of directories.
        let mut w = writer(&a, true, Some(Epoch(1)));
        w.restore(anduin_operator_api::RestoreIn {
            epoch: Epoch(1),
            inline: kept.1,
            files: Vec::new(),
        })
        .expect("restores");
        w.set_param("path", &c.display().to_string())
            .expect("applied again");
        assert_eq!(rows(&b), numbers(0..3), "committed by the restore");
        write(&mut w, 3..5);
        w.on_end_of_input(&mut Nowhere).expect("ends");
        assert_eq!(rows(&c), numbers(3..5));
    }
}
