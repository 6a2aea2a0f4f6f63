//! `anduin bench`: benchmark suites, run embedded as `anduin run` runs a query, with their
//! time measured. One module per suite; [`measure`] holds what they share.

use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;

pub mod measure;
pub mod nexmark;
mod nexmark_dump;

/// The benchmark suites.
#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    /// Run Nexmark queries (benches/nexmark/*.sql) into discard sinks (nexmark-flink's
    /// blackhole), and report wall time, CPU time and events per second per core.
    ///
    /// Each query runs embedded as `anduin run` runs it, with every sink (`writer`) replaced
    /// by a `discard` sink, as nexmark-flink writes its results to a blackhole table. CPU time
    /// is the whole process's user + system time over the run (getrusage); cores = CPU time /
    /// wall time; events/s/core = events / (cores × wall) = events / CPU time, as nexmark
    /// computes it. The last line of output reads
    /// `q5: 10000000 events in 4.21 s, 1.97 cores, 1205000 events/s/core`
    /// (with several queries, one such line per query ends the output).
    ///
    /// `--dump DIR` runs no query: it writes the generated events to DIR/person.csv,
    /// DIR/auction.csv and DIR/bid.csv, for Flink to read the same (scripts/bench_nexmark_flink.sh).
    Nexmark(nexmark::NexmarkArgs),
}

/// Runs a benchmark suite.
pub fn bench(command: BenchCommand) -> Result<ExitCode> {
    match command {
        BenchCommand::Nexmark(args) => nexmark::nexmark(args),
    }
}
