//! Instances beyond `--max-parallelism` as the control plane sees them: which operators can be
//! rescaled beyond the instances that run them (see `crate::grow`), and the instances added.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::Control;
use crate::control::types::{InstancePlacement, TaskPlacement};
use crate::stats::Counters;

/// The most instances an operator can have: one key group each.
pub(crate) const MOST_INSTANCES: usize = anduin_state::DEFAULT_MAX_KEY_GROUPS.get() as usize;

/// Whether `added` more instances fit on the workers that run a task now or read its output
/// (by worker: the task's instances there, planned and added, 0 where it only reads; then
/// the query's instances by worker, from which each added one goes to the least loaded of
/// those workers, and of those `Ok` names): `Ok` says what they need besides (nothing:
/// those suffice); `Err` says why they do not fit.
pub type Room = Arc<
    dyn Fn(usize, &BTreeMap<u32, usize>, &BTreeMap<u32, usize>) -> Result<Onto, String>
        + Send
        + Sync,
>;

/// Where instances a rescale adds need room besides the workers that run the task or read
/// its output.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Onto {
    /// Workers that run nothing of the query yet.
    pub workers: Vec<u32>,
    /// How many workers the cluster's scheduler is to start for them besides.
    pub fresh: usize,
}

impl Onto {
    /// Nothing besides.
    pub fn is_empty(&self) -> bool {
        self.workers.is_empty() && self.fresh == 0
    }
}

/// Told every barrier the checkpoint coordinator sends: its epoch, the changes it carries,
/// and whether it is the query's last (a cluster's coordinator passes it on to the parts
/// that align no barrier: see `crate::grow`'s `Growth::told`).
pub type BarrierSent =
    Arc<dyn Fn(anduin_types::Epoch, &[anduin_types::ControlUpdate], bool) + Send + Sync>;

/// How a run hears the barriers its coordinator sent (see [`Control::told_barriers`]).
pub type Told = Arc<dyn Fn(&[anduin_types::Barrier], bool) + Send + Sync>;

/// The barriers told before the run could hear them, and what hears them once it can.
#[derive(Default)]
pub(crate) struct Telling {
    hear: Option<Told>,
    early: Vec<(Vec<anduin_types::Barrier>, bool)>,
}

/// Makes the workers of an [`Onto`] ready to take instances a rescale adds (a cluster's
/// coordinator has its scheduler start the fresh ones, and starts a part of the query on
/// each that runs none of its planned instances): called before the rescale's barrier is
/// sent. `Ok`: every worker the rescale may place on besides (what its barrier names);
/// `Err` says why they could not be made ready.
pub type Prepare = Arc<dyn Fn(&Onto) -> Result<Vec<u32>, String> + Send + Sync>;

/// Whether a rescalable operator can get more instances while it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Growing {
    /// It can, as long as its task runs these operators (a live split changes them).
    Yes { operators: Vec<String> },
    /// It cannot: why, in words that follow "it cannot get more instances while it runs: ".
    No(String),
}

impl Control {
    /// Says, per rescalable operator, whether it can get instances beyond those that run it
    /// while the query runs.
    pub(crate) fn allow_growth(&self, growing: BTreeMap<String, Growing>) {
        *self
            .growth
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = growing;
    }

    /// Instances added while running go where `room` says they fit (a cluster's coordinator:
    /// the free slots of the workers that run the task).
    pub fn grow_within(&self, room: Room) {
        *self
            .room
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(room);
    }

    /// Workers that run nothing of the query are made ready by `prepare` before a rescale
    /// places instances on them (see [`Prepare`]).
    pub fn prepare_growth_with(&self, prepare: Prepare) {
        *self
            .prepare
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(prepare);
    }

    /// Every barrier sent from now on is told to `told` (see [`BarrierSent`]).
    pub fn tell_barriers_to(&self, told: BarrierSent) {
        *self
            .barriers_told
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(told);
    }

    /// The checkpoint coordinator sent barrier `epoch` carrying `control` (the last: `last`).
    pub(crate) fn barrier_sent(
        &self,
        epoch: anduin_types::Epoch,
        control: &[anduin_types::ControlUpdate],
        last: bool,
    ) {
        let told = self
            .barriers_told
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        if let Some(told) = told {
            told(epoch, control, last);
        }
    }

    /// A cluster's executor: the coordinator sent `barriers` (those with changes since the
    /// last told, in order; `last`: the query's last is among them). The run hears them
    /// (building the instances placed on a part where nothing aligns them), once it can.
    pub fn told_barriers(&self, barriers: Vec<anduin_types::Barrier>, last: bool) {
        let mut telling = self
            .telling
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Heard under the lock, so that they are heard in the order told.
        match telling.hear.clone() {
            Some(hear) => hear(&barriers, last),
            None => telling.early.push((barriers, last)),
        }
    }

    /// The run hears the barriers told from now on with `hear` (those told before, at once).
    pub(crate) fn hear_barriers_with(&self, hear: Told) {
        let mut telling = self
            .telling
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        telling.hear = Some(Arc::clone(&hear));
        for (barriers, last) in std::mem::take(&mut telling.early) {
            hear(&barriers, last);
        }
    }

    /// Makes `onto` ready to take instances (see [`Prepare`]); without a way to, refuses.
    pub(crate) fn prepare_onto(&self, onto: &Onto) -> Result<Vec<u32>, String> {
        if onto.is_empty() {
            return Ok(Vec::new());
        }
        let prepare = self
            .prepare
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        match prepare {
            Some(prepare) => prepare(onto),
            None => Err("no worker that runs nothing of the query can be started here".into()),
        }
    }

    /// From now on no operator grows while the query runs, for `why` (a cluster's attempt
    /// that lost a part: instances are not added beside parts restored alone).
    pub fn stop_growing(&self, why: &str) {
        let mut stopped = Vec::new();
        {
            let mut growth = self
                .growth
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            for (operator, g) in growth.iter_mut() {
                if matches!(g, Growing::Yes { .. }) {
                    *g = Growing::No(why.to_string());
                    stopped.push(operator.clone());
                }
            }
        }
        // `ctl params` no longer says they grow.
        let mut inner = self.lock();
        for operator in stopped {
            let Some(max) = inner
                .operators
                .iter()
                .find(|o| o.name == operator)
                .and_then(|o| o.max_parallelism)
            else {
                continue;
            };
            let param = inner.params.get_mut(&operator).and_then(|ps| {
                ps.iter_mut()
                    .find(|p| p.name == crate::rescale::PARALLELISM)
            });
            if let Some(p) = param {
                p.doc = parallelism_doc(false, max);
            }
        }
    }

    /// Whether `operator` can grow to `to` instances now: `Err` says why not (to follow "it
    /// cannot get more instances while it runs: "), `None` when nothing was said of it;
    /// `Ok`: the workers that run nothing of the query it needs (see [`Room`]).
    pub(crate) fn may_grow(&self, operator: &str, to: usize) -> Option<Result<Onto, String>> {
        let growing = self
            .growth
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(operator)
            .cloned()?;
        let operators = match growing {
            Growing::No(why) => return Some(Err(why)),
            Growing::Yes { operators } => operators,
        };
        if to > MOST_INSTANCES {
            return Some(Err(format!(
                "{to} instances cannot share its {MOST_INSTANCES} key groups (one each at most)"
            )));
        }
        let inner = self.lock();
        let task = inner
            .operators
            .iter()
            .find(|o| o.name == operator)
            .map(|o| o.task);
        let same = inner
            .tasks
            .iter()
            .find(|t| Some(t.id) == task)
            .is_some_and(|t| t.operators == operators);
        if !same {
            return Some(Err("its task was split while running (`pipeline = \"split\"`); growing a split task is not supported yet".into()));
        }
        // Where the task runs now, by worker, and how many instances it would add; the
        // workers that run the tasks it feeds may take some too.
        let mut on: BTreeMap<u32, usize> = BTreeMap::new();
        let readers: Vec<usize> = inner
            .topology
            .exchanges
            .iter()
            .filter(|e| Some(e.from_task) == task)
            .map(|e| e.to_task)
            .collect();
        for i in inner
            .topology
            .tasks
            .iter()
            .filter(|t| readers.contains(&t.id))
            .flat_map(|t| t.instances.iter())
        {
            on.entry(i.worker).or_default();
        }
        for i in inner
            .topology
            .tasks
            .iter()
            .filter(|t| Some(t.id) == task)
            .flat_map(|t| t.instances.iter())
        {
            *on.entry(i.worker).or_default() += 1;
        }
        // The query's instances by worker: each added one goes to the least loaded worker
        // that runs or reads the task (`Topology::grow`).
        let mut load: BTreeMap<u32, usize> = BTreeMap::new();
        for i in inner.topology.tasks.iter().flat_map(|t| t.instances.iter()) {
            *load.entry(i.worker).or_default() += 1;
        }
        drop(inner);
        let added = to.saturating_sub(on.values().sum());
        let room = self
            .room
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        Some(match room {
            Some(room) if added > 0 => room(added, &on, &load),
            _ => Ok(Onto::default()),
        })
    }

    /// Whether `operator` can grow at all while it runs (as the run started, or until a lost
    /// part stopped it).
    pub(crate) fn grows_at_all(&self, operator: &str) -> bool {
        matches!(
            self.growth
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .get(operator),
            Some(Growing::Yes { .. })
        )
    }

    /// The most instances `operator`, run by `from` now, can grow to now, at most `to` (the
    /// autoscaler asks for what fits rather than a rescale the room refuses): `Err` says why
    /// not even `from + 1` fit; `Ok(to)` when nothing was said of its growth (the rescale
    /// then says why it is refused).
    pub(crate) fn most_that_fit(
        &self,
        operator: &str,
        from: usize,
        to: usize,
    ) -> Result<usize, String> {
        let mut why = None;
        for n in (from.saturating_add(1)..=to).rev() {
            match self.may_grow(operator, n) {
                Some(Ok(_)) => return Ok(n),
                None => return Ok(to),
                Some(Err(e)) => {
                    why.get_or_insert(e);
                }
            }
        }
        why.map_or(Ok(to), Err)
    }

    /// How many instances were added while the query runs, by worker.
    pub fn added_by_worker(&self) -> BTreeMap<u32, usize> {
        let mut by_worker = BTreeMap::new();
        for i in self
            .lock()
            .topology
            .tasks
            .iter()
            .flat_map(|t| t.instances.iter())
            .filter(|i| i.id >= crate::grow::GROWN_IDS)
        {
            *by_worker.entry(i.worker).or_default() += 1;
        }
        by_worker
    }

    /// Why the run's lost instances cannot be restored alone, if instances were added to a
    /// task while it ran: the restored instances would be planned without them (a cluster
    /// then rolls the query back as a whole).
    pub fn grown(&self) -> Option<String> {
        let inner = self.lock();
        let (task, added) = inner.topology.tasks.iter().find_map(|t| {
            let added = t
                .instances
                .iter()
                .filter(|i| i.id >= crate::grow::GROWN_IDS)
                .count();
            (added > 0).then_some((t, added))
        })?;
        let operator = task.operators.first().map_or("?", String::as_str);
        Some(format!(
            "operator \"{operator}\" got {added} instance(s) beyond those the run started with while it ran, which instances restored alone would not be wired to"
        ))
    }

    /// Instance `instance` (number `id` in the run) of task `task`, running `operators`, was
    /// added on `worker` while the query runs, with `counters` per operator (none where the
    /// figures are gathered from the workers): the listings and the figures show it, the
    /// operators can be rescaled up to it, and a live split of them is refused.
    pub(crate) fn task_grown(
        &self,
        task: usize,
        (instance, id, worker): (usize, usize, crate::topology::WorkerId),
        operators: &[String],
        counters: Vec<(String, Arc<Counters>)>,
    ) {
        self.refuse_pipelining_of(
            operators.to_vec(),
            "its task got instances beyond --max-parallelism while running; splitting it is not supported yet",
        );
        let mut inner = self.lock();
        let instances = instance + 1;
        for t in inner.tasks.iter_mut().filter(|t| t.id == task) {
            t.instances = t.instances.max(instances);
        }
        for o in inner
            .operators
            .iter_mut()
            .filter(|o| operators.contains(&o.name))
        {
            o.parallelism = o.parallelism.max(instances);
            if let Some(max) = o.max_parallelism.as_mut() {
                *max = (*max).max(instances);
            }
        }
        let placement = InstancePlacement {
            instance,
            id,
            worker: worker.0,
        };
        // A worker that ran nothing of the query before is one of its workers now.
        if let Err(at) = inner.topology.workers.binary_search(&worker.0) {
            inner.topology.workers.insert(at, worker.0);
        }
        match inner.topology.tasks.iter_mut().find(|t| t.id == task) {
            Some(t) if !t.instances.iter().any(|i| i.instance == instance) => {
                t.instances.push(placement);
            }
            Some(_) => {}
            None => inner.topology.tasks.push(TaskPlacement {
                id: task,
                operators: operators.to_vec(),
                instances: vec![placement],
            }),
        }
        if let Some(super::Probe {
            instances: super::InstanceFigures::Here { counters: all, .. },
            ..
        }) = inner.probe.as_mut()
        {
            for (name, c) in counters {
                all.push((name, instance, false, c));
            }
        }
    }
}

impl Control {
    /// Instances `retired` (instance, number in the run) of task `task`, running
    /// `operators`, were added while the query runs and retired by a scale-down: the listings
    /// no longer show them, and the operators can be rescaled up to the instances left
    /// without adding any. Once per scale-down or more (the second time changes nothing).
    pub(crate) fn task_retired(
        &self,
        task: usize,
        retired: &[(usize, usize)],
        operators: &[String],
    ) {
        let mut inner = self.lock();
        let Some(t) = inner.topology.tasks.iter_mut().find(|t| t.id == task) else {
            return;
        };
        t.instances
            .retain(|i| !retired.iter().any(|(_, id)| *id == i.id));
        let left = t.instances.len();
        let mut workers: Vec<u32> = inner
            .topology
            .tasks
            .iter()
            .flat_map(|t| t.instances.iter().map(|i| i.worker))
            .collect();
        workers.sort_unstable();
        workers.dedup();
        inner.topology.workers = workers;
        for t in inner.tasks.iter_mut().filter(|t| t.id == task) {
            t.instances = left;
        }
        for o in inner
            .operators
            .iter_mut()
            .filter(|o| operators.contains(&o.name))
        {
            o.parallelism = left;
            if let Some(max) = o.max_parallelism.as_mut() {
                *max = left;
            }
        }
        if let Some(super::Probe {
            instances: super::InstanceFigures::Here { counters: all, .. },
            ..
        }) = inner.probe.as_mut()
        {
            // The figures of the retired instances go with them (a later one may take its number).
            all.retain(|(name, instance, _, _)| {
                !(operators.contains(name) && retired.iter().any(|(j, _)| j == instance))
            });
        }
    }
}

/// What `ctl params` says of the `parallelism` of an operator run by `max` instances, which
/// `grows` beyond them while the query runs or not.
pub(super) fn parallelism_doc(grows: bool, max: usize) -> String {
    if grows {
        format!(
            "how many instances own its key groups; `anduin ctl scale` changes it (1 to \
             {MOST_INSTANCES}) while the query runs, starting instances beyond the {max} it \
             started with"
        )
    } else {
        format!(
            "how many of its {max} instances own its key groups; `anduin ctl scale` changes it \
             (1 to {max}) while the query runs"
        )
    }
}

/// A running query's control plane whose keyed window `w` runs 2 instances (on workers 0 and
/// 1), both owning its key groups, that can grow while running where `room_for` more
/// instances fit; and the events its changes are sent as.
#[cfg(test)]
pub(crate) fn window_control(
    room_for: usize,
) -> (Control, crossbeam_channel::Receiver<crate::protocol::Event>) {
    use crate::control::types::{OperatorInfo, TaskInfo, TopologyInfo};
    let control = Control::new("q", None, BTreeMap::new(), Box::new(|_, _| Ok(())));
    control.allow_growth(BTreeMap::from([(
        "w".to_string(),
        Growing::Yes {
            operators: vec!["w".to_string()],
        },
    )]));
    let (tx, events) = crossbeam_channel::unbounded();
    control.attach(
        vec![OperatorInfo {
            name: "w".into(),
            kind: "window".into(),
            inputs: vec!["in".into()],
            outputs: Vec::new(),
            parallelism: 2,
            task: 0,
            stateful: true,
            adjustable: Vec::new(),
            max_parallelism: Some(2),
            owners: Some(2),
        }],
        vec![TaskInfo {
            id: 0,
            operators: vec!["w".into()],
            instances: 2,
        }],
        TopologyInfo {
            workers: vec![0, 1],
            tasks: vec![TaskPlacement {
                id: 0,
                operators: vec!["w".into()],
                instances: (0..2)
                    .map(|i| InstancePlacement {
                        instance: i,
                        id: i,
                        worker: u32::try_from(i).expect("two workers"),
                    })
                    .collect(),
            }],
            exchanges: Vec::new(),
        },
        super::Injector::Coordinator(tx),
        false,
        Arc::new(std::sync::atomic::AtomicBool::new(false)),
    );
    control.grow_within(Arc::new(move |added, _, _| match added <= room_for {
        true => Ok(Onto::default()),
        false => Err(format!("{added} do not fit, {room_for} do")),
    }));
    (control, events)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::super::{Control, TaskSplit};
    use super::{window_control, Growing};

    #[test]
    fn the_most_instances_that_fit_are_those_the_room_takes_and_none_is_said_why() {
        let (control, _events) = window_control(3);
        assert_eq!(control.most_that_fit("w", 2, 8), Ok(5));
        assert_eq!(control.most_that_fit("w", 2, 4), Ok(4));
        assert_eq!(
            window_control(0).0.most_that_fit("w", 2, 8),
            Err("6 do not fit, 0 do".to_string()),
            "the refusal of the instances asked for"
        );
        // An operator nothing was said of: the rescale says why it is refused.
        assert_eq!(control.most_that_fit("x", 2, 8), Ok(8));
    }

    #[test]
    fn a_rescale_beyond_the_instances_while_another_is_on_its_way_waits_for_it_whatever_room() {
        use crate::control::types::ChangeRequest;
        let request = |to: &str| ChangeRequest {
            operator: "w".into(),
            param: crate::rescale::PARALLELISM.into(),
            value: to.into(),
            from: "test".into(),
        };
        // Room for 2 more: 4 fits, 6 would not.
        let (control, _events) = window_control(2);
        control
            .inject(&request("4"), Vec::new())
            .unwrap_or_else(|e| panic!("the rescale to 4 is sent: {e}"));
        let earlier = control.requested_of("w");
        let refused = control
            .check_rescale(&request("6"), &earlier)
            .expect_err("a rescale beyond is on its way");
        assert!(refused.to_string().contains("is on its way"), "{refused}");
        // With none on its way, the room says why.
        let (control, _events) = window_control(2);
        let refused = control
            .check_rescale(&request("6"), &control.requested_of("w"))
            .expect_err("no room");
        assert!(refused.to_string().contains("4 do not fit"), "{refused}");
    }

    #[test]
    fn an_instance_added_on_a_worker_that_ran_nothing_of_the_query_lists_that_worker() {
        let (control, _events) = window_control(3);
        let id = crate::grow::GROWN_IDS;
        control.task_grown(
            0,
            (2, id, crate::topology::WorkerId(7)),
            &["w".into()],
            Vec::new(),
        );
        control.task_grown(
            0,
            (3, id + 1, crate::topology::WorkerId(1)),
            &["w".into()],
            Vec::new(),
        );
        let topology = control.topology();
        assert_eq!(topology.workers, [0, 1, 7]);
        assert_eq!(topology.tasks[0].instances.len(), 4);
        assert_eq!(control.added_by_worker(), BTreeMap::from([(1, 1), (7, 1)]));
    }

    #[test]
    fn a_split_of_any_task_while_running_stops_every_growth() {
        let control = Control::new("q", None, BTreeMap::new(), Box::new(|_, _| Ok(())));
        control.allow_growth(BTreeMap::from([(
            "w".to_string(),
            Growing::Yes {
                operators: vec!["w".to_string()],
            },
        )]));
        assert!(control.grows_at_all("w"));
        // The writer after the map is split off the map's task, not the window's.
        control.task_split(&TaskSplit {
            from_task: 2,
            from_operator: "m".into(),
            task: 3,
            instance: 0,
            instances: 1,
            id: 9,
            operators: vec!["out".into()],
        });
        assert_eq!(
            control.may_grow("w", 5),
            Some(Err(crate::grow::SPLIT_WHILE_RUNNING.to_string()))
        );
        assert!(!control.grows_at_all("w"));
    }

    #[test]
    fn barriers_told_before_the_run_hears_them_are_heard_first_and_in_order() {
        use std::sync::{Arc, Mutex};

        use anduin_types::{Barrier, Epoch};
        let control = Control::new("q", None, BTreeMap::new(), Box::new(|_, _| Ok(())));
        let told = |e: u64| vec![Barrier::checkpoint(Epoch(e), false)];
        control.told_barriers(told(3), false);
        control.told_barriers(told(5), true);
        let heard: Arc<Mutex<Vec<(u64, bool)>>> = Arc::default();
        let into = Arc::clone(&heard);
        control.hear_barriers_with(Arc::new(move |barriers, last| {
            let mut heard = into.lock().expect("not poisoned");
            heard.extend(barriers.iter().map(|b| (b.epoch.0, last)));
        }));
        control.told_barriers(told(6), false);
        assert_eq!(
            *heard.lock().expect("not poisoned"),
            [(3, false), (5, true), (6, false)]
        );
    }

    #[test]
    fn a_rescale_onto_workers_that_run_nothing_of_the_query_needs_a_way_to_start_parts_there() {
        use super::Onto;
        let control = Control::new("q", None, BTreeMap::new(), Box::new(|_, _| Ok(())));
        let onto = |workers: &[u32], fresh| Onto {
            workers: workers.to_vec(),
            fresh,
        };
        assert_eq!(control.prepare_onto(&Onto::default()), Ok(Vec::new()));
        assert!(
            control.prepare_onto(&onto(&[3], 0)).is_err(),
            "nothing can start a part"
        );
        // A fresh worker the scheduler starts gets the next number.
        control.prepare_growth_with(std::sync::Arc::new(|onto: &Onto| {
            if onto.workers == [3] {
                Ok((3..4 + onto.fresh as u32).collect())
            } else {
                Err(format!("worker {:?} is gone", onto.workers))
            }
        }));
        assert_eq!(control.prepare_onto(&onto(&[3], 0)), Ok(vec![3]));
        assert_eq!(control.prepare_onto(&onto(&[3], 1)), Ok(vec![3, 4]));
        assert_eq!(
            control.prepare_onto(&onto(&[4], 0)),
            Err("worker [4] is gone".to_string())
        );
    }
}
