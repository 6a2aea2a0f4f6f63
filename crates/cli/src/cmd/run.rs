//! `anduin run FILE`: run a query embedded in this process.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anduin_checkpoint::lineage::{LineageDecision, LineageStart};
use anduin_checkpoint::plan::{compare, Compatibility, PlanFingerprint};
use anduin_checkpoint::recovery::RecoveryPlan;
use anduin_checkpoint::{draw_lineage, Store, StoreLocation, Validated};
use anduin_graph::{PhysicalPlan, PlanOptions};
use anduin_operator_api::{DeadLetter, DeadLetterTarget};
use anduin_runtime::{CheckpointSettings, Checkpointing, Faults, RunSummary, RuntimeError};
use anduin_types::Epoch;
use anyhow::{Context, Result};
use clap::Args;

use crate::embedded::{
    execute, parse_count, parse_duration, prepare_outputs, remove_stale_state_dirs, report_rejects,
    state_root, uses_lsm, EngineArgs, Executed, Execution,
};
use crate::load::{load_to_run, parse_var, print_diagnostics, LoadError, Loaded};
use crate::locks::lock_run;
use crate::preflight::{check_events_file, RunFiles};
use crate::store::{local_dir, open_checked, parse_store};

/// Arguments of `anduin run`.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// The query file (.flow or .json).
    pub file: PathBuf,
    /// Set a variable used as ${NAME} in the file (repeatable).
    #[arg(long = "var", value_name = "NAME=VALUE", value_parser = parse_var)]
    pub vars: Vec<(String, String)>,
    /// Load a WebAssembly module and make the functions it declares (in its
    /// `anduin:functions` section) callable from the query's expressions (repeatable).
    #[arg(long = "udf", value_name = "MODULE.wasm")]
    pub udfs: Vec<PathBuf>,
    /// Where malformed input records go (JSON Lines). Default: `<output>.rejected` beside the
    /// first file writer's output, or stderr when there is none.
    #[arg(long, value_name = "PATH")]
    pub dead_letter: Option<PathBuf>,
    #[command(flatten)]
    pub engine: EngineArgs,
    /// Do not print the summary at the end.
    #[arg(short, long)]
    pub quiet: bool,
    /// Write the run's events (the checkpoint resumed from; checkpoints started, completed,
    /// failed; tasks started, finished, failed; as the run ends, late and rejected rows) to
    /// this file as JSON lines (`-`: stderr). It must be none of the run's other files; a
    /// failed write stops the run.
    #[arg(long, value_name = "FILE")]
    pub events: Option<PathBuf>,
    /// Take checkpoints into this store, and resume from its last complete checkpoint: a
    /// directory (a path, or file:///path) or s3://bucket/prefix, any S3-compatible store,
    /// reached with AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION and, for another
    /// store than AWS's, AWS_ENDPOINT_URL.
    #[arg(
        long = "checkpoint-store",
        visible_alias = "checkpoint-dir",
        value_name = "DIR|URL",
        value_parser = parse_store
    )]
    pub checkpoint_store: Option<StoreLocation>,
    /// Where the files of checkpoints to an object store are written before their upload,
    /// and fetched to before a restore (default: checkpoint-cache/<store> under the state
    /// directory).
    #[arg(long, value_name = "DIR", requires = "checkpoint_store")]
    pub checkpoint_cache: Option<PathBuf>,
    /// Take a checkpoint this often (default 10s when --checkpoint-store is given and
    /// --checkpoint-every is not).
    #[arg(long, value_parser = parse_positive_duration, value_name = "DURATION")]
    pub checkpoint_interval: Option<Duration>,
    /// Take a checkpoint when a source has read this many rows since the last one.
    #[arg(long, value_name = "ROWS", value_parser = parse_count)]
    pub checkpoint_every: Option<usize>,
    /// Keep this many complete checkpoints (at least 1).
    #[arg(long, default_value_t = 3, value_name = "K", value_parser = parse_count)]
    pub checkpoint_keep: usize,
    /// A full snapshot every this many checkpoints, changelogs in between.
    #[arg(long, default_value_t = 5, value_name = "M", value_parser = parse_count)]
    pub checkpoint_full_every: usize,
    /// Warn when the last complete checkpoint is older than this (default: 3 × the interval,
    /// at least 60s).
    #[arg(long, value_parser = parse_positive_duration, value_name = "DURATION")]
    pub checkpoint_warn_after: Option<Duration>,
    /// Abandon a checkpoint not complete this long after it began, naming the tasks that
    /// have not acknowledged it (as Flink's execution.checkpointing.timeout); the query goes
    /// on, and in a cluster with per-task recovery a part whose tasks keep a checkpoint from
    /// completing is restored.
    #[arg(long, default_value = "10m", value_parser = parse_positive_duration, value_name = "DURATION")]
    pub checkpoint_timeout: Duration,
    /// Ignore (and delete) the checkpoints in --checkpoint-store and start from the beginning.
    #[arg(long, requires = "checkpoint_store")]
    pub from_scratch: bool,
    #[command(flatten)]
    pub api: crate::api::ApiArgs,
    #[command(flatten)]
    pub autoscale: crate::autoscale::AutoscaleArgs,
    #[command(flatten)]
    pub rules: crate::run_rules::RulesArgs,
    /// Testing: make the files of this checkpoint fail to write, as on a full disk (on a
    /// cluster: its manifest, which the coordinator writes).
    #[arg(long, hide = true, value_name = "EPOCH")]
    pub inject_checkpoint_failure: Option<u64>,
    /// Testing: from this checkpoint on, none can begin, as when the checkpoint store's
    /// writes are denied (on a cluster: at the coordinator).
    #[arg(long, hide = true, value_name = "EPOCH")]
    pub inject_checkpoints_denied_from: Option<u64>,
    /// Run as a cluster's executor: the worker's part of the query that this deployment
    /// (written by the worker) describes.
    #[arg(long, hide = true, value_name = "FILE")]
    pub cluster_part: Option<PathBuf>,
}

/// A duration of at least 1 ms (`--checkpoint-interval`, `--checkpoint-warn-after`).
fn parse_positive_duration(s: &str) -> Result<Duration, String> {
    match parse_duration(s)? {
        d if d.is_zero() => Err(format!("expected a duration of at least 1ms, found `{s}`")),
        d => Ok(d),
    }
}

pub fn run(args: RunArgs) -> Result<ExitCode> {
    if let Some(deployment) = &args.cluster_part {
        return crate::cluster::worker::leave_failure(
            deployment,
            crate::cluster::executor::run_part(&args, deployment),
        );
    }
    let name = match args.api.query_name(&args.file) {
        Ok(n) => n,
        Err(usage) => {
            eprintln!("error: {usage}");
            return Ok(ExitCode::from(2));
        }
    };
    crate::embedded::check_max_parallelism(&args.engine)?;
    crate::udfs::register_modules(&args.udfs)?;
    let defaults = args.engine.defaults();
    let rule_file = args
        .rules
        .rules
        .as_deref()
        .map(|p| crate::run_rules::read_rule_file(p).map(|t| (p.display().to_string(), t)))
        .transpose()?;
    let rule_text = rule_file.as_ref().map(|(f, t)| (f.as_str(), t.as_str()));
    let loaded = match load_to_run(&args.file, &args.vars, &defaults, rule_text) {
        Ok(l) => l,
        Err(LoadError::Diagnostics(d)) => {
            print_diagnostics(&args.file, &d);
            return Ok(ExitCode::FAILURE);
        }
        Err(LoadError::Other(e)) => return Err(e),
    };
    print_diagnostics(&args.file, &loaded.warnings);
    let autoscale = crate::autoscale::settings(&args.autoscale, &args.engine, &loaded)?;
    let run_rules = rule_text
        .map(|(file, text)| crate::run_rules::load_text(file, text, &loaded.spec))
        .transpose()?
        .flatten();

    if args.checkpoint_store.is_none() {
        if let Some(op) = loaded.spec.operators.iter().find(|o| {
            o.param("fault_tolerance")
                .is_some_and(|p| p.value.as_text().as_str() == "checkpoint")
        }) {
            eprintln!(
                "error: operator \"{}\" asks for fault_tolerance = \"checkpoint\", but this run takes no checkpoints: add --checkpoint-store DIR (and --checkpoint-interval)",
                op.name
            );
            return Ok(ExitCode::from(2));
        }
    }
    let checkpoint_dir = args.checkpoint_dir();
    // Before anything is made or written: an object store that cannot be used (a wrong URL,
    // bucket or credentials, an unreachable server) stops the run here, naming it. (A
    // directory is opened once the run holds its lock.)
    let remote = match (&args.checkpoint_store, &checkpoint_dir) {
        (Some(location), Some(dir)) if location.is_remote() => {
            Some(open_checked(location, dir, true)?)
        }
        _ => None,
    };
    let dead_letter = prepare_outputs(&loaded.spec, args.dead_letter.as_deref())?;
    if let Some(events) = &args.events {
        let state_dir = uses_lsm(&loaded, &args.engine).then(|| state_root(&args.engine));
        check_events_file(
            &loaded.spec,
            events,
            &RunFiles {
                query_file: &args.file,
                dead_letter: match &dead_letter {
                    DeadLetterTarget::File(p) => Some(p),
                    _ => None,
                },
                checkpoint_dir: checkpoint_dir.as_deref(),
                state_dir: state_dir.as_deref(),
            },
        )?;
    }
    // Held until the run ends: nothing below reads or writes before another run is refused.
    let mut locks = lock_run(
        &loaded.spec,
        &dead_letter,
        checkpoint_dir.as_deref(),
        args.events.as_deref(),
    )?;
    let stop = Arc::new(AtomicBool::new(false));
    // Set by a signal or by `anduin ctl stop`, read again once the run is over.
    let stop_asked = Arc::clone(&stop);
    // Emptied now that it is this run's alone.
    let events = crate::events::open(args.events.as_deref(), Arc::clone(&stop))?;
    let mut lineage = None;
    let mut query_digest = None;
    let checkpointing = match prepare_checkpoints(&args, &loaded, remote)? {
        Prepared::None => None,
        Prepared::Finished(epoch, restore) => {
            // The run that finished may have been killed before its sinks committed the
            // last checkpoint (probe41 H1: an exactly-once Kafka sink's rows were lost): its
            // operators are restored from it, which commits what it holds, and nothing runs.
            let committed = match restore {
                Ok((checkpointing, digest)) => {
                    let at = (name.as_str(), epoch);
                    commit_finished(&loaded, &args, checkpointing, digest, dead_letter, at)?;
                    locks.ran();
                    "its sinks committed what that checkpoint held, if anything was left; nothing else to do"
                }
                // Not silently (probe42): those rows wait in the checkpoint, and
                // --from-scratch gives them up.
                Err(changed) => {
                    eprintln!(
                        "anduin: warning: this run cannot restore checkpoint {epoch} ({changed}): what its sinks had not committed when the query finished, if anything, is still uncommitted; run the query with the options of the run that finished it to commit that"
                    );
                    "nothing to do"
                }
            };
            remove_stale_state_dirs(&loaded, &args.engine);
            eprintln!(
                "anduin: this query already finished (checkpoint {epoch} in {}): {committed}; pass --from-scratch to run it again",
                args.checkpoint_store
                    .as_ref()
                    .map(ToString::to_string)
                    .unwrap_or_default()
            );
            return Ok(ExitCode::SUCCESS);
        }
        Prepared::Unusable => {
            remove_stale_state_dirs(&loaded, &args.engine);
            return Ok(ExitCode::FAILURE);
        }
        Prepared::Run(c, l, d) => {
            lineage = Some(l);
            query_digest = Some(d);
            Some(*c)
        }
    };
    let signals = crate::signals::install(Arc::clone(&stop));
    // A user-defined function's call stuck in a built-in must not hold the stop up.
    anduin_udf::stop_calls_when(Arc::clone(&stop));
    let places = crate::control::RunPlaces {
        checkpointing: checkpointing.is_some(),
        dead_letter: match &dead_letter {
            DeadLetterTarget::File(p) => Some(p.clone()),
            _ => None,
        },
        events: args.events.clone().filter(|e| e.as_os_str() != "-"),
        checkpoint_dir: checkpoint_dir.clone(),
        state_dir: uses_lsm(&loaded, &args.engine).then(|| state_root(&args.engine)),
        query_file: Some(args.file.clone()),
        restored: checkpointing
            .as_ref()
            .and_then(|c| c.restore.as_ref())
            .map(|v| v.manifest.controls.clone())
            .unwrap_or_default(),
        // One query: the process's functions are its own.
        functions: None,
    };
    let control = Arc::new(crate::control::control_of(
        &name,
        Some(args.file.display().to_string()),
        Arc::clone(&loaded.graph),
        places,
    )?);
    if let Some(written) = loaded.reshaped() {
        control.as_written(written);
    }
    // A run that fails once it runs keeps the outputs it made (what it wrote until then).
    control.when_running(locks.when_running());
    // Served until the run ends (dropped at the end of this function).
    let api = crate::api::start_api(&args.api, &name)?;
    let mut run_events = events.events.clone();
    if let Some(api) = &api {
        run_events = run_events.with(api.events());
        api.serve(Arc::clone(&control) as Arc<dyn anduin_api::QueryControl>)?;
        let line = api.announcement();
        control.when_running(move || eprintln!("{line}"));
    }
    let progress = crate::progress::show(Arc::clone(&control), args.quiet);
    // Runs until the query ends (dropped after it).
    let autoscaler = autoscale
        .map(|s| anduin_runtime::autoscaler::start(Arc::clone(&control), s))
        .transpose()
        .context("cannot start the autoscaler")?;
    let rules = run_rules
        .map(|r| crate::run_rules::start(Arc::clone(&control), r, args.rules.rules_interval))
        .transpose()
        .context("cannot start the rules")?;
    let executed = execute(
        &loaded,
        &args.engine,
        Execution {
            dead_letter,
            checkpointing,
            stop,
            query_file: Some(args.file.display().to_string()),
            events: run_events,
            control: Some(control),
            network: None,
            end_gate: None,
            lineage,
            query_digest,
            name: None,
        },
    );
    drop(progress);
    drop(autoscaler);
    drop(rules);
    let Executed {
        mut summary,
        dead_letter,
    } = match (executed, events.failure()) {
        (Ok(e), _) => {
            locks.ran();
            e
        }
        (Err(e), None) => return Err(e),
        (Err(e), Some(failure)) => {
            eprintln!("anduin: {failure:#}");
            return Err(e);
        }
    };
    // A stop (a signal, or `anduin ctl stop`: probe49) that came after every input ended,
    // while a sink waited to commit the last checkpoint (a Kafka broker lost), left rows
    // uncommitted: the run did not finish, it was stopped (probe48 H1: it said "finished" and
    // exited 0 with the rows not in the topic).
    let uncommitted = uncommitted_rows(&summary);
    if !summary.stopped && uncommitted > 0 && stop_asked.load(Ordering::SeqCst) {
        summary.stopped = true;
    }
    if !args.quiet {
        print_summary(&args, &summary, &dead_letter);
    }
    if let Some(failure) = events.failure() {
        return Err(failure);
    }
    if !summary.stopped && uncommitted > 0 {
        // The sink fails a run it was not asked to stop before it leaves rows uncommitted;
        // should one ever end without failing, it still does not end as finished.
        anyhow::bail!(
            "{uncommitted} row(s) were not committed by the sinks: {}",
            processed(&summary, args.checkpoint_store.is_some())
        );
    }
    if summary.stopped {
        let checkpointing = args.checkpoint_store.is_some();
        let done = processed(&summary, checkpointing);
        let resume = if checkpointing {
            "; run it again with the same --checkpoint-store to resume"
        } else {
            ""
        };
        let Some(by) = signals.received() else {
            eprintln!("anduin: stopped through the API (anduin ctl stop); {done}{resume}");
            return Ok(ExitCode::SUCCESS);
        };
        eprintln!("anduin: stopped by {}; {done}{resume}", by.describe());
        return Ok(ExitCode::from(by.exit_code()));
    }
    Ok(ExitCode::SUCCESS)
}

/// How checkpoints are taken into `dir`, from the run's flags.
pub fn checkpoint_settings(args: &RunArgs, dir: &std::path::Path) -> CheckpointSettings {
    let interval = match (args.checkpoint_interval, args.checkpoint_every) {
        (Some(i), _) => Some(i),
        (None, Some(_)) => None,
        (None, None) => Some(Duration::from_secs(10)),
    };
    let warn_after = args.checkpoint_warn_after.unwrap_or_else(|| {
        interval
            .map(|i| (i * 3).max(Duration::from_secs(60)))
            .unwrap_or(Duration::from_secs(60))
    });
    CheckpointSettings {
        dir: dir.to_path_buf(),
        store: None,
        interval,
        every_rows: args.checkpoint_every.map(|n| n as u64),
        keep: args.checkpoint_keep,
        full_every: args.checkpoint_full_every as u64,
        warn_after,
        timeout: Some(args.checkpoint_timeout),
    }
}

/// What the checkpoint directory says about this run.
enum Prepared {
    /// No checkpoints.
    None,
    /// The query finished at this checkpoint already: run only to restore it (its sinks
    /// commit what it holds, [`Checkpointing::commit_only`]) as the query of this digest —
    /// unless the query changed where state is kept since (`Err`: what changed).
    Finished(u64, Result<(Box<Checkpointing>, String), String>),
    /// No checkpoint can be restored and --from-scratch was not given (reported).
    Unusable,
    /// Run with these checkpoint settings, in this lineage ([`Store::lineage`]), as the query
    /// of this digest ([`PlanFingerprint::lineage_digest_with`]).
    Run(Box<Checkpointing>, String, String),
}

impl RunArgs {
    /// The local directory of the checkpoints: the store, or an object store's staging and
    /// cache directory.
    fn checkpoint_dir(&self) -> Option<PathBuf> {
        self.checkpoint_store.as_ref().map(|l| {
            local_dir(
                l,
                self.checkpoint_cache.as_deref(),
                &state_root(&self.engine),
            )
        })
    }
}

/// What the checkpoint store says about this run of `loaded` (`remote`: the object store,
/// already checked).
fn prepare_checkpoints(args: &RunArgs, loaded: &Loaded, remote: Option<Store>) -> Result<Prepared> {
    let (Some(location), Some(dir)) = (&args.checkpoint_store, args.checkpoint_dir()) else {
        if args.checkpoint_interval.is_some() || args.checkpoint_every.is_some() {
            anyhow::bail!("--checkpoint-interval and --checkpoint-every need --checkpoint-store");
        }
        return Ok(Prepared::None);
    };
    let store = match remote {
        Some(s) => s,
        None => open_checked(location, &dir, true)?,
    };
    let (plan, validated) = store.recovery(args.from_scratch)?;
    // Kept before anything runs (and, on a start over, before the earlier checkpoints go): a
    // run started again here before its first checkpoint completed finds it again.
    // Kept with the query it is drawn for: a fresh start of an edited query draws another.
    let start = match &plan {
        RecoveryPlan::Fresh { asked: true, .. } => Some(LineageStart::StartOver),
        RecoveryPlan::Fresh { asked: false, .. } => Some(LineageStart::Fresh),
        RecoveryPlan::Restore { .. } => Some(LineageStart::Resume),
        RecoveryPlan::Finished { .. } | RecoveryPlan::Unusable { .. } => None,
    };
    let fingerprint = plan_fingerprint(loaded, &args.engine)?;
    // The query and the code it calls: a UDF module edited between two runs makes other rows.
    // Those of `--udf`, then those the query declares (inline bodies too).
    let modules = crate::udfs::lineage_code(&args.file, &args.udfs, &loaded.spec)?;
    let digest = fingerprint.lineage_digest_with(&modules);
    // A checkpoint the query cannot resume from is refused before the lineage is taken: a
    // refused run leaves the lineage as it was.
    if let (RecoveryPlan::Restore { .. }, Some(v)) = (&plan, &validated) {
        if let Compatibility::Incompatible { operator, what } =
            compare(&v.manifest.plan, &fingerprint)
        {
            return Err(RuntimeError::IncompatibleCheckpoint {
                epoch: v.manifest.epoch,
                operator,
                what,
            }
            .into());
        }
    }
    let lineage = match start {
        Some(start) => {
            let taken = store.lineage(start, &digest, draw_lineage)?;
            if let LineageDecision::Draw(why) = taken.decision {
                if let Some(notice) = why.notice() {
                    eprintln!("anduin: {notice} in {}", store.location());
                }
            }
            taken.lineage
        }
        None => String::new(),
    };
    let mut finished = None;
    let restore: Option<Validated> = match plan {
        RecoveryPlan::Fresh { remove, asked } => {
            store.remove(&remove).context(if asked {
                "cannot remove the earlier checkpoints"
            } else {
                "cannot remove incomplete checkpoints"
            })?;
            if asked {
                eprintln!(
                    "anduin: starting from scratch: removed the earlier checkpoints in {}",
                    store.location()
                );
            }
            None
        }
        RecoveryPlan::Finished { epoch, remove } => {
            store.remove(&remove)?;
            let v = validated.context("the finished checkpoint was validated")?;
            // Run again with options that change where state is kept (another state
            // backend, another parallelism): its operators cannot be restored from it.
            if let Compatibility::Incompatible { operator, what } =
                compare(&v.manifest.plan, &fingerprint)
            {
                let changed = format!("operator \"{operator}\": {what}");
                return Ok(Prepared::Finished(epoch.0, Err(changed)));
            }
            finished = Some(epoch.0);
            Some(v)
        }
        RecoveryPlan::Restore {
            epoch,
            skipped,
            remove,
        } => {
            for (e, why) in &skipped {
                eprintln!(
                    "anduin: checkpoint {} is unusable ({why}); falling back to an earlier one",
                    e.0
                );
            }
            store.remove(&remove)?;
            eprintln!(
                "anduin: resuming from checkpoint {} in {}",
                epoch.0,
                store.location()
            );
            Some(validated.context("the chosen checkpoint was validated")?)
        }
        RecoveryPlan::Unusable { problems } => {
            for (e, why) in &problems {
                eprintln!("anduin: checkpoint {} is unusable: {why}", e.0);
            }
            eprintln!(
                "error: no usable checkpoint in {}; to start over, reading the input from the beginning and rewriting the output, pass --from-scratch",
                store.location()
            );
            return Ok(Prepared::Unusable);
        }
    };
    let checkpointing = Box::new(Checkpointing {
        settings: CheckpointSettings {
            store: store.is_remote().then(|| store.clone()),
            ..checkpoint_settings(args, &dir)
        },
        restore,
        commit_only: finished.is_some(),
        faults: Faults {
            fail_checkpoint: args.inject_checkpoint_failure.map(Epoch),
            deny_checkpoints_from: args.inject_checkpoints_denied_from.map(Epoch),
        },
        remote: None,
    });
    Ok(match finished {
        Some(epoch) => Prepared::Finished(epoch, Ok((checkpointing, digest))),
        None => Prepared::Run(checkpointing, lineage, digest),
    })
}

/// Restores the operators of `loaded` from the checkpoint that says it finished (`epoch`),
/// and runs nothing: the sinks' restore commits what the checkpoint holds, which the run that
/// took it may not have (killed, or its commit failed, in between).
fn commit_finished(
    loaded: &Loaded,
    args: &RunArgs,
    checkpointing: Box<Checkpointing>,
    digest: String,
    dead_letter: DeadLetterTarget,
    (name, epoch): (&str, u64),
) -> Result<()> {
    execute(
        loaded,
        &args.engine,
        Execution {
            dead_letter,
            checkpointing: Some(*checkpointing),
            stop: Arc::new(AtomicBool::new(false)),
            query_file: Some(args.file.display().to_string()),
            events: anduin_runtime::Events::default(),
            control: None,
            network: None,
            end_gate: None,
            lineage: None,
            query_digest: Some(digest),
            name: Some(name.to_string()),
        },
    )
    .with_context(|| {
        format!("this query already finished (checkpoint {epoch}), but its sinks could not commit what that checkpoint holds, or check that it is committed; run it again once they can reach their servers")
    })?;
    Ok(())
}

/// The fingerprint of `loaded` as a run with `engine`'s options plans it from nothing: whose
/// digest its checkpoints' lineage is drawn for ([`Store::lineage`]). A query that cannot be
/// planned is refused here as the runtime would refuse it.
fn plan_fingerprint(loaded: &Loaded, engine: &EngineArgs) -> Result<PlanFingerprint> {
    let options = PlanOptions {
        chaining: !engine.no_chaining,
        default_parallelism: engine.parallelism,
        max_parallelism: engine.max_parallelism,
    };
    let plan = PhysicalPlan::plan(&loaded.graph, options).map_err(RuntimeError::Plan)?;
    Ok(anduin_runtime::fingerprint(&loaded.graph, &plan))
}

fn print_summary(args: &RunArgs, s: &RunSummary, dead_letter: &DeadLetter) {
    eprintln!(
        "anduin: {} {} {:.2} s",
        args.file.display(),
        if s.stopped {
            "stopped after"
        } else {
            "finished in"
        },
        s.elapsed.as_secs_f64()
    );
    if s.channels.network > 0 {
        eprintln!(
            "  channels: {} between instances, {} of them across workers over the network",
            s.channels.all, s.channels.network
        );
    }
    let width = s.operators.iter().map(|o| o.name.len()).max().unwrap_or(0);
    for o in &s.operators {
        let line = match o.kind.as_str() {
            "reader" | "generator" => format!("{} rows out", o.rows_out),
            "writer" => format!("{} rows written", o.rows_in),
            _ => format!("{} rows in, {} rows out", o.rows_in, o.rows_out),
        };
        let metrics: Vec<String> = o.metrics.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let line = if metrics.is_empty() {
            line
        } else {
            format!("{line}; {}", metrics.join(", "))
        };
        eprintln!("  {:width$}  [{}] {line}", o.name, o.kind);
    }
    if let Some(c) = &s.checkpoints {
        eprintln!(
            "anduin: checkpoints: {} complete, {} failed{}",
            c.completed,
            c.failed,
            c.last_epoch
                .map(|e| format!(", last {e}"))
                .unwrap_or_default()
        );
    }
    if dead_letter.count() == 0 {
        eprintln!("anduin: no malformed records");
    }
    report_rejects(dead_letter);
}

/// How many rows the sinks could not commit (`uncommitted_rows`: a Kafka sink whose broker
/// was lost); a resumed run writes them.
fn uncommitted_rows(summary: &anduin_runtime::RunSummary) -> u64 {
    summary
        .operators
        .iter()
        .flat_map(|o| &o.metrics)
        .filter(|(m, _)| m == "uncommitted_rows")
        .map(|(_, n)| *n)
        .sum()
}

/// What a stopped run did with the rows it read: all processed and written, unless an
/// operator still busy with them a second after the stop gave some up (a `pattern`'s
/// `given_up_rows`), or a sink could not commit them (a Kafka sink whose broker was lost,
/// `uncommitted_rows`: a resumed run writes them). Without checkpoints the given-up rows'
/// matches are missing for good, and a match still open where the pattern gave up ended
/// there, as at the end of the input: it may be cut short. With checkpoints, nothing was cut
/// short, and a resumed run matches them.
fn processed(summary: &anduin_runtime::RunSummary, checkpointing: bool) -> String {
    let left: Vec<String> = summary
        .operators
        .iter()
        .filter_map(|o| {
            let (_, n) = o.metrics.iter().find(|(m, _)| m == "uncommitted_rows")?;
            (*n > 0).then(|| format!("`{}` could not commit {n} of them", o.name))
        })
        .collect();
    if !left.is_empty() {
        return format!(
            "everything read so far was processed, but not all of it written: {} (its broker was lost; they are kept in the last checkpoint, and a resumed run writes them)",
            left.join(", ")
        );
    }
    let given_up: Vec<String> = summary
        .operators
        .iter()
        .filter_map(|o| {
            let (_, n) = o.metrics.iter().find(|(m, _)| m == "given_up_rows")?;
            (*n > 0).then(|| format!("`{}` gave up matching {n} of them", o.name))
        })
        .collect();
    if given_up.is_empty() {
        return "everything read so far was processed and written".to_string();
    }
    if checkpointing {
        format!(
            "everything read so far was written but for what was still being matched a second after the stop: {} (a resumed run matches them)",
            given_up.join(", ")
        )
    } else {
        format!(
            "everything read so far was written but for what was still being matched a second after the stop: {} (their matches are missing, and a match still open there ended where it gave up, as at the end of the input: it may be cut short)",
            given_up.join(", ")
        )
    }
}
