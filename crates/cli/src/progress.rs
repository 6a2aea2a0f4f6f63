//! The live progress line of `anduin run` on a terminal: rows in and out per second, the
//! event time reached, the last checkpoint, redrawn in place on stderr. Off with `-q`, or
//! when stderr is not a terminal.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anduin_runtime::control::{Control, QueryInfo, QueryMetrics, QueryState};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How often the line is redrawn.
const EVERY: Duration = Duration::from_millis(500);

/// The progress line while it is shown; cleared when dropped.
pub struct Progress {
    done: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.done.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Shows the progress of the run `control` is the handle of, unless `quiet` or stderr is
/// not a terminal.
pub fn show(control: Arc<Control>, quiet: bool) -> Option<Progress> {
    if quiet {
        return None;
    }
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    if bar.is_hidden() {
        return None;
    }
    bar.set_style(ProgressStyle::with_template("{spinner} {elapsed} · {msg}").ok()?);
    let done = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&done);
    let thread = std::thread::Builder::new()
        .name("anduin-progress".into())
        .spawn(move || {
            let mut last: Option<(Instant, u64, u64)> = None;
            while !flag.load(Ordering::SeqCst) {
                let (info, metrics) = (control.info(), control.metrics());
                if info.state == QueryState::Starting {
                    // Nothing runs yet (and the API line is still to come).
                    std::thread::sleep(EVERY / 5);
                    continue;
                }
                let (rows_in, rows_out) = ends(&info, &metrics);
                let now = Instant::now();
                let rates = last.map(|(t, i, o)| {
                    let secs = now.duration_since(t).as_secs_f64().max(1e-3);
                    (
                        rows_in.saturating_sub(i) as f64 / secs,
                        rows_out.saturating_sub(o) as f64 / secs,
                    )
                });
                last = Some((now, rows_in, rows_out));
                bar.set_message(line(&metrics, rows_in, rows_out, rates));
                bar.tick();
                std::thread::sleep(EVERY);
            }
            bar.finish_and_clear();
        })
        .ok()?;
    Some(Progress {
        done,
        thread: Some(thread),
    })
}

/// Rows out of the sources and into the sinks, over every instance.
fn ends(info: &QueryInfo, metrics: &QueryMetrics) -> (u64, u64) {
    let mut rows_in = 0;
    let mut rows_out = 0;
    for m in &metrics.instances {
        let Some(op) = info.operators.iter().find(|o| o.name == m.operator) else {
            continue;
        };
        if op.inputs.is_empty() {
            rows_in += m.rows_out;
        }
        if op.outputs.is_empty() {
            rows_out += m.rows_in;
        }
    }
    (rows_in, rows_out)
}

fn line(metrics: &QueryMetrics, rows_in: u64, rows_out: u64, rates: Option<(f64, f64)>) -> String {
    let (rate_in, rate_out) = rates.unwrap_or((0.0, 0.0));
    let mut text = format!(
        "in {}/s ({}) · out {}/s ({})",
        short(rate_in),
        short(rows_in as f64),
        short(rate_out),
        short(rows_out as f64)
    );
    // The event time every operator has reached: the least watermark forwarded.
    let watermark = metrics
        .instances
        .iter()
        .filter_map(|m| m.watermark_ms)
        .filter(|w| *w != i64::MAX)
        .min();
    if let Some(w) = watermark {
        text.push_str(&format!(" · watermark {}", anduin_types::instant_text(w)));
    }
    if let Some(c) = &metrics.checkpoints {
        match (c.last_epoch, c.last_completed_ms) {
            (Some(epoch), Some(at)) => {
                let age = (now_ms() - at).max(0) / 1000;
                text.push_str(&format!(" · checkpoint {epoch} {age} s ago"));
            }
            _ => text.push_str(" · no checkpoint yet"),
        }
        if c.failed > 0 {
            text.push_str(&format!(" ({} failed)", c.failed));
        }
    }
    text
}

/// `n` with a K, M or G suffix.
fn short(n: f64) -> String {
    match n {
        n if n >= 1e9 => format!("{:.2} G", n / 1e9),
        n if n >= 1e6 => format!("{:.2} M", n / 1e6),
        n if n >= 1e3 => format!("{:.1} K", n / 1e3),
        n => format!("{n:.0}"),
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use anduin_runtime::control::{CheckpointMetrics, InstanceMetrics};

    #[test]
    fn the_line_says_rates_totals_event_time_and_the_last_checkpoint() {
        let metrics = QueryMetrics {
            instances: vec![InstanceMetrics {
                operator: "low".into(),
                watermark_ms: Some(0),
                ..InstanceMetrics::default()
            }],
            checkpoints: Some(CheckpointMetrics {
                last_epoch: Some(3),
                last_completed_ms: Some(now_ms()),
                ..CheckpointMetrics::default()
            }),
            ..QueryMetrics::default()
        };
        let l = line(&metrics, 1_500_000, 2_000, Some((1_200_000.0, 40.0)));
        assert!(
            l.starts_with("in 1.20 M/s (1.50 M) · out 40/s (2.0 K)"),
            "{l}"
        );
        assert!(l.contains("watermark 1970-01-01"), "{l}");
        assert!(l.contains("checkpoint 3 0 s ago"), "{l}");
    }
}
