//! `anduin explain FILE`: the logical graph and the physical plan of the query as it runs (with
//! the copies of the operators that ask for hot standby; `--rewritten` shows the rules that
//! made them).

use std::path::PathBuf;
use std::process::ExitCode;

use anduin_graph::{explain_dot, explain_text, updating_from, NodeId, PhysicalPlan};
use anduin_spec::{Changes, Missing};
use anyhow::Result;
use clap::{Args, ValueEnum};

use crate::load::{load, parse_var, print_diagnostics, LoadError};

/// Output formats of `explain`.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Format {
    /// Indented text.
    Text,
    /// The query's intermediate representation as JSON (readable by `anduin run`), each
    /// operator with `"changes"` (`append-only` or `updating`) and, when updating, the
    /// `"updating_from"` operator.
    Json,
    /// Graphviz: `anduin explain q.flow --format dot | dot -Tsvg > q.svg`; updating streams
    /// and the operators that emit or take them drawn bold, with `updating …` in the label.
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
    /// A rule file, as `anduin run --rules` takes it: its rules that reshape the graph are
    /// applied before the built-in ones (with --rewritten, the file's other rules too, with
    /// no figure measured), and the plan shown is that of the rewritten query.
    #[arg(long, value_name = "FILE")]
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
    let rule_file = args
        .rules
        .as_deref()
        .map(|p| crate::run_rules::read_rule_file(p).map(|t| (p.display().to_string(), t)))
        .transpose()?;
    let rule_text = rule_file.as_ref().map(|(f, t)| (f.as_str(), t.as_str()));
    // What runs: the query rewritten by the rules that reshape it, checked as a run checks
    // it, then the copies of the operators in hot standby.
    let as_run = match rule_text {
        Some(r) => crate::load::by_rules(&args.file, loaded.clone(), r),
        None => Ok(loaded.clone()),
    }
    .and_then(crate::load::as_it_runs);
    if args.rewritten {
        let shown = super::rewritten::show(
            &loaded.spec,
            &loaded.graph,
            rule_text,
            args.format,
            args.parallelism,
        );
        match shown {
            Ok(out) => crate::load::print_out(&out)?,
            Err(e) => {
                eprintln!("error: {e:#}");
                return Ok(ExitCode::FAILURE);
            }
        };
    }
    let loaded = match as_run {
        Ok(l) => l,
        Err(LoadError::Diagnostics(d)) => {
            print_diagnostics(&args.file, &d);
            return Ok(ExitCode::FAILURE);
        }
        Err(LoadError::Other(e)) => {
            eprintln!("error: {e:#}");
            return Ok(ExitCode::FAILURE);
        }
    };
    if args.rewritten {
        return Ok(ExitCode::SUCCESS);
    }
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
        Format::Json => {
            let graph = &loaded.graph;
            let changes = |name: &str| {
                let id = graph.nodes.iter().position(|n| n.name() == name)?;
                Some(match updating_from(graph, NodeId(id)) {
                    None => Changes::AppendOnly,
                    Some(f) => Changes::Updating {
                        from: graph.node(f).name().to_string(),
                    },
                })
            };
            anduin_spec::to_json_explained(&loaded.spec, &changes) + "\n"
        }
    };
    crate::load::print_out(&out)?;
    Ok(ExitCode::SUCCESS)
}
