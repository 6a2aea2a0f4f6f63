//! Instances added to a task while the query runs (`crate::grow`), as a topology sees them: a
//! pure function of the topology and the rescale, so that every process of a cluster (the
//! coordinator and each executor) numbers, places and wires them alike without being told.
//!
//! A rescale of task T from `n` instances to `to > n` adds instances `n..to`:
//! - numbered in the run from [`crate::grow::GROWN_IDS`] on, after those added before (the
//!   order in which [`crate::grow::Numbers::reserve`] gives numbers: the changes' order);
//! - each placed on the least-loaded worker among those that run an instance of T or of a
//!   task T feeds, and those the rescale names that run nothing of the query yet (its
//!   `onto`: where the others have no room left; the instances of the run on each, those
//!   added included; ties: the lowest worker), one after the other. There the lowest
//!   instance of T builds it ([`Topology::builder_on`]); on a worker without one, the first
//!   instance of a task T feeds that aligns the barrier does (every one of them aligns it,
//!   after T's instances have passed it on, and before it reads the channels from the new
//!   instance); on a worker with neither, nothing aligns the barrier: its process builds the
//!   instances once the coordinator tells it the barrier ([`Builder::Alone`]);
//! - with channels appended to [`Topology::channels`] in a fixed order: every route into T of
//!   every producer instance (task, instance, route order) to each new instance, then every
//!   new instance's routes (shaped as instance 0's) to each consumer instance. A channel's
//!   handshake names its plan channel and its two instances (an added one by its number in
//!   the run), never its own number.
//!
//! A scale-down below the instances added retires those beyond its owners and the instances
//! the run started with ([`Topology::retire`]): they leave the task, the routes into it and
//! the inlets from them; their channels keep their numbers, reached by nothing, and an
//! instance added later takes a retired one's index with a number of its own.

use std::collections::{BTreeMap, BTreeSet};

use super::{
    Channel, ChannelId, Exchange, Inbound, InstanceRef, Outbound, TaskInstance, Topology, WorkerId,
};
use crate::grow::GROWN_IDS;

/// What a rescale beyond a task's instances added to a topology.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Grown {
    /// The task.
    pub task: usize,
    /// How many instances it had before.
    pub before: usize,
    /// How many of them owned key groups before (a rescale down leaves the others spare).
    pub owners_before: usize,
    /// The instances added, in instance order.
    pub added: Vec<InstanceRef>,
    /// The channels added, in the order of [`Topology::channels`].
    pub channels: Vec<ChannelId>,
}

/// Why a task cannot get instances in the topology.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum GrowRefused {
    #[error("task {0} is not in the plan")]
    NoTask(usize),
    #[error("task {0} has no instance to copy the routes of")]
    NoInstance(usize),
    #[error("task {task} feeds task {to} instance by instance (a chain split while running)")]
    Forward { task: usize, to: usize },
}

impl Topology {
    /// Adds instances to task `task` so that it has `to` (see the module's doc); `None` when
    /// it has as many already.
    #[cfg(test)]
    pub(crate) fn grow(&mut self, task: usize, to: usize) -> Result<Option<Grown>, GrowRefused> {
        self.grow_onto(task, to, &[])
    }

    /// Adds instances to task `task` so that it has `to`, on the workers that run it or read
    /// its output and on `onto` (see the module's doc); `None` when it has as many already.
    pub(crate) fn grow_onto(
        &mut self,
        task: usize,
        to: usize,
        onto: &[u32],
    ) -> Result<Option<Grown>, GrowRefused> {
        let t = self.tasks.get(task).ok_or(GrowRefused::NoTask(task))?;
        let before = t.instances.len();
        if to <= before {
            return Ok(None);
        }
        let template = t
            .instances
            .first()
            .ok_or(GrowRefused::NoInstance(task))?
            .routes
            .clone();
        if let Some(r) = template
            .iter()
            .find(|r| matches!(r.exchange, Exchange::Forward))
        {
            return Err(GrowRefused::Forward {
                task,
                to: r.to_task,
            });
        }
        let owners_before = t.active;
        // The workers that run the task or read its output: each aligns the barrier.
        let readers = self.readers_of(task);
        let candidates: BTreeSet<WorkerId> = t
            .instances
            .iter()
            .chain(
                readers
                    .iter()
                    .filter_map(|r| self.tasks.get(*r))
                    .flat_map(|r| r.instances.iter()),
            )
            .map(|i| i.worker)
            .chain(onto.iter().map(|w| WorkerId(*w)))
            .collect();
        let mut load: BTreeMap<WorkerId, usize> = BTreeMap::new();
        for i in self.instances() {
            *load.entry(i.worker).or_default() += 1;
        }
        let first_id = GROWN_IDS + self.grown;
        self.grown += to - before;
        let name = t.name.clone();
        let mut added = Vec::with_capacity(to - before);
        for (id, j) in (first_id..).zip(before..to) {
            let worker = least_loaded(&candidates, &load).unwrap_or(WorkerId::LOCAL);
            *load.entry(worker).or_default() += 1;
            let at = InstanceRef { task, instance: j };
            self.tasks[task].instances.push(TaskInstance {
                at,
                id,
                name: format!("{name} #{j}"),
                worker,
                routes: Vec::new(),
                inlets: Vec::new(),
            });
            added.push(at);
        }
        self.tasks[task].parallelism = to;
        self.tasks[task].active = to;
        let first = self.channels.len();
        // Into the new instances: every producer's routes into the task.
        let feeding: Vec<(InstanceRef, usize, usize, usize)> = self
            .instances()
            .filter(|i| i.at.task != task)
            .flat_map(|i| {
                i.routes
                    .iter()
                    .enumerate()
                    .filter(|(_, r)| r.to_task == task)
                    .map(move |(k, r)| (i.at, k, r.to_input, r.channels.first().copied()))
            })
            .filter_map(|(from, k, port, c)| Some((from, k, port, self.plan_channel(c?)?)))
            .collect();
        for (from, k, port, plan_channel) in feeding {
            for &to in &added {
                let id = self.push_channel(plan_channel, from, to, port);
                if let Some(route) = self.route_mut(from, k) {
                    route.channels.push(id);
                }
            }
        }
        // Out of the new instances: routes shaped as instance 0's, in its order (a route at the
        // same index as instance 0's: the instances added find theirs so).
        for &from in &added {
            for r in &template {
                let plan_channel = r.channels.first().and_then(|c| self.plan_channel(*c));
                let consumers = match r.exchange {
                    Exchange::Gather => 1,
                    _ => self.tasks.get(r.to_task).map_or(0, |t| t.instances.len()),
                };
                let mut route = Outbound {
                    channels: Vec::with_capacity(consumers),
                    ..r.clone()
                };
                // A route without a plan channel (none) stays empty, at its index.
                if let Some(plan_channel) = plan_channel {
                    for instance in 0..consumers {
                        let to = InstanceRef {
                            task: r.to_task,
                            instance,
                        };
                        route
                            .channels
                            .push(self.push_channel(plan_channel, from, to, r.to_input));
                    }
                }
                if let Some(i) = self.instance_mut(from) {
                    i.routes.push(route);
                }
            }
        }
        Ok(Some(Grown {
            task,
            before,
            owners_before,
            added,
            channels: (first..self.channels.len()).map(ChannelId).collect(),
        }))
    }

    /// Retires instances `keep..` of task `task` (added while running; a scale-down left them
    /// no key group): they leave the task, each route into the task keeps only its channels
    /// to the instances left, and each consumer's inlets lose the channels from them. The
    /// channels stay in [`Topology::channels`] at their numbers. The instances retired, in
    /// instance order.
    pub(crate) fn retire(&mut self, task: usize, keep: usize) -> Vec<InstanceRef> {
        let Some(t) = self.tasks.get_mut(task) else {
            return Vec::new();
        };
        if keep >= t.instances.len() {
            return Vec::new();
        }
        let retired: Vec<InstanceRef> = t.instances.drain(keep..).map(|i| i.at).collect();
        t.parallelism = keep;
        t.active = t.active.clamp(1, keep.max(1));
        for i in self.tasks.iter_mut().flat_map(|t| t.instances.iter_mut()) {
            for r in i.routes.iter_mut().filter(|r| r.to_task == task) {
                r.channels.truncate(keep);
            }
            i.inlets.retain(|inlet| !retired.contains(&inlet.from));
        }
        retired
    }

    /// The instance of task `task` among its first `planned` that builds the instances added
    /// on `worker`: the lowest one that runs there.
    pub(crate) fn builder_on(
        &self,
        task: usize,
        planned: usize,
        worker: WorkerId,
    ) -> Option<InstanceRef> {
        self.tasks
            .get(task)?
            .instances
            .iter()
            .take(planned)
            .find(|i| i.worker == worker)
            .map(|i| i.at)
    }

    /// The tasks that task `task` feeds (through the routes of its instance 0).
    pub(crate) fn readers_of(&self, task: usize) -> BTreeSet<usize> {
        self.tasks
            .get(task)
            .and_then(|t| t.instances.first())
            .map(|i| i.routes.iter().map(|r| r.to_task).collect())
            .unwrap_or_default()
    }

    fn plan_channel(&self, c: ChannelId) -> Option<usize> {
        self.channels.get(c.0).map(|c| c.plan_channel)
    }

    fn push_channel(
        &mut self,
        plan_channel: usize,
        from: InstanceRef,
        to: InstanceRef,
        to_input: usize,
    ) -> ChannelId {
        let id = ChannelId(self.channels.len());
        let number = |at| self.instance(at).map_or(usize::MAX, |i| i.id);
        let ids = (number(from), number(to));
        self.channels.push(Channel {
            id,
            plan_channel,
            from,
            to,
            ids,
            to_input,
        });
        if let Some(i) = self.instance_mut(to) {
            i.inlets.push(Inbound {
                channel: id,
                port: to_input,
                from,
            });
        }
        id
    }

    fn instance_mut(&mut self, at: InstanceRef) -> Option<&mut TaskInstance> {
        self.tasks.get_mut(at.task)?.instances.get_mut(at.instance)
    }

    fn route_mut(&mut self, at: InstanceRef, k: usize) -> Option<&mut Outbound> {
        self.instance_mut(at)?.routes.get_mut(k)
    }
}

/// Who builds the instances added on a worker (see the module's doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Builder {
    /// The task's lowest instance there.
    Instance(InstanceRef),
    /// The first instance there of a task it feeds to align the barrier.
    FirstReader,
    /// None: nothing there aligns the barrier (a worker that ran nothing of the query), and
    /// its process builds them when the coordinator tells it the barrier.
    Alone,
}

impl Grown {
    /// The instances added that the process of `worker` builds, and who builds them there.
    /// `topology` is the one grown.
    pub(crate) fn built_on(
        &self,
        topology: &Topology,
        worker: WorkerId,
    ) -> (Vec<InstanceRef>, Builder) {
        let added: Vec<InstanceRef> = self
            .added
            .iter()
            .filter(|at| topology.worker_of(**at) == worker)
            .copied()
            .collect();
        let readers = topology.readers_of(self.task);
        let reads_here = topology
            .instances()
            .any(|i| i.worker == worker && readers.contains(&i.at.task));
        let builder = match topology.builder_on(self.task, self.before, worker) {
            Some(at) => Builder::Instance(at),
            None if reads_here => Builder::FirstReader,
            None => Builder::Alone,
        };
        (added, builder)
    }

    /// Whether instance `at` running on `worker` builds there the instances added (and which,
    /// when it is the first of the task's readers to ask: the caller makes sure only one
    /// does).
    pub(crate) fn to_build(
        &self,
        topology: &Topology,
        at: InstanceRef,
        worker: WorkerId,
    ) -> Vec<InstanceRef> {
        let (added, builder) = self.built_on(topology, worker);
        let builds = match builder {
            Builder::Instance(b) => b == at,
            Builder::FirstReader => topology.readers_of(self.task).contains(&at.task),
            Builder::Alone => false,
        };
        if builds {
            added
        } else {
            Vec::new()
        }
    }

    /// The instances added on `worker` that nothing there aligns the barrier to build
    /// ([`Builder::Alone`]): its process builds them when told the barrier.
    pub(crate) fn alone_on(&self, topology: &Topology, worker: WorkerId) -> Vec<InstanceRef> {
        match self.built_on(topology, worker) {
            (added, Builder::Alone) => added,
            _ => Vec::new(),
        }
    }
}

/// The worker of `candidates` with the least `load` (the lowest of those tied): where each
/// instance added while running goes, one after the other (a cluster's coordinator asks it
/// too, to check the workers' slots before a growth).
pub fn least_loaded(
    candidates: &BTreeSet<WorkerId>,
    load: &BTreeMap<WorkerId, usize>,
) -> Option<WorkerId> {
    candidates
        .iter()
        .min_by_key(|w| (load.get(w).copied().unwrap_or(0), **w))
        .copied()
}

#[cfg(test)]
mod tests;
