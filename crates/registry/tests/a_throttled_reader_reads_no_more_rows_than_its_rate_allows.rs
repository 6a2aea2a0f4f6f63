//! A reader with `rate` reads no more rows than the run's clock allows (a `ManualClock`
//! here: exactly the rows due, since every row has the same length), and a new rate set
//! while it runs counts from the change: the next row waits one interval of the new rate.
//! Without a rate the whole file comes at once. Bad rates are refused, in the query and as
//! a change.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anduin_graph::{check_change, ChangeRejected};
use anduin_operator_api::{Bound, BuildContext, Source, SourcePoll};
use anduin_registry::BuiltinCatalog;
use anduin_types::{ManualClock, SharedClock};

const ROWS: usize = 5000;

fn query(path: &str, rate: Option<&str>) -> String {
    let rate = rate
        .map(|r| format!("  param rate = {r}\n"))
        .unwrap_or_default();
    format!(
        r#"
type name = "R" {{
  column name = "id", type = "int"
  column name = "v", type = "int"
}}
operator name = "in", type = "reader" {{
  param path = "{path}"
  param format = "jsonl"
{rate}  output name = "rows", type = "R"
}}
operator name = "drop", type = "discard" {{
  input name = "rows"
}}
"#
    )
}

/// A file of `ROWS` JSON lines of the same length.
fn input(dir: &std::path::Path) -> String {
    let path = dir.join("in.jsonl");
    let text: String = (0..ROWS)
        .map(|i| format!("{{\"id\":{},\"v\":7}}\n", 10_000 + i))
        .collect();
    std::fs::write(&path, text).expect("writes");
    path.display().to_string()
}

fn reader(src: &str, clock: &Arc<ManualClock>) -> Box<dyn Source> {
    let spec = anduin_spec::parse_flow(src).unwrap_or_else(|e| panic!("{src}\n{e}"));
    let (graph, _) =
        anduin_graph::check(&spec, &BuiltinCatalog).unwrap_or_else(|e| panic!("{src}\n{e}"));
    let node = graph
        .nodes
        .iter()
        .find(|n| n.name() == "in")
        .expect("a reader");
    let Bound::Source(factory) = &node.bound else {
        panic!("a source")
    };
    let ctx = BuildContext {
        clock: Arc::clone(clock) as SharedClock,
        ..BuildContext::default()
    };
    factory(&ctx).expect("builds")
}

/// The rows the reader gives without waiting (the deadline is now), and whether it ended.
fn read_now(r: &mut Box<dyn Source>) -> (usize, bool) {
    let mut n = 0;
    let now = Instant::now();
    loop {
        match r.poll(10_000, now).expect("polls") {
            SourcePoll::Batch(b) => n += b.num_rows(),
            SourcePoll::Idle => return (n, false),
            SourcePoll::Exhausted => return (n, true),
        }
    }
}

#[test]
fn a_rate_on_a_manual_clock_reads_exactly_the_rows_its_time_allows() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = input(dir.path());
    let clock = Arc::new(ManualClock::new());
    let mut r = reader(&query(&path, Some("1000")), &clock);
    assert_eq!(r.adjustable_params(), ["rate"]);
    let (first, _) = read_now(&mut r);
    assert!(first >= 1, "the first row is due at once");
    // The first read guesses the length of a row; from then on exactly the rows due come.
    clock.advance(Duration::from_millis(250));
    let (n, _) = read_now(&mut r);
    assert_eq!(first + n, 251);
    clock.advance(Duration::from_secs(2));
    assert_eq!(read_now(&mut r).0, 2000);
    assert_eq!(read_now(&mut r).0, 0, "the clock stands still");

    // Slower: the next row waits one interval of the new rate, then they come at it.
    r.set_param("rate", "10").expect("a valid rate");
    clock.advance(Duration::from_millis(99));
    assert_eq!(read_now(&mut r).0, 0);
    clock.advance(Duration::from_millis(1));
    assert_eq!(read_now(&mut r).0, 1);
    clock.advance(Duration::from_secs(1));
    assert_eq!(read_now(&mut r).0, 10);

    // Faster, up to the end of the file; every row is read once.
    r.set_param("rate", "1e6").expect("a valid rate");
    clock.advance(Duration::from_secs(1));
    let (rest, ended) = read_now(&mut r);
    assert_eq!(2251 + 1 + 10 + rest, ROWS);
    assert!(!ended || rest > 0);
    let (more, ended) = read_now(&mut r);
    assert_eq!(more, 0);
    assert!(ended, "the file has ended");

    for bad in ["0", "-1", "fast", "1e13"] {
        let e = r.set_param("rate", bad).expect_err("refused");
        assert!(e.to_string().contains("0.001 to 1e12"), "{e}");
    }
    assert!(r.set_param("path", "x").is_err(), "only the rate changes");
}

#[test]
fn without_a_rate_the_file_comes_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = input(dir.path());
    let clock = Arc::new(ManualClock::new());
    let mut r = reader(&query(&path, None), &clock);
    let (n, _) = read_now(&mut r);
    let (m, ended) = read_now(&mut r);
    assert_eq!(n + m, ROWS);
    assert!(ended);
}

#[test]
fn a_bad_rate_is_refused_in_the_query_and_as_a_change() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = input(dir.path());
    for bad in ["0", "-5", "1e13"] {
        let spec = anduin_spec::parse_flow(&query(&path, Some(bad))).expect("parses");
        let e = anduin_graph::check(&spec, &BuiltinCatalog).expect_err("refused");
        assert!(e.to_string().contains("rows per second"), "{e}");
    }
    let spec = anduin_spec::parse_flow(&query(&path, None)).expect("parses");
    let (graph, _) = anduin_graph::check(&spec, &BuiltinCatalog).expect("checks");
    check_change(&graph, &BuiltinCatalog, "in", "rate", "250").expect("a valid rate");
    for bad in ["0", "-5", "fast", "1e13"] {
        match check_change(&graph, &BuiltinCatalog, "in", "rate", bad) {
            Err(ChangeRejected::Invalid(m)) => assert!(m.starts_with("in.rate:"), "{m}"),
            other => panic!("rate {bad:?}: {other:?}"),
        }
    }
    match check_change(&graph, &BuiltinCatalog, "in", "format", "csv") {
        Err(ChangeRejected::NotAdjustable { adjustable, .. }) => {
            assert_eq!(adjustable, vec!["rate"]);
        }
        other => panic!("{other:?}"),
    }
}
