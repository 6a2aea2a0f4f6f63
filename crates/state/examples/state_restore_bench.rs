//! Fills a backend with ~`--bytes` of keyed state (16-byte keys, 84-byte values, in random key
//! order over 720 key groups) and writes a full snapshot to a file; then, in a fresh process
//! (as a recovery would be, and so that freeing the filled state does not bill the restore),
//! restores it into an empty backend and checks a sample. Prints one line per phase and the
//! peak memory of each process.
//!
//! ```text
//! cargo run --release -p anduin-state --example state_restore_bench -- \
//!     --bytes 1073741824 --backend heap|lsm
//! ```

use std::error::Error;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anduin_state::{
    key_group_for_key, open_backend, BackendKind, SnapshotKind, DEFAULT_MAX_KEY_GROUPS,
};

const KEY_LEN: usize = 16;
const VALUE_LEN: usize = 84;
const ENTRY_LEN: u64 = (KEY_LEN + VALUE_LEN) as u64;

struct Args {
    bytes: u64,
    backend: String,
    /// Internal: restore this snapshot of `bytes / ENTRY_LEN` entries (the second process).
    restore: Option<PathBuf>,
}

fn main() -> Result<(), Box<dyn Error>> {
    let args = parse_args()?;
    let kind = match args.backend.as_str() {
        "heap" => BackendKind::Heap,
        "lsm" => BackendKind::Lsm,
        other => return Err(format!("unknown backend {other}: heap or lsm").into()),
    };
    let entries = args.bytes / ENTRY_LEN;
    let work = tempfile::tempdir()?;
    match &args.restore {
        Some(snapshot) => restore(kind, entries, snapshot, work.path()),
        None => fill_and_snapshot(&args, kind, entries, work.path()),
    }
}

fn fill_and_snapshot(
    args: &Args,
    kind: BackendKind,
    entries: u64,
    work: &Path,
) -> Result<(), Box<dyn Error>> {
    println!(
        "backend {}: {entries} entries of {ENTRY_LEN} bytes",
        args.backend
    );
    let mut source = open_backend(kind, Some(&work.join("source")))?;
    let start = Instant::now();
    let (mut key, mut value) = ([0u8; KEY_LEN], [0u8; VALUE_LEN]);
    for i in 0..entries {
        entry(i, &mut key, &mut value);
        source.put(
            key_group_for_key(&key, DEFAULT_MAX_KEY_GROUPS),
            &key,
            &value,
        )?;
    }
    report("fill", start, entries, entries * ENTRY_LEN);

    let path = work.join("full.snapshot");
    let start = Instant::now();
    let mut file = File::create(&path)?;
    let stats = source.snapshot(SnapshotKind::Full, &mut file)?;
    file.sync_all()?;
    drop(file);
    report("snapshot", start, stats.entries, stats.bytes);
    println!(
        "fill+snapshot process: peak RSS {} MB",
        peak_rss_mb().unwrap_or(0)
    );
    drop(source);

    let status = Command::new(std::env::current_exe()?)
        .args([
            "--bytes",
            &args.bytes.to_string(),
            "--backend",
            &args.backend,
        ])
        .arg("--restore")
        .arg(&path)
        .status()?;
    if !status.success() {
        return Err(format!("the restore process failed: {status}").into());
    }
    Ok(())
}

fn restore(
    kind: BackendKind,
    entries: u64,
    snapshot: &Path,
    work: &Path,
) -> Result<(), Box<dyn Error>> {
    let mut restored = open_backend(kind, Some(&work.join("restored")))?;
    let bytes = std::fs::metadata(snapshot)?.len();
    let start = Instant::now();
    restored.restore(&mut File::open(snapshot)?, &mut [])?;
    report("restore", start, entries, bytes);

    let start = Instant::now();
    let sample = entries.min(100_000);
    let step = (entries / sample.max(1)).max(1);
    let (mut key, mut expected) = ([0u8; KEY_LEN], [0u8; VALUE_LEN]);
    for i in (0..entries)
        .step_by(usize::try_from(step)?)
        .take(usize::try_from(sample)?)
    {
        entry(i, &mut key, &mut expected);
        let got = restored.get(key_group_for_key(&key, DEFAULT_MAX_KEY_GROUPS), &key)?;
        if got.as_deref() != Some(expected.as_slice()) {
            return Err(format!("entry {i} did not survive the restore").into());
        }
    }
    report("verify-get", start, sample, sample * ENTRY_LEN);
    println!(
        "restore process: peak RSS {} MB",
        peak_rss_mb().unwrap_or(0)
    );
    Ok(())
}

/// Entry `i`: a key that spreads over the key space, and a value derived from `i`.
fn entry(i: u64, key: &mut [u8; KEY_LEN], value: &mut [u8; VALUE_LEN]) {
    let mut state = i;
    key[..8].copy_from_slice(&splitmix(&mut state).to_be_bytes());
    key[8..].copy_from_slice(&i.to_be_bytes());
    for chunk in value.chunks_mut(8) {
        let r = splitmix(&mut state).to_le_bytes();
        chunk.copy_from_slice(&r[..chunk.len()]);
    }
}

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn report(phase: &str, start: Instant, entries: u64, bytes: u64) {
    let secs = start.elapsed().as_secs_f64();
    let mb = bytes as f64 / 1e6;
    println!(
        "{phase:<10} {entries:>10} entries {mb:>9.1} MB {secs:>8.2} s \
         {:>8.1} MB/s {:>10.0} entries/s",
        mb / secs,
        entries as f64 / secs
    );
}

fn parse_args() -> Result<Args, Box<dyn Error>> {
    let mut parsed = Args {
        bytes: 1 << 30,
        backend: "heap".into(),
        restore: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = args.next().ok_or(format!("{arg} needs a value"))?;
        match arg.as_str() {
            "--bytes" => parsed.bytes = value.parse()?,
            "--backend" => parsed.backend = value,
            "--restore" => parsed.restore = Some(value.into()),
            other => {
                return Err(format!("unknown option {other}: --bytes N, --backend heap|lsm").into())
            }
        }
    }
    Ok(parsed)
}

fn peak_rss_mb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024)
}
