//! A run locks its outputs before anything else, making each that does not exist yet, empty,
//! so that it holds it from the start. A run refused before it runs (an input that is not
//! there, a plan that cannot be made) removes what it made and left empty: no empty file
//! where there was none. An output that was there stays as it was; a run that ran and wrote
//! nothing keeps its empty output (an empty result is a result).

use crate::common;

use std::path::Path;

use common::{anduin, anduin_ok};

/// A reader of `${INPUT}`, a filter keeping rows whose value is below `below`, a writer of
/// `${OUTPUT}` in JSON (no header: no rows, no bytes).
fn query(dir: &Path, below: i64) {
    let q = format!(
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
operator name = "low", type = "filter" {{
  input name = "readings"
  param condition = "readings.value < {below}"
  output name = "kept", type = "Reading"
}}
operator name = "sink", type = "writer" {{
  input name = "kept"
  param path = "${{OUTPUT}}"
  param format = "json"
}}
"#
    );
    std::fs::write(dir.join("q.flow"), q).expect("query");
    std::fs::write(dir.join("in.csv"), "ts,sensor,value\n1700000000000,1,5\n").expect("input");
}

fn run(dir: &Path, input: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "run",
        "q.flow",
        "--no-api",
        "--var",
        input,
        "--var",
        "OUTPUT=out.json",
    ];
    args.extend_from_slice(extra);
    anduin(dir, &args)
}

#[test]
fn a_missing_input_leaves_no_output_and_an_existing_one_as_it_was() {
    let dir = tempfile::tempdir().expect("tempdir");
    query(dir.path(), 10);
    let out = run(dir.path(), "INPUT=missing.csv", &[]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !dir.path().join("out.json").exists(),
        "the refused run left its output behind"
    );
    // With checkpoints, the output is a directory of parts: not left behind either.
    let ckpt = dir.path().join("ckpt");
    let store = format!("file://{}", ckpt.display());
    let out = run(
        dir.path(),
        "INPUT=missing.csv",
        &["--checkpoint-store", &store],
    );
    assert_ne!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !dir.path().join("out.json").exists(),
        "a directory of parts was left"
    );

    std::fs::write(dir.path().join("out.json"), "earlier\n").expect("an earlier output");
    let out = run(dir.path(), "INPUT=missing.csv", &[]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("out.json")).expect("kept"),
        "earlier\n"
    );
}

#[test]
fn a_run_that_ran_and_kept_no_row_keeps_its_empty_output() {
    let dir = tempfile::tempdir().expect("tempdir");
    query(dir.path(), 0);
    anduin_ok(
        dir.path(),
        &[
            "run",
            "q.flow",
            "--no-api",
            "--var",
            "INPUT=in.csv",
            "--var",
            "OUTPUT=out.json",
        ],
    );
    let kept = std::fs::read_to_string(dir.path().join("out.json")).expect("the output");
    assert_eq!(kept, "", "no row, no bytes");
}
