//! `FROM t MATCH_RECOGNIZE (…)` lowers to one `pattern` operator whose params hold the
//! clauses as written (each character at its place in the script); the select list over it
//! becomes a map; what anduin does not support is an error at its line and column.

use anduin_spec::{parse_sql, OperatorDef, Spec, Text, Value};

const TABLES: &str = "CREATE TABLE ev (ts TIMESTAMP, sensor BIGINT, site BIGINT, value BIGINT)
WITH (connector = 'file', path = '${INPUT}', format = 'csv', event_time = 'ts', watermark = '2 seconds');
CREATE TABLE out WITH (connector = 'file', path = '${OUTPUT}', format = 'csv');
";

/// Q3 of the peer benchmark (shared/bench/QUERIES.md), ordered by anduin's time column `ts`
/// where Flink's has `rt`.
const Q3: &str = "INSERT INTO out
SELECT sensor, a_ts, first_ts, last_ts, b_cnt, d_cnt
FROM ev
MATCH_RECOGNIZE (
  PARTITION BY sensor
  ORDER BY ts
  MEASURES
    A.ts          AS a_ts,
    FIRST(A.ts)   AS first_ts,
    LAST(D.ts)    AS last_ts,
    COUNT(B.ts)   AS b_cnt,
    COUNT(D.ts)   AS d_cnt
  ONE ROW PER MATCH
  AFTER MATCH SKIP PAST LAST ROW
  PATTERN (A B+ C D+ E) WITHIN INTERVAL '10' SECOND
  DEFINE
    B AS (LAST(B.`value`, 1) IS NULL AND B.`value` < A.`value`)
         OR B.`value` < LAST(B.`value`, 1),
    C AS C.`value` > LAST(B.`value`) AND C.`value` < A.`value`,
    D AS D.`value` > A.`value`
         AND (LAST(D.`value`, 1) IS NULL OR D.`value` > LAST(D.`value`, 1)),
    E AS NOT (E.`value` > A.`value` AND E.`value` > LAST(D.`value`))
);";

fn spec(sql: &str) -> Spec {
    parse_sql(&format!("{TABLES}{sql}")).unwrap_or_else(|d| panic!("{sql}\n{d}"))
}

fn op<'s>(spec: &'s Spec, kind: &str) -> &'s OperatorDef {
    spec.operators
        .iter()
        .find(|o| o.kind.as_str() == kind)
        .unwrap_or_else(|| panic!("no {kind} operator"))
}

fn text<'o>(op: &'o OperatorDef, name: &str) -> Option<&'o Text> {
    op.params
        .iter()
        .find(|p| p.name.as_str() == name)
        .map(|p| match &p.value {
            Value::String(t) => t,
            other => panic!("param {name} is not a string: {other:?}"),
        })
}

/// The params of the pattern operator as (name, value).
fn pattern_params(sql: &str) -> Vec<(String, String)> {
    let spec = spec(sql);
    op(&spec, "pattern")
        .params
        .iter()
        .map(|p| {
            (
                p.name.as_str().to_string(),
                p.value.as_text().as_str().to_string(),
            )
        })
        .collect()
}

fn param(sql: &str, name: &str) -> Option<String> {
    pattern_params(sql)
        .into_iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v)
}

/// Where `needle` first occurs in `script`, as "line:col".
fn place(script: &str, needle: &str) -> String {
    let at = script
        .find(needle)
        .unwrap_or_else(|| panic!("no `{needle}`"));
    let before = &script[..at];
    let line = before.matches('\n').count() + 1;
    let col = before.chars().rev().take_while(|c| *c != '\n').count() + 1;
    format!("{line}:{col}")
}

/// A query over ev with the given clauses around `PATTERN (A B+ C)`.
fn over(clauses: &str) -> String {
    format!(
        "INSERT INTO out SELECT * FROM ev MATCH_RECOGNIZE (
  PARTITION BY sensor ORDER BY ts MEASURES LAST(B.ts) AS b_ts
  {clauses}
  DEFINE B AS B.value < PREV(B.value), C AS C.value > LAST(B.value)
);"
    )
}

/// The first error of `sql` after the tables, as "line:col: message".
fn error(sql: &str) -> String {
    match parse_sql(&format!("{TABLES}{sql}")) {
        Ok(_) => panic!("no error for {sql}"),
        Err(d) => d.0.first().map(|d| d.to_string()).unwrap_or_default(),
    }
}

#[test]
fn q3_lowers_to_a_pattern_operator_with_every_clause_as_a_param() {
    let spec = spec(Q3);
    let kinds: Vec<&str> = spec.operators.iter().map(|o| o.kind.as_str()).collect();
    assert_eq!(kinds, ["reader", "pattern", "map", "writer"]);
    let pattern = op(&spec, "pattern");
    assert_eq!(pattern.inputs[0].as_str(), "ev");
    let params = spec_params(&spec);
    let params: Vec<(&str, &str)> = params
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    let define = "B AS (LAST(B.`value`, 1) IS NULL AND B.`value` < A.`value`)
         OR B.`value` < LAST(B.`value`, 1), \
C AS C.`value` > LAST(B.`value`) AND C.`value` < A.`value`, \
D AS D.`value` > A.`value`
         AND (LAST(D.`value`, 1) IS NULL OR D.`value` > LAST(D.`value`, 1)), \
E AS NOT (E.`value` > A.`value` AND E.`value` > LAST(D.`value`))";
    assert_eq!(
        params,
        [
            ("partition_by", "sensor"),
            ("order_by", "ts"),
            ("pattern", "A B+ C D+ E"),
            ("define", define),
            (
                "measures",
                "A.ts AS a_ts, FIRST(A.ts) AS first_ts, LAST(D.ts) AS last_ts, COUNT(B.ts) AS b_cnt, COUNT(D.ts) AS d_cnt"
            ),
            ("rows_per_match", "one"),
            ("after_match", "skip past last row"),
            ("within", "10s"),
        ]
    );
    // The select list is a map over the pattern's output.
    let map = op(&spec, "map");
    assert_eq!(map.inputs[0].as_str(), pattern.name.as_str());
    assert_eq!(
        text(map, "columns").map(Text::as_str),
        Some("sensor, a_ts, first_ts, last_ts, b_cnt, d_cnt")
    );
    assert_eq!(op(&spec, "writer").inputs[0].as_str(), map.name.as_str());
}

#[test]
fn each_character_of_the_clauses_keeps_its_place_in_the_script() {
    let script = format!("{TABLES}{Q3}");
    let spec = spec(Q3);
    let pattern = op(&spec, "pattern");
    // (param, text in the param, where it is in the script)
    for (param, needle, there) in [
        ("pattern", "A B+ C D+ E", "A B+ C D+ E"),
        ("pattern", "D+ E", "D+ E"),
        (
            "define",
            "C.`value` > LAST(B.`value`) AND",
            "C.`value` > LAST(B.`value`) AND",
        ),
        ("define", "E AS NOT", "E AS NOT"),
        ("define", "LAST(D.`value`))", "LAST(D.`value`))"),
        ("measures", "LAST(D.ts)", "LAST(D.ts)"),
        ("measures", "d_cnt", "d_cnt\n  ONE"),
        ("partition_by", "sensor", "sensor\n  ORDER"),
        ("order_by", "ts", "ts\n  MEASURES"),
        ("within", "10s", "INTERVAL '10' SECOND"),
    ] {
        let t = text(pattern, param).unwrap_or_else(|| panic!("no {param}"));
        let offset = t
            .as_str()
            .find(needle)
            .unwrap_or_else(|| panic!("{needle}"));
        let at = t.pos_at_byte(offset);
        assert_eq!(
            format!("{}:{}", at.line, at.col),
            place(&script, there),
            "{param}: {needle}"
        );
    }
}

#[test]
fn the_example_script_is_q3() {
    let example = include_str!("../../../examples/q3.sql");
    let spec = parse_sql(example).unwrap_or_else(|d| panic!("{d}"));
    let ours = spec_params(&spec);
    assert_eq!(ours, spec_params(&self::spec(Q3)));
}

fn spec_params(spec: &Spec) -> Vec<(String, String)> {
    op(spec, "pattern")
        .params
        .iter()
        .map(|p| {
            (
                p.name.as_str().to_string(),
                p.value.as_text().as_str().to_string(),
            )
        })
        .collect()
}

#[test]
fn reluctant_and_greedy_patterns_pass_through_as_written() {
    // Q3r: the match ends at the first D; E is gone, with its DEFINE.
    let q3r = Q3.replace("PATTERN (A B+ C D+ E)", "PATTERN (A B+ C D+?)");
    let e_at = q3r.find(",\n    E AS").expect("E is defined");
    let q3r = format!("{}\n);", &q3r[..e_at]);
    assert_eq!(param(&q3r, "pattern").as_deref(), Some("A B+ C D+?"));
    // The paper's pattern, with a greedy last D+.
    let paper = Q3.replace("PATTERN (A B+ C D+ E)", "PATTERN (A B+ C D+)");
    assert_eq!(param(&paper, "pattern").as_deref(), Some("A B+ C D+"));
    assert_eq!(param(&paper, "within").as_deref(), Some("10s"));
    for p in [
        "(A | B)+ C{2,3}?",
        "A B*? C?? D{2,}? E{,3}",
        "A  (B C)*  D{4}",
        "A\n    B+",
    ] {
        let sql = over(&format!("PATTERN ({p})"));
        assert_eq!(param(&sql, "pattern").as_deref(), Some(p), "{p}");
    }
}

#[test]
fn all_rows_per_match_skip_forms_and_partitions_become_params() {
    let all = over("ALL ROWS PER MATCH PATTERN (A B+ C)");
    assert_eq!(param(&all, "rows_per_match").as_deref(), Some("all"));
    for (mode, expected) in [
        ("SHOW EMPTY MATCHES", "all show empty"),
        ("OMIT EMPTY MATCHES", "all omit empty"),
        ("WITH UNMATCHED ROWS", "all with unmatched"),
    ] {
        let sql = over(&format!("ALL ROWS PER MATCH {mode} PATTERN (A B+ C)"));
        assert_eq!(param(&sql, "rows_per_match").as_deref(), Some(expected));
    }
    assert_eq!(param(&over("PATTERN (A B+ C)"), "rows_per_match"), None);
    assert_eq!(param(&over("PATTERN (A B+ C)"), "after_match"), None);
    assert_eq!(param(&over("PATTERN (A B+ C)"), "within"), None);
    for (clause, expected) in [
        ("AFTER MATCH SKIP PAST LAST ROW", "skip past last row"),
        ("AFTER MATCH SKIP TO NEXT ROW", "skip to next row"),
        ("AFTER MATCH SKIP TO FIRST B", "skip to first B"),
        ("after match skip to last C", "skip to last C"),
        ("AFTER MATCH SKIP TO B", "skip to B"),
        // Unquoted variables are case-insensitive (issue 18): the operator folds them.
        ("AFTER MATCH SKIP TO LAST c", "skip to last c"),
        ("AFTER MATCH SKIP TO b", "skip to b"),
    ] {
        let sql = over(&format!("{clause} PATTERN (A B+ C)"));
        assert_eq!(
            param(&sql, "after_match").as_deref(),
            Some(expected),
            "{clause}"
        );
    }
    // Quoted ones keep their case: `"c"` is not `C`.
    let quoted = over(r#"AFTER MATCH SKIP TO LAST "c" PATTERN (A B+ "c")"#);
    assert_eq!(
        param(&quoted, "after_match").as_deref(),
        Some(r#"skip to last "c""#)
    );
    let err = error(&over(r#"AFTER MATCH SKIP TO LAST "c" PATTERN (A B+ C)"#));
    assert!(
        err.contains("is neither a variable of the pattern"),
        "{err}"
    );
    let two = over("PATTERN (A B+ C)").replace("PARTITION BY sensor", "PARTITION BY sensor, site");
    assert_eq!(param(&two, "partition_by").as_deref(), Some("sensor, site"));
    let none = over("PATTERN (A B+ C)").replace("PARTITION BY sensor", "");
    assert_eq!(param(&none, "partition_by"), None);
    assert_eq!(param(&none, "order_by").as_deref(), Some("ts"));
    for (within, expected) in [
        ("INTERVAL '500' MILLISECOND", "500ms"),
        ("INTERVAL '2' MINUTE", "120s"),
        ("INTERVAL '1.5' SECOND", "1500ms"),
    ] {
        let sql = over(&format!("PATTERN (A B+ C) WITHIN {within}"));
        assert_eq!(param(&sql, "within").as_deref(), Some(expected), "{within}");
    }
}

#[test]
fn measures_are_written_name_by_name_with_running_and_final() {
    let sql = over("ONE ROW PER MATCH PATTERN (A B+ C)").replace(
        "MEASURES LAST(B.ts) AS b_ts",
        "MEASURES FINAL LAST(B.ts) b_ts, RUNNING COUNT(B.*) AS n, MATCH_NUMBER() AS m, \"odd name\".x AS \"odd\"",
    );
    assert_eq!(
        param(&sql, "measures").as_deref(),
        Some("FINAL LAST(B.ts) AS b_ts, RUNNING COUNT(B.*) AS n, MATCH_NUMBER() AS m, \"odd name\".x AS \"odd\"")
    );
    let sql = over("PATTERN (A B+ C)").replace(
        "B AS B.value < PREV(B.value)",
        "B AS B.value < RUNNING LAST(B.value, 1) -- a comment, with a comma\n",
    );
    assert_eq!(
        param(&sql, "define").as_deref(),
        Some("B AS B.value < RUNNING LAST(B.value, 1), C AS C.value > LAST(B.value)")
    );
}

#[test]
fn where_and_the_select_list_apply_to_the_matches() {
    let sql = over("PATTERN (A B+ C)")
        .replace("SELECT *", "SELECT m.sensor, b_ts")
        .replace(");", ") AS m WHERE b_ts > 0;");
    let spec = spec(&sql);
    let kinds: Vec<&str> = spec.operators.iter().map(|o| o.kind.as_str()).collect();
    assert_eq!(kinds, ["reader", "pattern", "filter", "map", "writer"]);
    assert_eq!(op(&spec, "filter").inputs[0].as_str(), "insert1_pattern");
    assert_eq!(
        text(op(&spec, "filter"), "condition").map(Text::as_str),
        Some("b_ts > 0")
    );
    // `m.` is taken off the columns of the match, which keep their places.
    let sql = over("PATTERN (A B+ C)")
        .replace("SELECT *", "SELECT m.sensor, M.b_ts + 1 AS next, ev.x.y")
        .replace(");", ") AS m WHERE m.b_ts > 0;");
    let script = format!("{TABLES}{sql}");
    let spec = self::spec(&sql);
    let columns = text(op(&spec, "map"), "columns").expect("a map");
    assert_eq!(columns.as_str(), "sensor, b_ts + 1 AS next, ev.x.y");
    let at = columns.pos_at_byte(columns.as_str().find("b_ts").unwrap_or_default());
    assert_eq!(
        format!("{}:{}", at.line, at.col),
        place(&script, "b_ts + 1")
    );
    let condition = text(op(&spec, "filter"), "condition").map(Text::as_str);
    assert_eq!(condition, Some("b_ts > 0"));
}

#[test]
fn anchors_pass_through_as_written_however_sqlparser_lexes_them() {
    // sqlparser lexes `C$` as one word and `$A` as a placeholder.
    for p in ["^ A B+ C $", "^A B+ C$", "A B+ (C | $)", "A B+ C$$"] {
        let sql = over(&format!("AFTER MATCH SKIP TO LAST C PATTERN ({p})"));
        assert_eq!(param(&sql, "pattern").as_deref(), Some(p));
        assert_eq!(
            param(&sql, "after_match").as_deref(),
            Some("skip to last C")
        );
    }
}

#[test]
fn subset_becomes_a_param_and_a_skip_may_name_its_union_variable() {
    let sql = over("AFTER MATCH SKIP TO LAST u PATTERN (A B+ C) SUBSET U = (B, C), \"v\" = (A)")
        .replace(
            "LAST(B.ts) AS b_ts",
            "LAST(U.ts) AS b_ts, CLASSIFIER(U) AS cu",
        );
    assert_eq!(
        param(&sql, "subset").as_deref(),
        Some("U = (B, C), \"v\" = (A)")
    );
    assert_eq!(
        param(&sql, "after_match").as_deref(),
        Some("skip to last u")
    );
    assert_eq!(
        param(&sql, "measures").as_deref(),
        Some("LAST(U.ts) AS b_ts, CLASSIFIER(U) AS cu")
    );
}

#[test]
fn exclusion_passes_through_as_written() {
    let sql = over("ALL ROWS PER MATCH PATTERN (A {- B+ -} C)");
    assert_eq!(param(&sql, "pattern").as_deref(), Some("A {- B+ -} C"));
}

#[test]
fn permute_passes_through_as_written() {
    let sql = over("PATTERN (A PERMUTE(B+, (C | A)) C)");
    assert_eq!(
        param(&sql, "pattern").as_deref(),
        Some("A PERMUTE(B+, (C | A)) C")
    );
}

#[test]
fn order_by_the_event_time_then_tie_breakers() {
    let sql = over("PATTERN (A B+ C)").replace("ORDER BY ts", "ORDER BY ts, value DESC, site");
    assert_eq!(
        param(&sql, "order_by").as_deref(),
        Some("ts, value DESC, site")
    );
    let sql = over("PATTERN (A B+ C)").replace(
        "ORDER BY ts",
        "ORDER BY ts, value DESC NULLS LAST, site NULLS FIRST",
    );
    assert_eq!(
        param(&sql, "order_by").as_deref(),
        Some("ts, value DESC NULLS LAST, site NULLS FIRST")
    );
    let err = error(&over("PATTERN (A B+ C)").replace("ORDER BY ts", "ORDER BY ts, nope"));
    assert!(
        err.contains("ORDER BY: table `ev` has no column `nope`"),
        "{err}"
    );
}

#[test]
fn unsupported_clauses_are_errors_at_their_place() {
    let cases = [
        (
            over("PATTERN (A B+ C)").replace("ORDER BY ts", "ORDER BY ts DESC"),
            "DESC",
            "ORDER BY ts DESC is not supported",
        ),
        (
            over("PATTERN (A B+ C)").replace("ORDER BY ts", "ORDER BY ts NULLS FIRST, value"),
            "NULLS",
            "NULLS FIRST / LAST after the event time ts changes nothing",
        ),
        (
            over("PATTERN (A B+ C)").replace("ORDER BY ts", "ORDER BY value"),
            "value MEASURES",
            "ORDER BY ts (the event_time of table `ev`), not `value`",
        ),
        (
            over("PATTERN (A B+ C)").replace("ORDER BY ts", ""),
            "MATCH_RECOGNIZE",
            "needs ORDER BY",
        ),
        (over("PATTERN (A B, C)"), ", C", "unexpected `,` in PATTERN"),
        (
            over("PATTERN (A B+ C) WITHIN 10"),
            "10\n",
            "WITHIN takes an interval, such as WITHIN INTERVAL '10' SECOND, not `10`",
        ),
        (
            over("PATTERN (A B+ C) WITHIN INTERVAL '0' SECOND"),
            "'0' SECOND",
            "expected a positive interval",
        ),
        (
            over("AFTER MATCH SKIP TO FIRST U PATTERN (A B+ C)"),
            "U PATTERN",
            "AFTER MATCH SKIP TO FIRST U: `U` is neither a variable of the pattern, which has A, B, C, nor a SUBSET variable",
        ),
        (
            over("PATTERN (A B+ C)")
                .replace("B.value < PREV(B.value)", "B.value < FINAL LAST(B.value)"),
            "FINAL",
            "FINAL in DEFINE",
        ),
        (
            over("PATTERN (A B+ C)").replace("AS b_ts", "AS sensor"),
            "sensor\n",
            "two columns named `sensor`",
        ),
        (
            over("PATTERN (A B+ C)").replace(");", ") AS m (s, t);"),
            "m (s, t)",
            "column names after a MATCH_RECOGNIZE's alias (name the measures with AS, and the other columns in the select list) is not supported yet",
        ),
        (
            over("PATTERN (A B+ C)").replace(");", ") m JOIN ev ON m.sensor = ev.sensor;"),
            "MATCH_RECOGNIZE",
            "a join with MATCH_RECOGNIZE is not supported yet",
        ),
    ];
    for (sql, at, message) in cases {
        let script = format!("{TABLES}{sql}");
        let expected_at = place(&script, at);
        let e = error(&sql);
        assert!(
            e.starts_with(&format!("{expected_at}: ")) && e.contains(message),
            "{sql}\n  got {e}\n  expected {expected_at}: …{message}…"
        );
    }
}

#[test]
fn each_insert_gets_its_own_pattern_and_keywords_may_be_lower_case() {
    let sql = "CREATE TABLE out2 WITH (connector = 'discard');
INSERT INTO out SELECT * FROM ev match_recognize (
  order by ts measures count(*) as n pattern (a b+?) within interval '5' second
  define b as b.value > a.value) m;
INSERT INTO out2 SELECT * FROM ev MATCH_RECOGNIZE (
  PARTITION BY site ORDER BY ts PATTERN (X{3}) DEFINE X AS X.value > 0);";
    let spec = spec(sql);
    let kinds: Vec<&str> = spec.operators.iter().map(|o| o.kind.as_str()).collect();
    assert_eq!(
        kinds,
        ["reader", "pattern", "map", "writer", "pattern", "map", "discard"]
    );
    let patterns: Vec<Vec<(String, String)>> = spec
        .operators
        .iter()
        .filter(|o| o.kind.as_str() == "pattern")
        .map(|o| {
            o.params
                .iter()
                .map(|p| (p.name.as_str().into(), p.value.as_text().as_str().into()))
                .collect()
        })
        .collect();
    let pairs = |ps: &[(&str, &str)]| -> Vec<(String, String)> {
        ps.iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    };
    assert_eq!(
        patterns,
        [
            pairs(&[
                ("order_by", "ts"),
                ("pattern", "a b+?"),
                ("define", "b AS b.value > a.value"),
                ("measures", "count(*) AS n"),
                ("within", "5s"),
            ]),
            pairs(&[
                ("partition_by", "site"),
                ("order_by", "ts"),
                ("pattern", "X{3}"),
                ("define", "X AS X.value > 0"),
            ]),
        ]
    );
}

#[test]
fn a_syntax_error_after_a_blanked_clause_keeps_its_place() {
    let sql = over("PATTERN (A B+? C) WITHIN INTERVAL '1' SECOND")
        .replace("C AS C.value > LAST(B.value)", "C AS C.value > > 1");
    let script = format!("{TABLES}{sql}");
    let e = error(&sql);
    assert!(
        e.starts_with(&format!("{}: syntax error", place(&script, "> 1"))),
        "{e}"
    );
}

/// Row pattern recognition in a window (SQL:2016's R020, Oracle's and Trino's `WINDOW w AS
/// (… MEASURES … PATTERN … DEFINE …)`) is refused at the word the parser could not read,
/// naming what it is and saying to write MATCH_RECOGNIZE, not as a bare syntax error.
#[test]
fn row_pattern_recognition_in_a_window_is_refused_saying_to_write_match_recognize() {
    for (window, word) in [
        (
            "MEASURES A.ts AS a_ts ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING PATTERN (A B+)",
            "MEASURES",
        ),
        (
            "ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING PATTERN (A B+)",
            "PATTERN",
        ),
    ] {
        let sql = format!(
            "INSERT INTO out SELECT sensor, ts, COUNT(*) OVER w AS n FROM ev
WINDOW w AS (PARTITION BY sensor ORDER BY ts {window} DEFINE B AS B.value < PREV(B.value));"
        );
        let script = format!("{TABLES}{sql}");
        let e = error(&sql);
        assert!(
            e.starts_with(&format!(
                "{}: `{word}` in a window: row pattern recognition in a window",
                place(&script, &format!("{word} "))
            )) && e.contains("write the pattern as MATCH_RECOGNIZE"),
            "{e}"
        );
    }
}
