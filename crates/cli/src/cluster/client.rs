//! `anduin submit`, `anduin status` and `anduin cancel`: one request to the coordinator each
//! (`submit --wait` then asks for the query's status until it is over).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Args;

use super::coordinators::{standing_by, Coordinators, NO_LEADER};
use super::proto::{QueryStatus, Reply, RuleFile, Submission, ToCoordinator, ANSWER_WITHIN};
use super::secret::SecretArgs;

/// Arguments of `anduin submit`.
#[derive(Args, Debug)]
pub struct SubmitArgs {
    /// The query file (.flow, .sql or .json).
    pub file: PathBuf,
    /// The coordinator's address (required); several (`a:7400,b:7400`) when coordinators
    /// elect a leader: the one that leads is asked.
    #[arg(long, value_name = "HOST:PORT[,HOST:PORT…]")]
    pub coordinator: Option<Coordinators>,
    /// The query's name (default: the file's stem).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Wait until the query finishes, fails or is cancelled; exit 0 only if it finished.
    #[arg(long)]
    pub wait: bool,
    /// Resume from the last complete checkpoint of the query of this name that was cancelled
    /// or failed (kept while no other query takes the name), as `anduin run` resumes from its
    /// --checkpoint-store; refused when there is none. Without it a submission starts from
    /// the beginning and removes what an earlier query of its name left.
    #[arg(long)]
    pub resume: bool,
    #[command(flatten)]
    pub secret: SecretArgs,
    /// The flags of `anduin run` that concern the query: `--var NAME=VALUE`, `--parallelism`,
    /// `--checkpoint-interval`, `--checkpoint-every`, `--state-backend`, `--batch-size`…
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "RUN FLAGS"
    )]
    pub run_args: Vec<String>,
}

/// Arguments of `anduin status`.
#[derive(Args, Debug)]
pub struct StatusArgs {
    /// One query (default: every query).
    pub query: Option<String>,
    /// The coordinator's address, or several (`a:7400,b:7400`).
    #[arg(long, value_name = "HOST:PORT[,HOST:PORT…]")]
    pub coordinator: Coordinators,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub secret: SecretArgs,
}

/// Arguments of `anduin cancel`.
#[derive(Args, Debug)]
pub struct CancelArgs {
    /// The query.
    pub query: String,
    /// The coordinator's address, or several (`a:7400,b:7400`).
    #[arg(long, value_name = "HOST:PORT[,HOST:PORT…]")]
    pub coordinator: Coordinators,
    #[command(flatten)]
    pub secret: SecretArgs,
}

/// How long `submit --wait` waits for a coordinator it cannot reach.
const UNREACHABLE_FOR: Duration = Duration::from_secs(120);

/// How long a client waits for one of its coordinators to lead (a standby takes over).
const LEADER_WAIT: Duration = Duration::from_secs(30);

/// One request and its reply, from the coordinator that leads (waiting up to [`LEADER_WAIT`]
/// while every one stands by or is away, when there are several).
/// A status answered by a leader that a later one (whose answer came before) superseded is
/// not taken: the next coordinator is asked.
fn ask(coordinator: &Coordinators, secret: Option<&[u8]>, msg: &ToCoordinator) -> Result<Reply> {
    let since = std::time::Instant::now();
    loop {
        let (to, mut from) = match coordinator.connect(secret) {
            Ok(c) => c,
            Err(e)
                if (standing_by(&e) || e.to_string().starts_with(NO_LEADER))
                    && since.elapsed() < LEADER_WAIT =>
            {
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
            Err(e) => return Err(e),
        };
        to.send(msg)?;
        let reply = match from.recv_until::<Reply>(Some(ANSWER_WITHIN)) {
            Ok(reply) => {
                reply.context("the coordinator closed the connection without answering")?
            }
            Err(e) => {
                // Paused, or cut off: the next coordinator of the list may lead by now.
                if super::proto::timed_out(&e) {
                    coordinator.pass_over();
                }
                return Err(e);
            }
        };
        let Reply::Status { term, .. } = &reply else {
            return Ok(reply);
        };
        match coordinator.heard_term(*term) {
            Ok(()) => return Ok(reply),
            Err(newest) if since.elapsed() < LEADER_WAIT => {
                tracing::info!(
                    term = ?term,
                    newest,
                    "a superseded leader answered: asking the next coordinator"
                );
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(newest) => bail!(
                "{NO_LEADER}: the coordinator that answered led at term {}, superseded by \
                 term {newest}",
                term.unwrap_or_default()
            ),
        }
    }
}

/// Takes `flag` (and its value, when `valued`) out of `args` wherever it stands: the flags of
/// `submit` itself may come after the query's run flags. The last one given wins. A valued
/// flag last with no value is left where it is, for the run flags' parser to refuse (it was
/// dropped without a word, probe46).
pub fn take_flag(args: &mut Vec<String>, flag: &str, valued: bool) -> Option<String> {
    let mut found = None;
    let mut i = 0;
    while i < args.len() {
        if let Some(v) = args[i].strip_prefix(&format!("{flag}=")).filter(|_| valued) {
            found = Some(v.to_string());
            args.remove(i);
        } else if args[i] == flag && valued && i + 1 == args.len() {
            break;
        } else if args[i] == flag {
            args.remove(i);
            if valued {
                if i < args.len() {
                    found = Some(args.remove(i));
                }
            } else {
                found = Some(String::new());
            }
        } else {
            i += 1;
        }
    }
    found
}

/// The text of the rule file `path` (`--rules`), checked as a run checks it (it parses, and
/// each rule is one a running query can carry out), so that a bad file is refused here,
/// before anything is sent or started, with its `FILE:LINE:COL` message.
pub fn checked_rule_file(path: &str) -> Result<String> {
    let text = crate::run_rules::read_rule_file(std::path::Path::new(path))?;
    crate::run_rules::check_text(path, &text)?;
    Ok(text)
}

/// Moves `submit`'s own flags given after the run flags to where they belong.
fn own_flags(mut args: SubmitArgs) -> Result<SubmitArgs> {
    if let Some(c) = take_flag(&mut args.run_args, "--coordinator", true) {
        args.coordinator = Some(
            c.parse()
                .map_err(|e| anyhow::anyhow!("--coordinator {c}: {e}"))?,
        );
    }
    if let Some(n) = take_flag(&mut args.run_args, "--name", true) {
        args.name = Some(n);
    }
    if take_flag(&mut args.run_args, "--wait", false).is_some() {
        args.wait = true;
    }
    if take_flag(&mut args.run_args, "--resume", false).is_some() {
        args.resume = true;
    }
    if let Some(f) = take_flag(&mut args.run_args, "--cluster-secret-file", true) {
        args.secret.cluster_secret_file = Some(f.into());
    }
    Ok(args)
}

pub fn submit(args: SubmitArgs) -> Result<ExitCode> {
    let args = own_flags(args)?;
    let Some(coordinator) = args.coordinator.clone() else {
        bail!("anduin submit needs --coordinator HOST:PORT");
    };
    let secret = args.secret.load()?;
    // The rule file goes with the submission, read here (the coordinator keeps its text).
    let mut args = args;
    let interval = take_flag(&mut args.run_args, "--rules-interval", true);
    let rules = match take_flag(&mut args.run_args, "--rules", true) {
        Some(path) => Some(RuleFile {
            text: checked_rule_file(&path)?,
            name: path,
            interval,
        }),
        None if interval.is_some() => bail!("--rules-interval needs --rules FILE"),
        None => None,
    };
    let source = std::fs::read_to_string(&args.file)
        .with_context(|| format!("cannot read `{}`", args.file.display()))?;
    // Its modules go with it: the coordinator and the workers load these.
    let modules = super::modules::collect(&args.file, &source, &mut args.run_args)?;
    let name = match &args.name {
        Some(n) => n.clone(),
        None => args
            .file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
    };
    let file_name = args
        .file
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .context("the query file has no name")?;
    let submission = Submission {
        name: name.clone(),
        file_name,
        given_file: Some(args.file.display().to_string()),
        source,
        modules,
        args: args.run_args.clone(),
        cwd: std::env::current_dir().context("cannot read the working directory")?,
        rules,
        resume: args.resume,
    };
    let submit = ToCoordinator::Submit(submission);
    // Said here, before anything is sent: the coordinator would cut the connection.
    let size = serde_json::to_vec(&submit).map_or(0, |b| b.len());
    if size > super::proto::MESSAGE_LIMIT {
        bail!(
            "the submission (the query's text, its modules and its flags) takes {size} bytes; a coordinator takes at most {}: make the query file or its modules smaller",
            super::proto::MESSAGE_LIMIT
        );
    }
    let reply = match ask(&coordinator, secret.as_deref(), &submit) {
        Ok(reply) => reply,
        // The coordinator went away with the submission, maybe recorded (its leader killed
        // as it answered): the next one knows. A query of that name that is not over is this
        // one; otherwise it is submitted again.
        Err(e) if !e.to_string().starts_with(super::proto::REFUSED) => {
            tracing::warn!(error = %format!("{e:#}"), "the submission's answer was lost: asking whether it was taken");
            match state_of(&coordinator, secret.as_deref(), &name) {
                Ok(Some(s)) if !s.is_over() => Reply::Submitted {
                    query: name.clone(),
                },
                Ok(_) => ask(&coordinator, secret.as_deref(), &submit)?,
                Err(_) => return Err(e),
            }
        }
        Err(e) => return Err(e),
    };
    let query = match reply {
        Reply::Submitted { query } => query,
        Reply::Refused(why) => bail!("the coordinator refused the query: {why}"),
        other => bail!("the coordinator answered {other:?}"),
    };
    eprintln!("anduin: submitted query {query} to {coordinator}");
    if !args.wait {
        return Ok(ExitCode::SUCCESS);
    }
    wait_until_over(&coordinator, secret.as_deref(), &query)
}

/// The state of `query` at `coordinator`, if it knows one of that name.
pub fn state_of(
    coordinator: &Coordinators,
    secret: Option<&[u8]>,
    query: &str,
) -> Result<Option<QueryStatus>> {
    match ask(
        coordinator,
        secret,
        &ToCoordinator::Status {
            query: Some(query.to_string()),
        },
    )? {
        Reply::Status { mut queries, .. } if !queries.is_empty() => Ok(Some(queries.remove(0))),
        Reply::Status { .. } | Reply::Refused(_) => Ok(None),
        other => bail!("the coordinator answered {other:?}"),
    }
}

/// Prints each change of `query`'s state until it is over: success when it finished.
pub fn wait_until_over(
    coordinator: &Coordinators,
    secret: Option<&[u8]>,
    query: &str,
) -> Result<ExitCode> {
    let mut last_state = String::new();
    let mut last_error: Option<String> = None;
    let mut unreachable_since: Option<std::time::Instant> = None;
    loop {
        let asked = ask(
            coordinator,
            secret,
            &ToCoordinator::Status {
                query: Some(query.to_string()),
            },
        );
        let status = match asked {
            Ok(Reply::Status { mut queries, .. }) if !queries.is_empty() => queries.remove(0),
            Ok(other) => bail!("the coordinator answered {other:?}"),
            Err(e) => {
                // A coordinator that restarts comes back with the query: keep asking, for a while.
                let since = *unreachable_since.get_or_insert_with(|| {
                    eprintln!("anduin: the coordinator is unreachable ({e:#}); waiting for it");
                    std::time::Instant::now()
                });
                if since.elapsed() > UNREACHABLE_FOR {
                    bail!("the coordinator has been unreachable for {UNREACHABLE_FOR:?}: {e:#}");
                }
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
        };
        unreachable_since = None;
        // A new state, or a new reason within one (what a scheduling query waits for); a
        // checkpoint begun or ended is not one.
        let state = match status.state.as_str() {
            "checkpointing" => "running".to_string(),
            other => other.to_string(),
        };
        if state != last_state || status.error != last_error {
            // A checkpoint under way is running, as the line says it.
            let shown = QueryStatus {
                state: state.clone(),
                ..status.clone()
            };
            eprintln!("anduin: query {query}: {}", describe(&shown));
            last_state = state;
            last_error = status.error.clone();
        }
        if status.is_over() {
            return Ok(if status.state == "finished" {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            });
        }
        // A client's poll, not a synchronisation: the coordinator's answer is the truth.
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn describe(s: &QueryStatus) -> String {
    let mut out = format!("{} (attempt {})", s.state, s.attempt);
    if !s.placement.is_empty() {
        let parts: Vec<String> = s
            .placement
            .iter()
            .map(|(w, n)| format!("{w}: {n}"))
            .collect();
        out.push_str(&format!(", tasks on {}", parts.join(", ")));
    }
    if let Some(e) = s.last_checkpoint {
        out.push_str(&format!(", last checkpoint {e}"));
    }
    let rates: Vec<String> = s
        .operators
        .iter()
        .filter_map(|o| {
            o.rows_out_per_s
                .map(|r| format!("{} {:.0}/s ({} rows)", o.operator, r, o.rows_out))
        })
        .collect();
    if !rates.is_empty() {
        out.push_str(&format!(", rows out: {}", rates.join(", ")));
    }
    if let Some(e) = &s.error {
        out.push_str(&format!(", {e}"));
    }
    if let Some(ms) = s.next_attempt_in_ms {
        out.push_str(&format!(
            "; next attempt in {:.1} s ({} of {} failures in a row with no checkpoint completed)",
            ms as f64 / 1000.0,
            s.failures_in_a_row,
            s.restart_attempts
        ));
    }
    out
}

pub fn status(args: StatusArgs) -> Result<ExitCode> {
    let one = args.query.is_some();
    let secret = args.secret.load()?;
    match ask(
        &args.coordinator,
        secret.as_deref(),
        &ToCoordinator::Status { query: args.query },
    )? {
        Reply::Status {
            workers, queries, ..
        } => {
            if args.json && one {
                println!("{}", serde_json::to_string_pretty(&queries[0])?);
            } else if args.json {
                let all = serde_json::json!({ "workers": workers, "queries": queries });
                println!("{}", serde_json::to_string_pretty(&all)?);
            } else {
                if !one {
                    for w in &workers {
                        let state = if w.alive { "alive" } else { "dead" };
                        println!("worker {}\t{} slots, {state}", w.name, w.slots);
                    }
                    if queries.is_empty() {
                        println!("no queries");
                    }
                }
                for s in &queries {
                    println!("{}\t{}", s.name, describe(s));
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Reply::Refused(why) => bail!("{why}"),
        other => bail!("the coordinator answered {other:?}"),
    }
}

pub fn cancel(args: CancelArgs) -> Result<ExitCode> {
    let secret = args.secret.load()?;
    match ask(
        &args.coordinator,
        secret.as_deref(),
        &ToCoordinator::Cancel {
            query: args.query.clone(),
        },
    )? {
        Reply::Cancelling => {
            eprintln!("anduin: cancelling query {}", args.query);
            Ok(ExitCode::SUCCESS)
        }
        Reply::Refused(why) => bail!("{why}"),
        other => bail!("the coordinator answered {other:?}"),
    }
}

#[cfg(test)]
mod take_flag_tests {
    use super::take_flag;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_flag_after_the_run_flags_is_taken_with_its_value_and_the_last_wins() {
        let mut a = args(&["--no-chaining", "--name", "a", "--var", "X=1", "--name=b"]);
        assert_eq!(take_flag(&mut a, "--name", true).as_deref(), Some("b"));
        assert_eq!(a, args(&["--no-chaining", "--var", "X=1"]));
        let mut a = args(&["--wait", "--no-chaining"]);
        assert_eq!(take_flag(&mut a, "--wait", false).as_deref(), Some(""));
        assert_eq!(a, args(&["--no-chaining"]));
    }

    #[test]
    fn a_valued_flag_last_without_its_value_is_left_for_the_parser_to_refuse() {
        let mut a = args(&["--no-chaining", "--restart-backoff"]);
        assert_eq!(take_flag(&mut a, "--restart-backoff", true), None);
        assert_eq!(a, args(&["--no-chaining", "--restart-backoff"]));
        // An earlier one with its value still counts; the bare last one stays.
        let mut a = args(&["--name", "a", "--name"]);
        assert_eq!(take_flag(&mut a, "--name", true).as_deref(), Some("a"));
        assert_eq!(a, args(&["--name"]));
    }
}
