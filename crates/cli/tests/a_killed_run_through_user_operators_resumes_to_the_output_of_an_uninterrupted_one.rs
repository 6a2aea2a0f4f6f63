//! Issue 21, operators with keyed state: the states of user operators (JavaScript's JSON,
//! WebAssembly's bytes) and their timers are checkpointed in the operator's keyed table: a
//! query through keep-first and every-second operators in both languages, killed with SIGKILL
//! at seeded random moments and resumed from its checkpoints, writes exactly the rows an
//! uninterrupted run writes. In the heap backend, and in the LSM backend resumed at other
//! parallelisms (the keys re-cut by key group).

use crate::common;

use common::killed::killed_then_finished_query;
use common::udfs::{operators_module, EVENTS, OPERATORS};
use common::{anduin_ok, output_rows};

/// The four operators over the events (at 40 000 a second, so that a kill lands mid-run),
/// into `${OUTPUT}` and `${OUTPUT2}` to `${OUTPUT4}` (by default `out2` to `out4`).
fn query() -> String {
    let events = EVENTS.replace("count = '60000'", "count = '60000', rate = '40000'");
    format!(
        "{OPERATORS}{events}
CREATE TABLE o1 WITH (connector = 'file', path = '${{OUTPUT}}');
CREATE TABLE o2 WITH (connector = 'file', path = '${{OUTPUT2:-out2}}');
CREATE TABLE o3 WITH (connector = 'file', path = '${{OUTPUT3:-out3}}');
CREATE TABLE o4 WITH (connector = 'file', path = '${{OUTPUT4:-out4}}');
INSERT INTO o1 SELECT * FROM js_first(input => TABLE events PARTITION BY sensor);
INSERT INTO o2 SELECT * FROM first_row(input => TABLE events PARTITION BY sensor);
INSERT INTO o3 SELECT * FROM js_every(input => TABLE events PARTITION BY sensor);
INSERT INTO o4 SELECT * FROM every_second(input => TABLE events PARTITION BY sensor);
"
    )
}

fn scenario(seed: u64, extra: &[&[&str]]) {
    let dir = tempfile::tempdir().expect("tempdir");
    operators_module(dir.path());
    std::fs::write(dir.path().join("q.sql"), query()).expect("query");
    let mut reference = vec!["run", "q.sql", "--no-api"];
    for var in [
        "OUTPUT=ref1",
        "OUTPUT2=ref2",
        "OUTPUT3=ref3",
        "OUTPUT4=ref4",
    ] {
        reference.extend(["--var", var]);
    }
    anduin_ok(dir.path(), &reference);
    let expected: Vec<Vec<String>> = (1..=4)
        .map(|i| output_rows(&dir.path().join(format!("ref{i}"))))
        .collect();
    assert_eq!(expected[0].len(), 1000, "one first row per sensor");
    assert!(expected[2].len() > 25_000, "{}", expected[2].len());

    killed_then_finished_query(dir.path(), "q.sql", seed, extra);
    for (i, want) in expected.iter().enumerate() {
        let path = match i {
            0 => dir.path().join("out"),
            i => dir.path().join(format!("out{}", i + 1)),
        };
        let got = output_rows(&path);
        assert_eq!(
            got.len(),
            want.len(),
            "seed {seed}, output {}: rows lost or duplicated",
            i + 1
        );
        assert!(
            &got == want,
            "seed {seed}, output {}: the resumed run wrote other rows",
            i + 1
        );
    }
}

#[test]
fn a_killed_run_through_user_operators_resumes_to_the_output_of_an_uninterrupted_one() {
    scenario(61, &[&[]]);
}

#[test]
fn a_killed_run_through_user_operators_in_the_lsm_backend_resumed_at_other_parallelisms_writes_the_same(
) {
    scenario(
        62,
        &[
            &["--state-backend", "lsm", "--parallelism", "2"],
            &["--state-backend", "lsm", "--parallelism", "3"],
        ],
    );
}
