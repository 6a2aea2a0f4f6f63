//! `anduin checkpoints list DIR`: what a checkpoint directory holds.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::SystemTime;

use anduin_checkpoint::{CheckpointStatus, Store};
use anyhow::{Context, Result};
use clap::Subcommand;

/// Subcommands of `anduin checkpoints`.
#[derive(Subcommand, Debug)]
pub enum CheckpointsCommand {
    /// One line per checkpoint: epoch, complete or incomplete, size, age.
    List {
        /// The checkpoint directory (`--checkpoint-dir` of `anduin run`).
        dir: PathBuf,
    },
}

pub fn checkpoints(cmd: CheckpointsCommand) -> Result<ExitCode> {
    match cmd {
        CheckpointsCommand::List { dir } => list(dir),
    }
}

fn list(dir: PathBuf) -> Result<ExitCode> {
    if !dir.is_dir() {
        anyhow::bail!(
            "`{}` is not a checkpoint directory (no such directory)",
            dir.display()
        );
    }
    let store = Store::open(&dir).with_context(|| format!("cannot open `{}`", dir.display()))?;
    let listing = store.list()?;
    if listing.is_empty() {
        println!("no checkpoints in {}", dir.display());
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{:>8}  {:<10}  {:>10}  {:>8}",
        "epoch", "status", "size", "age"
    );
    let now = SystemTime::now();
    for c in listing {
        let status = match &c.status {
            CheckpointStatus::Complete if c.finished => "complete (finished)".to_string(),
            CheckpointStatus::Complete => "complete".to_string(),
            CheckpointStatus::Incomplete => "incomplete".to_string(),
            CheckpointStatus::Corrupt(why) => format!("corrupt: {why}"),
        };
        let age = c
            .modified
            .and_then(|m| now.duration_since(m).ok())
            .map(|d| human_duration(d.as_secs()))
            .unwrap_or_else(|| "?".into());
        println!(
            "{:>8}  {:<10}  {:>10}  {:>8}",
            c.epoch.0,
            status,
            human_size(c.size),
            age
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut v = bytes as f64;
    let mut unit = "B";
    for u in UNITS {
        if v < 1024.0 {
            break;
        }
        v /= 1024.0;
        unit = u;
    }
    format!("{v:.1} {unit}")
}

fn human_duration(secs: u64) -> String {
    match secs {
        0..=119 => format!("{secs}s"),
        120..=7199 => format!("{}m", secs / 60),
        7200..=172_799 => format!("{}h", secs / 3600),
        _ => format!("{}d", secs / 86_400),
    }
}
