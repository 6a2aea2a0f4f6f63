//! Issue 18: inside DEFINE and MEASURES a pattern takes the expression language of a `map`
//! (DataFusion's scalar functions, `LIKE`, `IN`, `CASE`, `IF`, `||`, `DECIMAL`), aggregates
//! over expressions (`AVG(CAST(B.value AS DOUBLE))`, `max(B.value + MATCH_NUMBER())`,
//! `SUM(PREV(B.value))`,
//! `count()`, `max_by`, `min_by`, `bool_and`, `bool_or`, `any_value`, `string_agg` /
//! `listagg`, with `WITHIN GROUP (ORDER BY …)`, `approx_distinct`), and `RUNNING` /
//! `FINAL` in ALL ROWS PER MATCH. What it does not take is an error naming the function and
//! where it is.

use crate::common;

/// Apple, then two B rows (small and "ban…"/"Ban…"), then C (20, once two B rows were seen).
const ROWS: [(i64, i64, i64, &str); 4] = [
    (1, 0, 10, "Apple"),
    (2, 0, -5, "banana"),
    (3, 0, 7, "Band"),
    (4, 0, 20, "cherry"),
];

#[test]
fn scalar_functions_and_aggregates_over_expressions_compute_as_in_sql() {
    let params = r#"param order_by = "ts"
  param pattern = "A B+ C"
  param define = "A AS upper(tag) = 'APPLE'"
  param define = "B AS abs(value) < 10 AND (tag LIKE 'ban%' OR tag LIKE 'Ban%')"
  param define = "C AS value IN (20, 30) AND CASE WHEN COUNT(B.*) >= 2 THEN true ELSE false END"
  param measures = "A.tag || '-' || LAST(C.tag) AS span, coalesce(NULL, SUM(B.value)) AS sb, AVG(CAST(B.value AS DOUBLE)) AS avg_b, max(B.value + MATCH_NUMBER()) AS mx, count(*) AS n, count() AS n2, max_by(B.tag, abs(B.value)) AS loudest, min_by(B.tag, B.value) AS lowest, bool_and(B.value > 0) AS all_up, bool_or(B.value > 0) AS one_up, any_value(B.tag) AS some_b, CAST(SUM(B.value) AS DECIMAL(10,2)) * 2 AS dec, IF(COUNT(B.*) > 1, 'many', 'one') AS how, FINAL COUNT(C.*) AS c, SUM(PREV(B.value)) AS sp""#;
    assert_eq!(
        common::pattern_rows(params, &ROWS),
        ["Apple-cherry, 2, 1.0, 8, 4, 4, Band, banana, false, true, banana, 4.0, many, 1, 5"]
    );
}

/// Trino's and DataFusion's measures of spread and `count_if`, over the two B rows (−5 and 7:
/// mean 1, squared distances 36 and 36) and over A's one row (a sample's spread needs two).
#[test]
fn standard_deviations_variances_and_count_if_compute_as_in_sql() {
    let params = r#"param order_by = "ts"
  param pattern = "A B+ C"
  param define = "B AS abs(value) < 10"
  param define = "C AS value = 20"
  param measures = "count_if(B.value > 0) AS pos, stddev(B.value) AS sd, STDDEV_SAMP(B.value) AS sd2, stddev_pop(B.value) AS sdp, variance(B.value) AS v, var_samp(B.value) AS v2, var_pop(B.value) AS vp, stddev(A.value) AS one, stddev_pop(A.value) AS one_pop, FINAL variance(CAST(value AS DOUBLE)) AS all_v""#;
    assert_eq!(
        common::pattern_rows(params, &ROWS),
        ["1, 8.48528137423857, 8.48528137423857, 6.0, 72.0, 72.0, 36.0, NULL, 0.0, 106.0"]
    );
}

/// `string_agg` (and `listagg`, Trino's and Oracle's name) joins the strings of a variable's
/// rows in their order in the match, skipping NULLs (NULL for none); `approx_distinct` counts
/// distinct values exactly (0 for none). B's tags: banana, Band (−5 and 7); every row's
/// initial, lower case: a, b, b, c; C's one row (20) has no value above 100.
#[test]
fn string_agg_listagg_and_approx_distinct_compute_as_in_trino() {
    let params = r#"param order_by = "ts"
  param pattern = "A B+ C"
  param define = "B AS abs(value) < 10"
  param define = "C AS value = 20 AND approx_distinct(B.value > 0) = 2 AND string_agg(B.tag, '') = 'bananaBand'"
  param measures = "string_agg(B.tag, '/') AS bs, listagg(tag, '-') AS all_tags, string_agg(upper(B.tag), '') AS up, string_agg(A.tag, '+') AS one, string_agg(CASE WHEN B.value > 0 THEN B.tag END, ';') AS pos, string_agg(C.tag, ';') FILTER (WHERE C.value > 100) AS none, approx_distinct(lower(substr(tag, 1, 1))) AS initials, APPROX_DISTINCT(B.value > 0) AS signs, approx_distinct(CASE WHEN value > 100 THEN 1 END) AS no_values""#;
    assert_eq!(
        common::pattern_rows(params, &ROWS),
        ["banana/Band, Apple-banana-Band-cherry, BANANABAND, Apple, Band, NULL, 3, 2, 0"]
    );
}

/// Row by row over x (1), y (2), x (2), one match `A B B`: the running string and count grow,
/// the FINAL ones are the whole match's from the first row; DISTINCT keeps a value at its
/// first row (`xy`, not `yx`).
#[test]
fn string_agg_and_approx_distinct_run_and_finish_as_the_other_aggregates() {
    let params = r#"param order_by = "ts"
  param pattern = "A B+"
  param define = "B AS value >= PREV(value)"
  param rows_per_match = "all"
  param measures = "RUNNING string_agg(tag, '/') AS r, FINAL listagg(tag, '/') AS f, string_agg(DISTINCT tag, '') AS d, FINAL string_agg(DISTINCT tag, '') AS fd, approx_distinct(tag) AS n, FINAL approx_distinct(tag) AS fnd""#;
    let rows = [(1, 0, 1, "x"), (2, 0, 2, "y"), (3, 0, 2, "x")];
    assert_eq!(
        common::pattern_rows_after_key(params, &rows),
        [
            "1 x x x/y/x x xy 1 2",
            "2 y x/y x/y/x xy xy 2 2",
            "2 x x/y/x x/y/x xy xy 2 2",
        ]
    );
}

/// `listagg … WITHIN GROUP (ORDER BY …)` orders the strings by its keys, running and final:
/// over x (3), y (1), z (2), w (0), B's condition sees `yx`, `yzx`, then `wyzx` at w, which
/// ends the match (in the match's order, `xyzw`, it would not).
#[test]
fn within_group_orders_listagg_running_and_final_in_define_and_measures() {
    let params = r#"param order_by = "ts"
  param pattern = "A B+"
  param define = "B AS value < 5 AND listagg(tag, '') WITHIN GROUP (ORDER BY value) <> 'wyzx'"
  param rows_per_match = "all"
  param measures = "RUNNING listagg(tag, '/') WITHIN GROUP (ORDER BY value) AS r, FINAL string_agg(tag, '/') WITHIN GROUP (ORDER BY value DESC) AS f, string_agg(B.tag, '+' ORDER BY B.value) AS b""#;
    let rows = [
        (1, 0, 3, "x"),
        (2, 0, 1, "y"),
        (3, 0, 2, "z"),
        (4, 0, 0, "w"),
    ];
    assert_eq!(
        common::pattern_rows_after_key(params, &rows),
        ["3 x x x/z/y NULL", "1 y y/x x/z/y y", "2 z y/z/x x/z/y y+z",]
    );
}

/// A partial match whose DEFINE and MEASURES hold `string_agg` and `approx_distinct` is
/// checkpointed (a full snapshot half-way, a changelog) and restored before every row: the
/// restored runs output what the uninterrupted one does, row for row. B takes at most two
/// distinct values, its tags joined without `rs` in them. Key 0: `a p q c` (1 1 2 9: 9 would
/// be B's third value, so C); from `a` (1), B's `r s` would join to `rs`, so no match starts
/// there; one starts at `r`: `r s t c` (3 3 1 8). Key 1: `a e f c` (2 1 3 7).
#[test]
fn a_pattern_restored_mid_match_joins_and_counts_as_an_uninterrupted_one() {
    let src = r#"type name = "T" { column name = "ts", type = "timestamp" column name = "k", type = "int" column name = "value", type = "int" column name = "tag", type = "string" }
operator name = "g", type = "generator" { output name = "in", type = "T" }
operator name = "op", type = "pattern" {
  input name = "in"
  param partition_by = "k" param order_by = "ts" param pattern = "A B+ C"
  param define = "B AS approx_distinct(B.value) <= 2 AND coalesce(string_agg(B.tag, '') NOT LIKE '%rs%', true)"
  param define = "C AS value > 5"
  param rows_per_match = "all"
  param measures = "string_agg(B.tag, ',') AS bs, FINAL string_agg(tag, '') AS whole, approx_distinct(value) AS n"
  output name = "out" }
operator name = "d", type = "discard" { input name = "out" }"#;
    // (ts, key, value, tag)
    let rows: [(i64, i64, i64, &str); 13] = [
        (1, 0, 1, "a"),
        (2, 0, 1, "p"),
        (3, 1, 2, "a"),
        (4, 0, 2, "q"),
        (5, 1, 1, "e"),
        (6, 0, 9, "c"),
        (7, 1, 3, "f"),
        (8, 1, 7, "c"),
        (9, 0, 1, "a"),
        (10, 0, 3, "r"),
        (11, 0, 3, "s"),
        (12, 0, 1, "t"),
        (13, 0, 8, "c"),
    ];
    let make = || common::operator(src);
    let run = |restart: Option<usize>| {
        let mut op = make();
        let mut full = None;
        let mut out = common::Formatted::new(" ");
        for (i, row) in rows.iter().enumerate() {
            if let Some(at) = restart {
                if let Some(restored) = common::restart_point(i, at, &mut op, &mut full, make) {
                    op = restored;
                }
            }
            op.process_batch(0, common::pattern_batch(&[*row]), &mut out)
                .expect("processes");
            op.handle_watermark(anduin_types::Watermark(row.0), &mut out)
                .expect("advances");
        }
        op.handle_watermark(anduin_types::Watermark::MAX, &mut out)
            .expect("advances");
        op.on_end_of_input(&mut out).expect("ends");
        out.rows
    };
    // (ts, key, value, tag, running string_agg of B, FINAL string_agg, running approx_distinct)
    let expected: Vec<String> = [
        (1, 0, 1, "a", "NULL", "apqc", 1),
        (2, 0, 1, "p", "p", "apqc", 1),
        (4, 0, 2, "q", "p,q", "apqc", 2),
        (6, 0, 9, "c", "p,q", "apqc", 3),
        (3, 1, 2, "a", "NULL", "aefc", 1),
        (5, 1, 1, "e", "e", "aefc", 2),
        (7, 1, 3, "f", "e,f", "aefc", 3),
        (8, 1, 7, "c", "e,f", "aefc", 4),
        (10, 0, 3, "r", "NULL", "rstc", 1),
        (11, 0, 3, "s", "s", "rstc", 1),
        (12, 0, 1, "t", "s,t", "rstc", 2),
        (13, 0, 8, "c", "s,t", "rstc", 3),
    ]
    .iter()
    .map(|(ts, k, v, tag, bs, whole, n)| {
        format!("1970-01-01T00:00:00.{ts:03} {k} {v} {tag} {bs} {whole} {n}")
    })
    .collect();
    assert_eq!(run(None), expected);
    for at in 1..rows.len() {
        assert_eq!(run(Some(at)), expected, "restored before row {at}");
    }
}

/// `FILTER (WHERE …)` keeps the rows where the condition holds (with `COUNT(*)`, the
/// variable the condition names is counted); `DISTINCT` takes each value once.
#[test]
fn filtered_and_distinct_aggregates_compute_as_in_sql() {
    let params = r#"param order_by = "ts"
  param pattern = "A B+ C"
  param define = "B AS abs(value) < 10"
  param define = "C AS value = 20 AND COUNT(*) FILTER (WHERE B.value > 0) = 1"
  param measures = "COUNT(B.value) FILTER (WHERE B.value > 0) AS pos, COUNT(*) FILTER (WHERE value > 5) AS big, COUNT(DISTINCT value > 0) AS signs, COUNT(DISTINCT length(tag)) AS lengths, SUM(DISTINCT length(tag)) AS sum_lengths, AVG(B.value) FILTER (WHERE B.tag LIKE 'B%') AS avg_cap, SUM(B.value) FILTER (WHERE B.value > 100) AS none""#;
    assert_eq!(
        common::pattern_rows(params, &ROWS),
        ["1, 3, 2, 3, 15, 7.0, NULL"]
    );
}

#[test]
fn running_and_final_measures_differ_row_by_row_in_all_rows_per_match() {
    let params = r#"param order_by = "ts"
  param pattern = "A B+"
  param define = "B AS value > PREV(value)"
  param rows_per_match = "all"
  param measures = "RUNNING COUNT(*) AS r, FINAL COUNT(*) AS f, FINAL LAST(value) AS last_v, RUNNING LAST(value) AS now_v, FINAL max_by(CLASSIFIER(), value) AS top, CLASSIFIER() AS c""#;
    let rows = [(1, 0, 1, "x"), (2, 0, 2, "x"), (3, 0, 3, "x")];
    assert_eq!(
        common::pattern_rows(params, &rows),
        [
            "1970-01-01T00:00:00.001, 0, 1, x, 1, 3, 3, 1, B, A",
            "1970-01-01T00:00:00.002, 0, 2, x, 2, 3, 3, 2, B, B",
            "1970-01-01T00:00:00.003, 0, 3, x, 3, 3, 3, 3, B, B",
        ]
    );
}

/// The error `anduin check` gives for a pattern with `params`.
fn check_error(params: &str) -> String {
    let src = format!(
        r#"type name = "T" {{ column name = "ts", type = "timestamp" column name = "value", type = "int" }}
operator name = "g", type = "generator" {{ output name = "in", type = "T" }}
operator name = "op", type = "pattern" {{ input name = "in" param order_by = "ts" param pattern = "A B+"
  {params}
  output name = "out" }}
operator name = "d", type = "discard" {{ input name = "out" }}"#
    );
    let spec = anduin_spec::parse_flow(&src).expect("parses");
    match anduin_graph::check(&spec, &anduin_registry::BuiltinCatalog) {
        Ok(_) => panic!("no error for {params}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn what_a_pattern_does_not_compute_is_an_error_naming_it_and_its_place() {
    let e = check_error(r#"param define = "B AS value > 1 AND frobnicate(value) > 1""#);
    assert!(e.contains("unknown function `frobnicate`"), "{e}");
    assert!(e.starts_with("4:38: unknown function"), "{e}");
    let e = check_error(r#"param measures = "median(B.value) AS s""#);
    assert!(
        e.contains("the aggregate `median` is not supported in a pattern"),
        "{e}"
    );
    let e = check_error(r#"param measures = "string_agg(B.value, ',') AS s""#);
    assert!(
        e.starts_with("4:32: STRING_AGG needs a string, `B.value` is int"),
        "{e}"
    );
    let e = check_error(r#"param define = "B AS string_agg(B.value, '') = '1'""#);
    assert!(e.starts_with("4:35: STRING_AGG needs a string"), "{e}");
    // A separator is one string for every match: a literal or a constant expression.
    let e = check_error(r#"param measures = "listagg(CAST(B.value AS VARCHAR), B.value) AS s""#);
    assert!(
        e.starts_with("4:55: the separator of LISTAGG must be the same for every match: `B.value` reads a row's column"),
        "{e}"
    );
    let e = check_error(
        r#"param measures = "listagg(CAST(B.value AS VARCHAR), lower(CLASSIFIER())) AS s""#,
    );
    assert!(
        e.starts_with("4:55: the separator of LISTAGG must be the same for every match")
            && e.contains("CLASSIFIER()"),
        "{e}"
    );
    let e = check_error(
        r#"param measures = "string_agg(CAST(B.value AS VARCHAR), CAST(random() AS VARCHAR)) AS s""#,
    );
    assert!(
        e.starts_with("4:63: the separator of STRING_AGG must be the same for every match")
            && e.contains("random"),
        "{e}"
    );
    let e = check_error(r#"param measures = "listagg(CAST(B.value AS VARCHAR), 1 + 1) AS s""#);
    assert!(
        e.starts_with("4:55: the separator of LISTAGG must be a string, `1 + 1` is int"),
        "{e}"
    );
    let e = check_error(r#"param measures = "string_agg(CAST(B.value AS VARCHAR)) AS s""#);
    assert!(
        e.starts_with("4:21: wrong arguments for STRING_AGG") && e.contains("the separator"),
        "{e}"
    );
    let e = check_error(r#"param measures = "max(B.value) WITHIN GROUP (ORDER BY B.ts) AS s""#);
    assert!(
        e.starts_with("4:21: ")
            && e.contains("WITHIN GROUP (ORDER BY …) orders the values of listagg, string_agg and array_agg in a pattern, not of max"),
        "{e}"
    );
    let e = check_error(
        r#"param measures = "listagg(CAST(B.value AS VARCHAR), ',') WITHIN GROUP (ORDER BY A.value) AS s""#,
    );
    assert!(
        e.starts_with("4:83: the ORDER BY of `listagg")
            && e.contains("names other rows than its argument"),
        "{e}"
    );
    let e = check_error(
        r#"param measures = "listagg(CAST(B.value AS VARCHAR), ',') WITHIN GROUP (ORDER BY frobnicate(B.value)) AS s""#,
    );
    assert!(e.contains("unknown function `frobnicate`"), "{e}");
    let e = check_error(r#"param measures = "approx_distinct(B.value, 0.01) AS s""#);
    assert!(
        e.starts_with("4:21: wrong arguments for APPROX_DISTINCT"),
        "{e}"
    );
    let e = check_error(r#"param define = "B AS approx_distinct(*) > 1""#);
    assert!(
        e.starts_with("4:24: wrong arguments for APPROX_DISTINCT"),
        "{e}"
    );
    let e = check_error(r#"param measures = "stddev(B.value > 1) AS s""#);
    assert!(e.contains("STDDEV needs a number"), "{e}");
    let e = check_error(r#"param measures = "count_if(B.value) AS s""#);
    assert!(e.contains("COUNT_IF needs a boolean"), "{e}");
    let e = check_error(r#"param measures = "COUNT(B.value) FILTER (WHERE A.value > 1) AS s""#);
    assert!(e.contains("names other rows than its argument"), "{e}");
    let e = check_error(r#"param measures = "COUNT(DISTINCT *) AS s""#);
    assert!(e.contains("DISTINCT needs an expression"), "{e}");
    let e = check_error(r#"param measures = "max_by(DISTINCT B.value, B.ts) AS s""#);
    assert!(e.contains("DISTINCT and FILTER (WHERE …) apply to"), "{e}");
    let e = check_error(r#"param measures = "COUNT(B.value) FILTER (WHERE B.value + 1) AS s""#);
    assert!(e.contains("needs a condition"), "{e}");
    let e = check_error(r#"param measures = "SUM(A.value + B.value) AS s""#);
    assert!(e.contains("names the rows of `A` and of `B`"), "{e}");
    let e = check_error(r#"param define = "B AS value > FINAL LAST(A.value)""#);
    assert!(e.contains("FINAL in DEFINE"), "{e}");
    let e = check_error(r#"param measures = "coalesce(array_agg(B.value), NULL) AS a""#);
    assert!(e.contains("array_agg must be a measure of its own"), "{e}");
}

#[test]
fn next_in_a_measure_sees_the_rows_of_the_match_and_no_further() {
    // A B+ over 1 2 3 (then 0, in no match): NEXT looks forward within the whole match.
    let params = r#"param order_by = "ts"
  param pattern = "A B+"
  param define = "B AS value > PREV(value)"
  param rows_per_match = "all"
  param measures = "NEXT(value) AS nxt, NEXT(value, 2) AS nxt2, NEXT(CLASSIFIER()) AS nc, NEXT(A.value) AS after_a""#;
    let rows = [
        (1, 0, 1, "x"),
        (2, 0, 2, "x"),
        (3, 0, 3, "x"),
        (4, 0, 0, "x"),
    ];
    let got: Vec<String> = common::pattern_rows_after_key(params, &rows);
    assert_eq!(
        got,
        ["1 x 2 3 B 2", "2 x 3 NULL B 2", "3 x NULL NULL NULL 2",]
    );
}

#[test]
fn prev_of_the_classifier_is_the_variable_of_the_row_before_within_the_match() {
    // A B+ C over 0 1 2 1 (rows before: 5, in no match). PREV(CLASSIFIER()) is the variable
    // of the row before if that row is in the match, else NULL (as in Trino), in MEASURES and
    // in a DEFINE: C follows a B.
    let params = r#"param order_by = "ts"
  param pattern = "A B+ C"
  param define = "A AS value = 0, B AS value > PREV(value), C AS PREV(CLASSIFIER()) = 'B' AND value < PREV(value)"
  param rows_per_match = "all"
  param measures = "CLASSIFIER() AS c, PREV(CLASSIFIER()) AS pc, PREV(CLASSIFIER(), 2) AS pc2, PREV(CLASSIFIER(B)) AS before_b""#;
    let rows = [
        (1, 0, 5, "x"),
        (2, 0, 0, "x"),
        (3, 0, 1, "x"),
        (4, 0, 2, "x"),
        (5, 0, 1, "x"),
    ];
    let got: Vec<String> = common::pattern_rows_after_key(params, &rows);
    assert_eq!(
        got,
        [
            "0 x A NULL NULL NULL",
            "1 x B A NULL A",
            "2 x B B A B",
            "1 x C B B B",
        ]
    );
}

/// `{0}` (and `{0,0}`) repeats a part no time, as in Trino: `A B{0} C` matches what `A C`
/// matches, its variable still one of the pattern's (its DEFINE allowed, its rows none).
#[test]
fn a_part_repeated_zero_times_matches_no_row() {
    let rows = [
        (1, 0, 10, "a"),
        (2, 0, 3, "b"),
        (3, 0, 20, "c"),
        (4, 0, 25, "c"),
    ];
    let with = |pattern: &str| {
        common::pattern_rows(
            &format!(
                r#"param order_by = "ts"
  param pattern = "{pattern}"
  param define = "A AS value = 10 OR value = 3"
  param define = "B AS value < 5"
  param define = "C AS value > 15"
  param measures = "FIRST(A.value) AS a, COUNT(B.*) AS b, LAST(C.value) AS c""#
            ),
            &rows,
        )
    };
    // `A C`: 10 is no start (3 follows it), 3 then 20 is.
    let without = ["3, 0, 20"];
    assert_eq!(with("A B{0} C"), without);
    assert_eq!(with("A B{0,0} C"), without);
    assert_eq!(with("A (B C){0} C"), without);
}
