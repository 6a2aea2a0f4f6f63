//! `anduin bench nexmark --dump DIR`: writes the events the `nexmark` source generates for
//! `--events`, `--rate` and `--seed` to CSV files, so that another engine (Flink, in
//! `bench/peers/flink_nexmark_all.py`) and anduin itself (the queries `bench/nexmark-csv/make.py` writes) read the very
//! same events. The query is built in (`nexmark_dump.sql`): one `nexmark` table per kind of
//! event, each into a `file` sink.

use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anduin_spec::Missing;
use anyhow::{Context, Result};

use crate::embedded::{execute, prepare_outputs, EngineArgs, Execution};
use crate::load::{load_text_edited, print_diagnostics, print_out, LoadError};

/// The query that writes the files; `${DIR}`, `${EVENTS}`, `${RATE}`, `${SEED}` are set from
/// the command line.
const DUMP_SQL: &str = include_str!("nexmark_dump.sql");

/// The files of a dump, in `DIR`, and the sinks that write them, in the order they are reported.
pub const FILES: [(&str, &str); 3] = [
    ("person.csv", "person_csv"),
    ("auction.csv", "auction_csv"),
    ("bid.csv", "bid_csv"),
];

/// Writes the events of `vars` (`EVENTS`, and `RATE`, `SEED` if given) to `dir`, created if
/// missing, and prints the rows of each file. Runs at parallelism 1 whatever `engine` says, so that
/// the rows are in the order of the events and the same arguments give the same bytes.
pub fn dump(dir: &Path, vars: &[(String, String)], engine: &EngineArgs) -> Result<ExitCode> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create the dump directory `{}`", dir.display()))?;
    let mut vars = vars.to_vec();
    vars.push(("DIR".to_string(), dir.display().to_string()));
    let engine = EngineArgs {
        parallelism: 1,
        max_parallelism: None,
        ..engine.clone()
    };
    let name = Path::new("nexmark_dump.sql");
    let loaded = match load_text_edited(
        name,
        DUMP_SQL,
        &vars,
        Missing::Error,
        &engine.defaults(),
        |_| {},
    ) {
        Ok(l) => l,
        Err(LoadError::Diagnostics(d)) => {
            print_diagnostics(name, &d);
            return Ok(ExitCode::FAILURE);
        }
        Err(LoadError::Other(e)) => return Err(e),
    };
    let executed = execute(
        &loaded,
        &engine,
        Execution {
            dead_letter: prepare_outputs(&loaded.spec, None)?,
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
    .context("the nexmark dump failed")?;
    let written = |sink: &str| {
        executed
            .summary
            .operators
            .iter()
            .filter(|o| o.name == sink)
            .map(|o| o.rows_in)
            .sum::<u64>()
    };
    for (file, sink) in FILES {
        print_out(&format!(
            "{} rows to {}\n",
            written(sink),
            dir.join(file).display()
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}
