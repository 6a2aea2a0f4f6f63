//! anduin's SQL against DataFusion's batch answers (issue 17): over seeded random tables —
//! rows out of order (within the watermark's delay) and rows far behind the watermark
//! (`late`), NULLs in keys and values — each query runs as anduin runs it (`anduin run` of a
//! script of `INSERT`s into changelog or upsert files, one row per batch or more, at
//! parallelism 1 or 2), its output folded into the table it describes, and the same SQL
//! text runs in DataFusion's `SessionContext` over the same rows (in-memory tables): the two
//! must be equal as multisets of rows (doubles within 1e-9). Updating operators get
//! retractions from upstream where a query stacks them (a GROUP BY over a GROUP BY, a join,
//! a top-N or an OVER window of an aggregate or a top-N).
//!
//! Where anduin answers otherwise by design, the query is written so that both sides ask the
//! same question, with a comment naming the section of `docs/sql.md` that says why. No query
//! is rewritten for DataFusion (`Query::batch` stays unused but in the harness's own check).

mod harness;
mod input;

use harness::{compare, differences, Mode, Query};

/// Rows of `t` per seed (and an eighth as many of `u`).
const ROWS: usize = 200;

#[test]
fn group_by_without_a_window_folds_to_datafusion_s_groups() {
    let queries = [
        Query::changelog(
            "COUNT, SUM, MIN, MAX, COUNT(DISTINCT), NULL keys",
            "SELECT k, COUNT(*) AS n, COUNT(a) AS na, SUM(a) AS s, MIN(a) AS mn, MAX(a) AS mx, COUNT(DISTINCT g) AS dg FROM t GROUP BY k",
        ),
        Query {
            what: "AVG of ints and doubles, SUM, MIN and MAX of doubles, as upserts",
            sql: "SELECT g, AVG(a) AS av, AVG(x) AS ax, SUM(x) AS sx, MIN(x) AS mnx, MAX(x) AS mxx FROM t GROUP BY g",
            batch: None,
            mode: Mode::Upsert("g"),
        },
        Query::changelog(
            "MIN and MAX of strings",
            "SELECT k, MIN(g) AS mn, MAX(g) AS mx, COUNT(g) AS ng FROM t GROUP BY k",
        ),
        Query::changelog(
            "FILTER (WHERE …), and a FILTER no row passes (NULL)",
            "SELECT k, COUNT(*) FILTER (WHERE a > 0) AS pos, SUM(a) FILTER (WHERE g = 'x') AS sx, MAX(x) FILTER (WHERE a < 0) AS mx, SUM(a) FILTER (WHERE a > 55) AS big, AVG(x) FILTER (WHERE x > 90) AS hx FROM t GROUP BY k",
        ),
        Query::changelog(
            "HAVING, two keys",
            "SELECT k, g, COUNT(*) AS n, SUM(a) AS s FROM t GROUP BY k, g HAVING COUNT(*) > 2 AND MAX(a) < 50",
        ),
        Query::changelog(
            "HAVING over the select list's aliases (docs/sql.md, Updating results: HAVING)",
            "SELECT k, COUNT(*) AS n, SUM(a) AS s, MAX(a) - MIN(a) AS spread FROM t GROUP BY k HAVING n > 18 AND s > 0 OR spread > 90",
        ),
        Query::changelog(
            "expressions over aggregates, in the select list and HAVING",
            "SELECT k, SUM(a) / COUNT(*) AS m, MAX(a) - MIN(a) AS spread, k * 1000 + COUNT(*) AS kc, CAST(SUM(a) AS DOUBLE) / COUNT(a) AS mean FROM t GROUP BY k HAVING MAX(a) - MIN(a) > 10",
        ),
        Query::changelog(
            "aggregates of expressions",
            "SELECT k, SUM(a * 2 + 1) AS s, MAX(CASE WHEN g = 'x' THEN x END) AS mx, COUNT(DISTINCT a % 5) AS d5, AVG(CAST(a AS DOUBLE)) AS av FROM t WHERE k IS NOT NULL GROUP BY k",
        ),
        Query::changelog(
            "aggregates without GROUP BY",
            "SELECT COUNT(*) AS n, SUM(a) AS s, MIN(x) AS mn, COUNT(DISTINCT k) AS dk FROM t",
        ),
        Query::changelog(
            "GROUP BY an expression, and two (the second was refused)",
            "SELECT a % 4 AS m, g IS NULL AS ng, COUNT(*) AS n, SUM(x) AS sx FROM t GROUP BY a % 4, g IS NULL",
        ),
        Query::changelog(
            "GROUP BY a function of the time",
            "SELECT date_trunc('second', ts) AS sec, COUNT(*) AS n, SUM(a) AS s FROM t GROUP BY date_trunc('second', ts)",
        ),
        Query::changelog(
            "a GROUP BY over a GROUP BY (retractions upstream)",
            "SELECT n, COUNT(*) AS keys, SUM(s) AS total, MIN(s) AS least, SUM(s) FILTER (WHERE s > 100) AS big, COUNT(DISTINCT s) AS ds FROM (SELECT k, COUNT(*) AS n, SUM(a) AS s FROM t GROUP BY k) q GROUP BY n",
        ),
        Query {
            what: "a GROUP BY over a GROUP BY with HAVING (groups deleted and inserted upstream), as upserts",
            sql: "SELECT g, COUNT(*) AS keys, MAX(n) AS most FROM (SELECT g, k, COUNT(*) AS n FROM t GROUP BY g, k HAVING SUM(a) > 0) q GROUP BY g",
            batch: None,
            mode: Mode::Upsert("g"),
        },
        Query::changelog(
            "aggregates without GROUP BY over a GROUP BY",
            "SELECT COUNT(*) AS keys, SUM(n) AS total, MAX(n) AS most, AVG(n) AS mean FROM (SELECT k, COUNT(*) AS n FROM t GROUP BY k) q",
        ),
        Query::changelog(
            "a WHERE over a GROUP BY",
            "SELECT k, n FROM (SELECT k, COUNT(*) AS n FROM t GROUP BY k) q WHERE n > 20",
        ),
    ];
    compare(&queries, &[1, 2, 3], ROWS);
}

#[test]
fn regular_joins_fold_to_datafusion_s_joins() {
    let queries = [
        Query::changelog(
            "INNER JOIN",
            "SELECT t.k, t.a, u.name, u.v FROM t JOIN u ON t.k = u.k",
        ),
        Query::changelog(
            "INNER JOIN with conditions on one side and on both",
            "SELECT t.ts, u.name, t.a + u.v AS av FROM t JOIN u ON t.k = u.k WHERE t.a > 0 AND u.v < 40 AND t.a <> u.v",
        ),
        Query::changelog(
            "INNER JOIN on two keys",
            "SELECT t.ts, u.name FROM t JOIN u ON t.k = u.k AND t.a = u.v",
        ),
        Query::changelog(
            "INNER JOIN filtered by a BETWEEN of both sides",
            "SELECT t.ts, u.v FROM t JOIN u ON u.k = t.k WHERE t.a BETWEEN u.v - 5 AND u.v + 5",
        ),
        Query::changelog(
            "LEFT JOIN with a condition on the right in ON",
            "SELECT t.ts, t.k, u.name, u.v FROM t LEFT JOIN u ON t.k = u.k AND u.v > 10",
        ),
        Query::changelog(
            "LEFT JOIN with a condition on both sides in ON",
            "SELECT t.ts, t.a, u.v FROM t LEFT JOIN u ON t.k = u.k AND t.a > u.v",
        ),
        Query::changelog(
            "RIGHT JOIN",
            "SELECT t.ts, t.a, u.k, u.name FROM t RIGHT JOIN u ON t.k = u.k",
        ),
        Query::changelog(
            "RIGHT JOIN with a condition on the left in ON",
            "SELECT t.ts, u.ts AS uts FROM t RIGHT JOIN u ON t.k = u.k AND t.g = 'x'",
        ),
        Query::changelog(
            "FULL JOIN with WHERE after it",
            "SELECT t.ts, t.k AS tk, u.k AS uk, u.v FROM t FULL JOIN u ON t.k = u.k WHERE u.v IS NULL OR u.v > 0",
        ),
        Query::changelog(
            "FULL JOIN with a condition on both sides in ON",
            "SELECT t.ts, u.ts AS uts, t.a, u.v FROM t FULL JOIN u ON t.k = u.k AND t.a < u.v",
        ),
        Query::changelog(
            "a self-join, inner",
            "SELECT a.ts, b.ts AS bts, a.a + b.a AS s FROM t a JOIN t b ON a.k = b.k AND a.g = b.g WHERE a.ts < b.ts",
        ),
        Query::changelog(
            "a self-join, left, with a condition on both sides in ON",
            "SELECT a.ts, b.ts AS bts FROM t a LEFT JOIN t b ON a.k = b.k AND b.a > a.a + 30",
        ),
        Query::changelog(
            "a FULL JOIN of an aggregate (an updating input)",
            "SELECT u.name, u.v, q.k, q.n, q.s FROM u FULL JOIN (SELECT k, COUNT(*) AS n, SUM(a) AS s FROM t GROUP BY k) q ON u.k = q.k",
        ),
        Query::changelog(
            "an INNER JOIN of two aggregates, every column (`*`)",
            "SELECT * FROM (SELECT k, COUNT(*) AS n FROM t GROUP BY k) p JOIN (SELECT k AS uk, SUM(v) AS total FROM u GROUP BY k) q ON p.k = q.uk",
        ),
        Query::changelog(
            "a LEFT JOIN of an aggregate to an aggregate with HAVING",
            "SELECT p.k, p.n, q.total FROM (SELECT k, COUNT(*) AS n FROM t GROUP BY k) p LEFT JOIN (SELECT k, SUM(v) AS total FROM u GROUP BY k HAVING SUM(v) > 30) q ON p.k = q.k",
        ),
        Query::changelog(
            "a GROUP BY over a LEFT JOIN, COUNT of a padded column, HAVING",
            "SELECT u.name, COUNT(*) AS n, COUNT(t.ts) AS nt, SUM(t.a) AS s, MAX(t.x) AS mx, COUNT(DISTINCT t.g) AS dg FROM u LEFT JOIN t ON u.k = t.k GROUP BY u.name HAVING COUNT(DISTINCT t.g) >= 1",
        ),
        Query::changelog(
            "a GROUP BY over a FULL JOIN, by columns of both sides",
            "SELECT u.name, t.g, COUNT(*) AS n, SUM(u.v) AS sv FROM t FULL JOIN u ON t.k = u.k GROUP BY u.name, t.g",
        ),
        Query::changelog(
            "a GROUP BY over a subquery of a LEFT JOIN",
            "SELECT q.k, COUNT(*) AS n FROM (SELECT t.k AS k, u.name FROM t LEFT JOIN u ON t.k = u.k) q GROUP BY q.k",
        ),
    ];
    compare(&queries, &[4, 5, 6], ROWS);
}

#[test]
fn top_n_and_deduplication_fold_to_datafusion_s_first_rows() {
    let queries = [
        // Without NULLS FIRST/LAST anduin ranks NULL as the smallest value, as Flink does,
        // and DataFusion as the largest (docs/sql.md, "Top-N and deduplication": Order): the
        // order says where NULLs go, so both ask the same. `ts` breaks the ties.
        Query::changelog(
            "the top 3 of each key, with the number",
            "SELECT k, a, ts, rn FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY a DESC NULLS LAST, ts) AS rn FROM t) WHERE rn <= 3",
        ),
        Query {
            what: "the top 3 of each key, with the number, as upserts by key and number",
            sql: "SELECT k, rn, a, ts FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY a DESC NULLS LAST, ts) AS rn FROM t) WHERE rn <= 3",
            batch: None,
            mode: Mode::Upsert("k, rn"),
        },
        Query::changelog(
            "the top 2 of each group, without the number",
            "SELECT g, k, x FROM (SELECT g, k, x, ts, ROW_NUMBER() OVER (PARTITION BY g ORDER BY x NULLS FIRST, ts DESC) AS rn FROM t) WHERE rn < 3",
        ),
        Query::changelog(
            "the top 2 of each pair of nullable keys",
            "SELECT g, a, ts, rn FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY g, k ORDER BY ts DESC) AS rn FROM t) WHERE rn <= 2",
        ),
        Query::changelog(
            "the top 2 by an expression",
            "SELECT k, a, ts FROM (SELECT k, a, ts, ROW_NUMBER() OVER (PARTITION BY k ORDER BY a * a DESC NULLS LAST, ts) AS rn FROM t) WHERE rn <= 2",
        ),
        // Ordered by time but N above 1 is a top-N, not a deduplication: late rows count.
        Query::changelog(
            "the first 2 rows of each key by time, late rows included",
            "SELECT k, ts, rn FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts) AS rn FROM t) WHERE rn <= 2",
        ),
        Query {
            what: "keep last: the latest row of each key",
            sql: "SELECT k, ts, a, g FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts DESC) AS rn FROM t) WHERE rn = 1",
            batch: None,
            mode: Mode::Upsert("k"),
        },
        // Keep first drops a row behind the watermark (docs/sql.md, "Top-N and
        // deduplication": Keep first), so the late rows are left out, both ways.
        Query::changelog(
            "keep first: the earliest row of each key",
            "SELECT k, ts, a FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts) AS rn FROM t WHERE NOT late) WHERE rn = 1",
        ),
        Query::changelog(
            "the top 3 aggregates (retractions upstream), ordered by an aggregate",
            "SELECT k, n, rn FROM (SELECT k, COUNT(*) AS n, ROW_NUMBER() OVER (ORDER BY COUNT(*) DESC, k NULLS LAST) AS rn FROM t GROUP BY k) WHERE rn <= 3",
        ),
        Query::changelog(
            "the top 2 of a GROUP BY over a GROUP BY",
            "SELECT n, c, rn FROM (SELECT n, COUNT(*) AS c, ROW_NUMBER() OVER (ORDER BY COUNT(*) DESC, n) AS rn FROM (SELECT k, COUNT(*) AS n FROM t GROUP BY k) q GROUP BY n) WHERE rn <= 2",
        ),
        Query::changelog(
            "the top 1 of each key over a join",
            "SELECT k, name, a FROM (SELECT t.k, u.name, t.a, ROW_NUMBER() OVER (PARTITION BY t.k ORDER BY t.a NULLS LAST, t.ts, u.name, u.ts) AS rn FROM t JOIN u ON t.k = u.k) WHERE rn = 1",
        ),
        Query::changelog(
            "the top 2 of a GROUP BY over a join",
            "SELECT name, total, rn FROM (SELECT u.name, SUM(t.a) AS total, ROW_NUMBER() OVER (ORDER BY SUM(t.a) DESC NULLS LAST, u.name) AS rn FROM t JOIN u ON t.k = u.k GROUP BY u.name) WHERE rn <= 2",
        ),
    ];
    compare(&queries, &[7, 8, 9], ROWS);
}

#[test]
fn over_windows_give_each_row_datafusion_s_aggregates() {
    // An OVER window over an append-only input drops a row behind the watermark
    // (docs/sql.md, "OVER windows"): the late rows are left out, both ways.
    let queries = [
        Query::changelog(
            "ROWS BETWEEN 2 PRECEDING AND CURRENT ROW",
            "SELECT ts, k, a, COUNT(*) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS n, SUM(a) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS s, MIN(a) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS mn, MAX(x) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS mx, AVG(a) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS av FROM t WHERE NOT late",
        ),
        Query::changelog(
            "RANGE BETWEEN INTERVAL '1' SECOND PRECEDING AND CURRENT ROW",
            "SELECT ts, g, x, SUM(x) OVER (PARTITION BY g ORDER BY ts RANGE BETWEEN INTERVAL '1' SECOND PRECEDING AND CURRENT ROW) AS sx, COUNT(a) OVER (PARTITION BY g ORDER BY ts RANGE BETWEEN INTERVAL '1' SECOND PRECEDING AND CURRENT ROW) AS na FROM t WHERE NOT late",
        ),
        Query::changelog(
            "RANGE of 3 seconds: MIN of strings, AVG of doubles, COUNT(DISTINCT)",
            "SELECT ts, MIN(g) OVER (PARTITION BY k ORDER BY ts RANGE BETWEEN INTERVAL '3' SECOND PRECEDING AND CURRENT ROW) AS mg, AVG(x) OVER (PARTITION BY k ORDER BY ts RANGE BETWEEN INTERVAL '3' SECOND PRECEDING AND CURRENT ROW) AS ax, COUNT(DISTINCT g) OVER (PARTITION BY k ORDER BY ts RANGE BETWEEN INTERVAL '3' SECOND PRECEDING AND CURRENT ROW) AS dg FROM t WHERE NOT late",
        ),
        Query::changelog(
            "the default frame (RANGE UNBOUNDED PRECEDING), FILTER, COUNT(DISTINCT), an expression",
            "SELECT ts, k, SUM(a) OVER (PARTITION BY k ORDER BY ts) AS running, COUNT(*) FILTER (WHERE a > 0) OVER (PARTITION BY k ORDER BY ts) AS pos, COUNT(DISTINCT g) OVER (PARTITION BY k ORDER BY ts) AS dg, MAX(a) OVER (PARTITION BY k ORDER BY ts) - a AS below FROM t WHERE NOT late",
        ),
        Query::changelog(
            "one partition, ROWS BETWEEN UNBOUNDED PRECEDING",
            "SELECT ts, MAX(a) OVER (ORDER BY ts ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS mx FROM t WHERE NOT late",
        ),
        Query::changelog(
            "over an updating input: the latest row of each key (retractions upstream)",
            "SELECT k, g, SUM(a) OVER (PARTITION BY g ORDER BY ts ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS s2 FROM (SELECT k, g, a, ts FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts DESC) AS rn FROM t) WHERE rn = 1)",
        ),
        Query::changelog(
            "over an updating input: ROWS, partitioned",
            "SELECT k, g, a, COUNT(*) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS n, SUM(a) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS s FROM (SELECT k, g, a, ts FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k, g ORDER BY a NULLS LAST, ts) AS rn FROM t) WHERE rn <= 2)",
        ),
        Query::changelog(
            "over an updating input: RANGE, one partition",
            "SELECT k, ts, COUNT(*) OVER (ORDER BY ts RANGE BETWEEN INTERVAL '2' SECOND PRECEDING AND CURRENT ROW) AS n, MAX(a) OVER (ORDER BY ts RANGE BETWEEN INTERVAL '2' SECOND PRECEDING AND CURRENT ROW) AS mx FROM (SELECT k, a, ts FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY a DESC NULLS LAST, ts) AS rn FROM t) WHERE rn <= 2)",
        ),
    ];
    compare(&queries, &[10, 11, 12], ROWS);
}

#[test]
fn case_in_and_scalar_functions_give_datafusion_s_values() {
    let queries = [
        Query::changelog(
            "CASE, IN, IS NULL, COALESCE, string and math functions",
            "SELECT ts, CASE WHEN a > 10 THEN 'hi' WHEN a < -10 THEN 'lo' ELSE 'mid' END AS band, k IN (1, 3, 5) AS odd, g NOT IN ('x', 'y') AS other, a IS NULL AS na, COALESCE(a, -1) AS ca, ABS(a) AS aa, UPPER(g) AS ug, CONCAT(g, '-', CAST(k AS VARCHAR)) AS gk, CHARACTER_LENGTH(g) AS lg, ROUND(x, 1) AS rx, FLOOR(x) AS fx, x * 2 + 1 AS x2, a % 7 AS a7 FROM t WHERE a IS NULL OR a BETWEEN -20 AND 30",
        ),
        // SQRT of a negative number is an error of DataFusion's (a failed query there, a
        // row in the dead letters in anduin), so the query takes ABS(x).
        Query::changelog(
            "simple CASE, IN with NULL, NULLIF, LIKE, ||, SUBSTRING, casts, x / 0, more functions",
            "SELECT ts, LOWER(g) || '!' AS lg, SUBSTRING(g FROM 1 FOR 1) AS s1, g LIKE 'x%' AS lx, NULLIF(a, 0) AS nz, CAST(x AS BIGINT) AS xi, CAST(a AS DOUBLE) / 3 AS a3, SQRT(ABS(x)) AS sq, POWER(a, 2) AS p2, CASE k WHEN 1 THEN 'one' WHEN 2 THEN 'two' END AS kw, k IN (1, NULL) AS kn, GREATEST(a, k) AS gr, x / 0 AS inf, SIGNUM(a) AS sg, TRIM(CONCAT(' ', g, ' ')) AS tr, REPLACE(g, 'x', 'xx') AS rp, LPAD(g, 3, '*') AS lp FROM t",
        ),
        Query::changelog(
            "NOT over OR with NULLs",
            "SELECT ts, k FROM t WHERE NOT (k > 4 OR a < 0)",
        ),
        Query::changelog(
            "CASE in a GROUP BY and in an aggregate's argument",
            "SELECT CASE WHEN k < 3 THEN 'low' ELSE 'high' END AS band, SUM(CASE WHEN g IN ('x', 'y') THEN a ELSE 0 END) AS s, COUNT(*) AS n FROM t GROUP BY CASE WHEN k < 3 THEN 'low' ELSE 'high' END",
        ),
        Query::changelog(
            "CASE and IN over an updating input",
            "SELECT k, CASE WHEN n > 20 THEN 'many' ELSE 'few' END AS size, n IN (18, 19, 20) AS near FROM (SELECT k, COUNT(*) AS n FROM t GROUP BY k) q WHERE k IN (0, 2, 4, 6, 8) OR k IS NULL",
        ),
    ];
    compare(&queries, &[13, 14], ROWS);
}

/// The comparison itself: a DataFusion query that answers otherwise (each count one more)
/// is caught, naming the query.
#[test]
fn an_answer_that_differs_from_datafusion_s_is_caught() {
    let wrong = [Query {
        what: "COUNT against COUNT + 1",
        sql: "SELECT k, COUNT(*) AS n FROM t GROUP BY k",
        batch: Some("SELECT k, COUNT(*) + 1 AS n FROM t GROUP BY k"),
        mode: Mode::Changelog,
    }];
    let found = differences(&wrong, &[15], 40);
    assert!(
        found.contains("COUNT against COUNT + 1") && found.contains("anduin only"),
        "{found}"
    );
}
