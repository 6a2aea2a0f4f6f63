//! `anduin run --events FILE`: the run's engine events as JSON lines (one object per line,
//! `{"event":"checkpoint_completed","epoch":3,"finished":false}`), each written out as it
//! happens, for scripts and tests that wait for a checkpoint. `--events -` writes them to
//! stderr.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

use anduin_runtime::{EngineEvent, Events, Subscriber};
use anyhow::{Context, Result};

/// Writes each event as a JSON line.
struct JsonLines(Mutex<Box<dyn Write + Send>>);

impl Subscriber for JsonLines {
    fn event(&self, event: &EngineEvent) {
        let Ok(line) = serde_json::to_string(event) else {
            return;
        };
        if let Ok(mut f) = self.0.lock() {
            if let Err(e) = writeln!(f, "{line}") {
                tracing::warn!(error = %e, "cannot write an event to the events file");
            }
        }
    }
}

/// The run's subscribers: the log, and `path` if given (created or truncated; `-` is
/// stderr, since stdout may carry the query's output).
pub fn events(path: Option<&Path>) -> Result<Events> {
    let events = Events::logged();
    let Some(path) = path else {
        return Ok(events);
    };
    let out: Box<dyn Write + Send> = if path == Path::new("-") {
        Box::new(std::io::stderr())
    } else {
        Box::new(
            File::create(path)
                .with_context(|| format!("cannot create the events file `{}`", path.display()))?,
        )
    };
    Ok(events.with(Arc::new(JsonLines(Mutex::new(out)))))
}
