//! What the scenarios of a pattern changed while running share: a source of sensor readings
//! that holds its rows back at gates until the test opens them (so that a change lands at a
//! known row, without timing) and can fail once at a given row; a sink that keeps only what a
//! checkpoint committed (as a transactional file sink does), so that a run that failed and
//! resumed must give exactly the output of one that did not; and the catalog with both and
//! anduin's operators.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anduin_graph::{Arity, Binding, Catalog, OperatorSignature, ParamKind, ParamSpec};
use anduin_operator_api::{
    Bound, BuildContext, Collector, Operator, OperatorError, RestoreIn, SnapshotOut, Source,
    SourcePoll, WatermarkSpec,
};
use anduin_registry::BuiltinCatalog;
use anduin_spec::OperatorDef;
use anduin_types::{Diagnostics, Epoch};
use arrow::array::{Array, Int64Array};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use crossbeam_channel::{Receiver, Sender};

/// How many sensors (the pattern's partitions) the readings come from.
pub const SENSORS: i64 = 7;

/// Reading `n`: event time `n` seconds (in milliseconds), sensor `n % SENSORS`, and a value
/// in 0..100 from a fixed hash of `n`.
pub fn reading(n: i64) -> (i64, i64, i64) {
    let mut z = (n as u64).wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (n * 1000, n % SENSORS, (z % 100) as i64)
}

/// The readings' columns.
pub fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("ts", DataType::Int64, true),
        Field::new("sensor", DataType::Int64, true),
        Field::new("value", DataType::Int64, true),
    ]))
}

/// Where the source instances stop until the test lets them on: at each of `at` (in order)
/// every instance says it got there on `reached`, then waits for a message on its own
/// receiver of `open` (instance `i` on `open[i]`: a shared one could let an instance that
/// got through first take another's message at the next gate).
#[derive(Clone)]
pub struct Gates {
    pub at: Vec<i64>,
    pub reached: Sender<()>,
    pub open: Vec<Receiver<()>>,
}

/// The test's side of [`Gates`].
pub struct Gatekeeper {
    reached: Receiver<()>,
    open: Vec<Sender<()>>,
}

impl Gatekeeper {
    /// Gates at `at` for `instances` source instances, and their keeper.
    pub fn new(at: Vec<i64>, instances: usize) -> (Gates, Gatekeeper) {
        let (reached_tx, reached) = crossbeam_channel::unbounded();
        let (open, rx): (Vec<_>, Vec<_>) = (0..instances)
            .map(|_| crossbeam_channel::unbounded())
            .unzip();
        let gates = Gates {
            at,
            reached: reached_tx,
            open: rx,
        };
        (gates, Gatekeeper { reached, open })
    }

    /// Waits until every instance waits at the next gate.
    pub fn wait_for_all(&self) {
        for _ in 0..self.open.len() {
            self.reached
                .recv()
                .expect("every instance reaches the gate");
        }
    }

    /// Lets every instance through the gate it waits at.
    pub fn open_all(&self) {
        for o in &self.open {
            o.send(()).expect("the sources listen");
        }
    }
}

/// Instance `i` of `k`: readings `n` in `from..to` with `n % k == i`, in order, stopping at
/// the gates; fails once when it reaches `fail_at` (then set to `i64::MAX`).
struct Readings {
    next: i64,
    step: i64,
    to: i64,
    gates: VecDeque<i64>,
    reached: Option<Sender<()>>,
    open: Option<Receiver<()>>,
    told: bool,
    fail_at: Arc<AtomicI64>,
}

impl Source for Readings {
    fn name(&self) -> &str {
        "readings"
    }

    fn poll(&mut self, max_rows: usize, deadline: Instant) -> Result<SourcePoll, OperatorError> {
        if self.next >= self.to {
            return Ok(SourcePoll::Exhausted);
        }
        if self.next >= self.fail_at.load(Ordering::SeqCst) {
            self.fail_at.store(i64::MAX, Ordering::SeqCst);
            return Err(OperatorError::Execution {
                operator: "readings".into(),
                message: "injected failure".into(),
            });
        }
        if let Some(&gate) = self.gates.front() {
            if self.next >= gate {
                if !self.told {
                    self.told = true;
                    if let Some(r) = &self.reached {
                        let _ = r.send(());
                    }
                }
                // Waits for the gate, but never past the deadline (the runtime injects
                // barriers between polls).
                let open = self.open.as_ref().expect("gates come with their channels");
                match open.recv_deadline(deadline) {
                    Ok(()) => {
                        self.gates.pop_front();
                        self.told = false;
                    }
                    Err(_) => return Ok(SourcePoll::Idle),
                }
            }
        }
        let limit = self.gates.front().copied().unwrap_or(self.to).min(self.to);
        let limit = limit.min(self.fail_at.load(Ordering::SeqCst));
        let (mut ts, mut sensor, mut value) = (Vec::new(), Vec::new(), Vec::new());
        while self.next < limit && ts.len() < max_rows.min(50) {
            let (t, s, v) = reading(self.next);
            ts.push(t);
            sensor.push(s);
            value.push(v);
            self.next += self.step;
        }
        let batch = RecordBatch::try_new(
            schema(),
            vec![
                Arc::new(Int64Array::from(ts)),
                Arc::new(Int64Array::from(sensor)),
                Arc::new(Int64Array::from(value)),
            ],
        )
        .expect("valid");
        Ok(SourcePoll::Batch(batch))
    }

    fn watermarks(&self) -> Option<WatermarkSpec> {
        Some(WatermarkSpec {
            column: 0,
            delay_ms: 5000,
            idle_timeout_ms: None,
        })
    }

    fn can_resume(&self) -> Result<(), String> {
        Ok(())
    }

    fn snapshot(&mut self, out: &mut dyn SnapshotOut) -> Result<(), OperatorError> {
        out.inline(serde_json::json!({ "next": self.next }));
        Ok(())
    }

    fn restore(&mut self, state: RestoreIn) -> Result<(), OperatorError> {
        self.next = state
            .inline
            .and_then(|v| v["next"].as_i64())
            .expect("a position");
        Ok(())
    }
}

/// An output row: its columns' values.
pub type Row = Vec<Option<i64>>;

/// What the sink kept: the rows committed, and those of checkpoints taken but not yet
/// committed, by epoch.
#[derive(Default)]
pub struct Output {
    pub committed: Vec<Row>,
    closed: BTreeMap<u64, Vec<Row>>,
}

impl Output {
    fn commit_through(&mut self, epoch: u64) {
        let later = self.closed.split_off(&(epoch + 1));
        for rows in std::mem::replace(&mut self.closed, later).into_values() {
            self.committed.extend(rows);
        }
    }
}

/// Keeps the rows that reached it until a checkpoint commits them; a restore commits what
/// the checkpoint restored covered and forgets the rest (the failed run's later rows).
struct Committed {
    open: Vec<Row>,
    output: Arc<Mutex<Output>>,
}

impl Operator for Committed {
    fn name(&self) -> &str {
        "out"
    }

    fn process_batch(
        &mut self,
        _input: usize,
        batch: RecordBatch,
        _out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        let columns: Vec<&Int64Array> = batch
            .columns()
            .iter()
            .map(|c| c.as_any().downcast_ref::<Int64Array>().expect("ints"))
            .collect();
        for r in 0..batch.num_rows() {
            self.open.push(
                columns
                    .iter()
                    .map(|c| (!c.is_null(r)).then(|| c.value(r)))
                    .collect(),
            );
        }
        Ok(())
    }

    fn snapshot(&mut self, out: &mut dyn SnapshotOut) -> Result<(), OperatorError> {
        let mut output = self.output.lock().expect("not poisoned");
        let rows = std::mem::take(&mut self.open);
        output.closed.entry(out.epoch().0).or_default().extend(rows);
        out.inline(serde_json::json!({}));
        Ok(())
    }

    fn restore(&mut self, state: RestoreIn) -> Result<(), OperatorError> {
        let mut output = self.output.lock().expect("not poisoned");
        output.commit_through(state.epoch.0);
        output.closed.clear();
        Ok(())
    }

    fn handle_commit(&mut self, epoch: Epoch) -> Result<(), OperatorError> {
        self.output
            .lock()
            .expect("not poisoned")
            .commit_through(epoch.0);
        Ok(())
    }

    fn on_end_of_input(&mut self, _out: &mut dyn Collector) -> Result<(), OperatorError> {
        let mut output = self.output.lock().expect("not poisoned");
        output.commit_through(u64::MAX - 1);
        let rows = std::mem::take(&mut self.open);
        output.committed.extend(rows);
        Ok(())
    }

    fn is_stateless(&self) -> bool {
        false
    }
}

const PARALLEL: &[ParamSpec] = &[ParamSpec {
    name: "parallelism",
    required: false,
    kind: ParamKind::Int,
    default: Some("1"),
    doc: "",
}];

static SIGS: &[OperatorSignature] = &[
    OperatorSignature {
        kind: "readings",
        doc: "",
        inputs: Arity::Exactly(0),
        outputs: Arity::Exactly(1),
        stateful: true,
        params: PARALLEL,
    },
    OperatorSignature {
        kind: "committed",
        doc: "",
        inputs: Arity::Exactly(1),
        outputs: Arity::Exactly(0),
        stateful: true,
        params: &[],
    },
];

/// The readings `from..to` (through `gates`, failing at `fail_at`), the committed output,
/// and anduin's operators with their adjustable params.
pub struct ReadingsCatalog {
    pub from: i64,
    pub to: i64,
    pub gates: Option<Gates>,
    pub fail_at: Arc<AtomicI64>,
    pub output: Arc<Mutex<Output>>,
}

impl ReadingsCatalog {
    /// Readings `from..to`, no gate, no failure, a new output.
    pub fn new(from: i64, to: i64) -> Self {
        Self {
            from,
            to,
            gates: None,
            fail_at: Arc::new(AtomicI64::new(i64::MAX)),
            output: Arc::default(),
        }
    }
}

impl Catalog for ReadingsCatalog {
    type Bound = Bound;

    fn signature(&self, kind: &str) -> Option<&OperatorSignature> {
        SIGS.iter()
            .find(|s| s.kind == kind)
            .or_else(|| BuiltinCatalog.signature(kind))
    }

    fn kinds(&self) -> Vec<&'static str> {
        SIGS.iter().map(|s| s.kind).collect()
    }

    fn adjustable(&self, kind: &str) -> Vec<&'static str> {
        BuiltinCatalog.adjustable(kind)
    }

    fn bind(
        &self,
        op: &OperatorDef,
        inputs: &[(&str, SchemaRef)],
        declared: &[Option<SchemaRef>],
    ) -> Result<Binding<Bound>, Diagnostics> {
        let (bound, outputs) = match op.kind.as_str() {
            "readings" => {
                let (from, to, gates) = (self.from, self.to, self.gates.clone());
                let fail_at = Arc::clone(&self.fail_at);
                let bound = Bound::Source(Arc::new(move |ctx: &BuildContext| {
                    let (i, k) = (ctx.instance as i64, ctx.parallelism as i64);
                    Ok(Box::new(Readings {
                        // The first reading of this instance at or after `from`.
                        next: from + (i - from).rem_euclid(k),
                        step: k,
                        to,
                        gates: gates
                            .as_ref()
                            .map(|g| g.at.iter().copied().collect())
                            .unwrap_or_default(),
                        reached: gates.as_ref().map(|g| g.reached.clone()),
                        open: gates
                            .as_ref()
                            .and_then(|g| g.open.get(ctx.instance).cloned()),
                        told: false,
                        fail_at: Arc::clone(&fail_at),
                    }))
                }));
                (bound, vec![schema()])
            }
            "committed" => {
                let output = Arc::clone(&self.output);
                let bound = Bound::Operator(Arc::new(move |_: &BuildContext| {
                    Ok(Box::new(Committed {
                        open: Vec::new(),
                        output: Arc::clone(&output),
                    }))
                }));
                (bound, vec![])
            }
            _ => return BuiltinCatalog.bind(op, inputs, declared),
        };
        Ok(Binding {
            bound,
            outputs,
            warnings: Diagnostics::default(),
            partition_by: Vec::new(),
        })
    }
}

/// The query: readings from `parallelism` instances into a pattern (`pattern`, with
/// conditions `define`, per sensor, `parallelism` instances, kept in `backend`) whose
/// matches the committed sink keeps.
pub fn query(parallelism: usize, pattern: &str, define: &str, backend: &str) -> String {
    format!(
        r#"
operator name = "readings", type = "readings" {{
  param parallelism = {parallelism}
  output name = "readings"
}}
operator name = "p", type = "pattern" {{
  input name = "readings"
  param partition_by = "sensor"
  param order_by = "ts"
  param pattern = "{pattern}"
  param define = "{define}"
  param measures = "A.ts AS a_ts, LAST(C.ts) AS c_ts, COUNT(B.*) AS bs"
  param within = "60s"
  param parallelism = {parallelism}
  param state_backend = "{backend}"
  param cache_partitions = 2
  output name = "matches"
}}
operator name = "out", type = "committed" {{ input name = "matches" }}
"#
    )
}

/// The rows of `rows`, sorted (instances interleave their output in no set order).
pub fn sorted(mut rows: Vec<Row>) -> Vec<Row> {
    rows.sort();
    rows
}

/// Fails, saying how they differ, unless `actual` and `expected` (both sorted) are the same.
pub fn assert_same(actual: &[Row], expected: &[Row], what: &str) {
    if actual == expected {
        return;
    }
    let missing: Vec<&Row> = expected.iter().filter(|r| !actual.contains(r)).collect();
    let extra: Vec<&Row> = actual.iter().filter(|r| !expected.contains(r)).collect();
    panic!(
        "{what}: {} rows, {} expected; missing (first 5 of {}): {:?}; not expected (first 5 of {}): {:?}",
        actual.len(),
        expected.len(),
        missing.len(),
        &missing[..missing.len().min(5)],
        extra.len(),
        &extra[..extra.len().min(5)],
    );
}
