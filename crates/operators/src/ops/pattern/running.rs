//! The running pattern operator: rows wait until the watermark passes them, then go in
//! event-time order to their partition's matcher; matches become output rows.

use std::collections::HashMap;
use std::sync::Arc;

use anduin_types::{SnapshotKind, Watermark};
use arrow::array::{Array, ArrayRef, BinaryArray, Int64Array, RecordBatch, UInt64Array};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::row::{RowConverter, SortField};
use arrow_ipc::reader::StreamReader;
use arrow_ipc::writer::StreamWriter;

use super::cells::{cells_to_column, columns_to_cells};
use super::eval::eval;
use super::matcher::{MatchView, Outcome, Partition, Row, TooManyThreads};
use super::value::Value;
use super::Setup;
use crate::{Collector, Operator, OperatorError, RestoreIn, SnapshotOut};

/// Output rows are sent in batches of at most this many.
const OUT_BATCH: usize = 8192;

/// A row waiting for the watermark.
struct Pending {
    ts: i64,
    seq: u64,
    key: Box<[u8]>,
    row: Row,
}

/// A row with its partition key, or `None` for a row without an event time.
type Keyed = Option<(Box<[u8]>, Row)>;

/// A running `pattern` operator.
pub(crate) struct PatternOp {
    setup: Arc<Setup>,
    /// Partition keys as bytes (`None`: one partition).
    keys: Option<RowConverter>,
    parts: HashMap<Box<[u8]>, Partition>,
    pending: Vec<Pending>,
    seq: u64,
    watermark: i64,
    late: u64,
    outcomes: Vec<Outcome>,
    main: Vec<Vec<Value>>,
    timeouts: Vec<Vec<Value>>,
}

fn err(operator: &str, e: impl std::fmt::Display) -> OperatorError {
    OperatorError::Execution {
        operator: operator.to_string(),
        message: e.to_string(),
    }
}

fn too_many(operator: &str, e: TooManyThreads) -> OperatorError {
    err(
        operator,
        format!(
            "the pattern is too ambiguous: a match starting at row {} of its partition has {} partial matches in flight; make the variables' conditions exclude each other or add `within`",
            e.start, e.threads
        ),
    )
}

impl PatternOp {
    pub(crate) fn new(setup: Arc<Setup>) -> Result<Self, OperatorError> {
        let keys = if setup.partition.is_empty() {
            None
        } else {
            let fields = setup
                .partition
                .iter()
                .map(|c| SortField::new(setup.input.field(*c).data_type().clone()))
                .collect();
            Some(RowConverter::new(fields).map_err(|e| err(&setup.name, e))?)
        };
        Ok(Self {
            setup,
            keys,
            parts: HashMap::new(),
            pending: Vec::new(),
            seq: 0,
            watermark: i64::MIN,
            late: 0,
            outcomes: Vec::new(),
            main: Vec::new(),
            timeouts: Vec::new(),
        })
    }

    /// The rows of `batch` as keys and rows (`None` for a row without an event time).
    fn rows_of(&self, batch: &RecordBatch) -> Result<Vec<Keyed>, OperatorError> {
        let name = &self.setup.name;
        let n = batch.num_rows();
        let mut columns =
            columns_to_cells(batch.columns(), &self.setup.types).map_err(|e| err(name, e))?;
        let keys = match &self.keys {
            None => None,
            Some(conv) => {
                let cols: Vec<ArrayRef> = self
                    .setup
                    .partition
                    .iter()
                    .map(|c| Arc::clone(batch.column(*c)))
                    .collect();
                Some(conv.convert_columns(&cols).map_err(|e| err(name, e))?)
            }
        };
        let mut iters: Vec<_> = columns
            .iter_mut()
            .map(|c| std::mem::take(c).into_iter())
            .collect();
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let cells: Box<[Value]> = iters
                .iter_mut()
                .map(|it| it.next().unwrap_or(Value::Null))
                .collect();
            let Value::Int(ts) = cells[self.setup.order] else {
                out.push(None);
                continue;
            };
            let key: Box<[u8]> = match &keys {
                None => Box::new([]),
                Some(k) => k.row(i).as_ref().into(),
            };
            out.push(Some((key, Row { ts, cells })));
        }
        Ok(out)
    }

    fn accept(&mut self, batch: &RecordBatch, check_late: bool) -> Result<(), OperatorError> {
        for r in self.rows_of(batch)? {
            match r {
                Some((key, row)) if !check_late || row.ts >= self.watermark => {
                    self.seq += 1;
                    self.pending.push(Pending {
                        ts: row.ts,
                        seq: self.seq,
                        key,
                        row,
                    });
                }
                _ => self.late += 1,
            }
        }
        Ok(())
    }

    /// Feeds the rows before `watermark` (all rows: `None`) to their partitions in order.
    fn release(&mut self, watermark: Option<i64>) -> Result<(), OperatorError> {
        let mut ready: Vec<Pending>;
        match watermark {
            None => ready = std::mem::take(&mut self.pending),
            Some(w) => {
                if !self.pending.iter().any(|p| p.ts < w) {
                    return Ok(());
                }
                let (r, keep) = std::mem::take(&mut self.pending)
                    .into_iter()
                    .partition(|p| p.ts < w);
                ready = r;
                self.pending = keep;
            }
        }
        ready.sort_by_key(|p| (p.ts, p.seq));
        let setup = Arc::clone(&self.setup);
        for p in ready {
            let part = match self.parts.get_mut(&p.key) {
                Some(part) => part,
                None => self.parts.entry(p.key).or_default(),
            };
            part.push(&setup.pattern, p.row, &mut self.outcomes)
                .map_err(|e| too_many(&setup.name, e))?;
            if !self.outcomes.is_empty() {
                render(
                    &setup,
                    part,
                    &mut self.outcomes,
                    &mut self.main,
                    &mut self.timeouts,
                );
            }
            part.trim(&setup.pattern);
        }
        Ok(())
    }

    /// Ends the attempts whose time bound has passed.
    fn advance(&mut self, watermark: i64) {
        let setup = Arc::clone(&self.setup);
        if setup.pattern.within.is_none() {
            return;
        }
        for part in self.parts.values_mut() {
            part.advance(&setup.pattern, watermark, &mut self.outcomes);
            if !self.outcomes.is_empty() {
                render(
                    &setup,
                    part,
                    &mut self.outcomes,
                    &mut self.main,
                    &mut self.timeouts,
                );
                part.trim(&setup.pattern);
            }
        }
    }

    fn flush(&mut self, out: &mut dyn Collector) -> Result<(), OperatorError> {
        let rows = std::mem::take(&mut self.main);
        self.emit(0, rows, out)?;
        let rows = std::mem::take(&mut self.timeouts);
        if let Some(port) = self.setup.timeout_port {
            self.emit(port, rows, out)?;
        }
        Ok(())
    }

    fn emit(
        &self,
        port: usize,
        rows: Vec<Vec<Value>>,
        out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        for chunk in rows.chunks(OUT_BATCH) {
            let columns: Vec<ArrayRef> = self
                .setup
                .out_types
                .iter()
                .enumerate()
                .map(|(c, t)| cells_to_column(chunk.iter().map(|r| &r[c]), *t))
                .collect();
            let batch = RecordBatch::try_new(Arc::clone(&self.setup.schema), columns)
                .map_err(|e| err(&self.setup.name, e))?;
            out.collect(port, batch)?;
        }
        Ok(())
    }

    fn rows_batch(&self, rows: &[&Row]) -> Result<RecordBatch, OperatorError> {
        let columns: Vec<ArrayRef> = self
            .setup
            .types
            .iter()
            .enumerate()
            .map(|(c, t)| cells_to_column(rows.iter().map(|r| &r.cells[c]), *t))
            .collect();
        let schema = Arc::new(Schema::new(
            self.setup
                .input
                .fields()
                .iter()
                .zip(&self.setup.types)
                .map(|(f, t)| Field::new(f.name(), t.arrow_type(), true))
                .collect::<Vec<_>>(),
        ));
        RecordBatch::try_new(schema, columns).map_err(|e| err(&self.setup.name, e))
    }
}

/// Output rows of `outcomes` (drained), from the rows of `part`.
fn render(
    setup: &Setup,
    part: &Partition,
    outcomes: &mut Vec<Outcome>,
    main: &mut Vec<Vec<Value>>,
    timeouts: &mut Vec<Vec<Value>>,
) {
    for o in outcomes.drain(..) {
        let (start, steps, number, out) = match o {
            Outcome::Match {
                start,
                steps,
                number,
            } => (start, steps, number, &mut *main),
            Outcome::TimedOut { start, steps } => {
                if setup.timeout_port.is_none() {
                    continue;
                }
                (start, steps, 0, &mut *timeouts)
            }
        };
        let measures = |upto: usize| {
            let view = MatchView {
                part,
                steps: &steps[..upto],
                number,
            };
            setup
                .measures
                .iter()
                .map(|(_, e)| eval(e, &view, &setup.pattern.vars))
                .collect::<Vec<_>>()
        };
        let cells = |row: u64| -> Vec<Value> {
            part.row(row)
                .map(|r| r.cells.to_vec())
                .unwrap_or_else(|| vec![Value::Null; setup.types.len()])
        };
        if setup.all_rows {
            if steps.is_empty() {
                let mut row = cells(start);
                row.extend(measures(0));
                out.push(row);
            }
            for (i, (r, _)) in steps.iter().enumerate() {
                let mut row = cells(*r);
                row.extend(measures(i + 1));
                out.push(row);
            }
        } else {
            let first = cells(steps.first().map_or(start, |(r, _)| *r));
            let mut row: Vec<Value> = setup.partition.iter().map(|c| first[*c].clone()).collect();
            row.extend(measures(steps.len()));
            out.push(row);
        }
    }
}

impl Operator for PatternOp {
    fn name(&self) -> &str {
        &self.setup.name
    }

    fn process_batch(
        &mut self,
        _input: usize,
        batch: RecordBatch,
        _out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        self.accept(&batch, true)
    }

    fn handle_watermark(
        &mut self,
        watermark: Watermark,
        out: &mut dyn Collector,
    ) -> Result<Option<Watermark>, OperatorError> {
        if watermark.0 > self.watermark {
            self.watermark = watermark.0;
            self.release(Some(watermark.0))?;
            self.advance(watermark.0);
            self.flush(out)?;
        }
        // A match is emitted up to `within` after its first row: hold the watermark back by
        // that much so that downstream event-time operators do not see its times as late.
        match self.setup.pattern.within {
            Some(w) if watermark != Watermark::MAX => {
                Ok(Some(Watermark(watermark.0.saturating_sub(w))))
            }
            _ => Ok(Some(watermark)),
        }
    }

    fn on_end_of_input(&mut self, out: &mut dyn Collector) -> Result<(), OperatorError> {
        self.release(None)?;
        self.advance(i64::MAX);
        let setup = Arc::clone(&self.setup);
        for part in self.parts.values_mut() {
            part.finish(&setup.pattern, &mut self.outcomes);
            render(
                &setup,
                part,
                &mut self.outcomes,
                &mut self.main,
                &mut self.timeouts,
            );
            part.trim(&setup.pattern);
        }
        self.flush(out)?;
        if self.late > 0 {
            tracing::info!(operator = %self.setup.name, late_rows = self.late, "late rows dropped (behind the watermark or without an event time)");
        }
        Ok(())
    }

    fn snapshot(&mut self, out: &mut dyn SnapshotOut) -> Result<(), OperatorError> {
        let name = self.setup.name.clone();
        let mut keys: Vec<&[u8]> = Vec::new();
        let (mut base, mut replay, mut resume, mut matches, mut counts) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut rows: Vec<&Row> = Vec::new();
        for (key, part) in &self.parts {
            let (kept, b, r, s, m) = part.parts();
            keys.push(key);
            base.push(b);
            replay.push(r);
            resume.push(s);
            matches.push(m);
            counts.push(kept.len() as u64);
            rows.extend(kept.iter());
        }
        let meta_schema = Arc::new(Schema::new(vec![
            Field::new("key", DataType::Binary, false),
            Field::new("base", DataType::UInt64, false),
            Field::new("replay", DataType::UInt64, false),
            Field::new("resume", DataType::UInt64, false),
            Field::new("matches", DataType::Int64, false),
            Field::new("rows", DataType::UInt64, false),
        ]));
        let meta = RecordBatch::try_new(
            meta_schema,
            vec![
                Arc::new(BinaryArray::from(keys)),
                Arc::new(UInt64Array::from(base)),
                Arc::new(UInt64Array::from(replay)),
                Arc::new(UInt64Array::from(resume)),
                Arc::new(Int64Array::from(matches)),
                Arc::new(UInt64Array::from(counts)),
            ],
        )
        .map_err(|e| err(&name, e))?;
        let kept = self.rows_batch(&rows)?;
        let pending_rows: Vec<&Row> = self.pending.iter().map(|p| &p.row).collect();
        let pending = self.rows_batch(&pending_rows)?;
        out.inline(serde_json::json!({
            "watermark": self.watermark,
            "late": self.late,
            "seq": self.seq,
            "rows_kept": rows.len(),
        }));
        let stream = out.stream(SnapshotKind::Full)?;
        for batch in [meta, kept, pending] {
            let mut w =
                StreamWriter::try_new(&mut *stream, &batch.schema()).map_err(|e| err(&name, e))?;
            w.write(&batch).map_err(|e| err(&name, e))?;
            w.finish().map_err(|e| err(&name, e))?;
        }
        Ok(())
    }

    fn restore(&mut self, mut state: RestoreIn) -> Result<(), OperatorError> {
        let name = self.setup.name.clone();
        let inline = state.inline.take().unwrap_or_default();
        self.watermark = inline["watermark"].as_i64().unwrap_or(i64::MIN);
        self.late = inline["late"].as_u64().unwrap_or(0);
        let Some(file) = state.files.last_mut() else {
            return Err(err(
                &name,
                "the checkpoint has no state file for this pattern",
            ));
        };
        let mut batches = Vec::new();
        for _ in 0..3 {
            let reader = StreamReader::try_new(&mut *file, None).map_err(|e| err(&name, e))?;
            let mut all = Vec::new();
            for b in reader {
                all.push(b.map_err(|e| err(&name, e))?);
            }
            let schema = all
                .first()
                .map(|b| b.schema())
                .ok_or_else(|| err(&name, "an empty state stream"))?;
            batches.push(arrow::compute::concat_batches(&schema, &all).map_err(|e| err(&name, e))?);
        }
        let [meta, kept, pending] = <[RecordBatch; 3]>::try_from(batches)
            .map_err(|_| err(&name, "expected three state streams"))?;
        let col = |b: &RecordBatch, i: usize| Arc::clone(b.column(i));
        let bad = || err(&name, "the pattern state has unexpected columns");
        let key = col(&meta, 0);
        let key = key.as_any().downcast_ref::<BinaryArray>().ok_or_else(bad)?;
        let u64s = |i: usize| -> Result<Vec<u64>, OperatorError> {
            Ok(col(&meta, i)
                .as_any()
                .downcast_ref::<UInt64Array>()
                .ok_or_else(bad)?
                .values()
                .to_vec())
        };
        let (base, replay, resume, counts) = (u64s(1)?, u64s(2)?, u64s(3)?, u64s(5)?);
        let matches = col(&meta, 4);
        let matches = matches
            .as_any()
            .downcast_ref::<Int64Array>()
            .ok_or_else(bad)?;
        let setup = Arc::clone(&self.setup);
        let mut all_rows = self
            .rows_of(&kept)?
            .into_iter()
            .map(|r| r.map(|(_, row)| row).ok_or_else(bad))
            .collect::<Result<Vec<Row>, _>>()?
            .into_iter();
        self.parts.clear();
        for i in 0..meta.num_rows() {
            let rows: Vec<Row> = all_rows.by_ref().take(counts[i] as usize).collect();
            let mut part = Partition::rebuild(
                &setup.pattern,
                rows,
                base[i],
                replay[i],
                resume[i],
                matches.value(i),
            )
            .map_err(|e| too_many(&name, e))?;
            part.advance(&setup.pattern, self.watermark, &mut self.outcomes);
            debug_assert!(self.outcomes.is_empty(), "a restore reports nothing again");
            self.outcomes.clear();
            self.parts.insert(key.value(i).into(), part);
        }
        self.pending.clear();
        self.seq = 0;
        self.accept(&pending, false)?;
        Ok(())
    }

    fn is_stateless(&self) -> bool {
        false
    }
}
