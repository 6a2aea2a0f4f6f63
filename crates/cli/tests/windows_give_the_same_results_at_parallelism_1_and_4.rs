//! Every kind of window gives the same results at parallelism 1 and 4 (and the operator's own
//! oracle test checks parallelism 1 against a naive recomputation): seeded random rows, out of
//! order with some late ones, read from a file with a watermark delay, windowed by key. The
//! file is read by one instance: which rows are late depends on the readers' watermarks, so,
//! with several, on timing (docs/flow-language.md, late rows); the windows run as 4.

use crate::common;

use common::anduin;

/// Seeded rows `ts,k,v`: time drifts forward with jitter; a few rows far behind are late.
fn input(seed: u64) -> String {
    let mut state = seed;
    let mut next = |below: u64| {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % below
    };
    let mut out = String::from("ts,k,v\n");
    let mut base: i64 = 1_700_000_000_000;
    for _ in 0..20_000 {
        base += next(3) as i64;
        let jitter = next(200) as i64 - 100;
        let late = if next(100) == 0 { 5_000 } else { 0 };
        let v = if next(10) == 0 {
            String::new()
        } else {
            (next(1000) as i64 - 500).to_string()
        };
        out.push_str(&format!("{},{},{}\n", base + jitter - late, next(50), v));
    }
    out
}

fn query(kind: &str) -> String {
    format!(
        r#"type name = "R" {{
  column name = "ts", type = "timestamp"
  column name = "k", type = "int"
  column name = "v", type = "int"
}}
operator name = "rows", type = "reader" {{
  param path = "in.csv"
  param event_time = "ts"
  param watermark = "300ms"
  param parallelism = 1
  output name = "rows", type = "R"
}}
operator name = "w", type = "window" {{
  input name = "rows"
  {kind}
  param time = "ts"
  param keys = "k"
  param aggregates = "COUNT(*) AS n, COUNT(v) AS nv, SUM(v) AS total, MIN(v) AS lo, MAX(v) AS hi, COUNT(DISTINCT v) AS d"
  output name = "results"
}}
operator name = "out", type = "writer" {{
  input name = "results"
  param path = "${{OUTPUT}}"
}}
"#
    )
}

fn sorted(path: &std::path::Path) -> Vec<String> {
    let mut rows: Vec<String> = std::fs::read_to_string(path)
        .expect("output")
        .lines()
        .skip(1)
        .map(str::to_string)
        .collect();
    rows.sort();
    rows
}

#[test]
fn windows_give_the_same_results_at_parallelism_1_and_4() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (seed, kind) in [
        (1, r#"param kind = "tumbling" param size = "100ms""#),
        (
            2,
            r#"param kind = "sliding" param size = "300ms" param slide = "100ms""#,
        ),
        (3, r#"param kind = "session" param gap = "40ms""#),
        (4, r#"param kind = "count" param size = 7"#),
    ] {
        std::fs::write(dir.path().join("in.csv"), input(seed)).expect("input");
        std::fs::write(dir.path().join("q.flow"), query(kind)).expect("query");
        let mut results = Vec::new();
        for p in ["1", "4"] {
            let output = format!("OUTPUT=out{p}.csv");
            let out = anduin(
                dir.path(),
                &[
                    "run",
                    "q.flow",
                    "--var",
                    &output,
                    "--parallelism",
                    p,
                    "--batch-size",
                    "300",
                ],
            );
            assert_eq!(
                out.status.code(),
                Some(0),
                "{kind}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            results.push(sorted(&dir.path().join(format!("out{p}.csv"))));
        }
        assert!(results[0].len() > 100, "{kind}: windows fired");
        assert!(
            results[0] == results[1],
            "{kind}: parallelism 4 differs from parallelism 1"
        );
    }
}
