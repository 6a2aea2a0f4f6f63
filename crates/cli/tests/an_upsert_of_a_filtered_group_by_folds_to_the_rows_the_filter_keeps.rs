//! A `WHERE` over the result of a `GROUP BY` drops the new row of a group whose total leaves
//! the condition while its old row passes: the stream carries a `-U` with no `+U` after it.
//! Written with `mode = 'upsert'` (which leaves `-U` rows out), that change must still remove
//! the key: the upsert output, folded by its primary key, holds exactly the groups whose final
//! total passes the condition — one row per batch and the default batching alike — and so
//! does the changelog output.

use crate::common;

use std::collections::BTreeMap;

use common::{anduin_ok, fold_changes, repo};

const QUERY: &str = "
CREATE TABLE orders (ts TIMESTAMP, customer STRING, amount BIGINT)
WITH (connector = 'file', path = '${INPUT}');
CREATE TABLE small WITH (connector = 'file', path = '${OUTPUT}', MODE);
INSERT INTO small
SELECT customer, total FROM (
  SELECT customer, SUM(amount) AS total FROM orders GROUP BY customer
) AS t
WHERE total < 40;
";

fn run(mode: &str, batch: Option<&str>) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let q = dir.path().join("q.sql");
    std::fs::write(&q, QUERY.replace("MODE", mode)).expect("query");
    let out = dir.path().join("out.csv");
    let mut args = vec![
        "run".to_string(),
        q.display().to_string(),
        "--var".into(),
        "INPUT=data/orders.csv".into(),
        "--var".into(),
        format!("OUTPUT={}", out.display()),
    ];
    if let Some(b) = batch {
        args.extend(["--batch-size".to_string(), b.to_string()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    anduin_ok(&repo(), &args);
    std::fs::read_to_string(&out).expect("output")
}

/// Each customer whose amounts sum below 40: `customer,total`.
fn naive() -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(repo().join("data/orders.csv")).expect("input");
    let mut per: BTreeMap<String, Option<i64>> = BTreeMap::new();
    for line in text.lines().skip(1) {
        let cols: Vec<&str> = line.split(',').collect();
        let total = per.entry(cols[1].to_string()).or_default();
        if let Ok(v) = cols[2].parse::<i64>() {
            *total = Some(total.unwrap_or(0) + v);
        }
    }
    per.into_iter()
        .filter_map(|(c, t)| {
            t.filter(|t| *t < 40)
                .map(|t| (c.clone(), format!("{c},{t}")))
        })
        .collect()
}

#[test]
fn the_upsert_output_drops_the_groups_that_left_the_condition() {
    let expected = naive();
    assert!(
        expected.len() >= 2 && expected.len() < 8,
        "the data has groups on both sides: {expected:?}"
    );
    for batch in [Some("1"), None] {
        let upsert = run("mode = 'upsert', primary_key = 'customer'", batch);
        assert!(!upsert.lines().any(|l| l.starts_with("-U,")), "{upsert}");
        assert_eq!(
            fold_changes(upsert.lines().skip(1), true),
            expected,
            "batch {batch:?}:\n{upsert}"
        );
        let changelog = run("mode = 'changelog'", batch);
        assert_eq!(
            fold_changes(changelog.lines().skip(1), false),
            expected,
            "batch {batch:?}:\n{changelog}"
        );
    }
}
