//! A keyed operator's state, kept in a state backend (heap and LSM), checkpointed as full
//! snapshots and changelogs, survives a failure: a run that fails mid-way and resumes from its
//! last checkpoint counts exactly what an uninterrupted run counts.
//!
//! The test defines its own operators through a catalog of its own: a source of numbers that
//! can fail once at a given row, a keyed counter over `anduin-state`, and a sink that collects.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anduin_checkpoint::Store;
use anduin_graph::{Arity, Binding, Catalog, OperatorSignature, ParamKind, ParamSpec};
use anduin_operator_api::{
    Bound, BuildContext, Collector, DeadLetter, DeadLetterTarget, Operator, OperatorError,
    RestoreIn, SnapshotOut, Source, SourcePoll,
};
use anduin_runtime::{run, CheckpointSettings, Checkpointing, Faults, RunConfig};
use anduin_spec::OperatorDef;
use anduin_state::{
    key_group_for_key, open_backend, BackendKind, StateBackend, DEFAULT_MAX_KEY_GROUPS,
};
use anduin_types::{Diagnostics, SnapshotKind};
use arrow::array::{Array, Int64Array};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;

const ROWS: u64 = 20_000;
const KEYS: i64 = 37;

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new("k", DataType::Int64, true)]))
}

/// Numbers 0..ROWS as keys `i % KEYS`; fails once when it reaches `fail_at` (0 = never).
struct Numbers {
    next: u64,
    fail_at: Arc<AtomicU64>,
}

impl Source for Numbers {
    fn name(&self) -> &str {
        "numbers"
    }

    fn poll(&mut self, max_rows: usize, _deadline: Instant) -> Result<SourcePoll, OperatorError> {
        if self.next >= ROWS {
            return Ok(SourcePoll::Exhausted);
        }
        let fail_at = self.fail_at.load(Ordering::SeqCst);
        if fail_at > 0 && self.next >= fail_at {
            self.fail_at.store(0, Ordering::SeqCst);
            return Err(OperatorError::Execution {
                operator: "numbers".into(),
                message: "injected failure".into(),
            });
        }
        let n = (max_rows as u64).min(ROWS - self.next).min(700);
        let keys: Int64Array = (self.next..self.next + n)
            .map(|i| Some(i as i64 % KEYS))
            .collect();
        self.next += n;
        let batch = RecordBatch::try_new(schema(), vec![Arc::new(keys)]).expect("valid");
        Ok(SourcePoll::Batch(batch))
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
            .and_then(|v| v["next"].as_u64())
            .expect("a position");
        Ok(())
    }
}

/// Counts rows per key in a state backend; emits nothing until the end, then (key, count).
struct Counter {
    state: Box<dyn StateBackend>,
}

fn err(e: impl std::fmt::Display) -> OperatorError {
    OperatorError::Execution {
        operator: "count".into(),
        message: e.to_string(),
    }
}

impl Operator for Counter {
    fn name(&self) -> &str {
        "count"
    }

    fn process_batch(
        &mut self,
        _input: usize,
        batch: RecordBatch,
        _out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        let keys = batch
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .expect("ints");
        for k in keys.values() {
            let key = k.to_be_bytes();
            let kg = key_group_for_key(&key, DEFAULT_MAX_KEY_GROUPS);
            let n = match self.state.get(kg, &key).map_err(err)? {
                Some(v) => u64::from_be_bytes(v.as_slice().try_into().expect("8 bytes")),
                None => 0,
            };
            self.state
                .put(kg, &key, &(n + 1).to_be_bytes())
                .map_err(err)?;
        }
        Ok(())
    }

    fn snapshot(&mut self, out: &mut dyn SnapshotOut) -> Result<(), OperatorError> {
        let kind = if out.full_due() {
            SnapshotKind::Full
        } else {
            SnapshotKind::Changes
        };
        let stream = out.stream(kind)?;
        self.state.snapshot(kind, stream).map_err(err).map(|_| ())
    }

    fn restore(&mut self, mut state: RestoreIn) -> Result<(), OperatorError> {
        let (first, rest) = state.files.split_first_mut().expect("a full snapshot");
        let mut rest: Vec<&mut dyn std::io::Read> = rest
            .iter_mut()
            .map(|r| r as &mut dyn std::io::Read)
            .collect();
        self.state.restore(first, &mut rest).map_err(err)
    }

    fn on_end_of_input(&mut self, out: &mut dyn Collector) -> Result<(), OperatorError> {
        let mut keys = Vec::new();
        let mut counts = Vec::new();
        for k in 0..KEYS {
            let key = k.to_be_bytes();
            let kg = key_group_for_key(&key, DEFAULT_MAX_KEY_GROUPS);
            if let Some(v) = self.state.get(kg, &key).map_err(err)? {
                keys.push(k);
                counts.push(i64::from_be_bytes(
                    v.as_slice().try_into().expect("8 bytes"),
                ));
            }
        }
        let s = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, true),
            Field::new("n", DataType::Int64, true),
        ]));
        let batch = RecordBatch::try_new(
            s,
            vec![
                Arc::new(Int64Array::from(keys)),
                Arc::new(Int64Array::from(counts)),
            ],
        )
        .expect("valid");
        out.collect(0, batch)
    }

    fn is_stateless(&self) -> bool {
        false
    }
}

/// Collects what reaches it.
struct Collect(Arc<Mutex<BTreeMap<i64, i64>>>);

impl Operator for Collect {
    fn name(&self) -> &str {
        "collect"
    }

    fn process_batch(
        &mut self,
        _input: usize,
        batch: RecordBatch,
        _out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        let k = batch
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .expect("ints");
        let n = batch
            .column(1)
            .as_any()
            .downcast_ref::<Int64Array>()
            .expect("ints");
        let mut m = self.0.lock().expect("not poisoned");
        for i in 0..k.len() {
            m.insert(k.value(i), n.value(i));
        }
        Ok(())
    }
}

struct TestCatalog {
    backend: BackendKind,
    fail_at: Arc<AtomicU64>,
    results: Arc<Mutex<BTreeMap<i64, i64>>>,
}

const SIGS: [OperatorSignature; 3] = [
    OperatorSignature {
        kind: "numbers",
        doc: "",
        inputs: Arity::Exactly(0),
        outputs: Arity::Exactly(1),
        stateful: true,
        params: &[],
    },
    OperatorSignature {
        kind: "count",
        doc: "",
        inputs: Arity::Exactly(1),
        outputs: Arity::Exactly(1),
        stateful: true,
        params: &[],
    },
    OperatorSignature {
        kind: "collect",
        doc: "",
        inputs: Arity::Exactly(1),
        outputs: Arity::Exactly(0),
        stateful: false,
        params: &[ParamSpec {
            name: "unused",
            required: false,
            kind: ParamKind::Text,
            default: None,
            doc: "",
        }],
    },
];

impl Catalog for TestCatalog {
    type Bound = Bound;

    fn signature(&self, kind: &str) -> Option<&OperatorSignature> {
        SIGS.iter().find(|s| s.kind == kind)
    }

    fn kinds(&self) -> Vec<&'static str> {
        SIGS.iter().map(|s| s.kind).collect()
    }

    fn bind(
        &self,
        op: &OperatorDef,
        _inputs: &[(&str, SchemaRef)],
        _declared: &[Option<SchemaRef>],
    ) -> Result<Binding<Bound>, Diagnostics> {
        let counts = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, true),
            Field::new("n", DataType::Int64, true),
        ]));
        let (bound, outputs): (Bound, Vec<SchemaRef>) = match op.kind.as_str() {
            "numbers" => {
                let fail_at = Arc::clone(&self.fail_at);
                (
                    Bound::Source(Arc::new(move |_| {
                        Ok(Box::new(Numbers {
                            next: 0,
                            fail_at: Arc::clone(&fail_at),
                        }))
                    })),
                    vec![schema()],
                )
            }
            "count" => {
                let backend = self.backend;
                (
                    Bound::Operator(Arc::new(move |_| {
                        Ok(Box::new(Counter {
                            state: open_backend(backend, None).map_err(err)?,
                        }))
                    })),
                    vec![counts],
                )
            }
            _ => {
                let results = Arc::clone(&self.results);
                (
                    Bound::Operator(Arc::new(move |_| {
                        Ok(Box::new(Collect(Arc::clone(&results))))
                    })),
                    vec![],
                )
            }
        };
        Ok(Binding {
            bound,
            outputs,
            warnings: Diagnostics::default(),
            partition_by: Vec::new(),
        })
    }
}

const QUERY: &str = r#"
type name = "K" { column name = "k", type = "int" }
operator name = "numbers", type = "numbers" { output name = "ks", type = "K" }
operator name = "count", type = "count" { input name = "ks" output name = "counts" }
operator name = "collect", type = "collect" { input name = "counts" }
"#;

fn run_once(
    catalog: &TestCatalog,
    dir: &std::path::Path,
    no_chaining: bool,
) -> Result<(), anduin_runtime::RuntimeError> {
    let spec = anduin_spec::parse_flow(QUERY).expect("parses");
    let (graph, _) = anduin_graph::check(&spec, catalog).expect("checks");
    let store = Store::open(dir).expect("store");
    let (_, restore) = store.choose_restore().expect("lists");
    let ctx = BuildContext {
        dead_letter: Arc::new(DeadLetter::new(DeadLetterTarget::Stderr)),
        checkpointing: true,
        restore_epoch: restore
            .as_ref()
            .map(|v| anduin_types::Epoch(v.manifest.epoch)),
        ..BuildContext::default()
    };
    let config = RunConfig {
        batch_size: 500,
        chaining: !no_chaining,
        checkpointing: Some(Checkpointing {
            settings: CheckpointSettings {
                dir: dir.to_path_buf(),
                store: None,
                interval: None,
                every_rows: Some(1500),
                keep: 2,
                full_every: 3,
                warn_after: Duration::from_secs(600),
                timeout: None,
            },
            restore,
            commit_only: false,
            faults: Faults::default(),
            remote: None,
        }),
        ..RunConfig::default()
    };
    run(&graph, &config, &ctx).map(|_| ())
}

#[test]
fn keyed_state_survives_a_failure_through_snapshots_and_changelogs() {
    let expected: BTreeMap<i64, i64> = (0..KEYS)
        .map(|k| (k, (0..ROWS as i64).filter(|i| i % KEYS == k).count() as i64))
        .collect();
    for backend in [BackendKind::Heap, BackendKind::Lsm] {
        for (fail_at, no_chaining) in [(9_000, false), (13_333, true), (17_001, false)] {
            let dir = tempfile::tempdir().expect("tempdir");
            let catalog = TestCatalog {
                backend,
                fail_at: Arc::new(AtomicU64::new(fail_at)),
                results: Arc::new(Mutex::new(BTreeMap::new())),
            };
            let first = run_once(&catalog, dir.path(), no_chaining);
            assert!(first.is_err(), "{backend:?} {fail_at}: the first run fails");
            assert!(catalog.results.lock().expect("ok").is_empty());
            let store = Store::open(dir.path()).expect("store");
            let (_, restore) = store.choose_restore().expect("lists");
            let manifest = restore.expect("a checkpoint before the failure").manifest;
            let chain = &manifest.operators["count"].files;
            assert!(!chain.is_empty(), "the counter's state is in files");
            run_once(&catalog, dir.path(), no_chaining).expect("the resumed run finishes");
            assert_eq!(
                *catalog.results.lock().expect("ok"),
                expected,
                "{backend:?}, failure at row {fail_at}"
            );
        }
    }
}
