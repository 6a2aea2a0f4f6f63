//! A pattern given a new condition while running, then failing, resumes from its last
//! checkpoint with the new condition and gives exactly the output of a run that did not fail
//! (a sink that keeps only what checkpoints committed sees it): the old definition over the
//! readings before the switch, the new one over those after it. Two cases, each with the
//! partitions in memory and in an LSM tree, at parallelism 2:
//! - the checkpoint restored was taken after the change: its state is the new definition's
//!   (partial matches under it), and the change is applied before the state is restored, so
//!   the partitions replay under the new definition and are not switched again;
//! - the checkpoint restored is the change's own (its barrier carried it; its snapshot is
//!   from just before): the state is the old definition's, and the change is applied after
//!   the restore, ending the old partial matches as the run that failed did.
//!
//! And three changes at one point — a pattern with a new variable, a condition for it, the
//! pattern again — which a checkpoint records as the latest of each param (the condition,
//! then the second pattern): a restore applies them together, as the condition is valid only
//! with a pattern that has its variable.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use anduin_checkpoint::Store;
use anduin_graph::LogicalGraph;
use anduin_operator_api::{Bound, BuildContext};
use anduin_runtime::control::{ChangeRequest, Control, ParamInfo};
use anduin_runtime::{run, EngineEvent, Events, RunConfig, Subscriber};

use crate::common;

use common::readings::{assert_same, query, sorted, Gatekeeper, ReadingsCatalog, Row};

const ROWS: i64 = 3000;
/// Where the change is made.
const SWITCH: i64 = 1000;
/// Where a checkpoint after the change is taken (in the first case).
const LATER: i64 = 1800;

const PATTERN: &str = "A B+ C";
const OLD: &str = "B AS B.value < PREV(B.value), C AS C.value > A.value";
const NEW: &str = "B AS B.value < PREV(B.value), C AS C.value > A.value + 20";

const PARALLELISM: usize = 2;

/// The changes made at [`SWITCH`], in order, and the definition they leave.
struct Changes {
    made: &'static [(&'static str, &'static str)],
    pattern: &'static str,
    define: &'static str,
}

/// The condition of C becomes stricter.
const STRICTER: Changes = Changes {
    made: &[("define", NEW)],
    pattern: PATTERN,
    define: NEW,
};

/// A new variable, a condition for it, and the pattern again.
const NEW_VARIABLE: Changes = Changes {
    made: &[
        ("pattern", "A B+ C D?"),
        ("define", WITH_D),
        ("pattern", "A B+ C D"),
    ],
    pattern: "A B+ C D",
    define: WITH_D,
};
const WITH_D: &str = "B AS B.value < PREV(B.value), C AS C.value > A.value, D AS D.value < 30";

fn graph(
    catalog: &ReadingsCatalog,
    backend: &str,
    pattern: &str,
    define: &str,
) -> LogicalGraph<Bound> {
    let src = query(PARALLELISM, pattern, define, backend);
    let spec = anduin_spec::parse_flow(&src).expect("parses");
    anduin_graph::check(&spec, catalog).expect("checks").0
}

fn control() -> Arc<Control> {
    let params = BTreeMap::from([(
        "p".to_string(),
        vec![ParamInfo {
            name: "define".into(),
            kind: "conditions".into(),
            value: OLD.into(),
            doc: String::new(),
        }],
    )]);
    Arc::new(Control::new(
        "q",
        None,
        params,
        Box::new(|_: &ChangeRequest, _: &_| Ok(())),
    ))
}

/// Tells the test the epochs of the checkpoints that complete.
struct Completed(crossbeam_channel::Sender<u64>);

impl Subscriber for Completed {
    fn event(&self, event: &EngineEvent) {
        if let EngineEvent::CheckpointCompleted { epoch, .. } = event {
            let _ = self.0.send(*epoch);
        }
    }
}

fn config(
    dir: &std::path::Path,
    control: &Arc<Control>,
    restore: Option<anduin_checkpoint::Validated>,
    completed: crossbeam_channel::Sender<u64>,
) -> RunConfig {
    RunConfig {
        events: Events::default().with(Arc::new(Completed(completed))),
        batch_size: 300,
        linger: Duration::from_millis(5),
        control: Some(Arc::clone(control)),
        checkpointing: Some(common::checkpointing(dir, None, restore)),
        ..RunConfig::default()
    }
}

fn ctx() -> BuildContext {
    BuildContext {
        checkpointing: true,
        ..BuildContext::default()
    }
}

/// Runs the query over every reading in `backend` with checkpoints in `dir`: at the gate at
/// [`SWITCH`] the `changes` are made (each on a checkpoint's barrier), and with `later` a
/// checkpoint is taken at the gate at [`LATER`]; with `fail_at`, the source fails when it
/// reaches that reading. The run's result, with the epoch of the last change.
fn first_run(
    dir: &std::path::Path,
    backend: &str,
    changes: &Changes,
    later: bool,
    fail_at: Option<i64>,
) -> (ReadingsCatalog, Result<(), String>, u64) {
    let mut catalog = ReadingsCatalog::new(0, ROWS);
    let at = if later {
        vec![SWITCH, LATER]
    } else {
        vec![SWITCH]
    };
    let (gates, keeper) = Gatekeeper::new(at.clone(), PARALLELISM);
    catalog.gates = Some(gates);
    if let Some(f) = fail_at {
        catalog.fail_at.store(f, Ordering::SeqCst);
    }
    let g = graph(&catalog, backend, PATTERN, OLD);
    let control = control();
    let (completed_tx, completed) = crossbeam_channel::unbounded();
    let config = config(dir, &control, None, completed_tx);
    let (result, epoch) = std::thread::scope(|s| {
        let runner = s.spawn(|| run(&g, &config, &ctx()));
        let mut epoch = 0;
        for (i, _) in at.iter().enumerate() {
            keeper.wait_for_all();
            if i == 0 {
                for (param, value) in changes.made {
                    let record = control
                        .set(ChangeRequest {
                            operator: "p".into(),
                            param: param.to_string(),
                            value: value.to_string(),
                            from: "test".into(),
                        })
                        .expect("applied");
                    epoch = record.epoch;
                }
                // The last change's checkpoint completes before the run goes on (and fails).
                let wait = Duration::from_secs(120);
                while completed
                    .recv_timeout(wait)
                    .expect("the change's checkpoint completes")
                    < epoch
                {}
            } else {
                let taken = control.checkpoint().expect("a checkpoint after the change");
                assert!(taken > epoch);
            }
            keeper.open_all();
        }
        let result = runner
            .join()
            .expect("no panic")
            .map(drop)
            .map_err(|e| e.to_string());
        (result, epoch)
    });
    (catalog, result, epoch)
}

/// The output of a run that fails at `fail_at` and resumes from its last checkpoint, which
/// is the change's own (`later` false) or one after it; and that of an uninterrupted run.
fn failed_and_resumed(
    backend: &str,
    changes: &Changes,
    later: bool,
    fail_at: i64,
) -> (Vec<Row>, Vec<Row>) {
    let whole = tempfile::tempdir().expect("tempdir");
    let (uninterrupted, result, _) = first_run(whole.path(), backend, changes, later, None);
    result.expect("runs");
    let uninterrupted = sorted(std::mem::take(
        &mut uninterrupted.output.lock().expect("not poisoned").committed,
    ));

    let dir = tempfile::tempdir().expect("tempdir");
    let (catalog, result, change) = first_run(dir.path(), backend, changes, later, Some(fail_at));
    let e = result.expect_err("the injected failure stops the run");
    assert!(e.contains("injected failure"), "{e}");
    let store = Store::open(dir.path()).expect("opens");
    let last = store
        .epochs()
        .expect("lists")
        .into_iter()
        .max()
        .expect("a checkpoint");
    if later {
        assert!(last.0 > change, "resumes after the change's checkpoint");
    } else {
        assert_eq!(last.0, change, "resumes from the change's checkpoint");
    }
    let restore = store.validate(last).expect("valid");
    let params: std::collections::BTreeSet<&str> =
        changes.made.iter().map(|(param, _)| *param).collect();
    assert_eq!(
        restore.manifest.controls.len(),
        params.len(),
        "it records the latest change of each param"
    );

    // The same query as declared (the old condition), resumed without gates or failure.
    let resumed = ReadingsCatalog {
        output: Arc::clone(&catalog.output),
        ..ReadingsCatalog::new(0, ROWS)
    };
    let g = graph(&resumed, backend, PATTERN, OLD);
    let control = control();
    let (completed_tx, _completed) = crossbeam_channel::unbounded();
    let config = config(dir.path(), &control, Some(restore), completed_tx);
    run(&g, &config, &ctx()).expect("resumes");
    let params = control.params("p").expect("adjustable");
    assert_eq!(
        params[0].value, changes.define,
        "the resumed run keeps the new conditions"
    );
    let rows = std::mem::take(&mut catalog.output.lock().expect("not poisoned").committed);
    (sorted(rows), uninterrupted)
}

/// The old definition over the readings before the switch, then the one `changes` leave
/// over those after it, each on its own.
fn split(changes: &Changes) -> Vec<Row> {
    let mut rows = Vec::new();
    for (from, to, pattern, define) in [
        (0, SWITCH, PATTERN, OLD),
        (SWITCH, ROWS, changes.pattern, changes.define),
    ] {
        let catalog = ReadingsCatalog::new(from, to);
        let g = graph(&catalog, "heap", pattern, define);
        run(&g, &RunConfig::default(), &BuildContext::default()).expect("runs");
        rows.extend(std::mem::take(
            &mut catalog.output.lock().expect("not poisoned").committed,
        ));
    }
    sorted(rows)
}

fn resumes_to_the_uninterrupted_output(
    backend: &str,
    changes: &Changes,
    later: bool,
    fail_at: i64,
) {
    let (resumed, uninterrupted) = failed_and_resumed(backend, changes, later, fail_at);
    let expected = split(changes);
    assert!(expected.len() > 50, "{} matches", expected.len());
    assert_same(
        &uninterrupted,
        &expected,
        &format!("{backend}: the run without a failure"),
    );
    assert_same(
        &resumed,
        &expected,
        &format!("{backend}: the run that failed and resumed"),
    );
}

#[test]
fn from_a_checkpoint_after_the_change_the_state_replays_under_the_new_condition() {
    for backend in ["heap", "lsm"] {
        resumes_to_the_uninterrupted_output(backend, &STRICTER, true, 2400);
    }
}

#[test]
fn from_the_changes_own_checkpoint_the_switch_happens_again_on_the_restored_state() {
    for backend in ["heap", "lsm"] {
        resumes_to_the_uninterrupted_output(backend, &STRICTER, false, 1600);
    }
}

#[test]
fn a_condition_valid_only_with_a_later_pattern_is_restored_together_with_it() {
    resumes_to_the_uninterrupted_output("heap", &NEW_VARIABLE, true, 2400);
}
