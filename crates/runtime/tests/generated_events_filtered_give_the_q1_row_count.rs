//! The benchmark's events, generated in memory and filtered with Q1's condition, give the
//! reference row count of Q1 (24 578 of 100 000, `shared/bench/REFERENCE.md`), whatever the
//! batch size, chaining and channel capacity.

use std::sync::Arc;

use anduin_operator_api::{BuildContext, DeadLetter, DeadLetterTarget};
use anduin_registry::BuiltinCatalog;
use anduin_runtime::{run, RunConfig};

const QUERY: &str = r#"
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "events", type = "generator" {
  param profile = "events"
  param count = 100000
  output name = "events", type = "Event"
}
operator name = "low", type = "filter" {
  input name = "events"
  param condition = "value < 42"
  output name = "low", type = "Event"
}
operator name = "drop", type = "discard" {
  input name = "low"
}
"#;

#[test]
fn generated_events_filtered_give_the_q1_row_count() {
    let spec = anduin_spec::parse_flow(QUERY).expect("parses");
    let (graph, _) = anduin_graph::check(&spec, &BuiltinCatalog).expect("checks");
    let ctx = BuildContext {
        dead_letter: Arc::new(DeadLetter::new(DeadLetterTarget::Stderr)),
        checkpointing: false,
        restore_epoch: None,
        ..BuildContext::default()
    };
    for (batch_size, chaining, channel_capacity) in [
        (8192, true, 16),
        (1000, false, 1),
        (100_000, false, 4),
        (7, true, 2),
    ] {
        let config = RunConfig {
            batch_size,
            chaining,
            channel_capacity,
            ..RunConfig::default()
        };
        let summary = run(&graph, &config, &ctx).expect("runs");
        let rows = |name: &str| {
            summary
                .operators
                .iter()
                .find(|o| o.name == name)
                .map(|o| (o.rows_in, o.rows_out))
                .expect("operator in summary")
        };
        assert_eq!(
            rows("events").1,
            100_000,
            "batch {batch_size}, chaining {chaining}"
        );
        assert_eq!(
            rows("low"),
            (100_000, 24_578),
            "batch {batch_size}, chaining {chaining}"
        );
        assert_eq!(
            rows("drop").0,
            24_578,
            "batch {batch_size}, chaining {chaining}"
        );
        assert!(!summary.stopped);
    }
}
