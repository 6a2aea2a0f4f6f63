//! `anduin ctl`: the control plane of running queries, through their HTTP API. Every
//! subcommand is one HTTP call (see docs/operations.md, "HTTP API").

mod autoscale;
mod table;
mod target;

use std::path::PathBuf;
use std::process::ExitCode;

use anduin_api::{ChangeRecord, Client, ParamInfo, QueryInfo};
use anyhow::Result;
use clap::{Args, Subcommand};
use serde::Serialize;

use crate::api::read_token;

/// Arguments of `anduin ctl`.
#[derive(Args, Debug)]
pub struct CtlArgs {
    /// The API to call (HOST:PORT or http://HOST:PORT). Default: the run of the query on this
    /// machine, found in the runtime directory ($XDG_RUNTIME_DIR/anduin or
    /// $TMPDIR/anduin-UID).
    #[arg(long, global = true, value_name = "ADDR")]
    pub api: Option<String>,
    /// Send the bearer token in this file's first line (default: ANDUIN_API_TOKEN, if set).
    #[arg(long, global = true, value_name = "FILE")]
    pub api_token_file: Option<PathBuf>,
    /// Print the server's answer as JSON instead of a table.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: CtlCommand,
}

/// The subcommands of `anduin ctl`.
#[derive(Subcommand, Debug)]
pub enum CtlCommand {
    /// The running queries: on this machine, or at --api.
    Queries,
    /// An operator's adjustable params: name, type, current value.
    Params {
        /// The query's name.
        query: String,
        /// The operator's name.
        operator: String,
    },
    /// Change a param at a consistent point; prints the epoch it was applied at.
    /// `pipeline split` splits the chain holding the operator right before it, at that
    /// point (embedded or on a cluster, the new task on the same worker; one way).
    Set {
        /// The query's name.
        query: String,
        /// The operator's name.
        operator: String,
        /// The param.
        param: String,
        /// The new value, as it would be written in the query (quote it: "value < 30"; a
        /// value starting with `-` is taken as a value).
        #[arg(allow_hyphen_values = true)]
        value: String,
        /// Who asks, as the history keeps it (default: ctl:$USER).
        #[arg(long, value_name = "WHO")]
        from: Option<String>,
    },
    /// Rescale an operator while the query runs: hand its key groups to N instances (of the
    /// --max-parallelism it runs; an embedded run starts more beyond them); the same as `set
    /// QUERY OPERATOR parallelism N`.
    Scale {
        /// The query's name.
        query: String,
        /// The operator's name (a keyed window, join, pattern or GROUP BY).
        operator: String,
        /// How many instances own its key groups from now on.
        #[arg(allow_hyphen_values = true)]
        instances: String,
        /// Who asks, as the history keeps it (default: ctl:$USER).
        #[arg(long, value_name = "WHO")]
        from: Option<String>,
    },
    /// What the query's autoscaler (`anduin run … --autoscale`) decided: each operator's
    /// decision in its latest rounds, with the figures it came from; its rescales and failures
    /// (--json: the whole decision log, which replays).
    Autoscale {
        /// The query's name.
        query: String,
        /// How many of the latest rounds to show.
        #[arg(long, default_value_t = 1, value_name = "N")]
        rounds: usize,
    },
    /// Every change made to a query: time, epoch, operator, param, old, new, from whom.
    History {
        /// The query's name.
        query: String,
    },
    /// Take a checkpoint now (the run needs --checkpoint-store); prints its epoch.
    Checkpoint {
        /// The query's name.
        query: String,
    },
    /// Stop a query: a last checkpoint (with --checkpoint-store), then it ends, resumable.
    Stop {
        /// The query's name.
        query: String,
    },
}

/// Runs `anduin ctl`. Its errors carry what the server said, with control characters
/// escaped (a refusal may quote the value asked for).
pub fn ctl(args: CtlArgs) -> Result<ExitCode> {
    run(args).map_err(|e| anyhow::anyhow!(table::escape_controls(&format!("{e:#}"), true)))
}

fn run(args: CtlArgs) -> Result<ExitCode> {
    let token = read_token(args.api_token_file.as_deref())?;
    let api = args.api.as_deref();
    let client = |query: &str| target::client_for(api, token.clone(), query);
    let out = match args.command {
        CtlCommand::Queries => queries(api, token.clone(), args.json)?,
        CtlCommand::Params { query, operator } => {
            let params = client(&query)?.params(&query, &operator)?;
            show(args.json, &params, || {
                params_table(&query, &operator, &params)
            })?
        }
        // A rescale is a change of the operator's `parallelism`.
        CtlCommand::Scale {
            query,
            operator,
            instances,
            from,
        } => {
            let from = from.unwrap_or_else(default_from);
            let r = client(&query)?.set(&query, &operator, "parallelism", &instances, &from)?;
            show(args.json, &r, || {
                let e = |s: &str| table::escape_controls(s, false);
                let s = if r.new == "1" { "" } else { "s" };
                format!(
                    "applied at epoch {}: {} has {} instance{s} owning its key groups (was {})\n",
                    r.epoch,
                    e(&r.operator),
                    e(&r.new),
                    e(&r.old)
                )
            })?
        }
        CtlCommand::Set {
            query,
            operator,
            param,
            value,
            from,
        } => {
            let from = from.unwrap_or_else(default_from);
            let r = client(&query)?.set(&query, &operator, &param, &value, &from)?;
            show(args.json, &r, || {
                let e = |s: &str| table::escape_controls(s, false);
                // A param the query never set (a first `pipeline split`) had its default.
                let old = if r.old.is_empty() {
                    "not set: its default".to_string()
                } else {
                    e(&r.old)
                };
                format!(
                    "applied at epoch {}: {}.{} = {} (was {old})\n",
                    r.epoch,
                    e(&r.operator),
                    e(&r.param),
                    e(&r.new),
                )
            })?
        }
        CtlCommand::Autoscale { query, rounds } => {
            let report = client(&query)?.autoscale(&query)?;
            show(args.json, &report, || {
                autoscale::render(&query, &report, rounds)
            })?
        }
        CtlCommand::History { query } => {
            let h = client(&query)?.history(&query)?;
            show(args.json, &h, || history_table(&query, &h))?
        }
        CtlCommand::Checkpoint { query } => {
            let epoch = client(&query)?.checkpoint(&query)?;
            show(args.json, &serde_json::json!({"epoch": epoch}), || {
                let query = table::escape_controls(&query, false);
                format!("checkpoint {epoch} of \"{query}\" is complete\n")
            })?
        }
        CtlCommand::Stop { query } => {
            client(&query)?.stop(&query)?;
            show(
                args.json,
                &serde_json::json!({"query": query, "state": "stopping"}),
                || {
                    let query = table::escape_controls(&query, false);
                    format!(
                        "\"{query}\" is stopping (after a last checkpoint, when it takes them)\n"
                    )
                },
            )?
        }
    };
    print!("{out}");
    Ok(ExitCode::SUCCESS)
}

/// JSON (pretty, one value) or the human form.
fn show<T: Serialize>(json: bool, value: &T, human: impl FnOnce() -> String) -> Result<String> {
    if json {
        Ok(format!("{}\n", serde_json::to_string_pretty(value)?))
    } else {
        Ok(human())
    }
}

/// Who asks: `ctl:$USER`.
fn default_from() -> String {
    let user = std::env::var("USER")
        .or_else(|_| std::env::var("LOGNAME"))
        .unwrap_or_else(|_| "unknown".to_string());
    format!("ctl:{user}")
}

/// A query served at `api`.
#[derive(Serialize)]
struct Served {
    #[serde(flatten)]
    info: QueryInfo,
    api: String,
}

/// `ctl queries`: those at `--api`, or those of every local run (an unreachable run is a
/// warning on stderr).
fn queries(api: Option<&str>, token: Option<String>, json: bool) -> Result<String> {
    let mut served = Vec::new();
    match api {
        Some(addr) => {
            let c = Client::new(addr, token)?;
            served.extend(c.queries()?.into_iter().map(|info| Served {
                info,
                api: c.url().to_string(),
            }));
        }
        None => {
            let (runs, _) = target::local_runs()?;
            for run in &runs {
                let answer = target::client_of(run, token.clone())
                    .and_then(|c| Ok((c.queries()?, c.url().to_string())));
                match answer {
                    Ok((infos, url)) => served.extend(infos.into_iter().map(|info| Served {
                        info,
                        api: url.clone(),
                    })),
                    Err(e) => eprintln!(
                        "warning: run {} (pid {}): {}",
                        table::escape_controls(&run.name, false),
                        run.pid,
                        table::escape_controls(&format!("{e:#}"), true)
                    ),
                }
            }
        }
    }
    show(json, &served, || {
        if served.is_empty() {
            return "no queries running\n".to_string();
        }
        let rows: Vec<Vec<String>> = served
            .iter()
            .map(|s| {
                vec![
                    s.info.name.clone(),
                    serde_json::to_value(s.info.state)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_default(),
                    table::time(s.info.started_ms),
                    if s.info.checkpointing { "yes" } else { "no" }.to_string(),
                    s.api.clone(),
                ]
            })
            .collect();
        table::render(&["NAME", "STATE", "STARTED", "CHECKPOINTS", "API"], &rows)
    })
}

fn params_table(query: &str, operator: &str, params: &[ParamInfo]) -> String {
    if params.is_empty() {
        let query = table::escape_controls(query, false);
        let operator = table::escape_controls(operator, false);
        return format!(
            "operator \"{operator}\" of \"{query}\" has no params that can change while it runs\n"
        );
    }
    let rows: Vec<Vec<String>> = params
        .iter()
        .map(|p| {
            vec![
                p.name.clone(),
                p.kind.clone(),
                p.value.clone(),
                p.doc.clone(),
            ]
        })
        .collect();
    table::render(&["PARAM", "TYPE", "VALUE", "DOC"], &rows)
}

fn history_table(query: &str, history: &[ChangeRecord]) -> String {
    if history.is_empty() {
        let query = table::escape_controls(query, false);
        return format!("no changes made to \"{query}\"\n");
    }
    let rows: Vec<Vec<String>> = history
        .iter()
        .map(|r| {
            vec![
                r.seq.to_string(),
                table::time(r.time_ms),
                r.epoch.to_string(),
                r.operator.clone(),
                r.param.clone(),
                r.old.clone(),
                r.new.clone(),
                r.from.clone(),
            ]
        })
        .collect();
    table::render(
        &[
            "SEQ", "TIME", "EPOCH", "OPERATOR", "PARAM", "OLD", "NEW", "FROM",
        ],
        &rows,
    )
}
