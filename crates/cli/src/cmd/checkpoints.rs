//! `anduin checkpoints list STORE`: what a checkpoint store (a directory or an object store)
//! holds.

use std::process::ExitCode;
use std::time::SystemTime;

use anduin_checkpoint::{CheckpointStatus, StoreLocation};
use anyhow::{Context, Result};
use clap::Subcommand;

use crate::store::{open_checked, parse_store};

/// Subcommands of `anduin checkpoints`.
#[derive(Subcommand, Debug)]
pub enum CheckpointsCommand {
    /// One line per checkpoint: epoch, complete or incomplete, size, age. Every file is
    /// read to check it (an object store's are read and not kept).
    List {
        /// The checkpoint store (`--checkpoint-store` of `anduin run`): a directory or
        /// s3://bucket/prefix.
        #[arg(
            value_name = "DIR|URL",
            value_parser = parse_store,
            required_unless_present = "checkpoint_store",
            conflicts_with = "checkpoint_store"
        )]
        store: Option<StoreLocation>,
        /// The same, as `anduin run` names it.
        #[arg(
            long = "checkpoint-store",
            visible_alias = "checkpoint-dir",
            value_name = "DIR|URL",
            value_parser = parse_store
        )]
        checkpoint_store: Option<StoreLocation>,
    },
}

pub fn checkpoints(cmd: CheckpointsCommand) -> Result<ExitCode> {
    match cmd {
        CheckpointsCommand::List {
            store,
            checkpoint_store,
        } => match store.or(checkpoint_store) {
            Some(location) => list(&location),
            None => anyhow::bail!("name the checkpoint store: a directory or s3://bucket/prefix"),
        },
    }
}

fn list(location: &StoreLocation) -> Result<ExitCode> {
    // A listing writes nothing: an object store's files are checked as they arrive, in no
    // cache (the directory stays empty and goes when the listing ends).
    let scratch = tempfile::tempdir().context("cannot make a temporary directory")?;
    let cache = match location {
        StoreLocation::Local(dir) => {
            if !dir.is_dir() {
                anyhow::bail!(
                    "`{}` is not a checkpoint directory (no such directory)",
                    dir.display()
                );
            }
            dir.clone()
        }
        _ => scratch.path().to_path_buf(),
    };
    let store = open_checked(location, &cache, false)?;
    let listing = store.list()?;
    if listing.is_empty() {
        println!("no checkpoints in {}", store.location());
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
