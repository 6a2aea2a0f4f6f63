//! `anduin run q.flow --rules FILE` with rules that reshape the graph (paper §4.2,
//! docs/rewriting.md): they are applied once, to the query as written, before it runs, and
//! the rewritten query is what runs — the paper's own hot-standby rule for a filter (copies
//! behind a stream selector), a filter a rule puts before the sink, and a window partitioned
//! by a hand-written splitter and merge. `anduin explain --rules` shows the plan of what runs.
//! A filter split by ranges of a column's value (a rule's `splitter{by = "range"}`, or
//! `param ranges`) gives the same output.
//! What cannot run is refused before anything runs, saying why: a splitter by round robin, a
//! type anduin has no operator for, a rewritten query that does not check (copies behind a
//! selector are checked as a hot standby: no volatile function), a reshaping rule that reads a
//! measured figure.

use crate::common;

use common::{anduin, repo, run_sorted};

/// The paper's rule (§4.2), as a user writes it.
const PAPER_HOT_STANDBY: &str = "# hot standby for a stateless filter
rule hot_filter:
  a2 := any(f := filter(a1 := any*)) [stateless(f)]
    => a2(stream-selector(failover(writer(f(reader(multicast(a1))))) | @{p1} | @{p2}))
";

/// Readings below 42, counted per sensor in windows of 10 s.
const QUERY: &str = r#"type name = "Reading" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "source", type = "reader" {
  param path = "${INPUT}"
  param format = "csv"
  output name = "readings", type = "Reading"
}
operator name = "low", type = "filter" {
  input name = "readings"
  param condition = "readings.value < 42"
  output name = "lowReadings", type = "Reading"
}
operator name = "per_sensor", type = "window" {
  input name = "lowReadings"
  param kind = "tumbling"
  param size = "10s"
  param time = "ts"
  param keys = "sensor"
  param aggregates = "COUNT(*) AS n, MAX(value) AS hi"
  output name = "counts"
}
operator name = "sink", type = "writer" {
  input name = "counts"
  param path = "${OUTPUT}"
  param format = "csv"
}
"#;

/// The query, written once per test binary run into a directory that lives as long.
fn query() -> std::path::PathBuf {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    let dir = DIR.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("q.flow"), QUERY).expect("query");
        dir
    });
    dir.path().join("q.flow")
}

/// `rules` written to a file in `dir`, and its path.
fn rule_file(dir: &std::path::Path, rules: &str) -> String {
    let path = dir.join("r.rules");
    std::fs::write(&path, rules).expect("rules");
    path.display().to_string()
}

/// The sorted output of the query over the readings, written to `name` in `dir`, with `extra`
/// flags.
fn sensors(dir: &std::path::Path, name: &str, extra: &[&str]) -> Vec<String> {
    sensors_of(&query(), dir, name, extra)
}

/// [`sensors`] of the query with `from` replaced by `to` in its text (written to `dir`).
fn sensors_edited(dir: &std::path::Path, from: &str, to: &str, name: &str) -> Vec<String> {
    let text = std::fs::read_to_string(query()).expect("query");
    let edited = text.replacen(from, to, 1);
    assert_ne!(edited, text, "{from:?} is in the query");
    let path = dir.join("edited.flow");
    std::fs::write(&path, edited).expect("query");
    sensors_of(&path, dir, name, &[])
}

fn sensors_of(
    query: &std::path::Path,
    dir: &std::path::Path,
    name: &str,
    extra: &[&str],
) -> Vec<String> {
    let out = dir.join(name);
    let (run, rows) = run_sorted(query, "data/readings.csv", &out, extra);
    assert!(
        run.status.success(),
        "{extra:?}: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(rows.len() > 10, "{rows:?}");
    rows
}

/// `anduin explain QUERY --rules RULES EXTRA…` over the readings.
fn explain_of(query: &std::path::Path, rules: &str, extra: &[&str]) -> std::process::Output {
    let query = query.to_str().expect("utf-8");
    let mut args = vec!["explain", query, "--rules", rules];
    args.extend(extra);
    args.extend([
        "--var",
        "INPUT=data/readings.csv",
        "--var",
        "OUTPUT=/dev/null",
    ]);
    anduin(&repo(), &args)
}

/// The plan of the query as the rules of the file `rules` rewrite it.
fn explain(rules: &str) -> String {
    let out = explain_of(&query(), rules, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_papers_hot_standby_rule_runs_the_copies_behind_a_selector_with_the_same_output() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let plain = sensors(d, "plain.csv", &[]);
    let rules = rule_file(d, PAPER_HOT_STANDBY);
    let plan = explain(&rules);
    for task in ["low_replica_1", "stream-selector_1"] {
        assert!(plan.contains(task), "{task} in {plan}");
    }
    assert_eq!(sensors(d, "hot.csv", &["--rules", &rules]), plain);
}

#[test]
fn a_filter_a_rule_puts_before_the_sink_filters_what_is_written() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let plain = sensors(d, "plain.csv", &[]);
    let rules = rule_file(
        d,
        "rule busy_sensors_only:\n  s := writer(a := any) => s(filter{condition = \"n > 1\"}(a))\n",
    );
    let plan = explain(&rules);
    assert!(plan.contains("filter_1"), "{plan}");
    let filtered = sensors(d, "filtered.csv", &["--rules", &rules]);
    // The header, then the rows whose count `n` (the second column) is above 1.
    let header = plain.iter().find(|l| l.contains(",n,")).cloned();
    let n_of = |l: &str| l.split(',').nth(3).and_then(|n| n.parse::<i64>().ok());
    let expected: Vec<String> = plain
        .iter()
        .filter(|l| Some((*l).clone()) == header || n_of(l).is_some_and(|n| n > 1))
        .cloned()
        .collect();
    assert!(expected.len() < plain.len(), "the filter drops rows");
    assert_eq!(filtered, expected);
}

#[test]
fn a_window_split_by_a_hand_written_splitter_and_merge_runs_in_parallel_with_the_same_output() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let plain = sensors(d, "plain.csv", &[]);
    let rules = rule_file(
        d,
        "rule by_hand:\n  w := window(a := any*)\n    => merge(w(splitter{by = \"key-group\"}(a)) | @{p1} | @{p2} | @{p3})\n",
    );
    let plan = explain(&rules);
    assert!(
        plan.contains("per_sensor (3 instances)"),
        "three instances of the window: {plan}"
    );
    assert_eq!(sensors(d, "split.csv", &["--rules", &rules]), plain);
}

#[test]
fn what_cannot_run_is_refused_before_anything_runs_saying_why() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let refused = |rules: &str, says: &str| {
        let path = rule_file(d, rules);
        let out_path = d.join("never.csv");
        let out = anduin(
            &repo(),
            &[
                "run",
                query().to_str().expect("utf-8"),
                "--var",
                "INPUT=data/readings.csv",
                "--var",
                &format!("OUTPUT={}", out_path.display()),
                "--no-api",
                "--rules",
                &path,
            ],
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{rules} must be refused");
        assert!(stderr.contains(says), "{rules}: {stderr}");
        assert!(!out_path.exists(), "nothing ran");
    };
    // A keyed window's state goes by key group: a range of values would split a group.
    refused(
        "w := window(a := any*) => merge(w(splitter{by = \"range\", ranges = \"sensor: 3\"}(a)) | @{p1} | @{p2})",
        "a splitter by `range` would put the keys of one key group on several instances of \"per_sensor\"",
    );
    refused(
        "f := filter(a := any*) => merge(f(splitter{by = \"range\"}(a)) | @{p1} | @{p2})",
        "a splitter by `range` says where to split",
    );
    refused(
        "f := filter(a := any*) => merge(f(splitter{by = \"range\", ranges = \"value: 10, 20\"}(a)) | @{p1} | @{p2})",
        "make 3 instances of \"low\", and 2 copies of it are merged: give one bound fewer than the copies",
    );
    refused(
        "f := filter(a := any*) => merge(f(splitter{by = \"hash\"}(a)) | @{p1} | @{p2})",
        "a splitter by `hash` is not supported",
    );
    refused(
        "f := filter => frobnicate(f)",
        "anduin has no operator of type `frobnicate`",
    );
    refused(
        "s := writer(a := any) => s(filter{condition = \"no_such_column > 1\"}(a))",
        "no_such_column",
    );
    // Copies behind a selector are a hot standby: a volatile function would make them differ.
    refused(
        "s := writer(a := any*) => s(stream-selector(filter{condition = \"random() < 0.5\"}(a) | @{p1} | @{p2}))",
        "gives another value in each copy of a hot standby",
    );
    // A chain copied whole behind one selector.
    refused(
        "a2 := any(w := window(f := filter(a1 := any*)))\n  => a2(stream-selector(w(f(multicast(a1))) | @{p1} | @{p2}))",
        "copies of a chain of operators behind one selector are not supported yet",
    );
    // A rule that removes the sink.
    refused(
        "s := writer(a := any) => writer(a)",
        "\"sink\" of the rewritten query cannot run: the rules removed it",
    );
    // Instances of one operator with other params than each other.
    refused(
        "rule by_hand:\n  w := window(a := any*) => merge(w(splitter{by = \"key-group\"}(a)) | @{p1} | @{p2})\n\
         rule tweak:\n  m := merge(x := window(a := any*), y := window(b := any*)) => m(x, y{size = \"2s\"})",
        "whose params differ",
    );
    refused(
        "\nrule busy: f := filter [busy(f) > 0.5] => merge(f)",
        "r.rules:2:1: rule busy: it reads the figure `busy`",
    );
}

#[test]
fn the_slots_a_rule_names_go_with_the_operators_that_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let plain = sensors(d, "plain.csv", &[]);
    let rules = rule_file(
        d,
        "rule apart:\n  s := writer(w := window(a := any*))\n    => s@{p1}(w{pipeline = \"split\"}@{p2}(a))\n",
    );
    let out = explain_of(&query(), &rules, &["--format", "json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let param = |op: &str, key: &str| {
        v["operators"]
            .as_array()
            .and_then(|ops| ops.iter().find(|o| o["name"] == op))
            .map(|o| o["params"][key].clone())
    };
    // Distinct slots of one group: distinct workers on a cluster (docs/rewriting.md).
    assert_eq!(param("sink", "placement"), Some("sink.p1".into()));
    assert_eq!(param("per_sensor", "placement"), Some("sink.p2".into()));
    assert_eq!(param("per_sensor", "pipeline"), Some("split".into()));
    // An embedded run has one process: the slots change nothing of the output.
    assert_eq!(sensors(d, "apart.csv", &["--rules", &rules]), plain);
}

#[test]
fn a_filter_split_by_round_robin_runs_in_instances_that_take_rows_in_turn() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let plain = sensors(d, "plain.csv", &[]);
    // By a rule's splitter, and by the filter's own param: the same plan, the same output.
    let rules = rule_file(
        d,
        "rule in_turn:\n  f := filter(a := any*)\n    => merge(f(splitter{by = \"round-robin\"}(a)) | @{p1} | @{p2} | @{p3})\n",
    );
    let plan = explain(&rules);
    assert!(plan.contains("low (3 instances)"), "{plan}");
    assert!(plan.contains("round robin"), "{plan}");
    assert_eq!(sensors(d, "rule.csv", &["--rules", &rules]), plain);
    let by_param = sensors_edited(
        d,
        "param condition = \"readings.value < 42\"",
        "param condition = \"readings.value < 42\"\n  param parallelism = 3",
        "param.csv",
    );
    assert_eq!(by_param, plain);
    // A keyed window's rows cannot be dealt in turn: each instance owns its keys.
    let rules = rule_file(
        d,
        "w := window(a := any*) => merge(w(splitter{by = \"round-robin\"}(a)) | @{p1} | @{p2})",
    );
    let out = explain_of(&query(), &rules, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("would deal a key's rows to several instances of \"per_sensor\""),
        "{stderr}"
    );
}

#[test]
fn a_filter_split_by_ranges_runs_an_instance_per_range_of_a_column() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let plain = sensors(d, "plain.csv", &[]);
    // By a rule's splitter, and by the filter's own param: the same plan, the same output.
    let rules = rule_file(
        d,
        "rule by_value:\n  f := filter(a := any*)\n    => merge(f(splitter{by = \"range\", ranges = \"value: 45, 52\"}(a)) | @{p1} | @{p2} | @{p3})\n",
    );
    let plan = explain(&rules);
    assert!(plan.contains("low (3 instances)"), "{plan}");
    assert!(
        plan.contains("by ranges of value split at 45, 52"),
        "{plan}"
    );
    assert_eq!(sensors(d, "rule.csv", &["--rules", &rules]), plain);
    let condition = "param condition = \"readings.value < 42\"";
    let by_param = sensors_edited(
        d,
        condition,
        &format!("{condition}\n  param ranges = \"value: 45, 52\""),
        "param.csv",
    );
    assert_eq!(by_param, plain);
    // The param is what the built-in rule `partitioning_range` reads.
    let edited = d.join("edited.flow");
    let out = anduin(
        &repo(),
        &[
            "explain",
            edited.to_str().expect("utf-8"),
            "--rewritten",
            "--var",
            "INPUT=x",
            "--var",
            "OUTPUT=y",
        ],
    );
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains("partitioning_range at low"), "{shown}");
    assert!(
        shown.contains("splitter{by = \"range\", n = \"3\", ranges = \"value: 45, 52\"}"),
        "{shown}"
    );
    // Ranges that cannot split the filter's input are refused at the param.
    for (ranges, says) in [
        (
            "value: 52, 45",
            "`ranges` bounds must increase, and \"45\" is not above \"52\"",
        ),
        (
            "volume: 10",
            "`ranges` splits by column \"volume\", which the input does not have",
        ),
        (
            "value: ten",
            "`ranges` bound \"ten\" is not a value of column \"value\"",
        ),
        ("value 10", "`ranges` is `COLUMN: BOUND, BOUND, …`"),
    ] {
        let text = std::fs::read_to_string(query()).expect("query");
        let edited = text.replacen(
            condition,
            &format!("{condition}\n  param ranges = \"{ranges}\""),
            1,
        );
        let path = d.join("bad.flow");
        std::fs::write(&path, edited).expect("query");
        let out = anduin(
            &repo(),
            &[
                "check",
                path.to_str().expect("utf-8"),
                "--var",
                "INPUT=x",
                "--var",
                "OUTPUT=y",
            ],
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{ranges} must be refused");
        assert!(stderr.contains(says), "{ranges}: {stderr}");
        assert!(
            stderr.contains("bad.flow:"),
            "{ranges}: the error points into the file: {stderr}"
        );
    }
}

#[test]
fn a_rule_that_only_sets_params_and_reads_no_figure_applies_before_the_query_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let rules = rule_file(d, "w := window => w{size = \"20s\"}\n");
    let by_rule = sensors(d, "rule.csv", &["--rules", &rules]);
    let by_hand = sensors_edited(
        d,
        "param size = \"10s\"",
        "param size = \"20s\"",
        "hand.csv",
    );
    assert_eq!(by_rule, by_hand);
    assert_ne!(
        by_rule,
        sensors(d, "plain.csv", &[]),
        "20 s windows differ from 10 s ones"
    );
}

/// A window with a second output (its late rows), each read by a sink.
const TWO_OUTPUTS: &str = r#"type name = "Reading" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "source", type = "reader" {
  param path = "${INPUT}"
  param format = "csv"
  output name = "readings", type = "Reading"
}
operator name = "per_sensor", type = "window" {
  input name = "readings"
  param kind = "tumbling"
  param size = "1s"
  param time = "ts"
  param keys = "sensor"
  param aggregates = "COUNT(*) AS n"
  param late_output = "late"
  output name = "counts"
  output name = "late"
}
operator name = "sink", type = "writer" {
  input name = "counts"
  param path = "${OUTPUT}"
  param format = "csv"
}
operator name = "latesink", type = "writer" {
  input name = "late"
  param path = "${OUTPUT}.late"
  param format = "csv"
}
"#;

#[test]
fn a_rule_making_an_operator_read_one_of_several_outputs_is_refused_not_guessed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    std::fs::write(d.join("late.flow"), TWO_OUTPUTS).expect("query");
    let rules = rule_file(
        d,
        "s := writer(a := any) [param(s, \"format\") = \"csv\"] => s(filter{condition = \"true\"}(a))",
    );
    let out = explain_of(&d.join("late.flow"), &rules, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("\"per_sensor\"")
            && stderr.contains("which output it reads cannot be told"),
        "{stderr}"
    );
}
