//! Issue 21: the states of user aggregates in a GROUP BY without a window are checkpointed as
//! the built-in aggregates' are. JavaScript and WebAssembly aggregates (`js_sum`, `js_max`,
//! `int_avg`) per sensor over the events (append-only), and per bucket of sensors over that
//! GROUP BY's changes (updating: their `retract` takes the `-U` rows out), written as a
//! changelog, killed with SIGKILL at seeded random moments and resumed from its checkpoints,
//! fold to the table an uninterrupted run's changelog folds to; and that table is the one the
//! same query with `SUM`, `MAX` and `AVG` gives. In the heap and in the LSM backend, and
//! resumed at another parallelism (the groups re-cut by key group).

use crate::common;

use common::killed::killed_then_finished_query;
use common::udfs::{int_avg_module, RETRACTING_AGGREGATES};
use common::{anduin_ok, fold_changes, rows_in_order};

/// Per bucket of sensors `hi % 4`, over per sensor, with the aggregates `sum`, `max`, `avg`.
fn query(sum: &str, max: &str, avg: &str) -> String {
    format!(
        r#"{RETRACTING_AGGREGATES}
CREATE TABLE events (ts TIMESTAMP, sensor BIGINT, value BIGINT)
WITH (connector = 'generator', profile = 'events', seed = '13', count = '60000', rate = '40000', event_time = 'ts');
CREATE TABLE out WITH (connector = 'file', path = '${{OUTPUT}}', mode = 'changelog');
INSERT INTO out
SELECT hi % 4 AS bucket, {sum}(total) AS total, {max}(n) AS most, {avg}(n) AS mean, COUNT(*) AS sensors
FROM (SELECT sensor, COUNT(*) AS n, {max}(value) AS hi, {sum}(value) AS total FROM events GROUP BY sensor) s
GROUP BY hi % 4;
"#
    )
}

fn scenario(seeds: &[u64], extra: &[&[&str]]) {
    for &seed in seeds {
        let dir = tempfile::tempdir().expect("tempdir");
        int_avg_module(dir.path());
        // The built-in aggregates' table, uninterrupted.
        std::fs::write(dir.path().join("q.sql"), query("SUM", "MAX", "AVG")).expect("query");
        let run = |output: &str| {
            anduin_ok(
                dir.path(),
                &[
                    "run",
                    "q.sql",
                    "--no-api",
                    "--var",
                    &format!("OUTPUT={output}"),
                    "--batch-size",
                    "500",
                ],
            )
        };
        run("builtin.csv");
        let fold = |rows: &[String]| fold_changes(rows.iter().map(String::as_str), false);
        let builtin = fold(&rows_in_order(&dir.path().join("builtin.csv")));
        assert!(builtin.len() > 1, "{builtin:?}");

        // The user aggregates' table, uninterrupted: the same.
        std::fs::write(
            dir.path().join("q.sql"),
            query("js_sum", "js_max", "int_avg"),
        )
        .expect("query");
        run("reference.csv");
        let reference = rows_in_order(&dir.path().join("reference.csv"));
        assert!(
            reference.iter().any(|r| r.starts_with("-U,")),
            "the reference updates its groups"
        );
        let expected = fold(&reference);
        assert_eq!(
            expected, builtin,
            "user aggregates give the built-ins' table"
        );

        let got = fold(&killed_then_finished_query(
            dir.path(),
            "q.sql",
            seed,
            extra,
        ));
        assert!(
            got == expected,
            "seed {seed}: the resumed changelog folds to another table than the uninterrupted one: {got:?} vs {expected:?}"
        );
    }
}

#[test]
fn a_killed_group_by_through_user_aggregates_resumes_to_the_folded_output_of_an_uninterrupted_one()
{
    scenario(&[41], &[&[]]);
}

#[test]
fn a_killed_group_by_through_user_aggregates_in_the_lsm_backend_resumed_at_another_parallelism_folds_the_same(
) {
    scenario(
        &[42],
        &[
            &["--state-backend", "lsm", "--parallelism", "2"],
            &["--state-backend", "lsm", "--parallelism", "3"],
        ],
    );
}
