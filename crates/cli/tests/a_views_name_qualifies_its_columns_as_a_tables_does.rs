//! A view read without an alias is named by its own name, as a table is: `SELECT w.a FROM w`
//! and `WHERE w.a > 1` read the view's columns (they were refused naming the view's inner
//! stream, `expected 'view_w_select'`: probe); a table's name qualifies its columns alike.

use crate::common;

use common::{anduin_ok, output_rows};

#[test]
fn a_views_name_qualifies_its_columns_as_a_tables_does() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    std::fs::write(
        d.join("t.csv"),
        "ts,k,a,b\n1000,x,1,2\n2000,y,3,4\n3000,z,5,6\n",
    )
    .expect("input");
    std::fs::write(
        d.join("q.sql"),
        "CREATE TABLE t (ts TIMESTAMP, k STRING, a BIGINT, b BIGINT) WITH (connector = 'file', path = 't.csv', event_time = 'ts');
CREATE TABLE o WITH (connector = 'file', path = 'o.csv');
CREATE TABLE p WITH (connector = 'file', path = 'p.csv');
CREATE VIEW w AS SELECT * FROM t;
INSERT INTO o SELECT w.a, w.b + 1 AS c FROM w WHERE w.a > 1;
INSERT INTO p SELECT t.a, t.k FROM t WHERE t.b < 5;
",
    )
    .expect("query");
    anduin_ok(d, &["run", "q.sql", "-q", "--no-api"]);
    assert_eq!(output_rows(&d.join("o.csv")), ["3,5", "5,7"]);
    assert_eq!(output_rows(&d.join("p.csv")), ["1,x", "3,y"]);
}
