//! `anduin cluster --workers N FILE …`: a coordinator and N worker processes on this machine
//! (the coordinator's `process` scheduler starts them, and starts one again if it dies), the
//! query submitted to them and waited for, and everything stopped at the end — for trying the
//! cluster out, and for tests.

use std::path::PathBuf;
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;

use super::client::{self, SubmitArgs};
use super::secret::SecretArgs;

/// Arguments of `anduin cluster`.
#[derive(Args, Debug)]
pub struct ClusterArgs {
    /// The query file (.flow, .sql or .json).
    pub file: PathBuf,
    /// How many worker processes.
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub workers: u32,
    /// Slots of each worker.
    #[arg(long, default_value_t = 64, value_name = "N")]
    pub slots: u32,
    /// Where the coordinator keeps its state and the query's checkpoints (default: a new
    /// temporary directory, removed at the end).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// The query's name (default: the file's stem).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Where the query's checkpoints go (default: `checkpoints` in the directory of --dir): a
    /// directory, or s3://bucket/prefix, reached with the AWS_* variables of this environment,
    /// which the coordinator and the workers inherit.
    #[arg(long, value_name = "DIR|URL")]
    pub checkpoint_store: Option<String>,
    /// Failures in a row without a completed checkpoint before the query is failed
    /// (`anduin coordinator --restart-attempts`, default 10).
    #[arg(long, value_name = "N")]
    pub restart_attempts: Option<String>,
    /// The wait before a failed query's next attempt, doubled after each further failure
    /// (`anduin coordinator --restart-backoff`, default 500ms; 0s: none).
    #[arg(long, value_name = "DURATION")]
    pub restart_backoff: Option<String>,
    /// The longest such wait (`anduin coordinator --restart-max-backoff`, default 30s).
    #[arg(long, value_name = "DURATION")]
    pub restart_max_backoff: Option<String>,
    /// The flags of `anduin run` that concern the query.
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "RUN FLAGS"
    )]
    pub run_args: Vec<String>,
    #[command(flatten)]
    pub secret: SecretArgs,
}

/// The coordinator's process: stopped with SIGTERM when dropped (it stops the workers it
/// started), killed by its PID if it has not ended within 10 s.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        if let Ok(pid) = libc::pid_t::try_from(self.0.id()) {
            // SAFETY: kill(2) on the PID of our own child, not reaped yet.
            unsafe {
                libc::kill(pid, libc::SIGTERM);
            }
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while matches!(self.0.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn cluster(mut args: ClusterArgs) -> Result<ExitCode> {
    // The flags of `cluster` itself may come after the query's run flags.
    if let Some(w) = client::take_flag(&mut args.run_args, "--workers", true) {
        args.workers = w
            .parse()
            .with_context(|| format!("--workers {w}: not a number"))?;
    }
    if let Some(n) = client::take_flag(&mut args.run_args, "--slots", true) {
        args.slots = n
            .parse()
            .with_context(|| format!("--slots {n}: not a number"))?;
    }
    if let Some(d) = client::take_flag(&mut args.run_args, "--dir", true) {
        args.dir = Some(d.into());
    }
    if let Some(n) = client::take_flag(&mut args.run_args, "--name", true) {
        args.name = Some(n);
    }
    if let Some(c) = client::take_flag(&mut args.run_args, "--checkpoint-store", true) {
        args.checkpoint_store = Some(c);
    }
    if let Some(f) = client::take_flag(&mut args.run_args, "--cluster-secret-file", true) {
        args.secret.cluster_secret_file = Some(f.into());
    }
    // The coordinator's restart flags, checked here (the coordinator would only stop).
    let attempts = |v: &str| match v.parse::<u32>() {
        Ok(n) if n >= 1 => Ok(()),
        _ => Err("a whole number, at least 1".to_string()),
    };
    let duration = |v: &str| crate::embedded::parse_duration(v).map(|_| ());
    let mut restart = Vec::new();
    for (flag, given, check) in [
        (
            "--restart-attempts",
            &mut args.restart_attempts,
            &attempts as &dyn Fn(&str) -> _,
        ),
        ("--restart-backoff", &mut args.restart_backoff, &duration),
        (
            "--restart-max-backoff",
            &mut args.restart_max_backoff,
            &duration,
        ),
    ] {
        if let Some(v) = client::take_flag(&mut args.run_args, flag, true) {
            *given = Some(v);
        }
        if args.run_args.last().is_some_and(|a| a == flag) {
            bail!("{flag} needs a value");
        }
        let Some(v) = given.as_deref() else {
            continue;
        };
        if let Err(why) = check(v) {
            bail!("{flag} {v}: {why}");
        }
        restart.extend([flag.to_string(), v.to_string()]);
    }
    // A bad rule file is refused before a coordinator or a worker starts (`submit` reads
    // the flag again from the run flags).
    if let Some(path) = client::take_flag(&mut args.run_args.clone(), "--rules", true) {
        client::checked_rule_file(&path)?;
    }
    if args.workers == 0 || args.slots == 0 {
        bail!(
            "anduin cluster needs at least one worker with at least one slot (--workers, --slots)"
        );
    }
    let temp;
    let dir = match &args.dir {
        Some(d) => d.clone(),
        None => {
            temp = TempDir::new()?;
            temp.0.clone()
        }
    };
    std::fs::create_dir_all(&dir)?;
    // One `anduin cluster` per directory: a second would find the first's coordinator.
    let _lock = anduin_checkpoint::OwnerLock::acquire(
        &dir.join("CLUSTER.LOCK"),
        &format!(
            "the cluster directory `{}` (another `anduin cluster` uses it: give this one another --dir)",
            dir.display()
        ),
    )?;
    let exe = std::env::current_exe().context("cannot find the anduin executable")?;
    let address_file = dir.join("coordinator.addr");
    let _ = std::fs::remove_file(&address_file);
    let mut command = Command::new(&exe);
    // However this process ends, its coordinator stops (and stops its workers).
    super::scheduler::die_with_parent(&mut command, libc::SIGTERM);
    let mut coordinator = Guard(
        command
            .args(["coordinator", "--listen", "127.0.0.1:0"])
            .args(secret_flag(&args.secret))
            .arg("--state-dir")
            .arg(dir.join("coordinator"))
            .arg("--checkpoint-store")
            .arg(
                args.checkpoint_store
                    .clone()
                    .map_or_else(|| dir.join("checkpoints").into_os_string(), Into::into),
            )
            .arg("--address-file")
            .arg(&address_file)
            .args(["--scheduler", "process"])
            .args(["--workers", &args.workers.to_string()])
            .args(["--slots", &args.slots.to_string()])
            .arg("--workers-die-with-coordinator")
            .args(&restart)
            .stdin(Stdio::null())
            .spawn()
            .context("cannot start the coordinator")?,
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    let addr: std::net::SocketAddr = loop {
        if let Ok(a) = std::fs::read_to_string(&address_file) {
            break a.trim().parse().context("the coordinator's address")?;
        }
        if let Some(status) = coordinator.0.try_wait()? {
            bail!("the coordinator stopped at once ({status})");
        }
        if Instant::now() > deadline {
            bail!("the coordinator did not start listening within 30 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // A query an earlier `anduin cluster` on this directory left running (it was
    // interrupted) is taken over by the coordinator: waited for, not submitted again.
    let name = args.name.clone().unwrap_or_else(|| {
        args.file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    });
    let secret = args.secret.load()?;
    let addr = super::coordinators::Coordinators::one(addr);
    if let Some(s) = client::state_of(&addr, secret.as_deref(), &name)?.filter(|s| !s.is_over()) {
        let kept = dir.join("coordinator").join("queries").join(&name);
        let ours = std::fs::read_to_string(&args.file).ok();
        let theirs = args
            .file
            .file_name()
            .and_then(|f| std::fs::read_to_string(kept.join(f)).ok());
        if ours.is_none() || ours != theirs {
            bail!(
                "the directory `{}` holds query {name}, left {} by an earlier `anduin cluster`, whose text is not `{}`'s: run it from the same file, or give another --dir (or --name)",
                dir.display(),
                s.state,
                args.file.display()
            );
        }
        // Its rules too (those that reshape it made the query that runs).
        let our_rules = client::take_flag(&mut args.run_args.clone(), "--rules", true)
            .map(|p| crate::run_rules::read_rule_file(std::path::Path::new(&p)))
            .transpose()?;
        let their_rules = std::fs::read_to_string(kept.join("rules")).ok();
        if our_rules != their_rules {
            bail!(
                "the directory `{}` holds query {name}, left {} by an earlier `anduin cluster` {}: run it with the same --rules, or give another --dir (or --name)",
                dir.display(),
                s.state,
                match &their_rules {
                    Some(_) => "with another rule file",
                    None => "without a rule file",
                }
            );
        }
        eprintln!(
            "anduin: query {name} was left {} in `{}` by an earlier `anduin cluster`: taken over, it goes on from where it was (its flags are the earlier run's)",
            s.state,
            dir.display()
        );
        let code = client::wait_until_over(&addr, secret.as_deref(), &name);
        drop(coordinator);
        return code;
    }
    let code = client::submit(SubmitArgs {
        file: args.file.clone(),
        coordinator: Some(addr),
        name: args.name.clone(),
        wait: true,
        // `--resume` among the run flags is taken as submit's own.
        resume: false,
        secret: args.secret.clone(),
        run_args: args.run_args.clone(),
    });
    drop(coordinator);
    code
}

/// The secret's flag, for the processes this starts.
fn secret_flag(s: &SecretArgs) -> Vec<std::ffi::OsString> {
    match &s.cluster_secret_file {
        Some(f) => vec!["--cluster-secret-file".into(), f.clone().into_os_string()],
        None => Vec::new(),
    }
}

/// A temporary directory removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Result<Self> {
        let p = std::env::temp_dir().join(format!(
            "anduin-cluster-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
        ));
        std::fs::create_dir_all(&p)?;
        Ok(Self(p))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
