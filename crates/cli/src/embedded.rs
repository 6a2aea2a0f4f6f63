//! Running a checked query embedded in this process: the engine's options, the dead-letter
//! file, the checks made before anything starts, and the run itself. `anduin run` and
//! `anduin bench` both go through here, so a benchmark runs a query exactly as `run` does.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use anduin_operator_api::{BuildContext, DeadLetter, DeadLetterTarget};
use anduin_runtime::{Checkpointing, NetworkSettings, Placement, RunConfig, RunSummary};
use anduin_spec::Spec;
use anduin_state::RunStateDir;
use anduin_types::{duration_ms, Epoch};
use anyhow::{Context, Result};
use clap::Args;

use crate::load::Loaded;

/// How the engine runs a query: the options `run` and `bench` share.
#[derive(Args, Debug, Clone)]
pub struct EngineArgs {
    /// Rows per batch.
    #[arg(long, default_value_t = 8192, value_name = "N", value_parser = parse_count)]
    pub batch_size: usize,
    /// The longest a source holds rows before sending a partial batch.
    #[arg(long, default_value = "100ms", value_parser = parse_duration, value_name = "DURATION")]
    pub linger: Duration,
    /// Run every operator as its own task (no chaining): uses more threads.
    #[arg(long)]
    pub no_chaining: bool,
    /// Instances of each operator that can run in parallel (keyed windows) and sets no
    /// `parallelism` of its own.
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = parse_count)]
    pub parallelism: usize,
    /// Instances each operator that splits its input by key runs, so that it can be rescaled
    /// up to N while the query runs (`anduin ctl scale`): those beyond its parallelism wait
    /// idle, owning no key group, until a rescale hands them some.
    #[arg(long, value_name = "N", value_parser = parse_count)]
    pub max_parallelism: Option<usize>,
    /// Where stateful operators that set no `state_backend` of their own keep their state:
    /// `heap` (memory) or `lsm` (an LSM tree on local disk, for state larger than memory).
    #[arg(long, value_name = "heap|lsm", value_parser = ["heap", "lsm"])]
    pub state_backend: Option<String>,
    /// How long the state of a key is kept after its last write in every updating operator
    /// (regular join, GROUP BY without a window, OVER window, top-N and deduplication) that
    /// sets no `state_ttl` of its own: Flink's `table.exec.state.ttl`, in processing time. A
    /// key seen again after that starts afresh (its earlier result is not retracted). `0` or
    /// absent: kept for the life of the query.
    #[arg(long, value_name = "DURATION", value_parser = parse_state_ttl)]
    pub state_ttl: Option<String>,
    /// Buffer every row in joins with a window's MAX or MIN: the planner places no
    /// `extreme_filter` before them (`prune = "off"` on every join that sets none; for
    /// measuring what the filter saves).
    #[arg(long)]
    pub no_join_pruning: bool,
    /// Where LSM backends keep their working files: a directory of this run's, locked while
    /// it runs and removed when it ends; one left by a killed run is removed by the next run
    /// (default: `anduin-state` in the system's temporary directory).
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// What a malformed record or a row on which an expression fails (a division by zero,
    /// an overflow) does, in every operator that sets no `on_error` of its own: `dead_letter`
    /// sends it to the dead-letter file and goes on; `fail` stops the query, naming it.
    #[arg(long, value_name = "dead_letter|fail", value_parser = ["dead_letter", "fail"])]
    pub on_error: Option<String>,
    /// Spread the query's task instances over N workers inside this process, whose channels
    /// to one another cross loopback TCP (Arrow IPC frames, credit-based flow control): the
    /// network data plane of a cluster, tried and measured in one process.
    #[arg(long, value_name = "N", value_parser = parse_count)]
    pub loopback_workers: Option<usize>,
    /// Test-only fault injection: the operator named fails once it has been given more than
    /// ROWS rows (a replica of a hot standby, for the tests that lose one). Repeatable.
    #[arg(long, hide = true, value_name = "OPERATOR:ROWS", value_parser = parse_fail_after)]
    pub fail_after: Vec<(String, u64)>,
}

/// `OPERATOR:ROWS` of `--fail-after`.
fn parse_fail_after(s: &str) -> Result<(String, u64), String> {
    let (name, rows) = s
        .rsplit_once(':')
        .ok_or_else(|| format!("expected OPERATOR:ROWS, found `{s}`"))?;
    let rows = rows
        .parse()
        .map_err(|_| format!("`{rows}` is not a number of rows"))?;
    Ok((name.to_string(), rows))
}

impl EngineArgs {
    /// The params given to every operator that takes them and sets none (see
    /// [`crate::load::load_with`]).
    pub fn defaults(&self) -> Vec<(&str, &str)> {
        let backend = self.state_backend.as_deref().map(|b| ("state_backend", b));
        let on_error = self.on_error.as_deref().map(|e| ("on_error", e));
        let ttl = self.state_ttl.as_deref().map(|t| ("state_ttl", t));
        let prune = self.no_join_pruning.then_some(("prune", "off"));
        backend
            .into_iter()
            .chain(on_error)
            .chain(ttl)
            .chain(prune)
            .collect()
    }
}

/// A count of at least 1 (`--batch-size`, `--parallelism`, `--repeat`).
pub fn parse_count(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!(
            "expected a whole number of at least 1, found `{s}`"
        )),
    }
}

/// `--state-ttl`: a duration such as `90s`, `1h` or `2d`, or `0` for none; as the operators'
/// `state_ttl` param takes it (`"3600000ms"`).
pub fn parse_state_ttl(s: &str) -> Result<String, String> {
    let ms = if s.trim() == "0" { 0 } else { duration_ms(s)? };
    Ok(format!("{ms}ms"))
}

/// A duration such as `100ms` or `2s`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    duration_ms(s).map(Duration::from_millis)
}

/// Where malformed records go: `flag` (`--dead-letter`), else `<output>.rejected` beside the
/// first file writer's output, else stderr. Refuses the query (before anything runs) if one
/// of its outputs, or the dead-letter file, is also one of its inputs or another output.
pub fn prepare_outputs(spec: &Spec, flag: Option<&Path>) -> Result<DeadLetterTarget> {
    let target = match flag {
        Some(p) => DeadLetterTarget::File(p.to_path_buf()),
        None => match first_file_output(spec) {
            Some(out) => DeadLetterTarget::File(PathBuf::from(format!("{out}.rejected"))),
            None => DeadLetterTarget::Stderr,
        },
    };
    let path = match &target {
        DeadLetterTarget::File(p) => Some(p.as_path()),
        _ => None,
    };
    crate::preflight::check_files(spec, path)?;
    if let Some(p) = flag {
        // A derived one sits beside an output, whose writer checks the place; a named one is
        // checked here, before anything (an output) is made.
        DeadLetter::new(DeadLetterTarget::File(p.to_path_buf()))
            .check_writable()
            .with_context(|| format!("cannot write the dead-letter file `{}`", p.display()))?;
    }
    Ok(target)
}

/// The path of the first writer that writes to a file (not stdout, nor a device or a pipe
/// such as `/dev/null`, beside which no `.rejected` file belongs).
fn first_file_output(spec: &Spec) -> Option<String> {
    spec.operators
        .iter()
        .filter(|o| o.kind.as_str() == "writer")
        .filter_map(|o| o.param("path").map(|p| p.value.as_text().to_string()))
        .find(|p| p != "-" && std::fs::metadata(p).map_or(true, |m| m.is_file() || m.is_dir()))
}

/// What [`execute`] needs besides the query and the engine's options.
pub struct Execution {
    /// Where malformed records go (from [`prepare_outputs`]).
    pub dead_letter: DeadLetterTarget,
    /// Checkpoints, if the run takes them.
    pub checkpointing: Option<Checkpointing>,
    /// Set to stop the run cleanly.
    pub stop: Arc<AtomicBool>,
    /// The query file, as rejected rows name where their expression is.
    pub query_file: Option<String>,
    /// Who hears of checkpoints and tasks.
    pub events: anduin_runtime::Events,
    /// The control plane's handle of the query, if its params may change while it runs.
    pub control: Option<Arc<anduin_runtime::control::Control>>,
    /// Where the instances run, when not all in this process with in-process channels
    /// (overrides `--loopback-workers`).
    pub network: Option<NetworkSettings>,
    /// Whose leave the tasks need to end their input (a cluster's coordinator's).
    pub end_gate: Option<Arc<dyn anduin_runtime::EndGate>>,
    /// The lineage of the run's checkpoints (`anduin_checkpoint::Store::lineage`), when it
    /// takes them: sinks name what they write by it.
    pub lineage: Option<String>,
    /// The digest of the query as it runs (`BuildContext::query_digest`), when known.
    pub query_digest: Option<String>,
    /// The query's name when no control plane says it (`control` is `None`): sinks name
    /// what they write by it (a Kafka sink's `transactional.id`).
    pub name: Option<String>,
}

/// Refuses a `--max-parallelism` that cannot run: more instances than key groups (an
/// instance beyond them could never own one).
/// Checked before anything is locked or written.
pub fn check_max_parallelism(engine: &EngineArgs) -> Result<()> {
    let Some(max) = engine.max_parallelism else {
        return Ok(());
    };
    let key_groups = usize::from(anduin_state::DEFAULT_MAX_KEY_GROUPS.get());
    if max > key_groups {
        anyhow::bail!(
            "--max-parallelism {max}: an operator's state is split into {key_groups} key groups, \
             so at most {key_groups} instances can own any; give at most {key_groups}"
        );
    }
    if engine.parallelism > max {
        anyhow::bail!(
            "--parallelism {} is more than --max-parallelism {max}: give a --max-parallelism of \
             at least {}",
            engine.parallelism,
            engine.parallelism
        );
    }
    Ok(())
}

/// A finished run.
pub struct Executed {
    /// What the engine reports.
    pub summary: RunSummary,
    /// The malformed records it met.
    pub dead_letter: Arc<DeadLetter>,
}

/// Runs `loaded` embedded in this process with `engine`'s options, until its input ends (or
/// `execution.stop` is set), and flushes the dead-letter file. On failure, the count of
/// malformed records met so far is printed before the error is returned.
pub fn execute(loaded: &Loaded, engine: &EngineArgs, execution: Execution) -> Result<Executed> {
    let Execution {
        dead_letter: target,
        checkpointing,
        stop,
        query_file,
        events,
        control,
        network,
        end_gate,
        lineage,
        query_digest,
        name,
    } = execution;
    let resuming = checkpointing.as_ref().is_some_and(|c| c.restore.is_some());
    let path = match &target {
        DeadLetterTarget::File(p) => Some(p.clone()),
        _ => None,
    };
    let dead_letter = Arc::new(if resuming {
        DeadLetter::resume(target)
    } else {
        DeadLetter::new(target)
    });
    let state_dir = if uses_lsm(loaded, engine) {
        let root = state_root(engine);
        let dir = RunStateDir::create(&root)
            .with_context(|| format!("cannot use the state directory `{}`", root.display()))?;
        Some(Arc::new(dir))
    } else {
        None
    };
    let ctx = BuildContext {
        state_dir,
        dead_letter: Arc::clone(&dead_letter),
        checkpointing: checkpointing.is_some(),
        restore_epoch: checkpointing
            .as_ref()
            .and_then(|c: &Checkpointing| c.restore.as_ref())
            .map(|v| Epoch(v.manifest.epoch)),
        lineage: lineage.map(Arc::from),
        query_digest: query_digest.map(Arc::from),
        query_file: query_file.map(Arc::from),
        query: control
            .as_ref()
            .map(|c| Arc::from(c.name()))
            .or(name.map(Arc::from)),
        // The runtime sets the instance, the parallelism and the run's clock for each
        // instance it builds.
        ..BuildContext::default()
    };
    let config = RunConfig {
        batch_size: engine.batch_size,
        linger: engine.linger,
        chaining: !engine.no_chaining,
        parallelism: engine.parallelism,
        max_parallelism: engine.max_parallelism,
        stop,
        checkpointing,
        events,
        network: network.or_else(|| {
            engine.loopback_workers.map(|workers| NetworkSettings {
                query: ctx.query.as_deref().unwrap_or("query").to_string(),
                placement: Placement::Loopback {
                    workers: u32::try_from(workers).unwrap_or(u32::MAX),
                },
                // As many messages in flight on the network as each end's queue holds.
                window: 16,
                attempt: 0,
                resumption: None,
            })
        }),
        control,
        end_gate,
        fail_after: engine.fail_after.clone(),
        ..RunConfig::default()
    };
    let result = anduin_runtime::run(&loaded.graph, &config, &ctx);
    dead_letter.flush().with_context(|| match &path {
        Some(p) => format!("cannot write the dead-letter file `{}`", p.display()),
        None => "cannot write the dead letters to stderr".to_string(),
    })?;
    match result {
        Ok(summary) => Ok(Executed {
            summary,
            dead_letter,
        }),
        Err(e) => {
            report_rejects(&dead_letter);
            Err(e.into())
        }
    }
}

/// Where the LSM backends' run directories go: `--state-dir`, else `$TMPDIR/anduin-state`.
pub fn state_root(engine: &EngineArgs) -> PathBuf {
    engine
        .state_dir
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join("anduin-state"))
}

/// For a run that ends before it runs anything (its query already finished, or no checkpoint
/// can be restored): removes the state directories of killed runs under the state root, as a
/// run that starts does. A run killed as its last checkpoint completed leaves a directory
/// that no later run of the query would otherwise remove.
pub fn remove_stale_state_dirs(loaded: &Loaded, engine: &EngineArgs) {
    if !uses_lsm(loaded, engine) {
        return;
    }
    for stale in anduin_state::remove_stale(&state_root(engine)) {
        tracing::info!(dir = %stale.display(), "removed the state directory of a run that is gone");
    }
}

/// Whether an operator of the query keeps its state in an LSM tree (by its own param or the
/// query's `--state-backend`).
pub fn uses_lsm(loaded: &Loaded, engine: &EngineArgs) -> bool {
    engine.state_backend.as_deref() == Some("lsm")
        || loaded.spec.operators.iter().any(|o| {
            o.param("state_backend")
                .is_some_and(|p| p.value.as_text().as_str() == "lsm")
        })
}

/// The line that counts malformed records and rejected rows, when there were some.
pub fn report_rejects(dead_letter: &DeadLetter) {
    let rows = dead_letter.rejected_rows();
    let records = dead_letter.count() - rows;
    let what = match (records, rows) {
        (0, 0) => return,
        (n, 0) => format!("{n} malformed records"),
        (0, r) => format!("{r} rejected rows"),
        (n, r) => format!("{n} malformed records and {r} rejected rows"),
    };
    match dead_letter.path() {
        Some(p) => eprintln!("anduin: {what} went to {}", p.display()),
        None => eprintln!("anduin: {what} were printed to stderr"),
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser, Debug)]
    struct Run {
        #[command(flatten)]
        engine: EngineArgs,
    }

    fn defaults(args: &[&str]) -> Result<Vec<(String, String)>, String> {
        let run = Run::try_parse_from(std::iter::once("run").chain(args.iter().copied()))
            .map_err(|e| e.to_string())?;
        Ok(run
            .engine
            .defaults()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect())
    }

    #[test]
    fn state_ttl_gives_every_operator_that_takes_it_a_state_ttl_in_milliseconds() {
        let ttl = |flag: &str| defaults(&["--state-ttl", flag]);
        assert_eq!(ttl("90s"), Ok(vec![("state_ttl".into(), "90000ms".into())]));
        assert_eq!(
            ttl("1h"),
            Ok(vec![("state_ttl".into(), "3600000ms".into())])
        );
        assert_eq!(
            ttl("2d"),
            Ok(vec![("state_ttl".into(), "172800000ms".into())])
        );
        assert_eq!(ttl("0"), Ok(vec![("state_ttl".into(), "0ms".into())]));
        assert_eq!(defaults(&[]), Ok(vec![]));
    }

    #[test]
    fn a_bad_state_ttl_is_refused_naming_the_flag() {
        for bad in ["soon", "12", "1.5ms", "3 parsecs"] {
            let e = defaults(&["--state-ttl", bad]).expect_err(bad);
            assert!(e.contains("--state-ttl <DURATION>"), "{bad}: {e}");
            assert!(e.contains(bad), "{bad}: {e}");
        }
        let e = defaults(&["--state-ttl", "12"]).expect_err("no unit");
        assert!(e.contains("has no unit"), "{e}");
    }
}
