//! The query's live figures and its checkpoints, as the control plane asks for them.

use super::{Control, Injector, InstanceFigures};
use crate::control::types::{
    CheckpointInfo, ControlFailure, InstanceMetrics, QueryMetrics, QueryState,
};
use crate::protocol::Event;
use crate::stats::Counters;

impl Control {
    /// Takes a checkpoint now (one begun after this call); returns its epoch once it is
    /// complete.
    pub fn checkpoint(&self) -> Result<u64, ControlFailure> {
        let mut inner = self.lock();
        // Not attached to its checkpoints yet, or recovered by another attempt: it may take
        // them then (it did not say so: "runs without checkpoints", probe47).
        if matches!(
            inner.shown_state(),
            QueryState::Starting | QueryState::Recovering
        ) {
            return Err(self.not_running_now(&inner, "it cannot take a checkpoint now"));
        }
        if !inner.checkpointing {
            return Err(ControlFailure::NoCheckpoints {
                query: self.name.clone(),
            });
        }
        if inner.state != QueryState::Running {
            return Err(self.not_running_now(&inner, "it cannot take a checkpoint now"));
        }
        let after = inner.last_started;
        let asked = match &inner.injector {
            Some(Injector::Coordinator(events)) => events.send(Event::WantCheckpoint).is_ok(),
            _ => false,
        };
        if !asked {
            return Err(self.not_running(QueryState::Running, "its checkpoints have ended"));
        }
        loop {
            if let Some((epoch, outcome)) = inner.checkpoints_ended.range(after + 1..).next() {
                return match outcome {
                    Ok(()) => Ok(*epoch),
                    Err(reason) => Err(ControlFailure::CheckpointFailed {
                        query: self.name.clone(),
                        epoch: *epoch,
                        reason: reason.clone(),
                    }),
                };
            }
            if inner.state.ended() {
                let state = inner.state;
                return Err(self.not_running(state, "it ended before the checkpoint completed"));
            }
            inner = self
                .changed
                .wait(inner)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    /// The complete checkpoints in the query's checkpoint directory, oldest first.
    pub fn checkpoints(&self) -> Result<Vec<CheckpointInfo>, ControlFailure> {
        let dir = {
            let inner = self.lock();
            if !inner.checkpointing {
                return Err(ControlFailure::NoCheckpoints {
                    query: self.name.clone(),
                });
            }
            inner.probe.as_ref().and_then(|p| p.checkpoint_dir.clone())
        };
        let Some(dir) = dir else {
            return Ok(Vec::new());
        };
        let listing = anduin_checkpoint::Store::open(&dir)
            .and_then(|s| s.list())
            .map_err(|e| {
                self.not_running(
                    QueryState::Running,
                    &format!("its checkpoints cannot be listed: {e}"),
                )
            })?;
        Ok(listing
            .into_iter()
            .filter(|l| l.status == anduin_checkpoint::CheckpointStatus::Complete)
            .map(|l| CheckpointInfo {
                epoch: l.epoch.0,
                time_ms: l.modified.map_or(0, system_ms),
                finished: l.finished,
                size_bytes: l.size,
            })
            .collect())
    }

    /// Every live figure, now.
    pub fn metrics(&self) -> QueryMetrics {
        let inner = self.lock();
        let Some(probe) = &inner.probe else {
            return QueryMetrics {
                control_changes: inner.history.total(),
                ..QueryMetrics::default()
            };
        };
        let checkpoints = probe.checkpoints.as_ref().map(|c| {
            let mut live = c.live();
            live.recent = inner.timeline.iter().cloned().collect();
            live
        });
        let control_changes = inner.history.total();
        match &probe.instances {
            InstanceFigures::Here {
                counters,
                dead_letter,
            } => QueryMetrics {
                instances: counters
                    .iter()
                    .map(|(operator, instance, source, c)| {
                        instance_metrics(operator, *instance, *source, c)
                    })
                    .collect(),
                checkpoints,
                control_changes,
                dead_letters: dead_letter.count(),
                dead_letters_by_operator: dead_letter.by_operator(),
                recent_rejects: dead_letter.recent(),
                not_gathered: None,
            },
            InstanceFigures::Gathered(gather) => QueryMetrics {
                checkpoints,
                control_changes,
                ..merge(gather())
            },
            InstanceFigures::Elsewhere(why) => QueryMetrics {
                checkpoints,
                control_changes,
                not_gathered: Some(why.clone()),
                ..QueryMetrics::default()
            },
        }
    }
}

/// The figures of several processes' instances as one query's: every instance once (ordered
/// by operator and instance), the dead letters added up, the last rejects of all, oldest first (the last
/// [`anduin_operator_api::RECENT_KEPT`]). Checkpoints and control changes are the caller's.
pub(crate) fn merge(parts: Vec<QueryMetrics>) -> QueryMetrics {
    let mut out = QueryMetrics::default();
    for p in parts {
        out.instances.extend(p.instances);
        out.dead_letters += p.dead_letters;
        for (operator, n) in p.dead_letters_by_operator {
            *out.dead_letters_by_operator.entry(operator).or_default() += n;
        }
        out.recent_rejects.extend(p.recent_rejects);
    }
    out.instances
        .sort_by(|a, b| (&a.operator, a.instance).cmp(&(&b.operator, b.instance)));
    out.recent_rejects.sort_by_key(|r| r.time_ms);
    let extra = out
        .recent_rejects
        .len()
        .saturating_sub(anduin_operator_api::RECENT_KEPT);
    out.recent_rejects.drain(..extra);
    out
}

/// The live figures of one operator instance.
fn instance_metrics(
    operator: &str,
    instance: usize,
    source: bool,
    c: &Counters,
) -> InstanceMetrics {
    use std::sync::atomic::Ordering::Relaxed;
    // What the operator reported at its end, else while running.
    let metric = |name: &str| {
        let at_end = c
            .metrics
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(name)
            .copied();
        at_end.or_else(|| {
            c.live
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .get(name)
                .copied()
        })
    };
    let watermark = c.watermark.load(Relaxed);
    InstanceMetrics {
        operator: operator.to_string(),
        instance,
        rows_in: c.rows_in.load(Relaxed),
        rows_out: c.rows_out.load(Relaxed),
        batches_in: (!source).then(|| c.batches_in.load(Relaxed)),
        busy_ns: (!source).then(|| c.busy_ns.load(Relaxed)),
        blocked_ns: Some(c.blocked_ns.load(Relaxed)),
        queue_len: (!source).then(|| c.queue_len.load(Relaxed)),
        watermark_ms: (watermark != i64::MIN).then_some(watermark),
        // Refreshed as event time advances, and at the end of the input.
        late_rows: metric("late_rows"),
        state_bytes: metric("state_bytes").or_else(|| metric("state_backend_bytes")),
    }
}

fn system_ms(t: std::time::SystemTime) -> i64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::types::RecentReject;

    fn instance(operator: &str, instance: usize, rows: u64) -> InstanceMetrics {
        InstanceMetrics::rows(operator, instance, rows, rows)
    }

    fn reject(time_ms: i64, operator: &str) -> RecentReject {
        RecentReject {
            time_ms,
            operator: operator.into(),
            reason: "bad".into(),
            at: None,
            source: None,
            line: None,
        }
    }

    #[test]
    fn a_checkpoint_asked_of_a_query_starting_or_recovering_says_so_not_that_it_has_none() {
        let control = Control::new("q", None, Default::default(), Box::new(|_, _| Ok(())));
        let starting = control.checkpoint().expect_err("not attached yet");
        assert!(
            matches!(&starting, ControlFailure::NotRunning { state, .. } if state == "starting"),
            "{starting}"
        );
        control.detach_recovering("worker w1 died");
        let recovering = control
            .checkpoint()
            .expect_err("recovered by another attempt");
        assert!(
            matches!(&recovering, ControlFailure::NotRunning { state, .. } if state == "recovering"),
            "{recovering}"
        );
        assert!(
            recovering.to_string().contains("worker w1 died"),
            "{recovering}"
        );
        control.detach(false);
        let finished = control.checkpoint().expect_err("finished");
        assert!(
            matches!(finished, ControlFailure::NoCheckpoints { .. }),
            "a finished run without checkpoints still says it has none: {finished}"
        );
    }

    #[test]
    fn merged_figures_hold_every_instance_once_and_add_up_the_dead_letters() {
        let a = QueryMetrics {
            instances: vec![instance("w", 1, 10), instance("gen", 0, 5)],
            dead_letters: 2,
            dead_letters_by_operator: [("gen".to_string(), 2)].into(),
            recent_rejects: (0..15).map(|t| reject(t * 2, "gen")).collect(),
            ..QueryMetrics::default()
        };
        let b = QueryMetrics {
            instances: vec![instance("w", 0, 7)],
            dead_letters: 3,
            dead_letters_by_operator: [("gen".to_string(), 1), ("w".to_string(), 2)].into(),
            recent_rejects: (0..15).map(|t| reject(t * 2 + 1, "w")).collect(),
            ..QueryMetrics::default()
        };
        let m = merge(vec![a, b]);
        let order: Vec<(&str, usize)> = m
            .instances
            .iter()
            .map(|i| (i.operator.as_str(), i.instance))
            .collect();
        assert_eq!(order, [("gen", 0), ("w", 0), ("w", 1)]);
        assert_eq!(m.dead_letters, 5);
        assert_eq!(m.dead_letters_by_operator["gen"], 3);
        assert_eq!(m.dead_letters_by_operator["w"], 2);
        // The last 20 of 30, oldest first.
        let times: Vec<i64> = m.recent_rejects.iter().map(|r| r.time_ms).collect();
        assert_eq!(times, (10..30).collect::<Vec<i64>>());
        assert_eq!(m.not_gathered, None);
    }
}
