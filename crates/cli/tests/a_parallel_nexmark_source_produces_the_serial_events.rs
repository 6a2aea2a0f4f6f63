//! A `nexmark` source run as 1, 2 or 3 instances (by `--parallelism` or by its own
//! `parallelism` param) writes exactly the events of the serial run: the instances interleave
//! the event numbers and together generate each event once. People come every 50th event, so
//! at parallelism 2 one instance has none of them and the other all.

use crate::common;

use common::{anduin_ok, sorted_rows};

const QUERY: &str = r#"
operator name = "events", type = "nexmark" {
  param events = 20011
  param seed = 7
  param first_event_id = 100
  param out_of_order_group_size = 13
  param event_time = "dateTime"
  param watermark = "10ms"
  param parallelism = "${SOURCE:-1}"
  output name = "${KIND}"
}
operator name = "out", type = "writer" {
  input name = "${KIND}"
  param path = "${OUTPUT}"
}
"#;

/// The sorted rows the query writes for `kind` with `args` added to `anduin run`.
fn run(dir: &std::path::Path, kind: &str, output: &str, args: &[&str]) -> Vec<String> {
    let kind_var = format!("KIND={kind}");
    let output_var = format!("OUTPUT={output}");
    let mut all = vec![
        "run",
        "q.flow",
        "-q",
        "--var",
        &kind_var,
        "--var",
        &output_var,
    ];
    all.extend_from_slice(args);
    anduin_ok(dir, &all);
    sorted_rows(&std::fs::read_to_string(dir.join(output)).expect("the output"))
}

#[test]
fn a_parallel_nexmark_source_produces_the_serial_events() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("q.flow"), QUERY).expect("query");
    for kind in ["bid", "auction", "person"] {
        let serial = run(dir.path(), kind, &format!("{kind}-serial.csv"), &[]);
        assert!(serial.len() > 300, "{kind}: {} rows", serial.len());
        for p in ["1", "2", "3"] {
            let by_flag = run(
                dir.path(),
                kind,
                &format!("{kind}-flag-{p}.csv"),
                &["--parallelism", p],
            );
            assert!(
                by_flag == serial,
                "{kind} at --parallelism {p}: {} rows, serial {}",
                by_flag.len(),
                serial.len()
            );
            let source = format!("SOURCE={p}");
            let by_param = run(
                dir.path(),
                kind,
                &format!("{kind}-param-{p}.csv"),
                &["--var", &source],
            );
            assert!(
                by_param == serial,
                "{kind} with parallelism = {p}: {} rows, serial {}",
                by_param.len(),
                serial.len()
            );
        }
    }
}
