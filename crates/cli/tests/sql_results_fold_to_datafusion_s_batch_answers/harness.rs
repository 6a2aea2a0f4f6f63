//! Runs a set of queries over one seed's input both ways — every query an `INSERT` of one
//! anduin script (one `anduin run`), and each in a DataFusion `SessionContext` over the same
//! rows as in-memory tables — folds anduin's changelog (or upserts) into the table it
//! describes, and compares the two as multisets of rows, doubles within a tolerance.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float64Type, Int64Type, TimeUnit};
use datafusion::prelude::SessionContext;

use super::input::{Input, WATERMARK};
use crate::common::anduin_ok;

/// How anduin writes a query's output.
pub enum Mode {
    /// Every change, `op` first: folded as a multiset (`+I`/`+U` add a row, `-U`/`-D` take
    /// out one that is there).
    Changelog,
    /// Upserts by these columns (`primary_key`): a key's latest row, gone at its `-D`.
    Upsert(&'static str),
}

/// One query of a comparison.
pub struct Query {
    /// What it covers, for the failure message.
    pub what: &'static str,
    /// The `SELECT` anduin runs, and DataFusion too unless `batch` is given.
    pub sql: &'static str,
    /// The query DataFusion runs, where it must be written otherwise (the test says why).
    pub batch: Option<&'static str>,
    pub mode: Mode,
}

impl Query {
    /// A query run as a changelog, the same text both ways.
    pub const fn changelog(what: &'static str, sql: &'static str) -> Query {
        Query {
            what,
            sql,
            batch: None,
            mode: Mode::Changelog,
        }
    }
}

/// A value of a row, as both sides are compared.
#[derive(Debug, Clone, PartialEq, PartialOrd)]
enum Cell {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
}

impl Cell {
    /// Equal, doubles within a relative (and, near zero, absolute) 1e-9, NaN to NaN.
    fn close(&self, other: &Cell) -> bool {
        match (self, other) {
            (Cell::Float(a), Cell::Float(b)) => {
                a == b
                    || (a.is_nan() && b.is_nan())
                    || (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
            }
            _ => self == other,
        }
    }
}

type Row = Vec<Cell>;

/// What a column holds, from DataFusion's type of it.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Bool,
    Int,
    Float,
    Str,
}

impl Kind {
    fn of(t: &DataType) -> Kind {
        match t {
            DataType::Boolean => Kind::Bool,
            DataType::Float16
            | DataType::Float32
            | DataType::Float64
            | DataType::Decimal128(..) => Kind::Float,
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => Kind::Str,
            t if t.is_integer() || matches!(t, DataType::Timestamp(..)) => Kind::Int,
            other => panic!("a result column of type {other} (the test compares no such)"),
        }
    }

    /// A cell of anduin's CSV output (`None` for an empty field, NULL), a timestamp its
    /// milliseconds.
    fn parse(self, text: &Option<String>) -> Result<Cell, String> {
        let Some(text) = text else {
            return Ok(Cell::Null);
        };
        let bad = |e: &dyn std::fmt::Display| format!("`{text}` is no {self:?}: {e}");
        Ok(match self {
            Kind::Bool => Cell::Bool(text.parse().map_err(|e| bad(&e))?),
            Kind::Int => Cell::Int(text.parse().map_err(|e| bad(&e))?),
            Kind::Float => Cell::Float(text.parse().map_err(|e| bad(&e))?),
            Kind::Str => Cell::Str(text.to_string()),
        })
    }
}

/// The rows of DataFusion's batches, of columns of these kinds.
fn datafusion_rows(kinds: &[Kind], batches: &[RecordBatch]) -> Vec<Row> {
    let mut rows = Vec::new();
    for batch in batches {
        let columns: Vec<Vec<Cell>> = batch
            .columns()
            .iter()
            .zip(kinds)
            .map(|(col, kind)| {
                let to = match (kind, col.data_type()) {
                    (Kind::Int, DataType::Timestamp(..)) => {
                        let ms = cast(col, &DataType::Timestamp(TimeUnit::Millisecond, None))
                            .expect("a timestamp in milliseconds");
                        cast(&ms, &DataType::Int64).expect("milliseconds as an integer")
                    }
                    (Kind::Int, _) => cast(col, &DataType::Int64).expect("an integer"),
                    (Kind::Float, _) => cast(col, &DataType::Float64).expect("a double"),
                    (Kind::Str, _) => cast(col, &DataType::Utf8).expect("a string"),
                    (Kind::Bool, _) => std::sync::Arc::clone(col),
                };
                (0..to.len())
                    .map(|i| match kind {
                        _ if to.is_null(i) => Cell::Null,
                        Kind::Int => Cell::Int(to.as_primitive::<Int64Type>().value(i)),
                        Kind::Float => Cell::Float(to.as_primitive::<Float64Type>().value(i)),
                        Kind::Str => Cell::Str(to.as_string::<i32>().value(i).to_string()),
                        Kind::Bool => Cell::Bool(to.as_boolean().value(i)),
                    })
                    .collect()
            })
            .collect();
        for i in 0..batch.num_rows() {
            rows.push(columns.iter().map(|c| c[i].clone()).collect());
        }
    }
    rows
}

/// A line of anduin's CSV output: its fields, `None` for an empty one (NULL), unquoted (an
/// empty string is `""`).
fn fields(line: &str) -> Vec<Option<String>> {
    let mut out = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        let mut field = String::new();
        let mut quoted = false;
        if chars.peek() == Some(&'"') {
            quoted = true;
            chars.next();
            while let Some(c) = chars.next() {
                match c {
                    '"' if chars.peek() == Some(&'"') => {
                        chars.next();
                        field.push('"');
                    }
                    '"' => break,
                    c => field.push(c),
                }
            }
        }
        let mut more = false;
        for c in chars.by_ref() {
            if c == ',' {
                more = true;
                break;
            }
            field.push(c);
        }
        out.push((quoted || !field.is_empty()).then_some(field));
        if !more {
            return out;
        }
    }
}

type Cells = Vec<Option<String>>;

/// anduin's output file (`op,cells…` with a header) folded into the rows it describes, as
/// text cells: a changelog as a multiset, upserts by their key.
fn fold(text: &str, mode: &Mode) -> Result<Vec<Cells>, String> {
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().ok_or("no header")?.split(',').collect();
    let mut multiset: BTreeMap<Cells, usize> = BTreeMap::new();
    let mut by_key: BTreeMap<Cells, Cells> = BTreeMap::new();
    let key_columns: Vec<usize> = match mode {
        Mode::Changelog => Vec::new(),
        Mode::Upsert(key) => key
            .split(',')
            .map(|k| {
                header
                    .iter()
                    .skip(1)
                    .position(|h| *h == k.trim())
                    .ok_or_else(|| format!("no key column `{k}` in {header:?}"))
            })
            .collect::<Result<_, _>>()?,
    };
    for (i, line) in lines.enumerate() {
        let mut cells = fields(line).into_iter();
        let op = cells.next().flatten().ok_or("a line without an op")?;
        let row: Cells = cells.collect();
        match mode {
            Mode::Changelog => match op.as_str() {
                "+I" | "+U" => *multiset.entry(row).or_default() += 1,
                "-U" | "-D" => match multiset.get_mut(&row) {
                    Some(n) if *n > 1 => *n -= 1,
                    Some(_) => {
                        multiset.remove(&row);
                    }
                    None => return Err(format!("line {i}: {line} retracts a row not there")),
                },
                other => return Err(format!("line {i}: unknown op `{other}`")),
            },
            Mode::Upsert(_) => {
                let key: Cells = key_columns.iter().map(|&c| row[c].clone()).collect();
                match op.as_str() {
                    "+I" | "+U" => {
                        by_key.insert(key, row);
                    }
                    "-D" => {
                        if by_key.remove(&key).is_none() {
                            return Err(format!("line {i}: {line} deletes a key not there"));
                        }
                    }
                    other => return Err(format!("line {i}: `{other}` in an upsert output")),
                }
            }
        }
    }
    Ok(match mode {
        Mode::Changelog => multiset
            .into_iter()
            .flat_map(|(row, n)| std::iter::repeat_n(row, n))
            .collect(),
        Mode::Upsert(_) => by_key.into_values().collect(),
    })
}

/// Sorted by a total order: doubles by `total_cmp`.
fn sort(rows: &mut [Row]) {
    rows.sort_by(|a, b| {
        a.iter()
            .zip(b)
            .map(|(x, y)| match (x, y) {
                (Cell::Float(x), Cell::Float(y)) => x.total_cmp(y),
                _ => x.partial_cmp(y).expect("cells of one column compare"),
            })
            .find(|o| o.is_ne())
            .unwrap_or(std::cmp::Ordering::Equal)
    });
}

/// `None` if the multisets are equal (doubles within the tolerance), or what differs.
fn difference(mut ours: Vec<Row>, mut theirs: Vec<Row>) -> Option<String> {
    sort(&mut ours);
    sort(&mut theirs);
    let same = |a: &Row, b: &Row| a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.close(y));
    if ours.len() == theirs.len() && ours.iter().zip(&theirs).all(|(a, b)| same(a, b)) {
        return None;
    }
    // Rows of each side that no row of the other matches.
    let mut left: Vec<Row> = Vec::new();
    for row in ours {
        match theirs.iter().position(|r| same(r, &row)) {
            Some(i) => {
                theirs.remove(i);
            }
            None => left.push(row),
        }
    }
    if left.is_empty() && theirs.is_empty() {
        return None;
    }
    let mut text = String::new();
    for (side, rows) in [("anduin only", &left), ("DataFusion only", &theirs)] {
        let _ = writeln!(text, "  {side}: {} rows", rows.len());
        for r in rows.iter().take(12) {
            let _ = writeln!(text, "    {r:?}");
        }
    }
    Some(text)
}

/// The tables of the script: `t` and `u` from JSON Lines, with the event time and watermark.
fn tables() -> String {
    format!(
        "CREATE TABLE t (ts TIMESTAMP, k BIGINT, g VARCHAR, a BIGINT, x DOUBLE, late BOOLEAN)
WITH (connector = 'file', path = 't.jsonl', format = 'jsonl', event_time = 'ts', watermark = '{WATERMARK}');
CREATE TABLE u (ts TIMESTAMP, k BIGINT, name VARCHAR, v BIGINT)
WITH (connector = 'file', path = 'u.jsonl', format = 'jsonl', event_time = 'ts', watermark = '{WATERMARK}');
"
    )
}

/// For each seed: `rows` rows of input, every query run by anduin (in one script, with the
/// seed's batch size and parallelism) and by DataFusion; every difference is listed in one
/// failure, with its seed.
pub fn compare(queries: &[Query], seeds: &[u64], rows: usize) {
    let failures = differences(queries, seeds, rows);
    assert!(
        failures.is_empty(),
        "anduin's answers differ from DataFusion's:\n{failures}"
    );
}

/// What [`compare`] finds: each query and seed whose answers differ, and how (empty if none).
pub fn differences(queries: &[Query], seeds: &[u64], rows: usize) -> String {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime for DataFusion");
    let mut failures = String::new();
    for &seed in seeds {
        let input = Input::generate(seed, rows);
        let dir = tempfile::tempdir().expect("tempdir");
        let (t, u) = input.jsonl();
        std::fs::write(dir.path().join("t.jsonl"), t).expect("t.jsonl");
        std::fs::write(dir.path().join("u.jsonl"), u).expect("u.jsonl");
        let mut script = tables();
        for (i, q) in queries.iter().enumerate() {
            let mode = match q.mode {
                Mode::Changelog => "mode = 'changelog'".to_string(),
                Mode::Upsert(key) => format!("mode = 'upsert', primary_key = '{key}'"),
            };
            let _ = write!(
                script,
                "CREATE TABLE o{i} WITH (connector = 'file', path = 'o{i}.csv', {mode});\nINSERT INTO o{i} {};\n",
                q.sql
            );
        }
        std::fs::write(dir.path().join("q.sql"), &script).expect("the script");
        let batch = ["1", "7", "64"][seed as usize % 3];
        let parallelism = ["1", "2"][seed as usize % 2];
        anduin_ok(
            dir.path(),
            &[
                "run",
                "q.sql",
                "--no-api",
                "-q",
                "--batch-size",
                batch,
                "--parallelism",
                parallelism,
            ],
        );

        let ctx = SessionContext::new();
        let (t, u) = input.batches();
        ctx.register_batch("t", t).expect("t registers");
        ctx.register_batch("u", u).expect("u registers");
        for (i, q) in queries.iter().enumerate() {
            let sql = q.batch.unwrap_or(q.sql);
            let (kinds, batches) = runtime
                .block_on(async {
                    let frame = ctx.sql(sql).await?;
                    let kinds: Vec<Kind> = frame
                        .schema()
                        .fields()
                        .iter()
                        .map(|f| Kind::of(f.data_type()))
                        .collect();
                    Ok::<_, datafusion::error::DataFusionError>((kinds, frame.collect().await?))
                })
                .unwrap_or_else(|e| panic!("DataFusion runs {}: {e}\n{sql}", q.what));
            let theirs = datafusion_rows(&kinds, &batches);
            if theirs.is_empty() {
                let _ = writeln!(
                    failures,
                    "seed {seed}, {}: DataFusion's answer is empty, so the comparison says nothing:\n  {sql}",
                    q.what
                );
            }
            let text = std::fs::read_to_string(dir.path().join(format!("o{i}.csv")))
                .expect("anduin's output");
            let ours = fold(&text, &q.mode).and_then(|rows| {
                rows.iter()
                    .map(|row| {
                        if row.len() != kinds.len() {
                            return Err(format!(
                                "{} cells, DataFusion has {}",
                                row.len(),
                                kinds.len()
                            ));
                        }
                        row.iter().zip(&kinds).map(|(c, k)| k.parse(c)).collect()
                    })
                    .collect::<Result<Vec<Row>, String>>()
            });
            let diff = match ours {
                Ok(ours) => difference(ours, theirs),
                Err(e) => Some(format!("  anduin's output: {e}\n")),
            };
            if let Some(diff) = diff {
                let _ = writeln!(
                    failures,
                    "seed {seed} (batch size {batch}, parallelism {parallelism}), {}:\n  {}\n{diff}",
                    q.what, q.sql
                );
            }
        }
    }
    failures
}
