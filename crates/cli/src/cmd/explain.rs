//! `anduin explain FILE`: the logical graph and the physical plan of the query as it runs (with
//! the copies of the operators that ask for hot standby; `--rewritten` shows the rules that
//! made them).

use std::path::PathBuf;
use std::process::ExitCode;

use anduin_graph::{explain_dot, explain_text, PhysicalPlan};
use anduin_spec::Missing;
use anyhow::Result;
use clap::{Args, ValueEnum};

use crate::load::{load, parse_var, print_diagnostics, LoadError};

/// Output formats of `explain`.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Format {
    /// Indented text.
    Text,
    /// The query's intermediate representation as JSON (readable by `anduin run`).
    Json,
    /// Graphviz: `anduin explain q.flow --format dot | dot -Tsvg > q.svg`.
    Dot,
}

/// Arguments of `anduin explain`.
#[derive(Args, Debug)]
pub struct ExplainArgs {
    /// The query file (.flow or .json).
    pub file: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Set a variable used as ${NAME} in the file (repeatable).
    #[arg(long = "var", value_name = "NAME=VALUE", value_parser = parse_var)]
    pub vars: Vec<(String, String)>,
    /// Load a WebAssembly module and make the functions it declares callable from the
    /// query's expressions (repeatable), as `anduin run --udf` does.
    #[arg(long = "udf", value_name = "MODULE.wasm")]
    pub udfs: Vec<PathBuf>,
    /// Plan every operator as its own task (no chaining).
    #[arg(long)]
    pub no_chaining: bool,
    /// Instances of each operator that can run in parallel and sets no parallelism of its own.
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = crate::embedded::parse_count)]
    pub parallelism: usize,
    /// Show the graph before and after the rewriting rules (fault tolerance, partitioning,
    /// pipelining: paper §4.2), which rule matched where, and the placement constraints.
    #[arg(long)]
    pub rewritten: bool,
    /// Rules to apply after the built-in ones (a rule file; with --rewritten).
    #[arg(long, value_name = "FILE", requires = "rewritten")]
    pub rules: Option<PathBuf>,
}

pub fn explain(args: ExplainArgs) -> Result<ExitCode> {
    crate::udfs::register_modules(&args.udfs)?;
    let loaded = match load(&args.file, &args.vars, Missing::Keep) {
        Ok(l) => l,
        Err(LoadError::Diagnostics(d)) => {
            print_diagnostics(&args.file, &d);
            return Ok(ExitCode::FAILURE);
        }
        Err(LoadError::Other(e)) => return Err(e),
    };
    print_diagnostics(&args.file, &loaded.warnings);
    if args.rewritten {
        let shown = super::rewritten::show(
            &loaded.spec,
            &loaded.graph,
            args.rules.as_deref(),
            args.format,
            args.parallelism,
        );
        let out = match shown {
            Ok(out) => out,
            Err(e) => {
                eprintln!("error: {e:#}");
                return Ok(ExitCode::FAILURE);
            }
        };
        crate::load::print_out(&out)?;
        return Ok(ExitCode::SUCCESS);
    }
    // The plan of what runs: with the copies of the operators in hot standby.
    let loaded = match crate::load::as_it_runs(loaded) {
        Ok(l) => l,
        Err(LoadError::Diagnostics(d)) => {
            print_diagnostics(&args.file, &d);
            return Ok(ExitCode::FAILURE);
        }
        Err(LoadError::Other(e)) => return Err(e),
    };
    let plan = PhysicalPlan::plan(
        &loaded.graph,
        anduin_graph::PlanOptions {
            chaining: !args.no_chaining,
            default_parallelism: args.parallelism,
            max_parallelism: None,
        },
    )?;
    let out = match args.format {
        Format::Text => explain_text(&loaded.graph, &plan),
        Format::Dot => explain_dot(&loaded.graph, &plan),
        Format::Json => anduin_spec::to_json(&loaded.spec) + "\n",
    };
    crate::load::print_out(&out)?;
    Ok(ExitCode::SUCCESS)
}
