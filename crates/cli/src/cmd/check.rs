//! `anduin check FILE`: parse, type-check and plan without running. The plan is made as
//! `anduin run` makes it by default (the copies of operators in hot standby or spreading
//! their partial matches, operators fused into tasks, one instance of each that sets no
//! parallelism of its own), so that a query that `run`, `explain` and `submit` refuse at
//! planning is refused here too.

use std::path::PathBuf;
use std::process::ExitCode;

use anduin_spec::Missing;
use anyhow::Result;
use clap::Args;

use anduin_graph::{PhysicalPlan, PlanOptions};
use anduin_types::{Diagnostic, Diagnostics, Pos};

use crate::load::{as_it_runs, load, parse_var, print_diagnostics, LoadError, Loaded};

/// Arguments of `anduin check`.
#[derive(Args, Debug)]
pub struct CheckArgs {
    /// The query file (.flow or .json).
    pub file: PathBuf,
    /// Set a variable used as ${NAME} in the file (repeatable). Unset ones are checked as written.
    #[arg(long = "var", value_name = "NAME=VALUE", value_parser = parse_var)]
    pub vars: Vec<(String, String)>,
    /// Load a WebAssembly module and make the functions it declares (in its
    /// `anduin:functions` section) callable from the query's expressions (repeatable).
    #[arg(long = "udf", value_name = "MODULE.wasm")]
    pub udfs: Vec<PathBuf>,
}

pub fn check(args: CheckArgs) -> Result<ExitCode> {
    crate::udfs::register_modules(&args.udfs)?;
    match load(&args.file, &args.vars, Missing::Keep) {
        Ok(loaded) => {
            print_diagnostics(&args.file, &loaded.warnings);
            if let Err(d) = plan(&loaded) {
                print_diagnostics(&args.file, &d);
                return Ok(ExitCode::FAILURE);
            }
            crate::load::print_out(&format!(
                "{}: ok ({} operators, {} streams)\n",
                args.file.display(),
                loaded.graph.nodes.len(),
                loaded.graph.streams.len()
            ))?;
            Ok(ExitCode::SUCCESS)
        }
        Err(LoadError::Diagnostics(d)) => {
            print_diagnostics(&args.file, &d);
            Ok(ExitCode::FAILURE)
        }
        Err(LoadError::Other(e)) => Err(e),
    }
}

/// Plans `loaded` as `anduin run` does with its defaults; why it cannot be, at the operator
/// the refusal names (where the file declares it).
fn plan(loaded: &Loaded) -> Result<(), Diagnostics> {
    let as_run = match as_it_runs(loaded.clone()) {
        Ok(l) => l,
        Err(LoadError::Diagnostics(d)) => return Err(d),
        Err(LoadError::Other(e)) => {
            return Err(Diagnostic::error(Pos::default(), format!("{e:#}")).into())
        }
    };
    let Err(e) = PhysicalPlan::plan(&as_run.graph, PlanOptions::default()) else {
        return Ok(());
    };
    // The operator as written, or a copy the query as it runs adds (where the copy says).
    let pos = e
        .operator()
        .and_then(|name| {
            let declared = |o: &&anduin_spec::OperatorDef| o.name.as_str() == name;
            loaded
                .spec
                .operators
                .iter()
                .find(declared)
                .or_else(|| as_run.spec.operators.iter().find(declared))
        })
        .map_or_else(Pos::default, |o| o.pos);
    Err(Diagnostic::error(pos, e.to_string()).into())
}
