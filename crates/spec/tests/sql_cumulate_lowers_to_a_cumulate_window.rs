//! `TABLE(CUMULATE(TABLE t, DESCRIPTOR(ts), step, size))` (issue 17) lowers to a `window` of
//! kind `cumulate` with its `step` and `size`; a size that is not a multiple of the step, an
//! offset, a processing time and a window join of CUMULATE windows are refused where they are.

use anduin_spec::{parse_sql, Value};

const T: &str = "CREATE TABLE t (ts TIMESTAMP, k BIGINT, v BIGINT) WITH (connector = 'file', path = 't.csv', event_time = 'ts');
CREATE TABLE out WITH (connector = 'file', path = 'o.csv');
";

fn refused(insert: &str) -> (u32, u32, String) {
    let d = parse_sql(&format!("{T}{insert}")).expect_err(insert);
    let e = &d.0[0];
    (e.pos.line, e.pos.col, e.message.clone())
}

#[test]
fn cumulate_is_a_cumulate_window_with_its_step_and_size() {
    let spec = parse_sql(&format!(
        "{T}INSERT INTO out SELECT window_start, window_end, k, SUM(v) AS total
FROM TABLE(CUMULATE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE, INTERVAL '1' HOUR))
GROUP BY window_start, window_end, k;"
    ))
    .unwrap_or_else(|d| panic!("{d}"));
    let w = spec
        .operators
        .iter()
        .find(|o| o.kind.as_str() == "window")
        .expect("a window");
    let param = |name: &str| match &w.param(name).expect(name).value {
        Value::String(t) => t.as_str().to_string(),
        other => format!("{other:?}"),
    };
    assert_eq!(param("kind"), "cumulate");
    assert_eq!(param("step"), "60000ms");
    assert_eq!(param("size"), "3600000ms");
    assert_eq!(param("time"), "ts");
    assert_eq!(param("keys"), "k");
}

#[test]
fn what_cumulate_cannot_take_is_refused_at_its_place() {
    let from = |args: &str| {
        format!("INSERT INTO out SELECT window_start, COUNT(*) AS n FROM TABLE(CUMULATE(TABLE t, DESCRIPTOR(ts), {args})) GROUP BY window_start, window_end;")
    };
    let (line, col, m) = refused(&from("INTERVAL '2' SECOND, INTERVAL '5' SECOND"));
    assert_eq!((line, col), (3, 127), "{m}: at the size's value");
    assert_eq!(
        m,
        "CUMULATE's maximum size (5000 ms) must be a multiple of its step (2000 ms)"
    );
    let (_, col, m) = refused(&from(
        "INTERVAL '1' SECOND, INTERVAL '5' SECOND, INTERVAL '1' SECOND",
    ));
    assert_eq!(col, 148, "{m}");
    assert_eq!(m, "the offset argument of CUMULATE is not supported yet");
    let (_, _, m) = refused(&from("INTERVAL '1' SECOND"));
    assert_eq!(m, "CUMULATE needs its maximum size: an INTERVAL");
    let (_, _, m) = refused(&format!(
        "CREATE VIEW p AS SELECT *, PROCTIME() AS pt FROM t;\n{}",
        from("INTERVAL '1' SECOND, INTERVAL '5' SECOND")
            .replace("TABLE t,", "TABLE p,")
            .replace("DESCRIPTOR(ts)", "DESCRIPTOR(pt)")
    ));
    assert!(
        m.starts_with("DESCRIPTOR(pt): a CUMULATE window over a processing time"),
        "{m}"
    );
}
