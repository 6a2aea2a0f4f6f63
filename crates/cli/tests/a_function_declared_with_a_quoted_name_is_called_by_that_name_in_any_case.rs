//! Issue 21, from the hostile probe: `CREATE FUNCTION "Bar"(…)` declared a function whose
//! name kept its quotes, which no call could reach. Quotes now let a name be a keyword or
//! hold any character, and do not make it case-sensitive: function names are the same in any
//! case, as in Flink, so `"Bar"(x)`, `bar(x)` and `BAR(x)` call it.

use crate::common;

use common::{anduin, repo};

#[test]
fn a_quoted_name_is_called_quoted_or_not() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("q.sql"),
        "CREATE FUNCTION \"Bar\"(x BIGINT) RETURNS BIGINT LANGUAGE javascript AS $$ return x + 1 $$;
CREATE FUNCTION \"select\"(x BIGINT) RETURNS BIGINT LANGUAGE javascript AS $$ return 2 * x $$;
CREATE TABLE orders (ts TIMESTAMP, customer STRING, amount BIGINT)
WITH (connector = 'file', path = '${INPUT}');
CREATE TABLE out WITH (connector = 'file', path = '${OUTPUT}');
INSERT INTO out SELECT \"Bar\"(amount) AS a, bar(amount) AS b, BAR(amount) AS c, \"select\"(amount) AS d
FROM orders WHERE amount = 12;",
    )
    .expect("query");
    let input = format!("INPUT={}", repo().join("data/orders.csv").display());
    let out = anduin(
        dir.path(),
        &[
            "run",
            "q.sql",
            "--no-api",
            "--var",
            &input,
            "--var",
            "OUTPUT=out.csv",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let written = std::fs::read_to_string(dir.path().join("out.csv")).expect("output");
    assert_eq!(written, "a,b,c,d\n13,13,13,24\n13,13,13,24\n");
}
