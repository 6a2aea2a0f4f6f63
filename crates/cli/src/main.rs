//! `anduin`: the command line of the anduin stream processor.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// mimalloc rather than the system allocator: batches of a few hundred kilobytes are
/// allocated and freed all the time, and glibc's malloc returns such memory to the OS and
/// faults it back in (hundreds of thousands of page faults per run, once several threads
/// allocate).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod api;
mod autoscale;
mod cluster;
mod cmd;
mod control;
mod embedded;
mod events;
mod load;
mod locks;
mod preflight;
mod progress;
mod run_rules;
mod signals;
mod store;
mod udfs;

/// anduin: continuous queries over streams, declared in .flow (or JSON) files.
#[derive(Parser, Debug)]
#[command(name = "anduin", version, about, long_about = None)]
struct Cli {
    /// More log output on stderr (repeat for more). RUST_LOG overrides it.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a query embedded in this process; a bounded query exits 0 when it is done.
    Run(Box<cmd::run::RunArgs>),
    /// Parse and type-check a query; print problems as FILE:LINE:COL: message.
    Check(cmd::check::CheckArgs),
    /// Show a query's logical graph and physical tasks.
    Explain(cmd::explain::ExplainArgs),
    /// Inspect a checkpoint store (a directory or s3://bucket/prefix).
    #[command(subcommand)]
    Checkpoints(cmd::checkpoints::CheckpointsCommand),
    /// Run a benchmark suite and report its throughput (sinks replaced by discard).
    #[command(subcommand)]
    Bench(cmd::bench::BenchCommand),
    /// Control running queries through their HTTP API: list, params, set, history,
    /// checkpoint, stop.
    Ctl(cmd::ctl::CtlArgs),
    /// Run a cluster's coordinator: workers register with it, clients submit queries to it.
    Coordinator(Box<cluster::coordinator::CoordinatorArgs>),
    /// Run a worker: offer slots to a coordinator and run the parts of queries it places here.
    Worker(cluster::worker::WorkerArgs),
    /// Submit a query to a coordinator.
    Submit(cluster::client::SubmitArgs),
    /// Show the queries of a coordinator: state, attempt, tasks on workers, last checkpoint.
    Status(cluster::client::StatusArgs),
    /// Cancel a query on a coordinator.
    Cancel(cluster::client::CancelArgs),
    /// Start a coordinator and N workers on this machine, run a query on them, and stop.
    Cluster(cluster::local::ClusterArgs),
    /// User-defined functions: `anduin udf new NAME` writes a template project for
    /// WebAssembly functions in C.
    #[command(subcommand)]
    Udf(cmd::udf::UdfCommand),
}

/// Turns transparent huge pages off for this process and those it starts (workers, a
/// coordinator), unless `ANDUIN_TRANSPARENT_HUGE_PAGES=1`. The allocator returns freed memory
/// to the kernel and takes it back as batches come and go; as huge pages, each time costs the
/// kernel the zeroing of 2 MiB, up to a third of a stateful query's time (Nexmark q4, q6, q9,
/// q17–q20: 9–42 % faster without them; docs/benchmarks.md). Databases advise the same
/// (Redis, MongoDB). Where the kernel refuses, nothing changes.
fn without_transparent_huge_pages() {
    if std::env::var_os("ANDUIN_TRANSPARENT_HUGE_PAGES").is_some_and(|v| v == "1") {
        return;
    }
    // SAFETY: prctl(2) with PR_SET_THP_DISABLE sets a flag of this process; no memory of
    // ours is read or written.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

fn main() -> ExitCode {
    without_transparent_huge_pages();
    let cli = Cli::parse();
    init_logging(cli.verbose);
    let result = match cli.command {
        Command::Run(args) => cmd::run::run(*args),
        Command::Check(args) => cmd::check::check(args),
        Command::Explain(args) => cmd::explain::explain(args),
        Command::Checkpoints(c) => cmd::checkpoints::checkpoints(c),
        Command::Bench(c) => cmd::bench::bench(c),
        Command::Ctl(args) => cmd::ctl::ctl(args),
        Command::Coordinator(args) => cluster::coordinator::coordinator(*args),
        Command::Worker(args) => cluster::worker::worker(args),
        Command::Submit(args) => cluster::client::submit(args),
        Command::Status(args) => cluster::client::status(args),
        Command::Cancel(args) => cluster::client::cancel(args),
        Command::Cluster(args) => cluster::local::cluster(args),
        Command::Udf(c) => cmd::udf::udf(c),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn init_logging(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    // async-nats warns once per publish whose acknowledgement was never awaited when its
    // connection is dropped (hundreds at a failed or stopped NATS sink, which says what
    // happened itself): shown from -vv on.
    let default = if verbose < 2 {
        format!("{default},async_nats::jetstream::context=error")
    } else {
        default.to_string()
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
}
