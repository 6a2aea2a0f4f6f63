//! Running task instances on threads, and waiting for them: each instance on a thread of its
//! own, publishing when it starts, finishes or fails; the run's outcome is its first real
//! error (a panic before anything else, then the error that happened first, a consequence of
//! another task's failure only when nothing else failed).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use crate::error::{RuntimeError, TaskError, TaskFailure};
use crate::events::{EngineEvent, Events};
use crate::instantiate::{ReadyTask, Task};
use crate::protocol::Event;
use crate::topology::InstanceRef;

/// The stack of a task's thread: room for expressions a few hundred levels deep to evaluate in
/// place (deeper ones get a larger stack for the call: `anduin_spec::nesting::with_stack`).
/// Reserved, not used: the pages a thread does not touch cost no memory.
const TASK_STACK: usize = 16 << 20;

/// A task instance running on its thread, which returns whether the run was stopped (or the
/// instance's error) and when the instance ended.
pub(crate) struct Running {
    id: usize,
    at: InstanceRef,
    name: String,
    /// A replica behind a stream selector: its failure is not the run's.
    replica: bool,
    handle: JoinHandle<(Result<bool, TaskError>, Instant)>,
}

/// Starts every task instance on a thread of its own. The first that fails for a reason of
/// its own sets `abort`, which stops the sources.
pub(crate) fn spawn_tasks(
    tasks: Vec<ReadyTask>,
    events: &Events,
    abort: &Arc<AtomicBool>,
) -> Result<Vec<Running>, RuntimeError> {
    let mut running = Vec::with_capacity(tasks.len());
    for ready in tasks {
        let id = ready.id;
        running.push(
            spawn_one(ready, events, abort)
                .map_err(|cause| RuntimeError::Spawn { task: id, cause })?,
        );
    }
    Ok(running)
}

/// Starts one task instance on a thread of its own (one of the run's, or one split off a
/// running task: see `crate::pipelining`).
pub(crate) fn spawn_one(
    ready: ReadyTask,
    events: &Events,
    abort: &Arc<AtomicBool>,
) -> std::io::Result<Running> {
    let (id, at, name, replica) = (ready.id, ready.at, ready.name.clone(), ready.replica);
    let abort = Arc::clone(abort);
    let events = events.clone();
    let handle = std::thread::Builder::new()
        .name(format!("anduin-task-{id}"))
        .stack_size(TASK_STACK)
        .spawn(move || run_task(ready, &events, &abort))?;
    Ok(Running {
        id,
        at,
        name,
        replica,
        handle,
    })
}

/// A thread that ends at once with `cause`, the failure of instance `at` (number `id`,
/// `name`) before it could start (an instance added while running that could not be built
/// where nothing else ran): the run fails with it as with an instance's own failure.
pub(crate) fn failed(
    (id, at, name): (usize, InstanceRef, String),
    cause: TaskFailure,
    events: &Events,
    abort: &Arc<AtomicBool>,
) -> std::io::Result<Running> {
    abort.store(true, Ordering::Relaxed);
    let error = TaskError::new(id, at, name.clone(), cause);
    events.publish(EngineEvent::TaskFailed {
        task: id,
        name: name.clone(),
        error: error.to_string(),
        own: true,
    });
    let handle = std::thread::Builder::new()
        .name(format!("anduin-task-{id}"))
        .spawn(move || (Err(error), Instant::now()))?;
    Ok(Running {
        id,
        at,
        name,
        replica: false,
        handle,
    })
}

/// The body of a task instance's thread.
fn run_task(
    ready: ReadyTask,
    events: &Events,
    abort: &AtomicBool,
) -> (Result<bool, TaskError>, Instant) {
    let ReadyTask {
        id,
        at,
        name,
        replica,
        lost,
        task,
    } = ready;
    events.publish(EngineEvent::TaskStarted {
        task: id,
        name: name.clone(),
    });
    let result = match task {
        Task::Source(s) => s.run(),
        Task::Operator(o) => o.run(),
    };
    let result = match result {
        Ok(stopped) => {
            events.publish(EngineEvent::TaskFinished { task: id, name });
            Ok(stopped)
        }
        Err(cause) => {
            // A replica's failure is the stream selector's to handle: the run goes on.
            let own = !cause.is_secondary() && !replica;
            if own {
                abort.store(true, Ordering::Relaxed);
            }
            if let Some(lost) = lost {
                // The coordinator may be gone already (the run ended): nothing waits then.
                let _ = lost.send(Event::ReplicaLost { task: id });
            }
            let error = TaskError::new(id, at, name, cause);
            events.publish(EngineEvent::TaskFailed {
                task: id,
                name: error.name.clone(),
                error: error.to_string(),
                own,
            });
            Err(error)
        }
    };
    (result, Instant::now())
}

/// Starts a thread of the runtime itself (the coordinator, the committer).
pub(crate) fn spawn_helper(
    thread: &'static str,
    f: impl FnOnce() + Send + 'static,
) -> Result<JoinHandle<()>, RuntimeError> {
    std::thread::Builder::new()
        .name(thread.to_string())
        .spawn(f)
        .map_err(|cause| RuntimeError::SpawnHelper { thread, cause })
}

/// Waits for every task instance, and for those `more` gives once they have ended (the tasks
/// split off running ones: every split happens in a running task, so once they have all
/// ended, `more` has them all); returns whether the run was stopped, or its first real error.
pub(crate) fn join_tasks(
    running: Vec<Running>,
    mut more: impl FnMut() -> Vec<Running>,
) -> Result<bool, RuntimeError> {
    let mut first_error: Option<(Instant, TaskError)> = None;
    let mut secondary: Option<TaskError> = None;
    let mut panicked: Option<TaskError> = None;
    let mut replica_error: Option<(Instant, TaskError)> = None;
    let mut stopped = false;
    let mut running: std::collections::VecDeque<Running> = running.into();
    loop {
        let Some(r) = running.pop_front().or_else(|| {
            running.extend(more());
            running.pop_front()
        }) else {
            break;
        };
        match r.handle.join() {
            Ok((Ok(s), _)) => stopped |= s,
            // Its stream selector went on with another replica (or failed itself, with the
            // run's error, when none was left); its failure was published as an event.
            Ok((Err(e), _)) if r.replica && e.is_secondary() => {}
            Ok((Err(e), at)) if r.replica => {
                if replica_error.as_ref().is_none_or(|(t, _)| at < *t) {
                    replica_error = Some((at, e));
                }
            }
            Ok((Err(e), _)) if e.is_secondary() => {
                secondary.get_or_insert(e);
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
                let cause = TaskFailure::Panicked { message };
                panicked.get_or_insert(TaskError::new(r.id, r.at, r.name, cause));
            }
        }
    }
    // When the run fails anyway (every replica lost, say), a replica's own failure is told
    // too: it is most often the cause. (Not by the order of the threads' ends: a copy's end
    // may come after its selector saw it gone.)
    let first_error = match (&panicked, first_error, replica_error) {
        (None, Some((_, query)), Some((_, copy))) => {
            return Err(RuntimeError::WithCopyLost {
                copy: Box::new(copy),
                query: Box::new(query),
            })
        }
        (_, first_error, _) => first_error,
    };
    match (panicked, first_error, secondary) {
        (Some(e), _, _) | (None, Some((_, e)), _) | (None, None, Some(e)) => {
            Err(RuntimeError::Task(Box::new(e)))
        }
        (None, None, None) => Ok(stopped),
    }
}
