//! End-to-end: `examples/group_by.sql` (a GROUP BY without a window, with FILTER, COUNT
//! DISTINCT and a HAVING that a later row can make false) run one row per batch, so that
//! every order changes its customer's row: written with `mode = 'changelog'` it gives every change (`+I`, `-U`, `+U`, `-D`),
//! with `mode = 'upsert'` the same without the `-U` rows, in CSV and in JSON Lines, each
//! against its golden file and, apart from them, folding to the naive totals of the input.
//! `explain` says which operators are updating; an append-only output is refused before
//! anything runs, naming the operator that makes the stream updating.

use crate::common;

use std::collections::BTreeMap;

use common::{anduin, anduin_ok, assert_golden, fold_changes, golden, repo};

/// The query with its output written as `mode` (the example's own text otherwise).
fn query(dir: &std::path::Path, mode: &str) -> std::path::PathBuf {
    let text = std::fs::read_to_string(repo().join("examples/group_by.sql")).expect("example");
    let text = text.replace("mode = 'changelog'", mode);
    let path = dir.join("q.sql");
    std::fs::write(&path, text).expect("query");
    path
}

fn run(mode: &str, format: &str) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let q = query(dir.path(), &format!("{mode}, format = '{format}'"));
    let out = dir.path().join("out");
    anduin_ok(
        &repo(),
        &[
            "run",
            q.to_str().expect("utf-8"),
            "--var",
            "INPUT=data/orders.csv",
            "--var",
            &format!("OUTPUT={}", out.display()),
            "--batch-size",
            "1",
        ],
    );
    std::fs::read_to_string(&out).expect("output")
}

/// The naive totals of `data/orders.csv` per customer with at least two orders, all below 50:
/// `customer,orders,total,biggest,amounts,large`.
fn naive() -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(repo().join("data/orders.csv")).expect("input");
    let mut per: BTreeMap<String, Vec<Option<i64>>> = BTreeMap::new();
    for line in text.lines().skip(1) {
        let cols: Vec<&str> = line.split(',').collect();
        per.entry(cols[1].to_string())
            .or_default()
            .push(cols[2].parse().ok());
    }
    let opt = |v: Option<i64>| v.map_or(String::new(), |v| v.to_string());
    per.into_iter()
        .filter(|(_, a)| a.len() >= 2 && a.iter().flatten().all(|v| *v < 50))
        .map(|(c, a)| {
            let present: Vec<i64> = a.iter().flatten().copied().collect();
            let large: Vec<i64> = present.iter().filter(|v| **v >= 20).copied().collect();
            let row = format!(
                "{c},{},{},{},{},{}",
                a.len(),
                opt((!present.is_empty()).then(|| present.iter().sum())),
                opt(present.iter().max().copied()),
                present
                    .iter()
                    .collect::<std::collections::BTreeSet<_>>()
                    .len(),
                opt((!large.is_empty()).then(|| large.iter().sum())),
            );
            (c, row)
        })
        .collect()
}

#[test]
fn a_changelog_holds_every_change_and_folds_to_the_totals() {
    let csv = run("mode = 'changelog'", "csv");
    assert_golden(&golden().join("outputs/group_by.changelog.csv"), &csv);
    assert!(csv.lines().any(|l| l.starts_with("-U,")), "{csv}");
    assert!(csv.lines().any(|l| l.starts_with("-D,")), "{csv}");
    assert_eq!(fold_changes(csv.lines().skip(1), false), naive());
    let jsonl = run("mode = 'changelog'", "jsonl");
    assert_golden(&golden().join("outputs/group_by.changelog.jsonl"), &jsonl);
}

#[test]
fn an_upsert_output_leaves_the_update_befores_out_and_folds_to_the_totals() {
    let csv = run("mode = 'upsert', primary_key = 'customer'", "csv");
    assert_golden(&golden().join("outputs/group_by.upsert.csv"), &csv);
    assert!(!csv.lines().any(|l| l.starts_with("-U,")), "{csv}");
    assert_eq!(fold_changes(csv.lines().skip(1), true), naive());
}

#[test]
fn explain_names_the_updating_operators() {
    let out = anduin_ok(
        &repo(),
        &[
            "explain",
            "examples/group_by.sql",
            "--var",
            "INPUT=data/orders.csv",
            "--var",
            "OUTPUT=/dev/null",
        ],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("  orders [reader] append-only\n"), "{text}");
    assert!(
        text.contains("  insert1_group [aggregate] updating (+I -U +U -D)\n"),
        "{text}"
    );
    assert!(
        text.contains("  insert1_select [map] updating (from insert1_group)\n"),
        "{text}"
    );
    assert!(
        text.contains("  totals [writer] takes updating (from insert1_group)\n"),
        "{text}"
    );
}

/// `--format json` and `--format dot` say it too (issue 17's probe found only the text did):
/// each JSON operator has `"changes"` and, when updating, `"updating_from"`; dot labels the
/// updating operators as the text does and draws them and their streams bold.
#[test]
fn explain_as_json_and_as_dot_names_the_updating_operators_too() {
    let explain = |format: &str| {
        let out = anduin_ok(
            &repo(),
            &[
                "explain",
                "examples/group_by.sql",
                "--format",
                format,
                "--var",
                "INPUT=data/orders.csv",
                "--var",
                "OUTPUT=/dev/null",
            ],
        );
        String::from_utf8(out.stdout).expect("utf-8")
    };
    let json: serde_json::Value = serde_json::from_str(&explain("json")).expect("JSON");
    let operators = json["operators"].as_array().expect("operators");
    let of = |name: &str| {
        let op = operators
            .iter()
            .find(|o| o["name"] == name)
            .unwrap_or_else(|| panic!("no operator {name} in {json}"));
        (op["changes"].clone(), op["updating_from"].clone())
    };
    assert_eq!(
        of("orders"),
        ("append-only".into(), serde_json::Value::Null)
    );
    for name in ["insert1_group", "insert1_select", "totals"] {
        assert_eq!(
            of(name),
            ("updating".into(), "insert1_group".into()),
            "{name}"
        );
    }
    let dot = explain("dot");
    let line = |name: &str| {
        dot.lines()
            .find(|l| l.contains(&format!("label=\"{name}\\n")))
            .unwrap_or_else(|| panic!("no node {name} in {dot}"))
            .to_string()
    };
    assert!(
        line("insert1_group").ends_with("[aggregate]\\nupdating (+I -U +U -D)\", style=bold];"),
        "{dot}"
    );
    assert!(
        line("totals").ends_with("[writer]\\ntakes updating (from insert1_group)\", style=bold];"),
        "{dot}"
    );
    assert!(line("orders").ends_with("[reader]\"];"), "{dot}");
    assert!(
        dot.lines()
            .any(|l| l.contains("[label=\"insert1_group\", style=bold]")),
        "the aggregate's stream is drawn bold: {dot}"
    );
}

#[test]
fn an_append_only_output_of_a_group_by_is_refused_before_anything_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let q = query(dir.path(), "format = 'csv'");
    let out_path = dir.path().join("out.csv");
    let out = anduin(
        &repo(),
        &[
            "run",
            q.to_str().expect("utf-8"),
            "--var",
            "INPUT=data/orders.csv",
            "--var",
            &format!("OUTPUT={}", out_path.display()),
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The GROUP BY's SELECT: where the aggregate that makes the stream updating comes from.
    let text = std::fs::read_to_string(&q).expect("query");
    let select = 1 + text
        .lines()
        .position(|l| l.starts_with("SELECT"))
        .expect("a SELECT");
    assert!(
        stderr.contains("operator \"totals\" (writer) cannot take the updating stream")
            && stderr.contains(&format!(
                "because of operator \"insert1_group\" (aggregate) at {select}:1"
            )),
        "{stderr}"
    );
    assert!(!out_path.exists(), "nothing was written");
}
