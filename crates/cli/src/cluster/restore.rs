//! Per-task recovery (the paper's patterns 1–2 with upstream backup): the instances of a dead
//! worker — or of a part whose executor failed or got stuck while its worker lives — are
//! restored on a live worker from the last complete checkpoint, in an executor of their own,
//! while every other instance keeps running. Their producers replay what their checkpoint
//! does not cover from their upstream backups; their consumers drop what they had
//! already received (`anduin_runtime`'s resumable edges). When a restored instance's replay
//! would not be the stream its running consumers had, `anduin_coordinator::choose_recovery`
//! says so and the query rolls back as a whole.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, MutexGuard};
use std::time::{Duration, Instant};

use anduin_coordinator::catalog::Edit;
use anduin_coordinator::life::Input;
use anduin_coordinator::{
    choose_recovery, Constraint, InstanceFacts, QueryId, RecoveryChoice, WorkerId,
};
use anduin_runtime::Event;
use anyhow::{Context, Result};

use super::coordinator::{Cluster, ExitPoint, State};
use super::driver::{
    current, instance_workers, placement_constraints, placement_names, Attempt, Compiled,
};
use super::proto::{Deployment, ToExecutor, ToWorker};

/// How long a restored part's executor has to report.
const RESTORED_WITHIN: Duration = Duration::from_secs(60);
/// How long the checkpoint coordinator has to say which checkpoint lost tasks restore from.
const NOTED_WITHIN: Duration = Duration::from_secs(10);
/// How many times a part whose executor failed (its worker living on) is restored alone
/// within an attempt; a part that keeps failing rolls the whole query back (and, as any
/// failure, counts towards its attempts).
pub(super) const PART_FAILURES_RESTORED: u32 = 3;

/// Why attempt `a` is finishing, so that its `lost` parts cannot be restored alone (the whole
/// query rolls back instead, which is exact), if it is: a source has reported the end of its
/// input (the checkpoint coordinator holds it as ended for good: its last checkpoint, whose
/// barrier ends the sources, would end a restored one where its checkpoint left it); a part
/// other than the lost ones has ended, not failed (it commits everything, and replays
/// nothing; a failed one is restored in its turn); or a part
/// was given leave to end its input (its sinks commit what they hold — a lost one too). A
/// part that ran only instances added while running, all retired by a scale-down, ended
/// without the query finishing: it is left out. `names`: the instances' names, by number.
fn finishing(a: &Attempt, lost: &BTreeSet<u32>, names: &[String]) -> Option<String> {
    let retired = |p: &u32| super::growth::ended_alone(a, *p);
    let ended: BTreeMap<u32, Option<String>> = a
        .ended
        .iter()
        .filter(|(p, _)| !retired(p))
        .map(|(p, e)| (*p, e.clone()))
        .collect();
    let ending: BTreeSet<u32> = a.ending.iter().filter(|p| !retired(p)).copied().collect();
    finishing_of(&a.exhausted, &ended, &ending, lost, names)
}

/// [`finishing`] of the facts it reads: the sources that read all their input, the parts that
/// ended (with their failure), the parts given leave to end.
fn finishing_of(
    exhausted: &BTreeSet<usize>,
    ended: &BTreeMap<u32, Option<String>>,
    ending: &BTreeSet<u32>,
    lost: &BTreeSet<u32>,
    names: &[String],
) -> Option<String> {
    if let Some(i) = exhausted.iter().next() {
        let source = names.get(*i).map_or("a source", String::as_str);
        return Some(format!(
            "{source} had already read all its input: the query is finishing"
        ));
    }
    if let Some(p) = ended
        .iter()
        .find(|(p, failed)| failed.is_none() && !lost.contains(p))
        .map(|(p, _)| p)
    {
        return Some(format!(
            "the part of worker {p} had ended: the query is finishing"
        ));
    }
    if let Some(p) = ending.iter().next() {
        return Some(format!(
            "the part of worker {p} was given leave to end its input: the query is finishing"
        ));
    }
    None
}

/// How long `--inject-hold-restore` holds a restore at most.
const HOLD_WITHIN: Duration = Duration::from_secs(60);

/// Testing (`--inject-hold-restore`): holds the restore of the `lost` parts, the lock let go
/// meanwhile, until a source of attempt `number` has reported the end of its input (or
/// [`HOLD_WITHIN`] has passed).
fn hold<'a>(
    cluster: &'a Cluster,
    mut state: MutexGuard<'a, State>,
    name: &str,
    number: u64,
    lost: &BTreeSet<u32>,
) -> MutexGuard<'a, State> {
    eprintln!(
        "anduin: query {name}: holding the restore of the part(s) {lost:?} until a source reports the end of its input (--inject-hold-restore)"
    );
    let deadline = Instant::now() + HOLD_WITHIN;
    loop {
        let ended = current(&state, name, number).is_none_or(|a| !a.exhausted.is_empty());
        if ended || Instant::now() > deadline {
            break;
        }
        state = cluster.wait(state, Duration::from_millis(50));
    }
    eprintln!("anduin: query {name}: the restore goes on (--inject-hold-restore)");
    state
}

/// Restores the parts of attempt `number` whose worker died, or whose executor failed, on
/// live workers. `Ok(None)`: done, the attempt runs on; `Ok(Some(why))`: per-task recovery
/// does not apply (the query must roll back as a whole).
pub(super) fn restore_part(
    cluster: &Arc<Cluster>,
    name: &str,
    compiled: &Compiled,
    dir: &Path,
    number: u64,
) -> Result<Option<String>> {
    // The plan as submitted: a task split while the query ran is not in it, and need not be.
    // Its instances run in the executors of the instances they split from, fed in process,
    // and feed what those fed: the edges between parts, which decide what a restore replays,
    // are the plan's. A lost part's executor restores them with the rest of the part — from
    // a checkpoint taken after the split, planned from the start with the live split's
    // numbers; from one before, split again when the replayed barrier that carried the change
    // comes (a part with a source rolls the query back instead: see `changed_since` below).
    let topo = compiled.topology();
    let (lost, choice, dead_hosts, failed) = {
        let state = cluster.lock();
        let a = current(&state, name, number).context("the attempt is gone")?;
        let alive = |w: u32| state.workers.get(&w).is_some_and(|e| e.alive());
        // Parts whose executor failed while their worker lives: each is restored a bounded
        // number of times (a part that fails on its data would fail again).
        let failed: BTreeMap<u32, String> = a
            .workers
            .iter()
            .filter(|p| alive(a.host(**p)))
            .filter_map(|p| match (a.ended.get(p), a.stuck.get(p)) {
                (Some(Some(why)), _) => Some((*p, why.clone())),
                (None, Some(stuck)) => Some((*p, stuck.to_string())),
                _ => None,
            })
            .collect();
        if let Some((p, n)) = failed
            .keys()
            .map(|p| (p, a.part_failures.get(p).copied().unwrap_or(0)))
            .find(|(_, n)| *n >= PART_FAILURES_RESTORED)
        {
            return Ok(Some(format!(
                "the part of worker {p} failed {} times in this attempt",
                n + 1
            )));
        }
        let lost: BTreeSet<u32> = a
            .workers
            .iter()
            .copied()
            .filter(|p| !alive(a.host(*p)) || failed.contains_key(p))
            .collect();
        // A part started for instances added while running has nothing planned to restore.
        if let Some(part) = lost.iter().find(|p| a.alone.contains(p)) {
            return Ok(Some(format!("the part on worker id {part} was started for instances added while running (none planned): it is not restored alone")));
        }
        let dead_hosts: BTreeSet<u32> = lost
            .iter()
            .map(|p| a.host(*p))
            .filter(|h| !alive(*h))
            .collect();
        let live: BTreeSet<u32> = state
            .workers
            .iter()
            .filter(|(_, e)| e.alive())
            .map(|(w, _)| *w)
            .collect();
        // The instances of each pattern's copies that spread partial matches, restored only
        // together.
        let graph = &compiled.loaded.graph;
        let chains: Vec<Vec<usize>> = anduin_graph::rewriting::spread_chains(graph)
            .iter()
            .map(|names| {
                topo.instances()
                    .filter(|i| {
                        topo.tasks.get(i.at.task).is_some_and(|t| {
                            t.operators
                                .iter()
                                .any(|n| names.iter().any(|c| c == graph.node(*n).name()))
                        })
                    })
                    .map(|i| i.id)
                    .collect()
            })
            .collect();
        let mut instances = Vec::new();
        for i in topo.instances() {
            let consumers = topo
                .channels
                .iter()
                .filter(|c| c.from == i.at)
                .filter_map(|c| topo.instance(c.to).map(|t| t.id))
                .collect();
            instances.push(InstanceFacts {
                worker: a.placement.get(i.id).copied().unwrap_or(u32::MAX),
                name: i.name.clone(),
                source: topo
                    .tasks
                    .get(i.at.task)
                    .is_some_and(|t| t.source.is_some()),
                inputs: i.inlets.len(),
                consumers,
                ended: a.exhausted.contains(&i.id),
                together: chains
                    .iter()
                    .find(|c| c.contains(&i.id))
                    .map(|c| c.iter().copied().filter(|o| *o != i.id).collect())
                    .unwrap_or_default(),
            });
        }
        let choice = choose_recovery(&instances, &lost, &live);
        (lost, choice, dead_hosts, failed)
    };
    let restore = match choice {
        RecoveryChoice::WholeQuery { why } => return Ok(Some(why)),
        RecoveryChoice::PerTask { restore } => restore,
    };
    {
        let state = cluster.lock();
        let a = current(&state, name, number).context("the attempt is gone")?;
        if let Some(why) = finishing(a, &lost, &compiled.instance_names) {
            return Ok(Some(why));
        }
        // Instances added while running: the restored part would be planned without them.
        if let Some(why) = a.control.as_ref().and_then(|c| c.grown()) {
            return Ok(Some(why));
        }
    }
    // A restore opens the part's sinks, which bring their output back to the checkpoint's:
    // never on the word of a leader a later one superseded.
    cluster.still_leading("restore of a part");
    // The checkpoint coordinator gives up its checkpoint in flight and says which one the lost
    // instances restore from: none completes in between.
    let mut state = cluster.lock();
    let first = restore.iter().next().copied().unwrap_or(0);
    {
        let q = state.queries.get_mut(name).context("the query is gone")?;
        let a = q
            .attempt
            .as_mut()
            .filter(|a| a.number == number)
            .context("the attempt is gone")?;
        a.lost_noted = None;
        if let Some(events) = &a.events {
            let _ = events.send(Event::TasksLost {
                task: first,
                reason: format!("the instances of worker(s) {lost:?} were lost and are restored"),
            });
        }
    }
    let deadline = Instant::now() + NOTED_WITHIN;
    let epoch = loop {
        let a = current(&state, name, number).context("the attempt is gone")?;
        if let Some(noted) = a.lost_noted {
            break noted;
        }
        if Instant::now() > deadline {
            return Ok(Some(format!(
                "the checkpoint coordinator did not answer within {NOTED_WITHIN:?}"
            )));
        }
        state = cluster.wait(state, Duration::from_millis(50));
    };
    if cluster.hold_restore {
        state = hold(cluster, state, name, number, &lost);
    }
    // Asked again, under the lock now held until the lost parts' new incarnations are
    // recorded (from then on, what their old executors send is ignored): while the lock was
    // let go, a lost part that was only slow or paused may have reported the end of its
    // source — which the checkpoint coordinator now holds as ended, so that the barrier of
    // its last checkpoint would end the restored source where its checkpoint left it, the
    // rest of its input never read — or another part may have ended.
    if let Some(why) = finishing(
        current(&state, name, number).context("the attempt is gone")?,
        &lost,
        &compiled.instance_names,
    ) {
        return Ok(Some(why));
    }
    // A live rescale after that checkpoint: the instances that kept running route rows and
    // hold key groups as after it, the restored ones would as before it.
    if let Some(why) = current(&state, name, number)
        .and_then(|a| a.control.as_ref())
        .and_then(|c| c.rescaled_since(epoch.unwrap_or(0)))
    {
        return Ok(Some(format!(
            "{why}: instances restored alone from checkpoint {} would not hold the key groups \
             the running ones expect",
            epoch.unwrap_or(0)
        )));
    }
    // A param change after that checkpoint to an operator restored together with a source:
    // the restored source injects no barrier of before, so the change would not reach the
    // restored instances where it reached them before, and what they send again would differ
    // from what their consumers received.
    let restored_tasks: Vec<_> = topo
        .tasks
        .iter()
        .filter(|t| t.instances.iter().any(|i| restore.contains(&i.id)))
        .collect();
    if restored_tasks.iter().any(|t| t.source.is_some()) {
        let graph = &compiled.loaded.graph;
        let operators: BTreeSet<String> = restored_tasks
            .iter()
            .flat_map(|t| &t.operators)
            .map(|n| graph.node(*n).name().to_string())
            .collect();
        if let Some(why) = current(&state, name, number)
            .and_then(|a| a.control.as_ref())
            .and_then(|c| c.changed_since(epoch.unwrap_or(0), &operators))
        {
            return Ok(Some(format!(
                "{why}: instances restored alone with their source from checkpoint {} would \
                 run without it",
                epoch.unwrap_or(0)
            )));
        }
    }
    // Where each lost part goes: the live worker with the fewest parts of this attempt.
    let a = current(&state, name, number).context("the attempt is gone")?;
    let mut load: BTreeMap<u32, usize> = state
        .workers
        .iter()
        .filter(|(_, e)| e.alive())
        .map(|(w, _)| (*w, 0))
        .collect();
    for p in &a.workers {
        if let Some(n) = load.get_mut(&a.host(*p)) {
            *n += 1;
        }
    }
    // The instances each lost part must stay apart from (the copies of a hot standby, the
    // stages of a split pipeline): their workers are avoided, before the load.
    let constraints = placement_constraints(&topo, &compiled.loaded.graph);
    let mates = |part: u32| -> BTreeSet<usize> {
        let ours: BTreeSet<usize> = a
            .placement
            .iter()
            .enumerate()
            .filter(|(_, w)| **w == part)
            .map(|(i, _)| i)
            .collect();
        let mut mates = BTreeSet::new();
        for c in &constraints {
            let Constraint::DistinctWorkers { tasks, .. } = c else {
                continue;
            };
            let members: BTreeSet<usize> = compiled
                .tasks
                .iter()
                .enumerate()
                .filter(|(_, t)| tasks.contains(t))
                .map(|(i, _)| i)
                .collect();
            if !members.is_disjoint(&ours) {
                mates.extend(members.difference(&ours));
            }
        }
        mates
    };
    let mut hosts = BTreeMap::new();
    for p in &lost {
        // A failed part goes to another worker than the one it failed on, if there is one
        // (its failure may be that worker's: a full disk, a missing credential).
        let failed_on = failed.contains_key(p).then(|| a.host(*p));
        let mates = mates(*p);
        let apart_from = |w: u32| {
            mates
                .iter()
                .filter(|m| {
                    let part = a.placement.get(**m).copied().unwrap_or(u32::MAX);
                    hosts.get(&part).copied().unwrap_or_else(|| a.host(part)) == w
                })
                .count()
        };
        let Some((&host, _)) = load.iter().min_by_key(|(w, n)| {
            (
                Some(**w) == failed_on && load.len() > 1,
                apart_from(**w),
                **n,
                **w,
            )
        }) else {
            return Ok(Some(
                "no worker is left to restore the lost tasks on".into(),
            ));
        };
        *load.entry(host).or_default() += 1;
        hosts.insert(*p, host);
    }
    let placement = a.placement.clone();
    let failed_tasks: Vec<Input> = failed
        .iter()
        .flat_map(|(p, why)| {
            let host = WorkerId(a.host(*p));
            placement
                .iter()
                .zip(&compiled.tasks)
                .filter(move |(part, _)| *part == p)
                .map(move |(_, t)| Input::TaskFailed {
                    task: *t,
                    worker: host,
                    cause: why.clone(),
                })
        })
        .collect();
    for dead in &dead_hosts {
        state.feed(
            name,
            &Input::WorkerDead {
                worker: WorkerId(*dead),
            },
        );
    }
    for input in &failed_tasks {
        state.feed(name, input);
    }
    let placed: BTreeMap<_, _> = restore
        .iter()
        .filter_map(|i| {
            let t = *compiled.tasks.get(*i)?;
            Some((t, WorkerId(hosts.get(placement.get(*i)?).copied()?)))
        })
        .collect();
    // The life must take the restore as planned: a query whose life drifted from what runs
    // (a bug) is rolled back whole rather than left recovering for ever.
    if let Err(refused) = state.try_feed(name, &Input::Placed { placement: placed }) {
        return Ok(Some(format!(
            "the query's life did not take the restored instances' places ({refused})"
        )));
    }
    for (part, host) in &hosts {
        state.record(Edit::PartRestored {
            query: QueryId(name.to_string()),
            part: WorkerId(*part),
            host: WorkerId(*host),
        });
    }
    // The listings (`ctl topology`, the web UI) show the part's instances where they run now.
    if let Some(control) = current(&state, name, number).and_then(|a| a.control.as_ref()) {
        control.instances_moved(|id| placement.get(id).and_then(|p| hosts.get(p)).copied());
    }
    cluster.exit_point(ExitPoint::PartRestored);
    let submission = state
        .queries
        .get(name)
        .map(|q| q.submission.clone())
        .context("the query is gone")?;
    let q = state.queries.get_mut(name).context("the query is gone")?;
    let a = q
        .attempt
        .as_mut()
        .filter(|a| a.number == number)
        .context("the attempt is gone")?;
    // A stuck executor is killed before its part is restored (by its worker, which handles
    // this before any deployment that follows).
    let stuck: Vec<(u32, u32, u64)> = hosts
        .keys()
        .filter(|p| a.stuck.contains_key(p) && !a.ended.contains_key(p))
        .map(|p| (*p, a.host(*p), a.incarnation(*p)))
        .collect();
    for (part, host) in &hosts {
        a.hosts.insert(*part, *host);
        a.stuck.remove(part);
        // The old executor's connection is cut: it may be only paused, and its connection
        // holds the attempt's checkpoint events open (the attempt could not end).
        if let Some((old, _)) = a.executors.remove(part) {
            old.close();
        }
        // Its figures come again from its new executor.
        a.figures
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(part);
        a.ended.remove(part);
        a.fresh.insert(*part);
        *a.incarnations.entry(*part).or_insert(0) += 1;
        if failed.contains_key(part) {
            *a.part_failures.entry(*part).or_insert(0) += 1;
        }
    }
    let incarnations = a.incarnations.clone();
    // The attempt's, as its first deployment had it.
    let lineage = a.template.as_ref().and_then(|t| t.lineage.clone());
    let query_digest = a.template.as_ref().and_then(|t| t.query_digest.clone());
    // A part of a commit-only attempt (see `driver::attempt`) is restored commit-only too:
    // nothing of the query runs again (probe44: its sources were built and read on).
    let commit_only = a.template.as_ref().is_some_and(|t| t.commit_only);
    let running_on: Vec<u32> = a.placement.iter().map(|p| a.host(*p)).collect();
    for (part, on, incarnation) in stuck {
        if let Some(w) = state.workers.get(&on).filter(|e| e.alive()) {
            w.send(&ToWorker::CancelPart {
                query: name.to_string(),
                attempt: number,
                part,
                incarnation,
            });
        }
    }
    let names = placement_names(&state, &running_on);
    let instances = instance_workers(&state, &compiled.instance_names, &running_on);
    if let Some(q) = state.queries.get_mut(name) {
        q.status.placement = names;
        q.status.instances = instances;
    }
    for (part, host) in &hosts {
        let d = Deployment {
            controls: Vec::new(),
            query: name.to_string(),
            attempt: number,
            worker: *part,
            submission: submission.clone(),
            placement: placement.clone(),
            instances: compiled.instance_names.clone(),
            checkpoint_dir: dir.to_path_buf(),
            checkpoint_store: cluster.store.for_executors(name),
            restore: epoch,
            commit_only,
            lineage: lineage.clone(),
            query_digest: query_digest.clone(),
            coordinator: cluster.addr,
            coordinators: None,
            silent_after_ms: None,
            incarnation: incarnations.get(part).copied().unwrap_or(0),
            term: cluster.term,
            alone: false,
        };
        let from = epoch.map_or_else(|| "none (from the beginning)".into(), |e| e.to_string());
        match failed.get(part) {
            Some(why) => eprintln!(
                "anduin: query {name}: the part of worker {part} failed ({why}); restoring its instances on worker {host} from checkpoint {from}; the others run on"
            ),
            None => eprintln!(
                "anduin: query {name}: restoring the instances of worker {part} on worker {host} from checkpoint {from}; the others run on"
            ),
        }
        if let Some(entry) = state.workers.get(host) {
            entry.send(&ToWorker::Deploy(Box::new(d)));
        }
    }
    // Each restored part's executor reports where it listens; then it starts, and every
    // other executor sends to it.
    let deadline = Instant::now() + RESTORED_WITHIN;
    loop {
        let a = current(&state, name, number).context("the attempt is gone")?;
        if let Some((p, Some(why))) = hosts
            .keys()
            .find_map(|p| a.ended.get(p).map(|e| (p, e.clone())))
        {
            return Ok(Some(format!(
                "the restored part of worker {p} failed: {why}"
            )));
        }
        if hosts.keys().all(|p| a.executors.contains_key(p)) {
            break;
        }
        if hosts
            .values()
            .any(|h| !state.workers.get(h).is_some_and(|e| e.alive()))
        {
            // One part: its new host's loss is a new failure, restored as the first was (on
            // another live worker, if any is left; the attempt's loop sees it at once).
            if hosts.len() == 1 {
                eprintln!("anduin: query {name}: the worker chosen to restore the lost part died too; restoring it again");
                return Ok(None);
            }
            return Ok(Some(
                "the worker chosen to restore the lost parts died too".into(),
            ));
        }
        if Instant::now() > deadline {
            return Ok(Some(format!(
                "the restored part did not start within {RESTORED_WITHIN:?}"
            )));
        }
        state = cluster.wait(state, Duration::from_millis(100));
    }
    let a = current(&state, name, number).context("the attempt is gone")?;
    let addresses: BTreeMap<u32, SocketAddr> = a
        .executors
        .iter()
        .map(|(w, (_, addr))| (*w, *addr))
        .collect();
    for (part, (to, _)) in &a.executors {
        if hosts.contains_key(part) {
            let _ = to.send(&ToExecutor::Start {
                addresses: addresses.clone(),
            });
        } else {
            for restored in hosts.keys() {
                if let Some(address) = addresses.get(restored) {
                    let _ = to.send(&ToExecutor::Redirect {
                        worker: *restored,
                        address: *address,
                    });
                }
            }
        }
    }
    // Checkpoints, held since the loss, begin again: their barriers reach the restored
    // instances' new executors.
    if let Some(events) = &a.events {
        let _ = events.send(Event::TasksRestored);
    }
    state.feed(name, &Input::RecoveryDone);
    cluster.changed.notify_all();
    eprintln!(
        "anduin: query {name}: {} instances restored; no other task was restarted",
        restore.len()
    );
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_part_does_not_make_the_query_finishing_an_ended_one_does() {
        let none = BTreeSet::new();
        let lost: BTreeSet<u32> = [1].into();
        let failed: BTreeMap<u32, Option<String>> =
            [(1, Some("boom".into())), (2, Some("boom".into()))].into();
        assert_eq!(
            finishing_of(&none, &failed, &BTreeSet::new(), &lost, &[]),
            None
        );
        let ended: BTreeMap<u32, Option<String>> = [(1, Some("boom".into())), (2, None)].into();
        let why = finishing_of(&none, &ended, &BTreeSet::new(), &lost, &[]).expect("finishing");
        assert!(why.contains("worker 2 had ended"), "{why}");
        // The lost part's own end is not the others'.
        let own: BTreeMap<u32, Option<String>> = [(1, None)].into();
        assert_eq!(
            finishing_of(&none, &own, &BTreeSet::new(), &lost, &[]),
            None
        );
    }
}
