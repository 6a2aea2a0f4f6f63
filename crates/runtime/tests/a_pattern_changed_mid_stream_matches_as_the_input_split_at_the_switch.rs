//! A running pattern given a new condition or a new pattern switches at one consistent
//! point: each source instance holds its readings back at a gate (`n >= GATE`) until the
//! change is applied, so the switch is between reading `GATE - 1` and reading `GATE`. The
//! output is then exactly that of the old definition over the readings before the gate
//! followed by that of the new one over the readings after it, each run on its own — the
//! partial matches open at the switch are dropped — with one instance of the source and the
//! pattern, and with two (the pattern aligning the barrier over two inputs, its partitions
//! split between two instances). The change is checked as `anduin ctl set` checks it
//! (`check_change_after` over the query's graph): a refused one changes nothing.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use anduin_graph::{check_change_after, ChangeRejected, LogicalGraph};
use anduin_operator_api::{Bound, BuildContext};
use anduin_runtime::control::{ChangeRequest, Control, ControlFailure, ParamInfo};
use anduin_runtime::{run, RunConfig};

use crate::common;

use common::readings::{assert_same, query, sorted, Gatekeeper, ReadingsCatalog, Row};

const ROWS: i64 = 3000;
const GATE: i64 = 1300;

const PATTERN: &str = "A B+ C";
const DEFINE: &str = "B AS B.value < PREV(B.value), C AS C.value > A.value";

fn graph(catalog: &ReadingsCatalog, src: &str) -> LogicalGraph<Bound> {
    let spec = anduin_spec::parse_flow(src).expect("parses");
    anduin_graph::check(&spec, catalog).expect("checks").0
}

/// The committed output of the query over readings `from..to`, without a change.
fn reference(from: i64, to: i64, pattern: &str, define: &str) -> Vec<Row> {
    let catalog = ReadingsCatalog::new(from, to);
    let g = graph(&catalog, &query(1, pattern, define, "heap"));
    run(&g, &RunConfig::default(), &BuildContext::default()).expect("runs");
    let rows = std::mem::take(&mut catalog.output.lock().expect("not poisoned").committed);
    rows
}

/// The old definition over the readings before the gate, then the new one over those after
/// it.
fn split(pattern: &str, define: &str) -> Vec<Row> {
    let mut rows = reference(0, GATE, PATTERN, DEFINE);
    rows.extend(reference(GATE, ROWS, pattern, define));
    sorted(rows)
}

/// Runs the query with `parallelism` instances; once every source instance waits at the
/// gate, sets param `param` of the pattern to `value`, then opens the gate. The output, and
/// the change (or why it was refused).
fn run_with_change(
    parallelism: usize,
    param: &str,
    value: &str,
) -> (Vec<Row>, Result<u64, ControlFailure>) {
    let mut catalog = ReadingsCatalog::new(0, ROWS);
    let (gates, keeper) = Gatekeeper::new(vec![GATE], parallelism);
    catalog.gates = Some(gates);
    let g = Arc::new(graph(
        &catalog,
        &query(parallelism, PATTERN, DEFINE, "heap"),
    ));
    let params = BTreeMap::from([(
        "p".to_string(),
        ["pattern", "define", "within"]
            .iter()
            .map(|name| ParamInfo {
                name: name.to_string(),
                kind: "text".into(),
                value: String::new(),
                doc: String::new(),
            })
            .collect(),
    )]);
    let checked = Arc::clone(&g);
    let validate = move |r: &ChangeRequest, earlier: &BTreeMap<String, String>| {
        let catalog = ReadingsCatalog::new(0, 0);
        check_change_after(&checked, &catalog, &r.operator, earlier, &r.param, &r.value).map_err(
            |e| ControlFailure::Invalid {
                operator: r.operator.clone(),
                param: r.param.clone(),
                message: match e {
                    ChangeRejected::Invalid(message) => message,
                    other => format!("{other:?}"),
                },
            },
        )
    };
    let control = Arc::new(Control::new("q", None, params, Box::new(validate)));
    let config = RunConfig {
        batch_size: 300,
        linger: Duration::from_millis(5),
        control: Some(Arc::clone(&control)),
        ..RunConfig::default()
    };
    let change = std::thread::scope(|s| {
        let runner = s.spawn(|| run(&g, &config, &BuildContext::default()));
        keeper.wait_for_all();
        let change = control.set(ChangeRequest {
            operator: "p".into(),
            param: param.into(),
            value: value.into(),
            from: "test".into(),
        });
        keeper.open_all();
        runner.join().expect("no panic").expect("runs");
        change.map(|r| r.epoch)
    });
    let rows = std::mem::take(&mut catalog.output.lock().expect("not poisoned").committed);
    (sorted(rows), change)
}

/// The change of `param` to `value` at parallelism 1 and 2 gives the split output, which
/// differs from the output without it.
fn switches(param: &str, value: &str, pattern: &str, define: &str) {
    let expected = split(pattern, define);
    let unchanged = sorted(reference(0, ROWS, PATTERN, DEFINE));
    assert!(
        expected.len() > 50 && expected != unchanged,
        "the change makes a difference: {} rows, {} without it",
        expected.len(),
        unchanged.len()
    );
    for parallelism in [1, 2] {
        let (rows, change) = run_with_change(parallelism, param, value);
        change.expect("applied");
        assert_same(&rows, &expected, &format!("parallelism {parallelism}"));
    }
}

#[test]
fn a_new_condition_matches_the_readings_after_the_switch() {
    let define = "B AS B.value < PREV(B.value), C AS C.value > A.value + 20";
    switches("define", define, PATTERN, define);
}

#[test]
fn a_new_pattern_matches_the_readings_after_the_switch() {
    let pattern = "A B{2,} C";
    switches("pattern", pattern, pattern, DEFINE);
}

#[test]
fn a_refused_change_changes_nothing() {
    let (rows, change) = run_with_change(2, "define", "B AS B.valeu < 1");
    match change {
        Err(ControlFailure::Invalid { message, .. }) => {
            assert!(
                message.contains("p.define:1:8: unknown column `valeu`"),
                "{message}"
            );
        }
        other => panic!("refused, not {other:?}"),
    }
    let unchanged = sorted(reference(0, ROWS, PATTERN, DEFINE));
    assert_same(&rows, &unchanged, "as without the change");
}
