//! Helpers shared by the operator tests: build an operator from a `.flow` text, and take and
//! restore in-memory checkpoints (a full snapshot, then changelogs).

#![allow(dead_code)]

pub mod moves;
pub mod over;

use std::io::Write;
use std::sync::Arc;

use anduin_operator_api::{
    Bound, BuildContext, Collector, DeadLetter, DeadLetterTarget, Operator, OperatorError,
    RestoreIn, SnapshotOut, Source,
};
use anduin_registry::BuiltinCatalog;
use anduin_types::{Epoch, SnapshotKind};
use arrow::record_batch::RecordBatch;

fn context() -> BuildContext {
    context_rejecting_to(Arc::new(DeadLetter::new(DeadLetterTarget::Stderr)))
}

fn context_rejecting_to(dead_letter: Arc<DeadLetter>) -> BuildContext {
    BuildContext {
        dead_letter,
        checkpointing: false,
        restore_epoch: None,
        ..BuildContext::default()
    }
}

fn bound(src: &str, name: &str) -> Bound {
    let spec = anduin_spec::parse_flow(src).unwrap_or_else(|e| panic!("{src}\n{e}"));
    let (graph, _) =
        anduin_graph::check(&spec, &BuiltinCatalog).unwrap_or_else(|e| panic!("{src}\n{e}"));
    graph
        .nodes
        .iter()
        .find(|n| n.name() == name)
        .unwrap_or_else(|| panic!("no operator `{name}` in\n{src}"))
        .bound
        .clone()
}

/// An instance of the operator named `op` in the query `src`.
pub fn operator(src: &str) -> Box<dyn Operator> {
    operator_and_dead_letters(src).0
}

/// An instance of the operator named `op` in the query `src`, and the dead letters it
/// rejects rows to (printed on stderr, counted).
pub fn operator_and_dead_letters(src: &str) -> (Box<dyn Operator>, Arc<DeadLetter>) {
    let Bound::Operator(factory) = bound(src, "op") else {
        panic!("`op` is not an operator with inputs")
    };
    let ctx = context();
    let op = factory(&ctx).expect("builds");
    (op, ctx.dead_letter)
}

/// An instance of the operator named `op` in the query `src` that sends the rows it rejects
/// to `dead_letter`.
pub fn operator_rejecting_to(src: &str, dead_letter: &Arc<DeadLetter>) -> Box<dyn Operator> {
    let Bound::Operator(factory) = bound(src, "op") else {
        panic!("`op` is not an operator with inputs")
    };
    factory(&context_rejecting_to(Arc::clone(dead_letter))).expect("builds")
}

/// An instance of the operator named `op` in the query `src`, reading the time from `clock`.
pub fn operator_on_clock(src: &str, clock: anduin_types::SharedClock) -> Box<dyn Operator> {
    let Bound::Operator(factory) = bound(src, "op") else {
        panic!("`op` is not an operator with inputs")
    };
    factory(&BuildContext { clock, ..context() }).expect("builds")
}

/// An instance of the source named `name` in the query `src`.
pub fn source(src: &str, name: &str) -> Box<dyn Source> {
    let Bound::Source(factory) = bound(src, name) else {
        panic!("`{name}` is not a source")
    };
    factory(&context()).expect("builds")
}

/// An in-memory checkpoint of one operator: a full snapshot or the changes since the last.
#[derive(Default)]
pub struct Memory {
    pub inline: Option<serde_json::Value>,
    pub bytes: Vec<u8>,
    pub changes: bool,
}

impl SnapshotOut for Memory {
    fn epoch(&self) -> Epoch {
        Epoch(1)
    }
    fn full_due(&self) -> bool {
        !self.changes
    }
    fn inline(&mut self, value: serde_json::Value) {
        self.inline = Some(value);
    }
    fn stream(&mut self, _kind: SnapshotKind) -> Result<&mut dyn Write, OperatorError> {
        Ok(&mut self.bytes)
    }
}

/// A checkpoint of `op`: full, or the changes since its previous one.
pub fn checkpoint(op: &mut Box<dyn Operator>, changes: bool) -> Memory {
    let mut mem = Memory {
        changes,
        ..Memory::default()
    };
    op.snapshot(&mut mem).expect("snapshots");
    mem
}

/// A fresh `make()` restored from a full checkpoint and the changelogs after it.
pub fn restored(
    make: impl Fn() -> Box<dyn Operator>,
    checkpoints: Vec<Memory>,
) -> Box<dyn Operator> {
    let mut op = make();
    let inline = checkpoints.last().and_then(|m| m.inline.clone());
    let files: Vec<Box<dyn std::io::Read + Send>> = checkpoints
        .into_iter()
        .map(|m| Box::new(std::io::Cursor::new(m.bytes)) as Box<dyn std::io::Read + Send>)
        .collect();
    op.restore(RestoreIn {
        epoch: Epoch(1),
        inline,
        files,
    })
    .expect("restores");
    op
}

/// Before arrival `i` of a run restarted at `at`: takes a full checkpoint at `at / 2` (into
/// `full`), and at `at` a changelog after it (or a full one) and returns `make()` restored
/// from both; `None` elsewhere.
pub fn restart_point(
    i: usize,
    at: usize,
    op: &mut Box<dyn Operator>,
    full: &mut Option<Memory>,
    make: impl Fn() -> Box<dyn Operator>,
) -> Option<Box<dyn Operator>> {
    if i == at / 2 && i < at {
        *full = Some(checkpoint(op, false));
    }
    (i == at).then(|| {
        let mut checkpoints: Vec<Memory> = full.take().into_iter().collect();
        checkpoints.push(checkpoint(op, !checkpoints.is_empty()));
        restored(make, checkpoints)
    })
}

/// The rows a `pattern` operator outputs over `rows` of the stream `T (ts timestamp, k int,
/// value int, tag string)`, fed in one batch and ended, each as its cells' text joined with
/// ", " (NULL for a null). `params` are the operator's params besides its input and output,
/// as `.flow` writes them (`param pattern = "A B+"` …).
pub fn pattern_rows(params: &str, rows: &[(i64, i64, i64, &str)]) -> Vec<String> {
    try_pattern_rows(params, rows).unwrap_or_else(|e| panic!("{params}\n{e}"))
}

/// [`pattern_rows`], or the error the operator stops with.
pub fn try_pattern_rows(
    params: &str,
    rows: &[(i64, i64, i64, &str)],
) -> Result<Vec<String>, OperatorError> {
    let src = format!(
        r#"type name = "T" {{ column name = "ts", type = "timestamp" column name = "k", type = "int" column name = "value", type = "int" column name = "tag", type = "string" }}
operator name = "g", type = "generator" {{ output name = "in", type = "T" }}
operator name = "op", type = "pattern" {{
  input name = "in"
  {params}
  output name = "out" }}
operator name = "d", type = "discard" {{ input name = "out" }}"#
    );
    let mut op = operator(&src);
    let batch = pattern_batch(rows);
    let mut out = Formatted::new(", ");
    op.process_batch(0, batch, &mut out)?;
    op.handle_watermark(anduin_types::Watermark::MAX, &mut out)?;
    op.on_end_of_input(&mut out)?;
    Ok(out.rows)
}

/// The rows `(ts, k, value, tag)` of the stream `T` that [`pattern_rows`] feeds, as a batch.
pub fn pattern_batch(rows: &[(i64, i64, i64, &str)]) -> RecordBatch {
    use arrow::array::{Int64Array, StringArray, TimestampMillisecondArray};
    use arrow::datatypes::{DataType, Field, Schema, TimeUnit};
    let schema = Arc::new(Schema::new(vec![
        Field::new("ts", DataType::Timestamp(TimeUnit::Millisecond, None), true),
        Field::new("k", DataType::Int64, true),
        Field::new("value", DataType::Int64, true),
        Field::new("tag", DataType::Utf8, true),
    ]));
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(TimestampMillisecondArray::from(
                rows.iter().map(|r| r.0).collect::<Vec<_>>(),
            )),
            Arc::new(Int64Array::from(
                rows.iter().map(|r| r.1).collect::<Vec<_>>(),
            )),
            Arc::new(Int64Array::from(
                rows.iter().map(|r| r.2).collect::<Vec<_>>(),
            )),
            Arc::new(StringArray::from(
                rows.iter().map(|r| r.3).collect::<Vec<_>>(),
            )),
        ],
    )
    .expect("valid")
}

/// What an operator outputs, each row as its cells' text (NULL for a null) joined with `sep`.
pub struct Formatted {
    sep: &'static str,
    pub rows: Vec<String>,
}

impl Formatted {
    pub fn new(sep: &'static str) -> Self {
        Self {
            sep,
            rows: Vec::new(),
        }
    }
}

impl Collector for Formatted {
    fn collect(&mut self, _port: usize, b: RecordBatch) -> Result<(), OperatorError> {
        use arrow::util::display::{ArrayFormatter, FormatOptions};
        let options = FormatOptions::default().with_null("NULL");
        let formatters: Vec<ArrayFormatter<'_>> = b
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &options).expect("formats"))
            .collect();
        for i in 0..b.num_rows() {
            let cells: Vec<String> = formatters.iter().map(|f| f.value(i).to_string()).collect();
            self.rows.push(cells.join(self.sep));
        }
        Ok(())
    }
}

/// [`pattern_rows`] without the first two cells (the key and the time), joined with spaces.
pub fn pattern_rows_after_key(params: &str, rows: &[(i64, i64, i64, &str)]) -> Vec<String> {
    pattern_rows(params, rows)
        .into_iter()
        .map(|r| r.split(", ").skip(2).collect::<Vec<_>>().join(" "))
        .collect()
}

/// A query of a `Reading` generator (`gen`, stream `readings`: ts, sensor, value; 10 rows)
/// followed by `rest`.
pub fn readings_then(rest: &str) -> String {
    format!(
        r#"
type name = "Reading" {{
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}}
operator name = "gen", type = "generator" {{
  param profile = "events"
  param count = 10
  output name = "readings", type = "Reading"
}}
{rest}
"#
    )
}

/// The errors `anduin check` gives for the query `src`, rendered as for a file `q.flow`;
/// empty when it passes.
pub fn check_errors(src: &str) -> String {
    let spec = anduin_spec::parse_flow(src).expect("parses");
    match anduin_graph::check(&spec, &anduin_registry::BuiltinCatalog) {
        Ok(_) => String::new(),
        Err(d) => d.render("q.flow"),
    }
}
