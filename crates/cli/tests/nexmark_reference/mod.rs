//! The setup of `the_nexmark_queries_agree_with_a_naive_reference`: generate the Nexmark
//! streams with anduin into CSV files and read them back (or take hand-made bids), run a
//! query of `benches/nexmark/` over the same events, and compare its rows with a
//! reference's as normalized multisets.
//! The references themselves are in [`sql`] and [`cep`].

pub mod cep;
mod csv;
pub mod sql;
pub mod sql_q10_q22;

use std::cmp::Ordering;
use std::path::Path;

use crate::common::{anduin_ok, repo};
use csv::{double, int, timestamp, Table};

/// Events of all three kinds together: 1 000 people, 3 000 auctions, 46 000 bids.
pub const EVENTS: u32 = 50_000;
/// Events per second of event time: event *n* is `n × 2` ms after 2024-01-01T00:00:00Z, so the
/// input spans 100 s (ten 10-second windows, 54 hops of 2 s) and no two events share a time.
pub const RATE: u32 = 500;
/// The generator's seed.
pub const SEED: u32 = 42;

/// The three Nexmark streams of one run, each to a CSV file.
const GENERATE: &str = r#"
operator name = "people", type = "nexmark" {
  param events = "${EVENTS}"
  param rate = "${RATE}"
  param seed = "${SEED}"
  param event_time = "dateTime"
  output name = "person"
}
operator name = "auctions", type = "nexmark" {
  param events = "${EVENTS}"
  param rate = "${RATE}"
  param seed = "${SEED}"
  param event_time = "dateTime"
  output name = "auction"
}
operator name = "bids", type = "nexmark" {
  param events = "${EVENTS}"
  param rate = "${RATE}"
  param seed = "${SEED}"
  param event_time = "dateTime"
  output name = "bid"
}
operator name = "person_csv", type = "writer" {
  input name = "person"
  param path = "person.csv"
}
operator name = "auction_csv", type = "writer" {
  input name = "auction"
  param path = "auction.csv"
}
operator name = "bid_csv", type = "writer" {
  input name = "bid"
  param path = "bid.csv"
}
"#;

/// A person: `id`, `name`, `city`, `state`, `dateTime` (epoch ms).
pub struct Person {
    pub id: i64,
    pub name: String,
    pub city: String,
    pub state: String,
    pub date_time: i64,
}

/// An auction: `id`, `seller`, `category`, `dateTime` and `expires` (epoch ms).
pub struct Auction {
    pub id: i64,
    pub seller: i64,
    pub category: i64,
    pub date_time: i64,
    pub expires: i64,
}

/// A bid: `auction`, `bidder`, `price`, `channel`, `url`, `dateTime` (epoch ms), `extra`.
#[derive(Clone)]
pub struct Bid {
    pub auction: i64,
    pub bidder: i64,
    pub price: i64,
    pub channel: String,
    pub url: String,
    pub date_time: i64,
    pub extra: String,
}

/// The events, in generation order, and the temporary folder that holds their files, where
/// the query runs too.
pub struct Input {
    dir: tempfile::TempDir,
    /// Whether the bids are a hand-made `bid.csv`, which the query then reads instead of the
    /// generator.
    hand_made: bool,
    pub people: Vec<Person>,
    pub auctions: Vec<Auction>,
    pub bids: Vec<Bid>,
}

/// `anduin` with `args` followed by the `--var`s of `EVENTS`, `RATE`, `SEED` and `extra`,
/// run in `dir`; it must succeed.
fn anduin_with_vars(dir: &Path, args: &[&str], extra: &[String]) -> std::process::Output {
    let vars = [
        format!("EVENTS={EVENTS}"),
        format!("RATE={RATE}"),
        format!("SEED={SEED}"),
    ];
    let mut all: Vec<&str> = args.to_vec();
    for v in vars.iter().chain(extra) {
        all.extend(["--var", v]);
    }
    anduin_ok(dir, &all)
}

/// Generates the three streams with anduin's `nexmark` operator and reads them back.
pub fn input() -> Input {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("generate.flow"), GENERATE).expect("generator query");
    anduin_with_vars(dir.path(), &["run", "generate.flow", "-q"], &[]);
    let people = read_people(&dir.path().join("person.csv"));
    let auctions = read_auctions(&dir.path().join("auction.csv"));
    let bids = read_bids(&dir.path().join("bid.csv"));
    Input {
        dir,
        hand_made: false,
        people,
        auctions,
        bids,
    }
}

/// Bids from a hand-made `bid.csv` (`auction,bidder,price,channel,url,dateTime,extra`, times
/// in epoch ms), read by the query in place of the generator; no people, no auctions.
pub fn hand_made_bids(csv: &str) -> Input {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("bid.csv"), csv).expect("bids");
    let bids = read_bids(&dir.path().join("bid.csv"));
    Input {
        dir,
        hand_made: true,
        people: Vec::new(),
        auctions: Vec::new(),
        bids,
    }
}

fn read_people(path: &Path) -> Vec<Person> {
    let t = Table::read(path);
    let (id, name, time) = (t.col("id"), t.col("name"), t.col("dateTime"));
    let (city, state) = (t.col("city"), t.col("state"));
    (t.rows.iter())
        .map(|r| Person {
            id: int(&r[id]),
            name: r[name].clone(),
            city: r[city].clone(),
            state: r[state].clone(),
            date_time: timestamp(&r[time]),
        })
        .collect()
}

fn read_auctions(path: &Path) -> Vec<Auction> {
    let t = Table::read(path);
    let (seller, time) = (t.col("seller"), t.col("dateTime"));
    let (id, category, expires) = (t.col("id"), t.col("category"), t.col("expires"));
    (t.rows.iter())
        .map(|r| Auction {
            id: int(&r[id]),
            seller: int(&r[seller]),
            category: int(&r[category]),
            date_time: timestamp(&r[time]),
            expires: timestamp(&r[expires]),
        })
        .collect()
}

fn read_bids(path: &Path) -> Vec<Bid> {
    let t = Table::read(path);
    let (auction, bidder, price) = (t.col("auction"), t.col("bidder"), t.col("price"));
    let (time, extra) = (t.col("dateTime"), t.col("extra"));
    let (channel, url) = (t.col("channel"), t.col("url"));
    (t.rows.iter())
        .map(|r| Bid {
            auction: int(&r[auction]),
            bidder: int(&r[bidder]),
            price: int(&r[price]),
            channel: r[channel].clone(),
            url: r[url].clone(),
            date_time: timestamp(&r[time]),
            extra: r[extra].clone(),
        })
        .collect()
}

/// `query` (a `.sql` text) with its `bid` table read from `bid.csv` instead of the
/// generator: its `connector = 'nexmark'` becomes a file, and its `events`, `rate` and `seed`
/// lines go.
fn reading_bid_csv(query: &str) -> String {
    let generator_option = |l: &&str| {
        let l = l.trim_start();
        ["events =", "rate =", "seed ="]
            .iter()
            .any(|o| l.starts_with(o))
    };
    let text: String = (query.lines())
        .filter(|l| !generator_option(l))
        .map(|l| format!("{l}\n"))
        .collect();
    let file = "connector = 'file', path = 'bid.csv', format = 'csv'";
    let replaced = text.replacen("connector = 'nexmark'", file, 1);
    assert!(
        replaced != text && !replaced.contains("'nexmark'"),
        "one nexmark table, the bids, in {query}"
    );
    replaced
}

/// A normalized output value.
#[derive(Clone, Debug)]
pub enum V {
    /// An integer, or a timestamp in epoch milliseconds.
    I(i64),
    /// A double, compared with a relative tolerance.
    F(f64),
    /// Text.
    S(String),
}

impl V {
    fn exact(&self, other: &V) -> Ordering {
        match (self, other) {
            (V::I(a), V::I(b)) => a.cmp(b),
            (V::F(a), V::F(b)) => a.total_cmp(b),
            (V::S(a), V::S(b)) => a.cmp(b),
            _ => panic!("{self:?} and {other:?} are of different kinds"),
        }
    }

    /// As [`V::exact`], but doubles within 1e-9 of each other (relative) are equal.
    fn approx(&self, other: &V) -> Ordering {
        match (self, other) {
            (V::F(a), V::F(b)) if (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0) => {
                Ordering::Equal
            }
            _ => self.exact(other),
        }
    }
}

/// An output row.
pub type Row = Vec<V>;

/// The rows of an upsert output (`op` first, then the row, keyed by its first column) folded
/// into the table they describe: a `+I` or `+U` sets its key's row, a `-D` removes it.
pub fn folded_upserts(rows: Vec<Row>) -> Vec<Row> {
    folded_upserts_by(rows, 1)
}

/// [`folded_upserts`] of rows keyed by their first `key_columns` columns.
pub fn folded_upserts_by(rows: Vec<Row>, key_columns: usize) -> Vec<Row> {
    let mut table: std::collections::BTreeMap<String, Row> = std::collections::BTreeMap::new();
    for mut r in rows {
        let V::S(op) = r.remove(0) else {
            panic!("an upsert row starts with its op: {r:?}")
        };
        assert!(
            r.len() >= key_columns,
            "a key of {key_columns} columns: {r:?}"
        );
        let key = format!("{:?}", &r[..key_columns]);
        match op.as_str() {
            "+I" | "+U" => {
                table.insert(key, r);
            }
            "-D" => {
                assert!(
                    table.remove(&key).is_some(),
                    "-D of {key}, which has no row"
                );
            }
            other => panic!("an upsert row of kind {other}"),
        }
    }
    table.into_values().collect()
}

/// The rows of a changelog output (`op` first, then the row) folded into the multiset of rows
/// they describe: a `+I` or `+U` adds its row, a `-U` or `-D` takes an equal one out.
pub fn folded_changelog(rows: Vec<Row>) -> Vec<Row> {
    let mut table: std::collections::BTreeMap<String, Vec<Row>> = Default::default();
    for mut r in rows {
        let V::S(op) = r.remove(0) else {
            panic!("a changelog row starts with its op: {r:?}")
        };
        let key = format!("{r:?}");
        match op.as_str() {
            "+I" | "+U" => table.entry(key).or_default().push(r),
            "-U" | "-D" => {
                let held = table.get_mut(&key).and_then(Vec::pop);
                assert!(held.is_some(), "{op} of {key}, which is not held");
            }
            other => panic!("a changelog row of kind {other}"),
        }
    }
    table.into_values().flatten().collect()
}

fn cmp_rows(a: &Row, b: &Row, by: fn(&V, &V) -> Ordering) -> Ordering {
    (a.iter().zip(b))
        .map(|(x, y)| by(x, y))
        .find(|o| o.is_ne())
        .unwrap_or(a.len().cmp(&b.len()))
}

/// Runs `benches/nexmark/{query}.sql` over the input's events (same `EVENTS`, `RATE` and
/// `SEED`) and returns its rows, each column parsed as `kinds` says: `i` integer, `t`
/// timestamp, `f` double, `s` text.
pub fn run_query(input: &Input, query: &str, kinds: &str) -> Vec<Row> {
    run_query_with(input, query, kinds, &["-q"]).0
}

/// [`run_query`] with `flags` after the query file: its rows, and what `anduin` wrote to
/// stderr (without `-q`, the run's summary, with the operators' metrics).
pub fn run_query_with(
    input: &Input,
    query: &str,
    kinds: &str,
    flags: &[&str],
) -> (Vec<Row>, String) {
    let path = repo().join(format!("benches/nexmark/{query}.sql"));
    assert!(path.exists(), "{} is not in the repository", path.display());
    let output = format!("{query}.csv");
    let path = if input.hand_made {
        let text = std::fs::read_to_string(&path).expect("the query is readable");
        let local = input.dir.path().join(format!("{query}.sql"));
        std::fs::write(&local, reading_bid_csv(&text)).expect("the query, reading bid.csv");
        local
    } else {
        path
    };
    let path = path.to_str().expect("a UTF-8 path");
    let mut args = vec!["run", path];
    args.extend_from_slice(flags);
    let out = anduin_with_vars(
        input.dir.path(),
        &args,
        &[
            format!("OUTPUT={output}"),
            // q13's side table, read where the query runs (this test's folder).
            format!(
                "SIDE_INPUT={}",
                repo().join("benches/nexmark/side_input.txt").display()
            ),
        ],
    );
    let table = Table::read(&input.dir.path().join(&output));
    assert_eq!(
        table.header.len(),
        kinds.len(),
        "{query}: columns {:?}",
        table.header
    );
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (parsed(query, &table.rows, kinds), stderr)
}

/// `rows` with each column parsed as `kinds` says (see [`run_query`]).
fn parsed(query: &str, rows: &[Vec<String>], kinds: &str) -> Vec<Row> {
    rows.iter()
        .map(|r| {
            assert_eq!(r.len(), kinds.len(), "{query}: a row {r:?}");
            (r.iter().zip(kinds.chars()))
                .map(|(x, k)| match k {
                    'i' => V::I(int(x)),
                    't' => V::I(timestamp(x)),
                    'f' => V::F(double(x)),
                    _ => V::S(x.clone()),
                })
                .collect()
        })
        .collect()
}

/// As [`run_query`], for a query whose sink is partitioned (`PARTITIONED BY`): its `OUTPUT`
/// is a directory with a directory per partition value (`dt=…/hm=…`); each row of every
/// file under it is returned followed by the values its directories name, in their order.
pub fn run_partitioned_query(input: &Input, query: &str, kinds: &str) -> Vec<Row> {
    let path = repo().join(format!("benches/nexmark/{query}.sql"));
    let path = path.to_str().expect("a UTF-8 path");
    anduin_with_vars(
        input.dir.path(),
        &["run", path, "-q"],
        &[format!("OUTPUT={query}")],
    );
    fn walk(
        dir: &Path,
        values: &[String],
        out: &mut Vec<Vec<String>>,
        header: &mut Option<Vec<String>>,
    ) {
        for e in std::fs::read_dir(dir).expect("the output directory lists") {
            let p = e.expect("an entry").path();
            let name = p.file_name().expect("a name").to_string_lossy().to_string();
            if p.is_dir() {
                let (_, value) = name
                    .split_once('=')
                    .unwrap_or_else(|| panic!("a partition directory `{name}`"));
                let mut values = values.to_vec();
                values.push(value.to_string());
                walk(&p, &values, out, header);
            } else if name.starts_with("part-") {
                let t = Table::read(&p);
                header.get_or_insert(t.header);
                out.extend(t.rows.into_iter().map(|mut r| {
                    r.extend(values.iter().cloned());
                    r
                }));
            } else {
                panic!("only committed parts stay after a run: {}", p.display());
            }
        }
    }
    let (mut rows, mut header) = (Vec::new(), None);
    walk(&input.dir.path().join(query), &[], &mut rows, &mut header);
    let header = header.expect("some file");
    assert!(
        header.len() < kinds.len(),
        "{query}: the files hold the other columns: {header:?}"
    );
    parsed(query, &rows, kinds)
}

/// Asserts that `got` and `expected` are the same multiset of rows (doubles within a
/// tolerance), and that there are at least `at_least` (so that the test cannot pass on an
/// empty output); a difference lists the rows only one side has.
pub fn assert_same_rows(query: &str, mut got: Vec<Row>, mut expected: Vec<Row>, at_least: usize) {
    got.sort_by(|a, b| cmp_rows(a, b, V::exact));
    expected.sort_by(|a, b| cmp_rows(a, b, V::exact));
    let (mut only_got, mut only_expected) = (Vec::new(), Vec::new());
    let (mut g, mut e) = (0, 0);
    while g < got.len() || e < expected.len() {
        let order = match (got.get(g), expected.get(e)) {
            (Some(a), Some(b)) => cmp_rows(a, b, V::approx),
            (Some(_), None) => Ordering::Less,
            _ => Ordering::Greater,
        };
        match order {
            Ordering::Less => {
                only_got.push(&got[g]);
                g += 1;
            }
            Ordering::Greater => {
                only_expected.push(&expected[e]);
                e += 1;
            }
            Ordering::Equal => {
                g += 1;
                e += 1;
            }
        }
    }
    let show = |rows: &[&Row]| {
        (rows.iter().take(10))
            .map(|r| format!("  {r:?}\n"))
            .collect::<String>()
    };
    assert!(
        only_got.is_empty() && only_expected.is_empty(),
        "{query} (EVENTS={EVENTS} RATE={RATE} SEED={SEED}): {} rows, the reference {}\n\
         {} rows only in the output (first 10):\n{}{} rows only in the reference (first 10):\n{}",
        got.len(),
        expected.len(),
        only_got.len(),
        show(&only_got),
        only_expected.len(),
        show(&only_expected),
    );
    assert!(
        expected.len() >= at_least,
        "{query}: the reference has {} rows, fewer than {at_least}: the input is too small to test it",
        expected.len()
    );
}
