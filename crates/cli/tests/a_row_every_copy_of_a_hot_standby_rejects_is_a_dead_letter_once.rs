//! Issue 14: the copies of a hot standby are deterministic, so each rejects the same rows. The
//! dead-letter file has each such row once, as the operator's (not once per copy, nor under a
//! copy's name): what the query without hot standby writes, also when a copy is lost at a
//! seeded point (its twin writes what it had not yet).

use crate::common;

use std::path::Path;

use common::{anduin, dead_letters, repo};

/// A map dividing by `sensor % 5`: the rows of every fifth sensor fail and go to the dead
/// letters; `hot` asks for two copies of it.
fn query(hot: bool) -> String {
    let hot = if hot {
        "\n  param fault_tolerance = \"hot-standby\"\n  param replicas = 2"
    } else {
        ""
    };
    format!(
        r#"type name = "Reading" {{
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}}
operator name = "source", type = "reader" {{
  param path = "${{INPUT}}"
  param format = "csv"
  output name = "readings", type = "Reading"
}}
operator name = "m", type = "map" {{
  input name = "readings"
  param columns = "ts, value / (sensor % 5) AS q"{hot}
  output name = "qs"
}}
operator name = "sink", type = "writer" {{
  input name = "qs"
  param path = "${{OUTPUT}}"
  param format = "csv"
}}
"#
    )
}

/// Runs the query; the exit status and the dead letters as (operator, reason, row), sorted.
/// (The input line a row was read from is not known past the copies' multicast.)
fn run(dir: &Path, hot: bool, extra: &[&str]) -> (std::process::Output, Vec<String>) {
    let q = dir.join("q.flow");
    std::fs::write(&q, query(hot)).expect("query");
    let out = dir.join("out.csv");
    let mut args = vec![
        "run".to_string(),
        q.display().to_string(),
        "--var".into(),
        format!("INPUT={}", repo().join("data/readings.csv").display()),
        "--var".into(),
        format!("OUTPUT={}", out.display()),
        "--no-api".into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let status = anduin(&repo(), &args);
    let rejected = dir.join("out.csv.rejected");
    let mut got: Vec<String> = if rejected.exists() {
        dead_letters(&rejected)
            .iter()
            .map(|d| format!("{} {} {}", d["operator"], d["reason"], d["row"]))
            .collect()
    } else {
        Vec::new()
    };
    got.sort();
    (status, got)
}

#[test]
fn each_rejected_row_is_written_once_as_without_hot_standby_whichever_copy_is_lost() {
    let plain = tempfile::tempdir().expect("tempdir");
    let (out, expected) = run(plain.path(), false, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        expected.len() > 100,
        "rows are rejected: {}",
        expected.len()
    );
    assert!(expected[0].starts_with("\"m\" "), "{}", expected[0]);

    let dir = tempfile::tempdir().expect("tempdir");
    let (out, got) = run(dir.path(), true, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    same(&got, &expected, "without a loss");

    // A copy lost at seeded points: its twin writes the rest, nothing twice.
    let mut state = 0x0DEA_D1E7_u64;
    for seed in 0..4 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let copy = ["m", "m_replica_1"][(state % 2) as usize];
        let rows = (state >> 8) % 10_000;
        let batch = ["1", "100", "8192"][((state >> 32) % 3) as usize];
        let fail = format!("{copy}:{rows}");
        let dir = tempfile::tempdir().expect("tempdir");
        let (out, got) = run(
            dir.path(),
            true,
            &["--batch-size", batch, "--fail-after", &fail],
        );
        assert!(
            out.status.success(),
            "seed {seed} ({fail}, batch {batch}): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        same(
            &got,
            &expected,
            &format!("seed {seed}: {fail}, batch {batch}"),
        );
    }
}

/// `got` is `expected`, told briefly when not.
fn same(got: &[String], expected: &[String], what: &str) {
    assert_eq!(
        got.len(),
        expected.len(),
        "{what}: each reject once, not once per copy"
    );
    if let Some((g, e)) = got.iter().zip(expected).find(|(g, e)| g != e) {
        panic!("{what}: {g} where the query without hot standby has {e}");
    }
}
