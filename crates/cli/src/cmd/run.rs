//! `anduin run FILE`: run a query embedded in this process.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anduin_operators::{BuildContext, DeadLetter, DeadLetterTarget};
use anduin_runtime::{RunConfig, RunSummary};
use anduin_spec::Missing;
use anduin_types::parse_duration_ms;
use anyhow::{Context, Result};
use clap::Args;

use crate::load::{load, parse_var, print_diagnostics, LoadError};

/// Arguments of `anduin run`.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// The query file (.flow or .json).
    pub file: PathBuf,
    /// Set a variable used as ${NAME} in the file (repeatable).
    #[arg(long = "var", value_name = "NAME=VALUE", value_parser = parse_var)]
    pub vars: Vec<(String, String)>,
    /// Where malformed input records go (JSON Lines). Default: `<output>.rejected` beside the
    /// first file writer's output, or stderr when there is none.
    #[arg(long, value_name = "PATH")]
    pub dead_letter: Option<PathBuf>,
    /// Rows per batch.
    #[arg(long, default_value_t = 8192, value_name = "N")]
    pub batch_size: usize,
    /// The longest a source holds rows before sending a partial batch.
    #[arg(long, default_value = "100ms", value_parser = parse_duration, value_name = "DURATION")]
    pub linger: Duration,
    /// Run every operator as its own task (no chaining): uses more threads.
    #[arg(long)]
    pub no_chaining: bool,
    /// Do not print the summary at the end.
    #[arg(short, long)]
    pub quiet: bool,
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    parse_duration_ms(s)
        .map(Duration::from_millis)
        .ok_or_else(|| format!("expected a duration such as 100ms or 2s, found `{s}`"))
}

pub fn run(args: RunArgs) -> Result<ExitCode> {
    let loaded = match load(&args.file, &args.vars, Missing::Error) {
        Ok(l) => l,
        Err(LoadError::Diagnostics(d)) => {
            print_diagnostics(&args.file, &d);
            return Ok(ExitCode::FAILURE);
        }
        Err(LoadError::Other(e)) => return Err(e),
    };
    print_diagnostics(&args.file, &loaded.warnings);

    let target = match &args.dead_letter {
        Some(p) => DeadLetterTarget::File(p.clone()),
        None => match first_file_output(&loaded.spec) {
            Some(out) => DeadLetterTarget::File(PathBuf::from(format!("{out}.rejected"))),
            None => DeadLetterTarget::Stderr,
        },
    };
    let dead_letter =
        Arc::new(DeadLetter::new(target).context("cannot prepare the dead-letter file")?);
    let ctx = BuildContext {
        dead_letter: Arc::clone(&dead_letter),
    };

    let stop = Arc::new(AtomicBool::new(false));
    install_ctrl_c(Arc::clone(&stop));
    let config = RunConfig {
        batch_size: args.batch_size,
        linger: args.linger,
        chaining: !args.no_chaining,
        stop,
        ..RunConfig::default()
    };
    let result = anduin_runtime::run(&loaded.graph, &config, &ctx);
    dead_letter
        .flush()
        .context("cannot write the dead-letter file")?;
    let summary = result?;
    if !args.quiet {
        print_summary(&args, &summary, &dead_letter);
    }
    if summary.stopped {
        eprintln!("anduin: stopped by Ctrl-C; everything read so far was processed and written");
        return Ok(ExitCode::from(130));
    }
    Ok(ExitCode::SUCCESS)
}

/// The path of the first writer that writes to a file.
fn first_file_output(spec: &anduin_spec::Spec) -> Option<String> {
    spec.operators
        .iter()
        .filter(|o| o.kind.as_str() == "writer")
        .filter_map(|o| o.param("path").map(|p| p.value.as_text().to_string()))
        .find(|p| p != "-")
}

/// The first Ctrl-C stops the query cleanly; a second one exits at once.
fn install_ctrl_c(stop: Arc<AtomicBool>) {
    let result = ctrlc::set_handler(move || {
        if stop.swap(true, Ordering::SeqCst) {
            eprintln!("anduin: stopped at once by a second Ctrl-C; output may be incomplete");
            std::process::exit(130);
        }
        eprintln!("anduin: stopping (Ctrl-C again to stop at once)…");
    });
    if let Err(e) = result {
        tracing::warn!(error = %e, "cannot install the Ctrl-C handler");
    }
}

fn print_summary(args: &RunArgs, s: &RunSummary, dead_letter: &DeadLetter) {
    eprintln!(
        "anduin: {} finished in {:.2} s",
        args.file.display(),
        s.elapsed.as_secs_f64()
    );
    let width = s.operators.iter().map(|o| o.name.len()).max().unwrap_or(0);
    for o in &s.operators {
        let line = match o.kind.as_str() {
            "reader" | "generator" => format!("{} rows out", o.rows_out),
            "writer" => format!("{} rows written", o.rows_in),
            _ => format!("{} rows in, {} rows out", o.rows_in, o.rows_out),
        };
        eprintln!("  {:width$}  [{}] {line}", o.name, o.kind);
    }
    let rejected = dead_letter.count();
    match (rejected, dead_letter.path()) {
        (0, _) => eprintln!("anduin: no malformed records"),
        (n, Some(p)) => eprintln!("anduin: {n} malformed records went to {}", p.display()),
        (n, None) => eprintln!("anduin: {n} malformed records were printed to stderr"),
    }
}
