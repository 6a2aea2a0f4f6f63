//! Issue 11, item 4: the rows an event-time operator dropped as late, and the records that
//! went to the dead letters, are published as typed events when the run ends (counted as
//! the run went, not per row). With one row per batch, the rows at 1200 and 900 come after
//! the watermark passed them; the line `oops,…` cannot be read.

use std::sync::Arc;

use anduin_operator_api::{BuildContext, DeadLetter, DeadLetterTarget};
use anduin_registry::BuiltinCatalog;
use anduin_runtime::{run, EngineEvent, Events, Recorded, RunConfig};

#[test]
fn late_and_rejected_rows_are_published_as_events_when_the_run_ends() {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("in.csv");
    std::fs::write(
        &input,
        "ts,sensor,value\n1000,1,1\n2500,1,2\n1200,1,3\n3000,1,4\n900,1,5\noops,1,6\n",
    )
    .expect("input");
    let output = dir.path().join("out.csv");
    let query = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/q2.flow"),
    )
    .expect("examples/q2.flow")
    .replace("${INPUT}", input.to_str().expect("utf-8 path"))
    .replace("${OUTPUT}", output.to_str().expect("utf-8 path"));
    let spec = anduin_spec::parse_flow(&query).expect("parses");
    let (graph, _) = anduin_graph::check(&spec, &BuiltinCatalog).expect("checks");
    let recorded = Arc::new(Recorded::default());
    let config = RunConfig {
        batch_size: 1,
        events: Events::default()
            .with(Arc::clone(&recorded) as Arc<dyn anduin_runtime::Subscriber>),
        ..RunConfig::default()
    };
    let dead_letters = dir.path().join("dead.jsonl");
    let ctx = BuildContext {
        dead_letter: Arc::new(DeadLetter::new(DeadLetterTarget::File(dead_letters))),
        ..BuildContext::default()
    };
    run(&graph, &config, &ctx).expect("the run ends cleanly");

    let counts: Vec<EngineEvent> = recorded
        .events()
        .into_iter()
        .filter(|e| {
            matches!(
                e,
                EngineEvent::LateRows { .. } | EngineEvent::Rejected { .. }
            )
        })
        .collect();
    assert_eq!(
        counts,
        vec![
            EngineEvent::LateRows {
                operator: "q2".into(),
                rows: 2
            },
            EngineEvent::Rejected {
                records: 1,
                rows: 0
            },
        ]
    );
}
