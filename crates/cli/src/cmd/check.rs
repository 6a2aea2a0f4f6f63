//! `anduin check FILE`: parse and type-check without running.

use std::path::PathBuf;
use std::process::ExitCode;

use anduin_spec::Missing;
use anyhow::Result;
use clap::Args;

use crate::load::{load, parse_var, print_diagnostics, LoadError};

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
