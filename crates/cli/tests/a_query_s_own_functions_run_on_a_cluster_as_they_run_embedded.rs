//! Issue 21: user-defined functions on a cluster. `anduin submit` sends the query's
//! WebAssembly modules with it (those its `CREATE FUNCTION`s name, and its `--udf` modules);
//! the coordinator keeps them and writes them beside the query file, as each worker does
//! for its executors, so a query calling a WebAssembly function, an inline JavaScript one and
//! a `--udf` module's writes on a cluster what it writes embedded. Each query of a
//! coordinator has its functions to itself: two queries may declare one name, each its own
//! way. A coordinator restarted mid-run takes such a query over with the modules its catalog
//! kept. A module path that leaves the query file's folder is refused at submit.

use crate::common;
use common::cluster::{
    assert_submitted_output, restart_coordinator_after, windowed_generator, LocalCluster,
};
use common::udfs::{example_modules, orders_flow, ORDERS};
use common::{anduin_ok, output_rows, repo};

fn input() -> String {
    format!("INPUT={}", repo().join("data/orders.csv").display())
}

#[test]
fn a_wasm_a_javascript_and_a_udf_module_s_functions_write_what_they_write_embedded() {
    let work = tempfile::tempdir().expect("tempdir");
    example_modules(work.path());
    std::fs::write(
        work.path().join("q.sql"),
        format!(
            "CREATE FUNCTION shout(s VARCHAR) RETURNS VARCHAR LANGUAGE wasm AS 'udfs/shout.wasm';
CREATE FUNCTION twice(x BIGINT) RETURNS BIGINT LANGUAGE javascript AS $$ return 2 * x $$;
{ORDERS}INSERT INTO out
SELECT add_one(amount) AS next, shout(customer) AS who, twice(amount) AS doubled
FROM orders
WHERE add_one(amount) > 13;"
        ),
    )
    .expect("query");
    let input = input();
    let udf = ["--udf", "udfs/add_one.wasm"];
    anduin_ok(
        work.path(),
        &[
            &[
                "run",
                "q.sql",
                "--var",
                &input,
                "--var",
                "OUTPUT=embedded.csv",
            ][..],
            &udf[..],
        ]
        .concat(),
    );
    let expected = output_rows(&work.path().join("embedded.csv"));
    assert_eq!(expected.len(), 6, "{expected:?}");

    let cluster = LocalCluster::start(2, 8);
    let submit = cluster.submit(
        work.path(),
        "q.sql",
        &[
            &["--var", &input, "--var", "OUTPUT=out", "--parallelism", "2"][..],
            &udf[..],
        ]
        .concat(),
    );
    assert_submitted_output(&cluster, submit, &work.path().join("out"), &expected);
    // The workers loaded the modules sent with the query, written beside its file.
    let sent = |worker: &str| {
        std::fs::read_dir(cluster.dir.path().join(worker))
            .expect("the worker's folder")
            .filter_map(Result::ok)
            .any(|part| {
                part.path().join("udfs/shout.wasm").is_file()
                    && part.path().join("udf-modules/0-add_one.wasm").is_file()
            })
    };
    assert!(sent("w0") || sent("w1"), "{}", cluster.logs());
}

#[test]
fn a_flow_query_s_udf_block_sends_its_module_too() {
    let work = tempfile::tempdir().expect("tempdir");
    example_modules(work.path());
    std::fs::write(
        work.path().join("q.flow"),
        orders_flow(Some("udfs/add_one.wasm")),
    )
    .expect("query");
    let input = input();
    anduin_ok(
        work.path(),
        &[
            "run",
            "q.flow",
            "--var",
            &input,
            "--var",
            "OUTPUT=embedded.csv",
        ],
    );
    let expected = output_rows(&work.path().join("embedded.csv"));
    assert_eq!(expected, ["41,20.0,bob", "91,45.0,alice"]);
    let cluster = LocalCluster::start(1, 8);
    let submit = cluster.submit(
        work.path(),
        "q.flow",
        &["--var", &input, "--var", "OUTPUT=out"],
    );
    assert_submitted_output(&cluster, submit, &work.path().join("out"), &expected);
    // Its JSON form (`"udfs"`), under the same name: its module is sent too, never the one
    // the first left in the coordinator's and the workers' folders. Its module differs.
    let json = anduin_ok(work.path(), &["explain", "q.flow", "--format", "json"]);
    std::fs::write(work.path().join("q.json"), &json.stdout).expect("json");
    let times = std::fs::read_to_string(repo().join("examples/udfs/add_one.wat"))
        .expect("module")
        .replace("i64.const 1\n    i64.add", "i64.const 1000\n    i64.mul");
    std::fs::write(work.path().join("udfs/add_one.wasm"), times).expect("module");
    anduin_ok(
        work.path(),
        &[
            "run",
            "q.json",
            "--var",
            &input,
            "--var",
            "OUTPUT=embedded-json.csv",
        ],
    );
    let expected = output_rows(&work.path().join("embedded-json.csv"));
    assert!(
        expected.iter().any(|r| r.starts_with("30000,")),
        "{expected:?}"
    );
    let submit = cluster.submit(
        work.path(),
        "q.json",
        &["--name", "q", "--var", &input, "--var", "OUTPUT=out-json"],
    );
    assert_submitted_output(&cluster, submit, &work.path().join("out-json"), &expected);
}

#[test]
fn two_queries_of_one_coordinator_declare_one_name_each_their_own_way() {
    let work = tempfile::tempdir().expect("tempdir");
    let input = input();
    let cluster = LocalCluster::start(1, 8);
    for (name, body) in [("plus", "return x + 1"), ("times", "return x * 10")] {
        std::fs::write(
            work.path().join(format!("{name}.sql")),
            format!(
                "CREATE FUNCTION f(x BIGINT) RETURNS BIGINT LANGUAGE javascript AS $$ {body} $$;
{ORDERS}INSERT INTO out SELECT f(amount) AS v, customer FROM orders WHERE amount IS NOT NULL;"
            ),
        )
        .expect("query");
    }
    // Both running at once: the second is planned while the first runs.
    let plus = cluster.submit(
        work.path(),
        "plus.sql",
        &["--var", &input, "--var", "OUTPUT=plus"],
    );
    let times = cluster.submit(
        work.path(),
        "times.sql",
        &["--var", &input, "--var", "OUTPUT=times"],
    );
    // The rows each must write (data rows start with a digit: see `output_rows`).
    let rows = |f: &dyn Fn(i64) -> i64| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_to_string(repo().join("data/orders.csv"))
            .expect("orders")
            .lines()
            .skip(1)
            .filter_map(|l| {
                let cols: Vec<&str> = l.split(',').collect();
                let amount: i64 = cols.get(2)?.trim().parse().ok()?;
                Some(format!("{},{}", f(amount), cols[1]))
            })
            .collect();
        v.sort();
        v
    };
    assert_submitted_output(&cluster, plus, &work.path().join("plus"), &rows(&|a| a + 1));
    assert_submitted_output(
        &cluster,
        times,
        &work.path().join("times"),
        &rows(&|a| a * 10),
    );
}

#[test]
fn a_coordinator_restarted_mid_run_takes_over_with_the_modules_its_catalog_kept() {
    let work = tempfile::tempdir().expect("tempdir");
    example_modules(work.path());
    let query = windowed_generator(
        7,
        60_000,
        20_000,
        r#"param kind = "tumbling" param size = "100ms""#,
    )
    .replace("SUM(value) AS total", "SUM(add_one(value)) AS total");
    std::fs::write(work.path().join("q.flow"), query).expect("query");
    let udf = ["--udf", "udfs/add_one.wasm"];
    anduin_ok(
        work.path(),
        &[
            &["run", "q.flow", "--var", "OUTPUT=embedded.csv"][..],
            &udf[..],
        ]
        .concat(),
    );
    let expected = output_rows(&work.path().join("embedded.csv"));
    let mut cluster = LocalCluster::start(2, 8);
    let submit = cluster.submit(
        work.path(),
        "q.flow",
        &[
            &[
                "--var",
                "OUTPUT=out",
                "--parallelism",
                "2",
                "--checkpoint-every",
                "4000",
            ][..],
            &udf[..],
        ]
        .concat(),
    );
    restart_coordinator_after(&mut cluster, "q", 2);
    let logs = assert_submitted_output(&cluster, submit, &work.path().join("out"), &expected);
    // The whole log: `logs` keeps each process's last lines only.
    assert!(cluster.coordinator_log().contains("taken over"), "{logs}");
}

#[test]
fn a_refused_submission_under_a_running_query_s_name_leaves_its_files_alone() {
    let (first, second) = (
        tempfile::tempdir().expect("tempdir"),
        tempfile::tempdir().expect("tempdir"),
    );
    let query = windowed_generator(
        3,
        1_000_000_000,
        1_000,
        r#"param kind = "tumbling" param size = "1s""#,
    )
    .replace("SUM(value) AS total", "SUM(add_one(value)) AS total");
    for (work, text) in [(&first, "(module)"), (&second, "(module (memory 1))")] {
        example_modules(work.path());
        std::fs::write(
            work.path().join("q.flow"),
            format!("udf path = \"udfs/add_one.wasm\"\n{query}"),
        )
        .expect("query");
        // What tells the two modules apart, sent with each.
        std::fs::write(work.path().join("udfs/other.wat"), text).expect("module");
    }
    let first_flow = std::fs::read_to_string(first.path().join("q.flow")).expect("query");
    std::fs::write(
        second.path().join("q.flow"),
        format!("udf path = \"udfs/other.wat\"\n{first_flow}"),
    )
    .expect("query");
    let cluster = LocalCluster::start(1, 8);
    let _running = cluster.submit(first.path(), "q.flow", &["--var", "OUTPUT=out"]);
    common::wait_until("the first query runs", || {
        cluster.status("q")["state"] == "running"
    });
    let refused = cluster
        .submit(second.path(), "q.flow", &["--var", "OUTPUT=out"])
        .wait_output();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success() && stderr.contains("is already running"),
        "{stderr}"
    );
    // The running query's copy of its file is its own, and no module of the other was
    // written beside it.
    let kept = cluster.dir.path().join("coordinator/queries/q");
    assert_eq!(
        std::fs::read_to_string(kept.join("q.flow")).expect("kept"),
        first_flow
    );
    assert!(!kept.join("udfs/other.wat").exists());
}

#[test]
fn a_module_outside_the_query_s_folder_is_refused_at_submit_naming_it() {
    let work = tempfile::tempdir().expect("tempdir");
    let query = work.path().join("q");
    std::fs::create_dir_all(&query).expect("folder");
    example_modules(work.path());
    std::fs::write(
        query.join("q.sql"),
        format!(
            "CREATE FUNCTION shout(s VARCHAR) RETURNS VARCHAR LANGUAGE wasm AS '../udfs/shout.wasm';
{ORDERS}INSERT INTO out SELECT shout(customer) AS who FROM orders;"
        ),
    )
    .expect("query");
    let cluster = LocalCluster::start(1, 8);
    let out = cluster
        .submit(&query, "q.sql", &["--var", &input(), "--var", "OUTPUT=out"])
        .wait_output();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && stderr.contains("function `shout`")
            && stderr.contains("`../udfs/shout.wasm` is not inside the query file's folder"),
        "{stderr}"
    );
}

#[test]
fn a_function_failing_on_a_row_on_a_cluster_names_the_query_file_as_the_user_gave_it() {
    let work = tempfile::tempdir().expect("tempdir");
    let folder = work.path().join("queries");
    std::fs::create_dir_all(&folder).expect("folder");
    let wasm = wat::parse_file(repo().join("crates/udf/testdata/hostile.wat")).expect("valid");
    std::fs::write(folder.join("hostile.wasm"), wasm).expect("module");
    std::fs::write(
        folder.join("q.sql"),
        format!(
            "CREATE FUNCTION boom(x BIGINT) RETURNS BIGINT LANGUAGE wasm AS 'hostile.wasm';
{ORDERS}INSERT INTO out SELECT customer, boom(amount) AS r FROM orders;"
        ),
    )
    .expect("query");
    let args = ["--var", &input(), "--on-error", "fail"];
    // Embedded, the place is `queries/q.sql:5:34`. (Its output stays, as a run that fails
    // while running keeps what it made: the cluster's goes elsewhere.)
    let out = common::anduin(
        work.path(),
        &[
            &[
                "run",
                "queries/q.sql",
                "--no-api",
                "--var",
                "OUTPUT=embedded.csv",
            ][..],
            &args[..],
        ]
        .concat(),
    );
    let embedded = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && embedded.contains("`boom(amount)` failed at queries/q.sql:5:34"),
        "{embedded}"
    );
    let cluster = LocalCluster::start(1, 8);
    let out = cluster
        .submit(
            work.path(),
            "queries/q.sql",
            &[&args[..], &["--var", "OUTPUT=out"][..]].concat(),
        )
        .wait_output();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && stderr.contains("function `boom` trapped")
            && stderr.contains("`boom(amount)` failed at queries/q.sql:5:34"),
        "{stderr}\n{}",
        cluster.logs()
    );
    // Never the executor's copy of the file.
    let copies = cluster.dir.path().display().to_string();
    assert!(!stderr.contains(&copies), "{stderr}");
}
