//! `anduin check` on broken queries: every problem with FILE:LINE:COL and what was expected.
//! One golden transcript per file in `tests/golden/errors/`.

use crate::common;

use common::{anduin, assert_golden, golden, transcript};

#[test]
fn check_reports_every_error_with_its_position() {
    let dir = golden().join("errors");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("golden/errors exists")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "flow" || e == "sql"))
        .collect();
    files.sort();
    assert!(files.len() >= 10, "the error corpus is there");
    for f in files {
        let name = f.file_name().expect("a file").to_string_lossy().to_string();
        let out = anduin(&dir, &["check", &name]);
        assert_golden(&f.with_extension("expected"), &transcript(&out));
    }
}

#[test]
fn the_issue_example_points_at_line_7_column_21() {
    let out = anduin(&golden().join("errors"), &["check", "broken.flow"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "broken.flow:7:21: expected `=` after `param condition`, found `<`\n"
    );
}
