//! A SQL regular join of an updating subquery: customers FULL JOIN the running totals of
//! their orders (a `GROUP BY` without a window), written as a changelog. Whatever the order in
//! which the two files' rows meet (the readers run side by side), the changelog folds (as a
//! multiset: `+I`/`+U` add a row, `-U`/`-D` take out one that is there) to the naive FULL
//! JOIN of the customers with the final totals: a customer without orders padded with NULLs,
//! totals of customers not in the file padded on the other side. With `--batch-size 1` and
//! larger batches, at parallelism 1 and 2.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::common;

use common::{anduin_ok, rows_in_order, Rng};

const QUERY: &str = "
CREATE TABLE orders (ts TIMESTAMP, customer STRING, amount BIGINT)
WITH (connector = 'file', path = 'orders.csv');
CREATE TABLE customers (ts TIMESTAMP, name STRING, city STRING)
WITH (connector = 'file', path = 'customers.csv');
CREATE TABLE out
WITH (connector = 'file', path = '${OUTPUT}', mode = 'changelog');
INSERT INTO out
SELECT c.name, c.city, t.customer, t.total
FROM customers c
FULL JOIN (SELECT customer, SUM(amount) AS total FROM orders GROUP BY customer) t
  ON c.name = t.customer;
";

/// The changelog (`op,cells…`) folded into a multiset of rows.
fn fold(lines: &[String]) -> BTreeMap<String, u64> {
    let mut rows: BTreeMap<String, u64> = BTreeMap::new();
    for (i, line) in lines.iter().enumerate() {
        let (op, row) = line
            .split_once(',')
            .unwrap_or_else(|| panic!("line {i}: {line}"));
        if op.starts_with('+') {
            *rows.entry(row.to_string()).or_default() += 1;
        } else {
            let n = rows
                .get_mut(row)
                .unwrap_or_else(|| panic!("line {i}: {line} retracts a row not there"));
            *n -= 1;
            if *n == 0 {
                rows.remove(row);
            }
        }
    }
    rows
}

#[test]
fn a_sql_full_join_of_a_group_by_folds_to_the_naive_join_of_the_customers_and_their_totals() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rng = Rng(17);
    // Orders of customers c0 … c29, customers c10 … c39 (c30 … c39 without orders, c0 … c9
    // ordering without a customer row); c12 is in the file twice.
    let mut orders = String::from("ts,customer,amount\n");
    let mut totals: BTreeMap<String, i64> = BTreeMap::new();
    for i in 0..600 {
        let c = format!("c{}", rng.next(30));
        let amount = i64::try_from(rng.next(100)).expect("small") - 20;
        *totals.entry(c.clone()).or_default() += amount;
        writeln!(orders, "{},{c},{amount}", 1_700_000_000_000i64 + i).expect("writes");
    }
    let mut customers = String::from("ts,name,city\n");
    let mut people: Vec<(String, String)> = (10..40)
        .map(|i| (format!("c{i}"), format!("town{}", i % 7)))
        .collect();
    people.push(("c12".into(), "elsewhere".into()));
    for (i, (name, city)) in people.iter().enumerate() {
        writeln!(
            customers,
            "{},{name},{city}",
            1_700_000_000_000i64 + i as i64
        )
        .expect("writes");
    }
    std::fs::write(dir.path().join("orders.csv"), orders).expect("orders");
    std::fs::write(dir.path().join("customers.csv"), customers).expect("customers");
    std::fs::write(dir.path().join("q.sql"), QUERY).expect("query");

    let mut expected: BTreeMap<String, u64> = BTreeMap::new();
    for (name, city) in &people {
        let row = match totals.get(name) {
            Some(t) => format!("{name},{city},{name},{t}"),
            None => format!("{name},{city},,"),
        };
        *expected.entry(row).or_default() += 1;
    }
    for (c, t) in &totals {
        if !people.iter().any(|(n, _)| n == c) {
            *expected.entry(format!(",,{c},{t}")).or_default() += 1;
        }
    }

    for (batch, parallelism) in [("1", "1"), ("64", "2")] {
        let out = format!("out_{batch}_{parallelism}.csv");
        anduin_ok(
            dir.path(),
            &[
                "run",
                "q.sql",
                "--var",
                &format!("OUTPUT={out}"),
                "--batch-size",
                batch,
                "--parallelism",
                parallelism,
                "-q",
            ],
        );
        let lines = rows_in_order(&dir.path().join(&out));
        assert!(
            lines.iter().any(|l| l.starts_with("-D,")),
            "batch {batch}, parallelism {parallelism}: the totals' updates retract pairs"
        );
        assert_eq!(
            fold(&lines),
            expected,
            "batch {batch}, parallelism {parallelism}"
        );
    }
}
