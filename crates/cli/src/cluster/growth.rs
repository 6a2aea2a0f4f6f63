//! Instances added while a query runs on a cluster (`anduin ctl scale` beyond
//! `--max-parallelism`), as the coordinator sees them: where they have room, and the parts
//! started for them on workers that ran nothing of the query.
//!
//! The runtime places each added instance on the least loaded of the workers that run the
//! operator's task or read its output (`anduin_runtime::least_loaded`); each takes a slot there.
//! When those workers' free slots cannot take them all, the rescale also names workers that
//! run nothing of the query and have free slots (its `onto`, [`growth_room`]), and before its
//! barrier is sent the coordinator starts a part of the query on each ([`prepare_parts`]):
//! an executor that runs none of the planned instances, whose address every other executor
//! is told. Nothing there aligns the rescale's barrier, so the coordinator tells such a part
//! every barrier with changes it sends, and the last one ([`barriers_told`]): the part
//! numbers and places what they add as every process does, builds the instances placed on
//! it, and runs until the query's last barrier has passed them (or at once, when none were).
//!
//! A scale-down below the instances added retires them (`anduin_runtime`'s growth): a part
//! whose instances all retired ends ([`ended_alone`]); its worker counts as free for a later
//! growth, which starts another part there (a new incarnation of it), and a worker the
//! scheduler started for them is given back once no query runs a part on it
//! ([`give_back`]).

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anduin_runtime::control::{BarrierSent, Control, Onto, Prepare, Room};
use anduin_runtime::WorkerId;
use anduin_types::ControlUpdate;

use super::coordinator::{Cluster, State};
use super::driver::{current, Attempt};
use super::proto::{ToExecutor, ToWorker};

/// How long a part started for instances added has to report before the rescale is refused.
const REPORT_WITHIN: Duration = Duration::from_secs(30);
/// How long a worker the scheduler started for them has to register.
const REGISTER_WITHIN: Duration = Duration::from_secs(60);

/// Where attempt `number` of query `name` has room for
/// instances added while it runs: on the workers that run the task already or read its
/// output, each taking a slot as a planned instance does (those in use: every query's
/// planned instances where they run now, and the instances added so far); beyond those, on
/// workers that run nothing of the query, with free slots (most free first, then the lowest).
pub(super) fn growth_room(cluster: &Arc<Cluster>, (name, number): (&str, u64)) -> Room {
    let cluster = Arc::clone(cluster);
    let name = name.to_string();
    Arc::new(move |added, on, load| {
        let added_so_far = added_by_worker(&cluster, None);
        // Asked before the cluster's state is locked: the scheduler may be busy starting
        // workers for another rescale (and the coordinator's state must not wait for it).
        let startable = cluster
            .scheduler
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .may_add();
        let state = cluster.lock();
        let used = used_slots(&state, added_so_far);
        let free_of = |w: &u32| {
            // A dead worker has no room.
            state.workers.get(w).filter(|e| e.alive()).map_or(0, |e| {
                usize::try_from(e.slots)
                    .unwrap_or(usize::MAX)
                    .saturating_sub(used.get(w).copied().unwrap_or(0))
            })
        };
        let mut free: BTreeMap<u32, usize> = on.keys().map(|w| (*w, free_of(w))).collect();
        if fitting(added, load, &free) == added {
            return Ok(Onto::default());
        }
        // Workers that run nothing of the query, with room: one more at a time until they fit
        // (a part whose instances all retired runs nothing).
        let busy: BTreeSet<u32> = current(&state, &name, number)
            .map(|a| {
                a.workers
                    .iter()
                    .filter(|w| !ended_alone(a, **w))
                    .map(|w| a.host(*w))
                    .collect()
            })
            .unwrap_or_default();
        let mut idle: Vec<(u32, usize)> = state
            .workers
            .keys()
            .filter(|w| !busy.contains(w) && !on.contains_key(w))
            .map(|w| (*w, free_of(w)))
            .filter(|(_, n)| *n > 0)
            .collect();
        idle.sort_by_key(|(w, n)| (std::cmp::Reverse(*n), *w));
        let mut onto = Onto::default();
        for (w, n) in idle {
            free.insert(w, n);
            onto.workers.push(w);
            if fitting(added, load, &free) == added {
                return Ok(onto);
            }
        }
        // Then workers the scheduler may start (none yet, each with its slots), numbered
        // after every worker there is.
        if let Some((more, slots)) = startable {
            let slots = usize::try_from(slots).unwrap_or(usize::MAX);
            for i in 0..more {
                free.insert(u32::MAX - i, slots);
                onto.fresh += 1;
                if fitting(added, load, &free) == added {
                    return Ok(onto);
                }
            }
        }
        // With every worker that has room.
        let (fit, full) = placing(added, load, &free);
        let name = |w: &u32| {
            state
                .workers
                .get(w)
                .map_or_else(|| format!("worker id {w}"), |e| e.name.clone())
        };
        let workers: Vec<String> = on.keys().map(name).collect();
        let free_now: Vec<String> = free
            .iter()
            .map(|(w, n)| match state.workers.contains_key(w) {
                true => format!("{} {n}", name(w)),
                false => format!("a worker the scheduler may start {n}"),
            })
            .collect();
        // Free slots left where the next would not go: the least loaded rule, not the
        // slots in all, stops it.
        let spare: usize = free.values().sum::<usize>().saturating_sub(fit);
        let stopped = match full.filter(|_| spare > 0) {
            Some(w) if state.workers.contains_key(&w) => format!(
                "; after {fit} of them, the next would go on {}, the least loaded of them, which has no free slot (an instance never goes to a busier worker, even one with free slots), so give {} more slots (`anduin worker --slots`), scale to at most {}, or add workers",
                name(&w),
                name(&w),
                on.values().sum::<usize>() + fit,
            ),
            _ => format!(
                ": scale to at most {}, give the workers more slots (`anduin worker --slots`), or add workers",
                on.values().sum::<usize>() + fit,
            ),
        };
        Err(format!(
            "the {added} instance(s) it would add go one by one on the least loaded of the workers that run it or read its output ({}), and of those that run nothing of the query, within their free slots ({}){stopped}",
            workers.join(", "),
            free_now.join(", "),
        ))
    })
}

/// The instances every query (but `except`) added while running, by worker: each takes a
/// slot there. Asked of their control planes with the cluster's lock let go (a control
/// plane may take it while it holds its own).
pub(super) fn added_by_worker(cluster: &Cluster, except: Option<&str>) -> BTreeMap<u32, usize> {
    let controls: Vec<Arc<Control>> = {
        let state = cluster.lock();
        state
            .queries
            .iter()
            .filter(|(q, _)| except != Some(q.as_str()))
            .filter_map(|(_, e)| e.attempt.as_ref()?.control.clone())
            .collect()
    };
    let mut added: BTreeMap<u32, usize> = BTreeMap::new();
    for c in controls {
        for (w, n) in c.added_by_worker() {
            *added.entry(w).or_default() += n;
        }
    }
    added
}

/// The slots in use on each worker: every query's planned instances where they run now, and
/// `added`, the instances the queries added so far.
fn used_slots(state: &State, added: BTreeMap<u32, usize>) -> BTreeMap<u32, usize> {
    let mut used = added;
    for a in state.queries.values().filter_map(|q| q.attempt.as_ref()) {
        for part in &a.placement {
            *used.entry(a.host(*part)).or_default() += 1;
        }
    }
    used
}

/// How many of `added` instances fit, placed one by one on the least loaded (by `load`, the
/// query's instances per worker) of the workers of `free` (their free slots), as
/// `Topology::grow` places them (`anduin_runtime::least_loaded`): the first that lands on a
/// worker with no free slot left stops the count.
pub(super) fn fitting(
    added: usize,
    load: &BTreeMap<u32, usize>,
    free: &BTreeMap<u32, usize>,
) -> usize {
    placing(added, load, free).0
}

/// As [`fitting`], with the worker the first that does not fit would land on (full).
fn placing(
    added: usize,
    load: &BTreeMap<u32, usize>,
    free: &BTreeMap<u32, usize>,
) -> (usize, Option<u32>) {
    let candidates: BTreeSet<WorkerId> = free.keys().map(|w| WorkerId(*w)).collect();
    let mut load: BTreeMap<WorkerId, usize> =
        load.iter().map(|(w, n)| (WorkerId(*w), *n)).collect();
    let mut free = free.clone();
    for placed in 0..added {
        let Some(w) = anduin_runtime::least_loaded(&candidates, &load) else {
            return (placed, None);
        };
        match free.get_mut(&w.0) {
            Some(room) if *room > 0 => *room -= 1,
            _ => return (placed, Some(w.0)),
        }
        *load.entry(w).or_default() += 1;
    }
    (added, None)
}

/// Has the scheduler start the fresh workers a rescale needs (waiting for them to register),
/// then starts a part of attempt `number` of query `name` on each of the workers it names
/// that has none yet, and waits until each has reported and been started: then every
/// executor of the attempt knows where it listens, and it has been told the barriers sent so
/// far (see the module's doc).
pub(super) fn prepare_parts(cluster: &Arc<Cluster>, name: &str, number: u64) -> Prepare {
    let cluster = Arc::clone(cluster);
    let name = name.to_string();
    Arc::new(move |onto: &Onto| {
        let _growing = Growing::new(&cluster);
        let mut onto_workers = onto.workers.clone();
        if onto.fresh > 0 {
            onto_workers.extend(start_workers(&cluster, onto.fresh)?);
        }
        let mut deployed = Vec::new();
        let prepared = deploy_parts(&cluster, (&name, number), &onto_workers, &mut deployed);
        if prepared.is_err() {
            // The rescale is refused: the parts started for it are no part of the query.
            forget_parts(&cluster, (&name, number), &deployed);
        }
        prepared.map(|()| onto_workers)
    })
}

/// Deploys a part of attempt `number` of query `name` on each of `onto` that has none
/// (noting them in `deployed`), waits until each has reported, and starts them.
fn deploy_parts(
    cluster: &Cluster,
    (name, number): (&str, u64),
    onto: &[u32],
    deployed: &mut Vec<u32>,
) -> Result<(), String> {
    let mut state = cluster.lock();
    for w in onto {
        let Some(to) = state
            .workers
            .get(w)
            .filter(|e| e.alive())
            .map(|e| e.to.clone())
        else {
            return Err(format!("worker id {w} is not there any more"));
        };
        let a = current_mut(&mut state, name, number).ok_or("the attempt is over")?;
        if a.workers.contains(w) && !ended_alone(a, *w) {
            continue;
        }
        if a.workers.contains(w) {
            again(a, *w);
        }
        let mut d = a
            .template
            .clone()
            .ok_or("this coordinator took the running attempt over from another, and starting a part of it on another worker is not supported yet (it is once the query is rolled back or resubmitted)")?;
        d.worker = *w;
        d.alone = true;
        d.incarnation = a.incarnation(*w);
        let Some(to) = to else {
            return Err(format!("worker id {w} is not connected"));
        };
        a.workers.insert(*w);
        a.alone.insert(*w);
        deployed.push(*w);
        let _ = to.send(&ToWorker::Deploy(Box::new(d)));
        tracing::info!(query = %name, attempt = number, worker = w, "started a part for instances added while running");
    }
    let deadline = Instant::now() + REPORT_WITHIN;
    loop {
        let a = current(&state, name, number).ok_or("the attempt is over")?;
        for w in onto {
            if let Some(Some(why)) = a.ended.get(w) {
                return Err(format!("its part on worker id {w} failed: {why}"));
            }
            if !state.workers.get(w).is_some_and(|e| e.alive()) {
                return Err(format!("worker id {w} was lost while its part started"));
            }
        }
        if onto.iter().all(|w| a.executors.contains_key(w)) {
            break;
        }
        if Instant::now() > deadline {
            return Err(format!(
                "the parts started on worker ids {onto:?} did not report within {REPORT_WITHIN:?}"
            ));
        }
        state = cluster.wait(state, Duration::from_millis(100));
    }
    let a = current_mut(&mut state, name, number).ok_or("the attempt is over")?;
    start_parts(a, onto);
    Ok(())
}

/// Whether `part` of attempt `a` ran only instances added while running and has ended well
/// (a scale-down retired them all): it runs nothing, and its worker is free.
pub(super) fn ended_alone(a: &Attempt, part: u32) -> bool {
    a.alone.contains(&part) && matches!(a.ended.get(&part), Some(None))
}

/// Part `part` of `a`, which ran only instances added and ended, is started again for a later
/// growth: a new incarnation of it (its old executor, which may still wait to exit, is cut
/// off and turned away as stale when it reports again), told the barriers from the first.
fn again(a: &mut Attempt, part: u32) {
    if let Some((old, _)) = a.executors.remove(&part) {
        old.close();
    }
    a.ended.remove(&part);
    a.exiting.remove(&part);
    a.ending.remove(&part);
    a.alone_started.remove(&part);
    a.unstarted.remove(&part);
    a.heard.remove(&part);
    a.figures
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .remove(&part);
    *a.incarnations.entry(part).or_insert(0) += 1;
}

/// A growth preparing its parts: counted in [`Cluster::growing`] while it lives.
struct Growing<'a>(&'a Cluster);

impl<'a> Growing<'a> {
    fn new(cluster: &'a Cluster) -> Self {
        cluster
            .growing
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Self(cluster)
    }
}

impl Drop for Growing<'_> {
    fn drop(&mut self) {
        self.0
            .growing
            .fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Gives back the worker `scheduler` started last for instances added while queries run,
/// once nothing runs on it: every part there ran only instances added, which a scale-down
/// retired (each has ended and been let exit), or none is there while no growth prepares
/// parts and every query that is not over runs an attempt (one restarted or rolled back may
/// have been planned over it: then it runs a part, and stays). Those parts are forgotten (a
/// later growth there would start another), and the scheduler stops the worker.
pub(super) fn give_back(cluster: &Cluster, scheduler: &mut dyn super::scheduler::Scheduler) {
    let Some(last) = scheduler.last_added() else {
        return;
    };
    if cluster.growing.load(std::sync::atomic::Ordering::SeqCst) > 0 {
        return;
    }
    let mut state = cluster.lock();
    let Some(id) = state
        .workers
        .iter()
        .find(|(_, e)| e.name == last && e.alive())
        .map(|(id, _)| *id)
    else {
        return;
    };
    let mut parts: Vec<(String, u32)> = Vec::new();
    for (name, q) in &state.queries {
        let Some(a) = q.attempt.as_ref() else {
            continue;
        };
        for part in a.workers.iter().filter(|p| a.host(**p) == id) {
            if !ended_alone(a, *part) || a.exiting.contains_key(part) {
                return;
            }
            parts.push((name.clone(), *part));
        }
    }
    // Between two attempts of a query, the next may be planned over it.
    let between = state
        .queries
        .values()
        .any(|q| !q.status.is_over() && q.attempt.is_none());
    if parts.is_empty() && between {
        return;
    }
    for (name, part) in &parts {
        if let Some(a) = state.queries.get_mut(name).and_then(|q| q.attempt.as_mut()) {
            a.workers.remove(part);
            a.alone.remove(part);
            again(a, *part);
            a.alone_started.remove(part);
        }
    }
    drop(state);
    match scheduler.release(&last) {
        Ok(()) => {
            tracing::info!(worker = %last, "gave back a worker started for instances added while running")
        }
        Err(why) => {
            tracing::warn!(worker = %last, %why, "cannot give back a worker; tried again later")
        }
    }
}

/// The parts `parts` of attempt `number` of query `name`, started for a rescale that was
/// refused, are no part of it any more: their executors are turned away (cancelled on
/// their workers, refused if they report later; their end, a kill, is of an incarnation
/// gone, so that a later growth there starts a new one).
fn forget_parts(cluster: &Cluster, (name, number): (&str, u64), parts: &[u32]) {
    let mut state = cluster.lock();
    if let Some(a) = current_mut(&mut state, name, number) {
        for w in parts {
            *a.incarnations.entry(*w).or_insert(0) += 1;
            a.workers.remove(w);
            a.alone.remove(w);
            a.alone_started.remove(w);
            a.unstarted.remove(w);
            a.ended.remove(w);
            a.heard.remove(w);
            if let Some((to, _)) = a.executors.remove(w) {
                to.close();
            }
        }
    }
    for w in parts {
        if let Some(entry) = state.workers.get(w).filter(|e| e.alive()) {
            entry.send(&ToWorker::Cancel {
                query: name.to_string(),
                attempt: number,
            });
        }
    }
    cluster.changed.notify_all();
}

/// Has the scheduler start `fresh` workers, and waits until they have registered: their
/// numbers.
fn start_workers(cluster: &Cluster, fresh: usize) -> Result<Vec<u32>, String> {
    let more = u32::try_from(fresh).map_err(|_| format!("{fresh} workers"))?;
    let names = cluster
        .scheduler
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .add(more)?;
    eprintln!(
        "anduin: scheduler: starting worker(s) {} for instances added while a query runs",
        names.join(", ")
    );
    let deadline = Instant::now() + REGISTER_WITHIN;
    let mut state = cluster.lock();
    loop {
        let ids: Vec<u32> = names
            .iter()
            .filter_map(|n| {
                state
                    .workers
                    .iter()
                    .find(|(_, e)| e.name == *n && e.alive())
                    .map(|(id, _)| *id)
            })
            .collect();
        if ids.len() == names.len() {
            return Ok(ids);
        }
        if Instant::now() > deadline {
            return Err(format!(
                "the worker(s) {} the scheduler started did not register within {REGISTER_WITHIN:?}",
                names.join(", ")
            ));
        }
        state = cluster.wait(state, Duration::from_millis(100));
    }
}

/// Starts the parts of `onto` that have reported and are not started yet (`Start` with every
/// executor's address, then the barriers sent so far), and tells every other executor where
/// they listen.
fn start_parts(a: &mut Attempt, onto: &[u32]) {
    let addresses: BTreeMap<u32, SocketAddr> = a
        .executors
        .iter()
        .map(|(w, (_, addr))| (*w, *addr))
        .collect();
    for w in onto {
        if !a.alone_started.insert(*w) {
            continue;
        }
        a.unstarted.remove(w);
        let Some((to, address)) = a.executors.get(w) else {
            continue;
        };
        let _ = to.send(&ToExecutor::Start {
            addresses: addresses.clone(),
        });
        let _ = to.send(&ToExecutor::Barriers {
            barriers: a.barriers_sent.clone(),
            last: a.last_sent,
        });
        for (part, (other, _)) in &a.executors {
            if part != w {
                let _ = other.send(&ToExecutor::Redirect {
                    worker: *w,
                    address: *address,
                });
            }
        }
    }
}

/// The executor of part `part`, which runs only instances added while running, reported
/// again (after losing its connection): it is told every barrier sent so far again (what it
/// heard already changes nothing).
pub(super) fn tell_again(a: &Attempt, part: u32) {
    if !a.alone_started.contains(&part) {
        return;
    }
    if let Some((to, _)) = a.executors.get(&part) {
        let _ = to.send(&ToExecutor::Barriers {
            barriers: a.barriers_sent.clone(),
            last: a.last_sent,
        });
    }
}

/// What the checkpoint coordinator of attempt `number` of query `name` tells of every
/// barrier it sends: those with changes, and the last, are kept and told to the parts that
/// run only instances added while running.
pub(super) fn barriers_told(cluster: &Arc<Cluster>, name: &str, number: u64) -> BarrierSent {
    let cluster = Arc::clone(cluster);
    let name = name.to_string();
    Arc::new(
        move |epoch: anduin_types::Epoch, control: &[ControlUpdate], last: bool| {
            if control.is_empty() && !last {
                return;
            }
            let mut state = cluster.lock();
            let Some(a) = current_mut(&mut state, &name, number) else {
                return;
            };
            let told = (!control.is_empty()).then(|| (epoch.0, control.to_vec()));
            a.barriers_sent.extend(told.clone());
            a.last_sent |= last;
            for part in &a.alone_started {
                if let Some((to, _)) = a.executors.get(part) {
                    let _ = to.send(&ToExecutor::Barriers {
                        barriers: told.iter().cloned().collect(),
                        last,
                    });
                }
            }
        },
    )
}

fn current_mut<'a>(state: &'a mut State, name: &str, number: u64) -> Option<&'a mut Attempt> {
    state
        .queries
        .get_mut(name)?
        .attempt
        .as_mut()
        .filter(|a| a.number == number)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn added_instances_fit_as_they_are_placed_not_as_the_free_slots_add_up() {
        // Worker 1 runs 3 of the query's instances with 6 free slots, worker 2 runs 3 with 2
        // free: the least loaded takes each (ties to the lowest id), so worker 2 gets the
        // second and the fourth, and the sixth would land on it full: 5 fit, although 8
        // slots are free in all.
        let load = BTreeMap::from([(1, 3), (2, 3), (3, 9)]);
        let free = BTreeMap::from([(1, 6), (2, 2)]);
        assert_eq!(fitting(4, &load, &free), 4);
        assert_eq!(fitting(5, &load, &free), 5);
        assert_eq!(fitting(6, &load, &free), 5);
        assert_eq!(fitting(8, &load, &free), 5);
        // Ties go to the lowest id: one free slot on worker 1 only takes the first.
        assert_eq!(fitting(2, &load, &BTreeMap::from([(1, 1), (2, 0)])), 1);
        assert_eq!(fitting(1, &load, &BTreeMap::from([(1, 0), (2, 5)])), 0);
        assert_eq!(fitting(3, &load, &BTreeMap::new()), 0);
    }
    #[test]
    fn instances_fit_as_the_runtime_places_them_one_by_one_on_the_least_loaded() {
        // Worker 1 runs 3 instances of the query, worker 2 one: the first two added go to 2.
        let load = BTreeMap::from([(1, 3), (2, 1)]);
        let free = BTreeMap::from([(1, 5), (2, 1)]);
        // The second lands on 2 again (2 against 3), which has no slot left.
        assert_eq!(fitting(3, &load, &free), 1);
        // A worker that runs nothing of the query (load 0) takes the first ones.
        let with_idle = BTreeMap::from([(1, 5), (2, 1), (3, 2)]);
        assert_eq!(fitting(3, &load, &with_idle), 3);
        assert_eq!(fitting(5, &load, &with_idle), 3);
        // Worker 2 stops it, full, with 4 slots free on worker 1.
        assert_eq!(placing(3, &load, &free), (1, Some(2)));
        assert_eq!(placing(3, &load, &with_idle), (3, None));
        assert_eq!(placing(5, &load, &with_idle), (3, Some(2)));
    }
}
