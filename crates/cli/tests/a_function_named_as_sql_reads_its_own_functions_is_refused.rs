//! A user-defined function may not take a name the SQL frontend reads as its own
//! (`MATCH_RECOGNIZE`'s `PREV`, `FIRST`, `CLASSIFIER`…, the window table functions `TUMBLE`,
//! `HOP`, `SESSION`…): it would never be called there. Refused before anything runs, for a
//! `CREATE FUNCTION` at its name and for a `--udf` module naming the module.

use crate::common;

use common::{anduin, repo};

#[test]
fn a_name_the_sql_frontend_reads_as_its_own_is_refused_for_create_function_and_udf() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("prev.wat"),
        r#"(module
  (func (export "prev") (param i64) (result i64) local.get 0)
  (@custom "anduin:functions" "prev(BIGINT) -> BIGINT"))"#,
    )
    .expect("module");
    let query = "CREATE TABLE orders (ts TIMESTAMP, customer STRING, amount BIGINT)
WITH (connector = 'file', path = '${INPUT}', event_time = 'ts');
CREATE TABLE out WITH (connector = 'file', path = '${OUTPUT}');
INSERT INTO out SELECT * FROM orders
MATCH_RECOGNIZE (
  PARTITION BY customer ORDER BY ts
  MEASURES B.amount AS b
  ONE ROW PER MATCH
  PATTERN (A B)
  DEFINE B AS B.amount > prev(B.amount)
) AS m;
";
    let input = format!("INPUT={}", repo().join("data/orders.csv").display());
    // Loaded whole: `prev` in DEFINE would be the pattern's PREV, never the module's.
    std::fs::write(dir.path().join("q.sql"), query).expect("query");
    let out = anduin(
        dir.path(),
        &[
            "check",
            "q.sql",
            "--udf",
            "prev.wat",
            "--var",
            &input,
            "--var",
            "OUTPUT=out.csv",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("module `prev.wat` declares function `prev`, a reserved name: it is MATCH_RECOGNIZE's navigation function PREV(…)"),
        "{stderr}"
    );
    // Declared in SQL: an error at its name.
    std::fs::write(
        dir.path().join("q.sql"),
        format!("CREATE FUNCTION Session(x BIGINT) RETURNS BIGINT LANGUAGE wasm AS 'prev.wat';\n{query}"),
    )
    .expect("query");
    let out = anduin(
        dir.path(),
        &["check", "q.sql", "--var", &input, "--var", "OUTPUT=out.csv"],
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("q.sql:1:17: function name `Session` is reserved: it is the window table function SESSION(…)"),
        "{stderr}"
    );
}
