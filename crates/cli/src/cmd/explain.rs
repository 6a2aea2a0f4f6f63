//! `anduin explain FILE`: the logical graph and the physical plan.

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
    /// Plan every operator as its own task (no chaining).
    #[arg(long)]
    pub no_chaining: bool,
    /// Instances of each operator that can run in parallel and sets no parallelism of its own.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub parallelism: usize,
}

pub fn explain(args: ExplainArgs) -> Result<ExitCode> {
    let loaded = match load(&args.file, &args.vars, Missing::Keep) {
        Ok(l) => l,
        Err(LoadError::Diagnostics(d)) => {
            print_diagnostics(&args.file, &d);
            return Ok(ExitCode::FAILURE);
        }
        Err(LoadError::Other(e)) => return Err(e),
    };
    print_diagnostics(&args.file, &loaded.warnings);
    let plan = PhysicalPlan::plan(
        &loaded.graph,
        anduin_graph::PlanOptions {
            chaining: !args.no_chaining,
            default_parallelism: args.parallelism.max(1),
        },
    );
    let out = match args.format {
        Format::Text => explain_text(&loaded.graph, &plan),
        Format::Dot => explain_dot(&loaded.graph, &plan),
        Format::Json => anduin_spec::to_json(&loaded.spec) + "\n",
    };
    crate::load::print_out(&out)?;
    Ok(ExitCode::SUCCESS)
}
