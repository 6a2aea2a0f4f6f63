//! `anduin bench nexmark`: runs the Nexmark queries of `benches/nexmark/` as `anduin run`
//! does, but into `discard` sinks, and reports wall time, CPU time and events per second per
//! core as nexmark does.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anduin_spec::{Missing, Spec, Text};
use anduin_types::{Diagnostics, Severity};
use anyhow::{bail, Context, Result};
use clap::Args;

use super::measure::Measurement;
use crate::embedded::{execute, parse_count, prepare_outputs, EngineArgs, Execution};
use crate::load::{load_edited, parse_var, print_diagnostics, print_out, LoadError, Loaded};

/// Where the query files are when `--dir` is not given, relative to the current directory.
const DEFAULT_DIR: &str = "benches/nexmark";

/// Arguments of `anduin bench nexmark`.
#[derive(Args, Debug)]
pub struct NexmarkArgs {
    /// The query: the name of a .sql file in the query directory (`q5`, `cep_q0`), `all`
    /// (every `qN` in turn) or `cep` (every `cep_qN` in turn).
    #[arg(long, value_name = "NAME|all|cep", required_unless_present = "dump")]
    pub query: Option<String>,
    /// Run no query: write the events of `--events`, `--rate` and `--seed` to
    /// DIR/person.csv, DIR/auction.csv and DIR/bid.csv (every column, no header, timestamps
    /// in epoch milliseconds), for another engine to read the same events.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["query", "repeat", "dir"])]
    pub dump: Option<PathBuf>,
    /// Events to generate, of the three kinds together (sets ${EVENTS}).
    #[arg(long, default_value_t = 10_000_000, value_name = "N", value_parser = parse_events)]
    pub events: u64,
    /// Events per second of event time (sets ${RATE}; the query files default to 10000000,
    /// as nexmark-flink).
    #[arg(long, value_name = "N", value_parser = parse_rate)]
    pub rate: Option<f64>,
    /// The generator's random seed (sets ${SEED}; the query files default to 42).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Run each query this many times and report the median wall and CPU time.
    #[arg(long, default_value_t = 1, value_name = "K", value_parser = parse_count)]
    pub repeat: usize,
    /// The directory of the query files. Default: `benches/nexmark` in the current
    /// directory, else in the source tree this anduin was built from. The files the queries
    /// read are taken from there too: q13's side table is `DIR/side_input.txt` (sets
    /// ${SIDE_INPUT} unless a `--var SIDE_INPUT=…` gives another).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Set another variable used as ${NAME} in the query files (repeatable).
    #[arg(long = "var", value_name = "NAME=VALUE", value_parser = parse_var)]
    pub vars: Vec<(String, String)>,
    #[command(flatten)]
    pub engine: EngineArgs,
}

fn parse_events(s: &str) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!(
            "expected a number of events of at least 1, found `{s}`"
        )),
    }
}

fn parse_rate(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(r) if r.is_finite() && r > 0.0 => Ok(r),
        _ => Err(format!(
            "expected a positive number of events per second, found `{s}`"
        )),
    }
}

/// What became of one query.
enum Outcome {
    /// It ran: the median of its runs.
    Measured(Measurement),
    /// anduin refuses its SQL: the first line of the error.
    Refused(String),
    /// It failed while running: the first line of the error.
    Failed(String),
}

impl Outcome {
    /// The line that reports this outcome of query `name` over `events` events.
    fn line(&self, name: &str, events: u64) -> String {
        match self {
            Outcome::Measured(m) => m.result_line(name, events),
            Outcome::Refused(why) => format!("{name}: skipped: anduin refuses it: {why}"),
            Outcome::Failed(why) => format!("{name}: failed: {why}"),
        }
    }
}

pub fn nexmark(args: NexmarkArgs) -> Result<ExitCode> {
    if let Some(out) = &args.dump {
        return super::nexmark_dump::dump(out, &generator_vars(&args), &args.engine);
    }
    let query = args.query.as_deref().context("--query or --dump")?;
    let dir = query_dir(args.dir.as_deref())?;
    let available = queries_in(&dir)?;
    let selected = select(query, &available).map_err(|e| anyhow::anyhow!(e))?;
    let vars = vars(&args, &dir);
    let several = selected.len() > 1;
    let mut results = Vec::new();
    for name in &selected {
        let file = dir.join(format!("{name}.sql"));
        let loaded = match load(&file, &vars, &args.engine) {
            Ok(l) => l,
            Err(LoadError::Diagnostics(d)) if several => {
                let refused = Outcome::Refused(first_error_line(&file, &d));
                print_out(&format!("{}\n", refused.line(name, args.events)))?;
                results.push((name.clone(), refused));
                continue;
            }
            Err(LoadError::Diagnostics(d)) => {
                print_diagnostics(&file, &d);
                return Ok(ExitCode::FAILURE);
            }
            Err(LoadError::Other(e)) => return Err(e),
        };
        print_out(&format!(
            "nexmark {name} ({}): {} events, parallelism {}, {} run{}; sinks replaced by discard\n",
            file.display(),
            args.events,
            args.engine.parallelism,
            args.repeat,
            if args.repeat == 1 { "" } else { "s" }
        ))?;
        let outcome = match measure(&loaded, &args) {
            Ok(m) => Outcome::Measured(m),
            Err(e) if several => Outcome::Failed(first_line(&format!("{e:#}"))),
            Err(e) => return Err(e.context(format!("nexmark {name} failed"))),
        };
        print_out(&format!("{}\n", outcome.line(name, args.events)))?;
        results.push((name.clone(), outcome));
    }
    if several {
        print_out(&format!(
            "summary: {} events, parallelism {}, median of {} run{} each\n",
            args.events,
            args.engine.parallelism,
            args.repeat,
            if args.repeat == 1 { "" } else { "s" }
        ))?;
        for (name, outcome) in &results {
            print_out(&format!("{}\n", outcome.line(name, args.events)))?;
        }
    }
    if results.iter().any(|(_, o)| matches!(o, Outcome::Failed(_))) {
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// The file of q13's side table, beside the queries (nexmark-flink's `side_input.txt`).
const SIDE_INPUT: &str = "side_input.txt";

/// The variables the query files get: `SIDE_INPUT`, the side table beside the queries in
/// `dir` (so that the bench finds it wherever it runs; a `--var SIDE_INPUT=…` wins), then the
/// `--var`s, then `--events`, `--rate`, `--seed` (which win over a `--var` of the same name).
fn vars(args: &NexmarkArgs, dir: &Path) -> Vec<(String, String)> {
    let mut vars = Vec::new();
    let side_input = dir.join(SIDE_INPUT);
    if side_input.is_file() {
        vars.push(("SIDE_INPUT".to_string(), side_input.display().to_string()));
    }
    vars.extend(generator_vars(args));
    vars
}

/// The `--var`s, then `--events`, `--rate`, `--seed` (which win over a `--var` of the same
/// name).
fn generator_vars(args: &NexmarkArgs) -> Vec<(String, String)> {
    let mut vars = args.vars.clone();
    vars.push(("EVENTS".to_string(), args.events.to_string()));
    if let Some(rate) = args.rate {
        vars.push(("RATE".to_string(), rate.to_string()));
    }
    if let Some(seed) = args.seed {
        vars.push(("SEED".to_string(), seed.to_string()));
    }
    vars
}

/// Loads and checks a query file, its writers replaced by `discard` sinks.
fn load(file: &Path, vars: &[(String, String)], engine: &EngineArgs) -> Result<Loaded, LoadError> {
    load_edited(
        file,
        vars,
        Missing::Error,
        &engine.defaults(),
        discard_sinks,
    )
}

/// Replaces every `writer` by a `discard` sink of the same name and input: nexmark-flink
/// writes every query's results to a `blackhole` table, so that only the query is measured.
fn discard_sinks(spec: &mut Spec) {
    for op in spec
        .operators
        .iter_mut()
        .filter(|o| o.kind.as_str() == "writer")
    {
        op.kind = Text::at("discard", op.kind.pos());
        op.params.clear();
    }
}

/// Runs `loaded` `--repeat` times, printing a line per run, and returns the median.
fn measure(loaded: &Loaded, args: &NexmarkArgs) -> Result<Measurement> {
    let mut runs = Vec::new();
    for i in 1..=args.repeat {
        let dead_letter = prepare_outputs(&loaded.spec, None)?;
        let (executed, m) = Measurement::of(|| {
            execute(
                loaded,
                &args.engine,
                Execution {
                    dead_letter,
                    checkpointing: None,
                    stop: Arc::new(AtomicBool::new(false)),
                    query_file: None,
                    events: anduin_runtime::Events::logged(),
                    control: None,
                    network: None,
                    end_gate: None,
                    lineage: None,
                    query_digest: None,
                    name: None,
                },
            )
        })
        .context("cannot measure the CPU time of this process")?;
        let executed = executed?;
        let discarded: u64 = executed
            .summary
            .operators
            .iter()
            .filter(|o| o.kind.as_str() == "discard")
            .map(|o| o.rows_in)
            .sum();
        print_out(&format!(
            "  run {i}: {:.2} s wall, {:.2} s cpu, {:.2} cores; {discarded} rows into the sinks\n",
            m.wall,
            m.cpu,
            m.cores()
        ))?;
        runs.push(m);
    }
    let median = Measurement::median(&runs).context("at least one run")?;
    if runs.len() > 1 {
        print_out(&format!(
            "  median: {:.2} s wall, {:.2} s cpu, {:.2} cores\n",
            median.wall,
            median.cpu,
            median.cores()
        ))?;
    }
    Ok(median)
}

/// The query directory: `--dir`, else `benches/nexmark` in the current directory, else in
/// the source tree this binary was built from.
fn query_dir(flag: Option<&Path>) -> Result<PathBuf> {
    if let Some(dir) = flag {
        if !dir.is_dir() {
            bail!(
                "the query directory `{}` does not exist (or is not a directory)",
                dir.display()
            );
        }
        return Ok(dir.to_path_buf());
    }
    let here = PathBuf::from(DEFAULT_DIR);
    if here.is_dir() {
        return Ok(here);
    }
    let built_from = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(DEFAULT_DIR);
    if built_from.is_dir() {
        return Ok(built_from);
    }
    bail!(
        "no `{DEFAULT_DIR}` directory here (nor in {}): run from the repository's root or pass --dir DIR",
        built_from.display()
    )
}

/// The queries of `dir`: the names of its `.sql` files, in [`order`].
fn queries_in(dir: &Path) -> Result<Vec<String>> {
    let mut names = Vec::new();
    let entries = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read the query directory `{}`", dir.display()))?;
    for entry in entries {
        let path = entry
            .with_context(|| format!("cannot read the query directory `{}`", dir.display()))?
            .path();
        if path.extension().is_some_and(|e| e == "sql") {
            if let Some(stem) = path.file_stem().and_then(|s| s.to_str()) {
                names.push(stem.to_string());
            }
        }
    }
    if names.is_empty() {
        bail!("no query (.sql file) in `{}`", dir.display());
    }
    names.sort_by(|a, b| order(a).cmp(&order(b)));
    Ok(names)
}

/// The sort key of a query name: `q0 … q22` by number, then `cep_q0 …`, then the rest.
fn order(name: &str) -> (u8, u64, &str) {
    let numbered = |prefix: &str| {
        name.strip_prefix(prefix)
            .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|n| n.parse::<u64>().ok())
    };
    if let Some(n) = numbered("q") {
        (0, n, name)
    } else if let Some(n) = numbered("cep_q") {
        (1, n, name)
    } else {
        (2, 0, name)
    }
}

/// The queries `query` names among `available`: one name, `all` (every `qN`) or `cep` (every
/// `cep_qN`). An unknown name is an error that lists the available ones.
fn select(query: &str, available: &[String]) -> Result<Vec<String>, String> {
    let group = |g: u8| -> Vec<String> {
        available
            .iter()
            .filter(|n| order(n).0 == g)
            .cloned()
            .collect()
    };
    let chosen = match query {
        "all" => group(0),
        "cep" => group(1),
        name => available.iter().filter(|n| *n == name).cloned().collect(),
    };
    if chosen.is_empty() {
        return Err(format!(
            "unknown query `{query}`: the queries are {} (or `all`: every qN; `cep`: every cep_qN)",
            available.join(", ")
        ));
    }
    Ok(chosen)
}

/// The first line of the first error in `d`, as `FILE:LINE:COL: message`.
fn first_error_line(file: &Path, d: &Diagnostics) -> String {
    let errors = Diagnostics(
        d.0.iter()
            .filter(|x| x.severity == Severity::Error)
            .cloned()
            .collect(),
    );
    let errors = if errors.0.is_empty() { d } else { &errors };
    first_line(&errors.render(&file.display().to_string()))
}

fn first_line(text: &str) -> String {
    text.lines()
        .next()
        .unwrap_or_default()
        .trim_end()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(xs: &[&str]) -> Vec<String> {
        xs.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn queries_sort_by_number_with_the_cep_ones_after_the_others() {
        let mut xs = names(&["cep_q1", "q10", "q2", "other", "cep_q0", "q0", "q1"]);
        xs.sort_by(|a, b| order(a).cmp(&order(b)));
        assert_eq!(
            xs,
            names(&["q0", "q1", "q2", "q10", "cep_q0", "cep_q1", "other"])
        );
    }

    #[test]
    fn all_selects_the_numbered_queries_and_cep_the_cep_ones() {
        let available = names(&["q0", "q1", "q10", "cep_q0", "cep_q3", "other"]);
        assert_eq!(select("all", &available), Ok(names(&["q0", "q1", "q10"])));
        assert_eq!(select("cep", &available), Ok(names(&["cep_q0", "cep_q3"])));
        assert_eq!(select("other", &available), Ok(names(&["other"])));
    }

    #[test]
    fn an_unknown_query_is_an_error_that_lists_the_queries() {
        let err = select("q99", &names(&["q0", "q1"])).expect_err("unknown");
        assert!(err.contains("unknown query `q99`"), "{err}");
        assert!(err.contains("q0, q1"), "{err}");
    }

    #[test]
    fn every_writer_becomes_a_discard_sink_with_its_input_and_no_params() {
        let mut spec = anduin_spec::parse_sql(
            "CREATE TABLE src (a BIGINT) WITH (connector = 'generator');
             CREATE TABLE out WITH (connector = 'file', path = 'out.csv', format = 'csv');
             INSERT INTO out SELECT a FROM src;",
        )
        .expect("parses");
        discard_sinks(&mut spec);
        let sink = spec
            .operators
            .iter()
            .find(|o| o.name.as_str() == "out")
            .expect("the sink");
        assert_eq!(sink.kind.as_str(), "discard");
        assert!(sink.params.is_empty());
        assert_eq!(sink.inputs.len(), 1);
        assert!(spec.operators.iter().all(|o| o.kind.as_str() != "writer"));
    }
}
