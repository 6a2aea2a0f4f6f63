//! SQL's OVER windows (`agg(…) OVER (PARTITION BY … ORDER BY <event time> ROWS|RANGE BETWEEN
//! … PRECEDING AND CURRENT ROW)`) lower to the input, an `over` adding one column per
//! aggregate, and the select list's map reading them: ROWS n, RANGE INTERVAL, UNBOUNDED and
//! no frame (RANGE UNBOUNDED); the WHERE filters before the window; the subquery's alias is
//! dropped. Every other OVER form is refused at its position. An OVER window over a GROUP BY
//! without a window or a top-N (an updating stream) lowers as any other: the `over` takes the
//! changes.

use anduin_spec::{parse_sql, OperatorDef, Spec, Value};

const TABLES: &str = "CREATE TABLE b (ts TIMESTAMP, auction BIGINT, bidder BIGINT, price BIGINT, seen TIMESTAMP) WITH (connector = 'file', path = 'b.csv', event_time = 'ts');
CREATE TABLE out WITH (connector = 'discard');
";

fn spec(sql: &str) -> Spec {
    parse_sql(&format!("{TABLES}{sql}")).unwrap_or_else(|d| panic!("{sql}: {d}"))
}

fn error(sql: &str) -> String {
    match parse_sql(&format!("{TABLES}{sql}")) {
        Ok(_) => panic!("{sql} is refused"),
        Err(d) => d.to_string(),
    }
}

fn op<'a>(spec: &'a Spec, kind: &str) -> &'a OperatorDef {
    spec.operators
        .iter()
        .find(|o| o.kind.as_str() == kind)
        .unwrap_or_else(|| panic!("a {kind}"))
}

fn param(op: &OperatorDef, name: &str) -> Option<String> {
    op.param(name).map(|p| match &p.value {
        Value::String(t) => t.as_str().to_string(),
        other => format!("{other:?}"),
    })
}

fn kinds(spec: &Spec) -> Vec<String> {
    spec.operators
        .iter()
        .map(|o| format!("{} [{}]", o.name.as_str(), o.kind.as_str()))
        .collect()
}

#[test]
fn a_rows_window_lowers_to_an_over_and_a_map_reading_its_columns() {
    let spec = spec(
        "INSERT INTO out SELECT auction, price,
           AVG(price) OVER (PARTITION BY auction ORDER BY ts ROWS BETWEEN 10 PRECEDING AND CURRENT ROW) AS a,
           MAX(price) OVER (PARTITION BY auction ORDER BY ts ROWS BETWEEN 10 PRECEDING AND CURRENT ROW) + 1
         FROM b WHERE price > 2;",
    );
    assert_eq!(
        kinds(&spec),
        [
            "b [reader]",
            "insert1_where [filter]",
            "insert1_over [over]",
            "insert1_select [map]",
            "out [discard]"
        ]
    );
    let over = op(&spec, "over");
    assert_eq!(param(over, "keys").as_deref(), Some("\"auction\""));
    assert_eq!(param(over, "time").as_deref(), Some("\"ts\""));
    assert_eq!(param(over, "frame").as_deref(), Some("rows 10"));
    assert_eq!(
        param(over, "aggregates").as_deref(),
        Some("AVG(price) AS \"over1\", MAX(price) AS \"over2\"")
    );
    assert_eq!(over.pos.line, 4, "at the first OVER call");
    assert_eq!(
        param(op(&spec, "map"), "columns").as_deref(),
        Some("auction, price, \"over1\" AS \"a\", \"over2\" + 1 AS \"MAX(price) OVER (PARTITION BY auction ORDER BY ts ROWS BETWEEN 10 PRECEDING AND CURRENT ROW) + 1\"")
    );
}

#[test]
fn range_unbounded_and_default_frames_and_a_subquery_s_alias() {
    let frame = |over: &str| {
        let s = spec(&format!(
            "INSERT INTO out SELECT q.bidder, COUNT(*) OVER ({over}) AS n
             FROM (SELECT bidder, ts FROM b) AS q;"
        ));
        let o = op(&s, "over");
        (param(o, "frame"), param(o, "keys"), param(o, "aggregates"))
    };
    let (f, k, a) = frame("PARTITION BY q.bidder ORDER BY q.ts RANGE BETWEEN INTERVAL '1' MINUTE PRECEDING AND CURRENT ROW");
    assert_eq!(f.as_deref(), Some("range 60000ms"));
    assert_eq!(k.as_deref(), Some("\"bidder\""));
    assert_eq!(a.as_deref(), Some("COUNT(*) AS \"over1\""));
    let (f, k, _) = frame("ORDER BY ts ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW");
    assert_eq!((f.as_deref(), k), (Some("rows unbounded"), None));
    let (f, _, _) = frame("ORDER BY ts RANGE UNBOUNDED PRECEDING");
    assert_eq!(f.as_deref(), Some("range unbounded"));
    let (f, _, _) = frame("PARTITION BY bidder ORDER BY ts");
    assert_eq!(f.as_deref(), Some("range unbounded"), "SQL's default frame");
}

#[test]
fn an_over_column_s_name_does_not_take_one_of_the_input() {
    let s = spec("INSERT INTO out SELECT over1, SUM(price) OVER (ORDER BY ts) AS s FROM (SELECT price, ts, bidder AS over1 FROM b);");
    assert_eq!(
        param(op(&s, "over"), "aggregates").as_deref(),
        Some("SUM(price) AS \"over2\"")
    );
}

#[test]
fn every_other_over_form_is_refused_at_its_position() {
    let q = |over: &str| format!("INSERT INTO out SELECT auction, {over} AS x FROM b;");
    let mut wrong = Vec::new();
    for (sql, at, says) in [
        (
            q("SUM(price) OVER (PARTITION BY auction ORDER BY ts ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING)"),
            "3:33",
            "whose frame ends at `1 FOLLOWING`",
        ),
        (
            q("SUM(price) OVER (ORDER BY ts ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING)"),
            "3:33",
            "ends at `UNBOUNDED FOLLOWING`",
        ),
        (
            q("SUM(price) OVER (PARTITION BY auction ORDER BY price)"),
            "3:80",
            "ordering an OVER window by `price`, which is not its input's event time (the event time of `b` is `ts`",
        ),
        (
            q("SUM(price) OVER (ORDER BY seen)"),
            "3:59",
            "by `seen`, which is not",
        ),
        (q("SUM(price) OVER (ORDER BY ts DESC)"), "3:59", "descending"),
        (q("SUM(price) OVER (ORDER BY ts, price)"), "3:63", "more than the event time"),
        (q("SUM(price) OVER (PARTITION BY auction)"), "3:33", "needs ORDER BY the event time"),
        (q("SUM(price) OVER (ORDER BY ts GROUPS 2 PRECEDING)"), "3:33", "a GROUPS frame"),
        (
            q("SUM(price) OVER (ORDER BY ts ROWS BETWEEN price PRECEDING AND CURRENT ROW)"),
            "3:75",
            "a whole number",
        ),
        (
            q("SUM(price) OVER (PARTITION BY auction + 1 ORDER BY ts)"),
            "3:63",
            "the expression `auction + 1`",
        ),
        (q("RANK() OVER (ORDER BY ts)"), "3:33", "`RANK() OVER (…)`"),
        (
            "INSERT INTO out SELECT SUM(price) OVER (ORDER BY ts) AS s, LAG(price) OVER (ORDER BY ts) AS l FROM b;".into(),
            "3:60",
            "`LAG(…) OVER (…)` (OVER windows compute COUNT, SUM, AVG, MIN and MAX)",
        ),
        (
            "INSERT INTO out SELECT SUM(price) OVER (ORDER BY ts) AS s, COUNT(*) OVER (ORDER BY ts ROWS 2 PRECEDING) AS n FROM b;".into(),
            "3:60",
            "aggregates over different windows in one SELECT",
        ),
        (
            "INSERT INTO out SELECT SUM(price) OVER (ORDER BY ts) AS s, COUNT(*) AS n FROM b;".into(),
            "3:24",
            "an aggregate without OVER beside an OVER window",
        ),
        (
            "INSERT INTO out SELECT SUM(price) OVER w AS s FROM b WINDOW w AS (ORDER BY ts);".into(),
            "3:24",
            "a named window",
        ),
        (
            "INSERT INTO out SELECT auction, SUM(price) OVER (ORDER BY ts) FROM b GROUP BY auction;".into(),
            "3:79",
            "GROUP BY beside an OVER window",
        ),
    ] {
        let e = error(&sql);
        if !(e.contains(&format!("{at}: ")) && e.contains(says)) {
            wrong.push(format!("{sql}\n{e}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}

#[test]
fn an_over_window_over_a_group_by_or_a_top_n_lowers_to_an_over_of_its_changes() {
    for (sub, maker) in [
        (
            "SELECT auction, ts, MAX(price) AS final FROM b GROUP BY auction, ts",
            "aggregate",
        ),
        (
            "SELECT * FROM (SELECT *, price AS final, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) AS rn FROM b) WHERE rn <= 1",
            "top_n",
        ),
    ] {
        let sql = format!(
            "INSERT INTO out SELECT AVG(q.final) OVER (PARTITION BY q.auction ORDER BY q.ts ROWS BETWEEN 10 PRECEDING AND CURRENT ROW) FROM ({sub}) q;"
        );
        let s = spec(&sql);
        let kinds: Vec<&str> = s.operators.iter().map(|o| o.kind.as_str()).collect();
        assert!(
            kinds.contains(&maker) && kinds.contains(&"over"),
            "{sql}
{kinds:?}"
        );
    }
}
