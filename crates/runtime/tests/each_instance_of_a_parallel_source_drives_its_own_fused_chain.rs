//! A source that runs in parallel runs as one instance per share, each on its own task with
//! the chain fused behind it: instance `i` of a source of numbers emits the numbers `n` with
//! `n % 3 == i`, the fused operator behind it tags each row with its own instance, and a
//! single-instance sink gathers them all. Every number arrives once, tagged by the chain
//! instance of its source instance; with checkpoints, every checkpoint completes (each source
//! instance injects its barrier and records its position under its own key) and the last one
//! says the query finished. Without chaining, the instances still deliver every number once.
//!
//! The test defines its operators through a catalog of its own.

use std::collections::BTreeMap;
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
use anduin_types::Diagnostics;
use arrow::array::{Array, Int64Array};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;

const ROWS: i64 = 30_000;
const PARALLELISM: usize = 3;

fn schema(columns: &[&str]) -> SchemaRef {
    Arc::new(Schema::new(
        columns
            .iter()
            .map(|c| Field::new(*c, DataType::Int64, true))
            .collect::<Vec<_>>(),
    ))
}

/// Instance `instance` of `instances`: the numbers below [`ROWS`] of its share, in order.
struct Shares {
    next: i64,
    instances: i64,
}

impl Source for Shares {
    fn name(&self) -> &str {
        "shares"
    }

    fn poll(&mut self, max_rows: usize, _deadline: Instant) -> Result<SourcePoll, OperatorError> {
        if self.next >= ROWS {
            return Ok(SourcePoll::Exhausted);
        }
        let mut values = Vec::new();
        while self.next < ROWS && values.len() < max_rows.min(300) {
            values.push(self.next);
            self.next += self.instances;
        }
        let batch = RecordBatch::try_new(schema(&["n"]), vec![Arc::new(Int64Array::from(values))])
            .expect("valid");
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
            .and_then(|v| v["next"].as_i64())
            .expect("a position");
        Ok(())
    }
}

/// Adds a column with the instance that saw the row.
struct Tag(i64);

impl Operator for Tag {
    fn name(&self) -> &str {
        "tag"
    }

    fn process_batch(
        &mut self,
        _input: usize,
        batch: RecordBatch,
        out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        let tags = Int64Array::from(vec![self.0; batch.num_rows()]);
        let tagged = RecordBatch::try_new(
            schema(&["n", "tag"]),
            vec![Arc::clone(batch.column(0)), Arc::new(tags)],
        )
        .expect("valid");
        out.collect(0, tagged)
    }
}

/// Every (number, tag) received, with how many times.
type Seen = Arc<Mutex<BTreeMap<(i64, i64), usize>>>;

struct Collect(Seen);

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
        let column = |i: usize| {
            batch
                .column(i)
                .as_any()
                .downcast_ref::<Int64Array>()
                .expect("ints")
                .clone()
        };
        let (n, tag) = (column(0), column(1));
        let mut seen = self.0.lock().expect("not poisoned");
        for i in 0..n.len() {
            *seen.entry((n.value(i), tag.value(i))).or_default() += 1;
        }
        Ok(())
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
        kind: "shares",
        doc: "",
        inputs: Arity::Exactly(0),
        outputs: Arity::Exactly(1),
        stateful: true,
        params: PARALLEL,
    },
    OperatorSignature {
        kind: "tag",
        doc: "",
        inputs: Arity::Exactly(1),
        outputs: Arity::Exactly(1),
        stateful: false,
        params: PARALLEL,
    },
    OperatorSignature {
        kind: "collect",
        doc: "",
        inputs: Arity::Exactly(1),
        outputs: Arity::Exactly(0),
        stateful: false,
        params: &[],
    },
];

struct TestCatalog {
    seen: Seen,
}

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
        let (bound, outputs): (Bound, Vec<SchemaRef>) = match op.kind.as_str() {
            "shares" => (
                Bound::Source(Arc::new(|ctx: &BuildContext| {
                    Ok(Box::new(Shares {
                        next: ctx.instance as i64,
                        instances: ctx.parallelism as i64,
                    }))
                })),
                vec![schema(&["n"])],
            ),
            "tag" => (
                Bound::Operator(Arc::new(|ctx: &BuildContext| {
                    Ok(Box::new(Tag(ctx.instance as i64)))
                })),
                vec![schema(&["n", "tag"])],
            ),
            _ => {
                let seen = Arc::clone(&self.seen);
                (
                    Bound::Operator(Arc::new(move |_| Ok(Box::new(Collect(Arc::clone(&seen)))))),
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
operator name = "shares", type = "shares" { output name = "numbers" }
operator name = "tag", type = "tag" { input name = "numbers" output name = "tagged" }
operator name = "collect", type = "collect" { input name = "tagged" }
"#;

/// Runs the query at [`PARALLELISM`] and returns what the sink saw.
fn run_query(chaining: bool, checkpoints: Option<&std::path::Path>) -> BTreeMap<(i64, i64), usize> {
    let catalog = TestCatalog {
        seen: Arc::new(Mutex::new(BTreeMap::new())),
    };
    let spec = anduin_spec::parse_flow(QUERY).expect("parses");
    let (graph, _) = anduin_graph::check(&spec, &catalog).expect("checks");
    let ctx = BuildContext {
        dead_letter: Arc::new(DeadLetter::new(DeadLetterTarget::Stderr)),
        checkpointing: checkpoints.is_some(),
        restore_epoch: None,
        ..BuildContext::default()
    };
    let config = RunConfig {
        batch_size: 200,
        chaining,
        parallelism: PARALLELISM,
        checkpointing: checkpoints.map(|dir| Checkpointing {
            settings: CheckpointSettings {
                dir: dir.to_path_buf(),
                store: None,
                interval: None,
                every_rows: Some(2000),
                keep: 2,
                full_every: 3,
                warn_after: Duration::from_secs(600),
                timeout: None,
            },
            restore: None,
            commit_only: false,
            faults: Faults::default(),
            remote: None,
        }),
        ..RunConfig::default()
    };
    run(&graph, &config, &ctx).expect("the query runs");
    let seen = catalog.seen.lock().expect("not poisoned").clone();
    seen
}

#[test]
fn each_instance_of_a_parallel_source_drives_its_own_fused_chain() {
    let dir = tempfile::tempdir().expect("tempdir");
    for checkpoints in [None, Some(dir.path())] {
        let seen = run_query(true, checkpoints);
        let expected: BTreeMap<(i64, i64), usize> = (0..ROWS)
            .map(|n| ((n, n % PARALLELISM as i64), 1))
            .collect();
        assert!(
            seen == expected,
            "checkpoints {}: {} rows seen, {} expected; each tagged by its source's instance",
            checkpoints.is_some(),
            seen.len(),
            expected.len()
        );
    }
    let store = Store::open(dir.path()).expect("store");
    let (_, last) = store.choose_restore().expect("lists");
    let manifest = last.expect("a complete checkpoint").manifest;
    assert!(
        manifest.finished,
        "the last checkpoint saw every instance end"
    );
    for i in 0..PARALLELISM {
        let key = format!("shares#{i}");
        let position = manifest.operators[&key].inline.as_ref().expect("inline")["next"]
            .as_i64()
            .expect("a position");
        assert!(
            position >= ROWS && position % PARALLELISM as i64 == i as i64,
            "{key}"
        );
    }

    // Without chaining every number still arrives once (the tags then follow the channels).
    let unchained = run_query(false, None);
    let numbers: Vec<i64> = unchained.keys().map(|(n, _)| *n).collect();
    assert_eq!(numbers, (0..ROWS).collect::<Vec<_>>());
    assert!(unchained.values().all(|times| *times == 1));
}
