//! `writer`: rows to a CSV or JSON Lines file, or stdout.
//!
//! Without checkpoints, writing to a file is buffered and flushed at the end of input. With
//! checkpoints, `path` is a directory of part files, committed when the checkpoint that
//! covers them completes (see [`super::parts`]): exactly once. Stdout is at-least-once: rows
//! printed after the last checkpoint are printed again after a restore.

use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use anduin_graph::{Arity, Binding, OperatorSignature, ParamKind, ParamSpec};
use anduin_spec::OperatorDef;
use anduin_types::{Diagnostics, Epoch};
use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;

use crate::codec::{CsvEncoder, JsonLinesEncoder, TimestampFormat};
use crate::parts::Parts;
use anduin_operator_api::Bound;
use anduin_operator_api::Params;
use anduin_operator_api::{Collector, Operator, OperatorError, SnapshotOut};

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
            doc: "the output file (created or truncated), or \"-\" for stdout",
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
    ],
};

/// How much encoded output is buffered before a write.
const FLUSH_AT: usize = 1 << 20;

#[derive(Clone, Copy)]
enum Format {
    Csv { delimiter: u8, header: bool },
    Json,
}

/// Checks this operator's params and inputs as the query declares them, and binds it to a
/// factory of instances (called by the registry's catalog).
pub fn bind(op: &OperatorDef, inputs: &[(&str, SchemaRef)]) -> Result<Binding<Bound>, Diagnostics> {
    let p = Params::new(op);
    let (_, schema) = inputs.first().expect("arity checked: one input");
    let schema = Arc::clone(schema);
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
    Ok(Binding {
        bound: Bound::Operator(Arc::new(move |ctx| {
            let out = if path == "-" {
                Output::Stdout(std::io::stdout())
            } else if ctx.checkpointing {
                let ext = match format {
                    Format::Csv { .. } => "csv",
                    Format::Json => "jsonl",
                };
                let parts = Parts::open(std::path::Path::new(&path), ext, ctx.restore_epoch)
                    .map_err(|e| OperatorError::Config {
                        operator: name.clone(),
                        message: format!("cannot prepare the output directory `{path}`: {e}"),
                    })?;
                Output::Parts(parts)
            } else {
                // Checked now, created (or truncated) by the first write: a query that fails
                // to start leaves its outputs as they were.
                anduin_operator_api::fs_check::check_creatable(std::path::Path::new(&path))
                    .map_err(|e| OperatorError::Config {
                        operator: name.clone(),
                        message: format!("cannot create output file `{path}`: {e}"),
                    })?;
                Output::File(None)
            };
            Ok(Box::new(Writer {
                name: name.clone(),
                path: PathBuf::from(&path),
                out,
                format,
                ts,
                encoder: new_encoder(format, ts),
                buf: Vec::with_capacity(FLUSH_AT + FLUSH_AT / 4),
                schema: Arc::clone(&schema),
                encoded_any: false,
            }))
        })),
        outputs: vec![],
        warnings: Diagnostics::default(),
        partition_by: Vec::new(),
    })
}

fn new_encoder(format: Format, ts: TimestampFormat) -> Encoder {
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

enum Encoder {
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
    schema: SchemaRef,
    encoded_any: bool,
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
        self.encode(&batch);
        // Stdout is for people watching: write each batch as it comes.
        if self.buf.len() >= FLUSH_AT || matches!(self.out, Output::Stdout(_)) {
            self.write_out()?;
        }
        Ok(())
    }

    fn on_end_of_input(&mut self, _out: &mut dyn Collector) -> Result<(), OperatorError> {
        if !self.encoded_any && !matches!(self.out, Output::Parts(_)) {
            // A query that produced nothing still writes its CSV header.
            self.encode(&RecordBatch::new_empty(Arc::clone(&self.schema)));
        }
        self.write_out()?;
        let res = match &mut self.out {
            Output::File(Some(f)) => f.flush(),
            Output::File(None) => File::create(&self.path).map(|_| ()),
            // The input ended after the last checkpoint's barrier, which closed the parts:
            // the query succeeded, so what is pending is committed. (Should rows have come
            // after that barrier, their part is named after no checkpoint and a restore
            // removes it: the rows are produced again.)
            Output::Parts(p) => p
                .close_for(Epoch(u64::MAX))
                .and_then(|_| p.commit(Epoch(u64::MAX))),
            Output::Stdout(_) => Ok(()),
        };
        res.map_err(|e| self.io_error(e))
    }

    fn snapshot(&mut self, out: &mut dyn SnapshotOut) -> Result<(), OperatorError> {
        self.write_out()?;
        let epoch = out.epoch();
        if let Output::Parts(p) = &mut self.out {
            let pending = p.close_for(epoch).map_err(|e| OperatorError::Io {
                operator: self.name.clone(),
                path: self.path.clone(),
                source: e,
            })?;
            out.inline(serde_json::json!({ "pending": pending }));
        }
        Ok(())
    }

    fn restore(&mut self, _state: anduin_operator_api::RestoreIn) -> Result<(), OperatorError> {
        // The part files were brought back to the checkpoint when the writer was created.
        Ok(())
    }

    fn handle_commit(&mut self, epoch: Epoch) -> Result<(), OperatorError> {
        let res = match &mut self.out {
            Output::Parts(p) => p.commit(epoch),
            _ => Ok(()),
        };
        res.map_err(|e| self.io_error(e))
    }
}
