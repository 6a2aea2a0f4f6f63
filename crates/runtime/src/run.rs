//! Starting a query: instantiate every operator, connect the tasks, run them on threads, wait.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anduin_graph::{LogicalGraph, NodeId, PhysicalPlan};
use anduin_operators::{Bound, BuildContext, OperatorError};
use anduin_types::Watermark;
use tracing::{debug, info};

use crate::chain::{Chain, Link};
use crate::channel::{channel, Outlet};
use crate::config::RunConfig;
use crate::error::RuntimeError;
use crate::source_task::SourceTask;
use crate::stats::{Counters, OperatorStats, RunSummary};
use crate::task::{Inlet, OperatorTask};

enum Task {
    Source(SourceTask),
    Operator(OperatorTask),
}

/// Runs `graph` to completion (every source exhausted and every sink flushed), or until
/// `config.stop` is set, or until an operator fails.
///
/// Every operator instance is created before any runs, so that a missing input file or an
/// unwritable output stops the query before it starts.
pub fn run(
    graph: &LogicalGraph<Bound>,
    config: &RunConfig,
    ctx: &BuildContext,
) -> Result<RunSummary, RuntimeError> {
    let started = Instant::now();
    let plan = PhysicalPlan::from_graph(graph, config.chaining);
    info!(
        tasks = plan.tasks.len(),
        channels = plan.channels.len(),
        "starting query"
    );
    let counters: Vec<Arc<Counters>> = graph
        .nodes
        .iter()
        .map(|_| Arc::new(Counters::default()))
        .collect();

    // Channels: outlets are handed to the producing node, receivers to the consuming task.
    let mut outlets: Vec<Vec<Vec<Outlet>>> = graph
        .nodes
        .iter()
        .map(|n| n.outputs.iter().map(|_| Vec::new()).collect())
        .collect();
    let mut inlets: Vec<Vec<Inlet>> = plan.tasks.iter().map(|_| Vec::new()).collect();
    for c in &plan.channels {
        let (tx, rx) = channel(config.channel_capacity);
        let (node, port) = c.from;
        outlets[node.0][port].push(tx);
        inlets[c.to_task].push(Inlet {
            rx,
            port: c.to_input,
            last_seq: 0,
            watermark: Watermark::MIN,
            ended: false,
        });
    }

    let stop = Arc::clone(&config.stop);
    let abort = Arc::new(AtomicBool::new(false));

    // Sources first: a missing input fails before any writer creates (and truncates) a file.
    let mut sources = Vec::new();
    for t in &plan.tasks {
        let head = graph.node(t.chain[0]);
        sources.push(match &head.bound {
            Bound::Source(factory) => Some(factory(ctx).map_err(RuntimeError::Start)?),
            Bound::Operator(_) => None,
        });
    }

    let mut tasks = Vec::new();
    for ((t, task_inlets), source) in plan.tasks.iter().zip(inlets).zip(sources) {
        let task_name = t
            .chain
            .iter()
            .map(|n| graph.node(*n).name())
            .collect::<Vec<_>>()
            .join(" -> ");
        let operators: &[NodeId] = if source.is_some() {
            &t.chain[1..]
        } else {
            &t.chain
        };
        let mut links = Vec::new();
        for &n in operators {
            let node = graph.node(n);
            let Bound::Operator(factory) = &node.bound else {
                return Err(unreachable_source(node.name()));
            };
            let op = factory(ctx).map_err(RuntimeError::Start)?;
            links.push(Link {
                name: node.name().to_string(),
                op,
                outlets: std::mem::take(&mut outlets[n.0]),
                counters: Arc::clone(&counters[n.0]),
            });
        }
        let chain = Chain::new(links);
        let head_id = t.chain[0];
        let task = match source {
            Some(source) => Task::Source(SourceTask {
                name: graph.node(head_id).name().to_string(),
                source,
                counters: Arc::clone(&counters[head_id.0]),
                outlets: std::mem::take(&mut outlets[head_id.0])
                    .into_iter()
                    .flatten()
                    .collect(),
                chain,
                batch_size: config.batch_size.max(1),
                linger: config.linger,
                stop: Arc::clone(&stop),
                abort: Arc::clone(&abort),
            }),
            None => Task::Operator(OperatorTask {
                name: task_name.clone(),
                inlets: task_inlets,
                chain,
            }),
        };
        tasks.push((t.id, task_name, task));
    }

    // Run every task on its own thread.
    let mut handles = Vec::new();
    for (id, name, task) in tasks {
        let abort = Arc::clone(&abort);
        let thread_name = format!("anduin-task-{id}");
        let handle = std::thread::Builder::new()
            .name(thread_name)
            .spawn(move || {
                let result = match task {
                    Task::Source(s) => s.run(),
                    Task::Operator(o) => o.run().map(|()| false),
                };
                if let Err(e) = &result {
                    if !e.is_secondary() {
                        abort.store(true, Ordering::Relaxed);
                    }
                    debug!(task = id, error = %e, "task failed");
                }
                (result, Instant::now())
            })
            .map_err(|cause| RuntimeError::Spawn { task: id, cause })?;
        handles.push((id, name, handle));
    }

    let mut first_error: Option<(Instant, OperatorError)> = None;
    let mut secondary: Option<OperatorError> = None;
    let mut panicked = None;
    let mut stopped = false;
    for (id, name, h) in handles {
        match h.join() {
            Ok((Ok(s), _)) => stopped |= s,
            Ok((Err(e), at)) if e.is_secondary() => {
                secondary.get_or_insert(e);
                let _ = at;
            }
            Ok((Err(e), at)) => {
                if first_error.as_ref().is_none_or(|(t, _)| at < *t) {
                    first_error = Some((at, e));
                }
            }
            Err(p) => {
                let message = p
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".into());
                panicked.get_or_insert(RuntimeError::Panicked {
                    task: id,
                    operators: name,
                    message,
                });
            }
        }
    }
    if let Some(p) = panicked {
        return Err(p);
    }
    if let Some((_, e)) = first_error {
        return Err(RuntimeError::Operator(e));
    }
    if let Some(e) = secondary {
        return Err(RuntimeError::Operator(e));
    }
    let operators = graph
        .topo
        .iter()
        .map(|n| {
            let node = graph.node(*n);
            let c = &counters[n.0];
            OperatorStats {
                name: node.name().to_string(),
                kind: node.kind().to_string(),
                rows_in: c.rows_in.load(Ordering::Relaxed),
                rows_out: c.rows_out.load(Ordering::Relaxed),
            }
        })
        .collect();
    Ok(RunSummary {
        elapsed: started.elapsed(),
        operators,
        stopped,
    })
}

/// A source can only head a task: the planner never fuses one behind another operator.
fn unreachable_source(name: &str) -> RuntimeError {
    RuntimeError::Start(OperatorError::Execution {
        operator: name.to_string(),
        message: "a source was planned inside a chain; this is a bug in anduin's planner".into(),
    })
}
