//! Pipelining while the query runs (the paper's pattern 5, live): `anduin ctl set Q OP
//! pipeline split` (or a run-time rule setting it) splits the fused chain holding `OP` right
//! before `OP`, at the barrier that carries the change.
//!
//! The change rides on a barrier as any param change does. Each instance of the task
//! holding `OP` passes the barrier through its whole chain first (snapshotting every operator
//! for a checkpoint's), then moves the links from `OP` on — the operators, by value, with
//! their in-memory state, outlets and counters — to a new task instance on a thread of its
//! own, fed through a bounded in-process channel from the link before (or from the source at
//! the head). What the link before emits after the barrier goes down that channel in order,
//! so nothing is lost, duplicated or reordered; backpressure reaches the first half as it
//! reaches any producer. An instance says it applied the change once it has split and the
//! task listing shows the new task (not when the barrier passed the operator), so `anduin ctl
//! set` answers "applied" only when `ctl queries` shows the split.
//!
//! Checkpoints: the checkpoint of the splitting barrier is acknowledged by the old task with
//! every operator it held; the new task instance is announced to the coordinator
//! ([`Event::TaskAdded`]) before that acknowledgement, so every later checkpoint waits for
//! it. Its commits come through the task it split from. A run resumed from a checkpoint
//! taken after the split plans the split from the start (the change is in the control history
//! the checkpoint keeps; see `run::restored_splits`).
//!
//! An operator that heads its task already (or a source) is not split: the change is
//! accepted and does nothing. Splitting is one way. Embedded runs and a cluster's executors
//! split (each executor its own instances, the new task in its own process; the control
//! plane refuses the change with --loopback-workers). The new task's number and its
//! instances' are a pure function of the plan and the splits asked so far, in the order of
//! their changes ([`anduin_graph::PhysicalPlan::split_live`]): every executor, the
//! coordinator and a part restored later number them alike. A run resumed from a checkpoint
//! taken after a split plans it with those numbers, and its split instances, as a live
//! split's, get their commits through the instances they split from.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use anduin_checkpoint::CheckpointDir;
use anduin_graph::{LiveSplit, NodeId, PhysicalPlan, StreamId};
use anduin_operator_api::OperatorError;
use anduin_types::{Barrier, ControlUpdate, Epoch, Watermark};
use crossbeam_channel::Sender;

use crate::chain::Chain;
use crate::channel::{channel, Route};
use crate::control::Control;
use crate::error::TaskFailure;
use crate::events::Events;
use crate::instantiate::{ReadyTask, Task};
use crate::protocol::{Command, Event, WriteJob};
use crate::spawn::{spawn_one, Running};
use crate::stats::Counters;
use crate::task::{Inlet, OperatorTask, TaskCheckpointing};
use crate::topology::InstanceRef;

/// The param that asks for a split.
pub(crate) const PIPELINE: &str = "pipeline";

/// Its one value a running query takes.
pub(crate) const SPLIT: &str = "split";

/// Where the `pipeline` changes a barrier carries cut one task's chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cuts {
    /// The links to cut before, by index in the chain, ascending.
    pub at: Vec<usize>,
    /// The operators asked to split that head the task already: nothing to do.
    pub heads: Vec<String>,
}

/// Where `updates` cut a chain of operators `links` (upstream first). `behind_source`: a
/// source heads the task, and the first link can be cut from it; otherwise the first link
/// heads the task and is not cut. Changes of other params, other values and operators the
/// chain lacks are not this chain's.
pub(crate) fn cuts(links: &[&str], behind_source: bool, updates: &[ControlUpdate]) -> Cuts {
    let asked = |name: &str| {
        updates
            .iter()
            .any(|u| u.operator == name && u.param == PIPELINE && u.value == SPLIT)
    };
    let mut out = Cuts {
        at: Vec::new(),
        heads: Vec::new(),
    };
    for (i, name) in links.iter().enumerate() {
        if !asked(name) {
            continue;
        }
        if i == 0 && !behind_source {
            out.heads.push((*name).to_string());
        } else {
            out.at.push(i);
        }
    }
    out
}

/// What every task of a run shares to split: how to make channels and start threads, and
/// how to number the tasks split off.
///
/// Numbers are never counted here: a cluster's executors each split their own instances of a
/// task, and the coordinator and a part restored later must call the new instances alike. The
/// new task and its instances are numbered by [`anduin_graph::PhysicalPlan::split_live`] from
/// the plan the run started from and the live splits asked so far, in the order of their
/// changes (see [`Pipelining::number`]).
pub(crate) struct Pipelining {
    capacity: usize,
    events: Events,
    abort: Arc<AtomicBool>,
    control: Option<Arc<Control>>,
    /// The plan the run started from (with the splits its checkpoint recorded, planned).
    plan: PhysicalPlan,
    /// Per node, the stream its first output carries, and its name.
    nodes: Vec<(Option<StreamId>, String)>,
    /// The splits planned from the start (a resumed run's): their instances get their
    /// commits through the instance they split from, as a live split's do.
    restored: Vec<LiveSplit>,
    inner: Mutex<Split>,
}

/// The splits asked while running, and the tasks split off so far.
struct Split {
    /// The live `pipeline = "split"` changes seen on barriers so far (by any instance here),
    /// by change number: the operator each names.
    asked: BTreeMap<u64, String>,
    /// Their threads, not joined yet.
    running: Vec<Running>,
}

/// What a run's tasks split with: its plan, and where its instances run.
pub(crate) struct PipeliningSetup {
    /// The plan the run started from, and the splits planned in it from the start.
    pub plan: PhysicalPlan,
    pub restored: Vec<LiveSplit>,
    /// Per node of the graph, the stream its first output carries, and its name.
    pub nodes: Vec<(Option<StreamId>, String)>,
    /// How many messages a channel holds.
    pub capacity: usize,
}

impl Pipelining {
    /// For a run planned as `setup` says.
    pub(crate) fn new(
        setup: PipeliningSetup,
        events: Events,
        abort: Arc<AtomicBool>,
        control: Option<Arc<Control>>,
    ) -> Self {
        Self {
            capacity: setup.capacity,
            events,
            abort,
            control,
            plan: setup.plan,
            nodes: setup.nodes,
            restored: setup.restored,
            inner: Mutex::new(Split {
                asked: BTreeMap::new(),
                running: Vec::new(),
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Split> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The task instances split off since the last call, running or ended, to join.
    pub(crate) fn take_running(&self) -> Vec<Running> {
        std::mem::take(&mut self.lock().running)
    }

    /// The splits planned from the start, whose instances get their commits through the
    /// instance they split from.
    pub(crate) fn restored(&self) -> &[LiveSplit] {
        &self.restored
    }

    /// Notes the live splits `updates` (a barrier's changes) ask. Every instance notes every
    /// barrier's, whether its own chain is cut or not: a split of a task with no instance here
    /// still numbers the splits after it.
    fn note(&self, updates: &[ControlUpdate]) {
        let mut inner = self.lock();
        for u in updates
            .iter()
            .filter(|u| u.param == PIPELINE && u.value == SPLIT)
        {
            inner.asked.insert(u.seq, u.operator.clone());
        }
    }

    /// What every split noted so far makes of the plan, by the first node each moved. An
    /// instance has passed (and noted) every barrier before the one it splits at, so every
    /// change before that one's is noted: the numbers are those every other process gives (a
    /// later one noted by a faster instance numbers after it, changing nothing before).
    fn number(&self) -> BTreeMap<usize, LiveSplit> {
        let asked: Vec<NodeId> = {
            self.lock()
                .asked
                .values()
                .filter_map(|name| self.nodes.iter().position(|(_, n)| n == name))
                .map(NodeId)
                .collect()
        };
        let mut plan = self.plan.clone();
        plan.split_live_with(|n| self.nodes.get(n.0).and_then(|(s, _)| *s), &asked)
            .into_iter()
            .map(|s| (s.first.0, s))
            .collect()
    }
}

/// A task instance's part in live pipelining.
pub(crate) struct Stage {
    pub ctx: Arc<Pipelining>,
    /// Which task instance this is.
    pub at: InstanceRef,
    /// How many instances its task has.
    pub parallelism: usize,
    /// The command channels of the task instances split off this one: they get its commits.
    pub downstream: Vec<Sender<Command>>,
}

/// What a task hands to a split besides its chain.
pub(crate) struct Splitting<'a> {
    /// The source at the task's head, if one: its name, its outlets and its counters.
    pub source: Option<(&'a str, &'a mut Vec<Route>, &'a Arc<Counters>)>,
    /// With checkpoints: where snapshots are written, the committer, the coordinator.
    pub checkpoint: Option<(&'a CheckpointDir, &'a Sender<WriteJob>, &'a Sender<Event>)>,
    /// The task's event time is idle now (the new task starts so, as its consumers know it).
    pub idle: bool,
}

impl Stage {
    /// Checkpoint `epoch` is complete: the tasks split off this one hear it too.
    pub(crate) fn commit(&self, epoch: Epoch) {
        self.forward(&Command::Commit(epoch));
    }

    /// The last checkpoint, `epoch`, failed and none completes any more: the tasks split off
    /// this one hear it too.
    pub(crate) fn last_failed(&self, epoch: Epoch) {
        self.forward(&Command::LastFailed(epoch));
    }

    fn forward(&self, command: &Command) {
        for tx in &self.downstream {
            // One that has ended commits nothing more.
            let _ = tx.send(command.clone());
        }
    }
}

/// Carries out the splits `barrier` asks of `chain`, once the barrier has left it: each cut
/// moves the links from it on to a new task instance. `stage` is `None` where the run cannot
/// split (the control plane refuses the change there). Every barrier comes here, so that the
/// splits it asks of other tasks are noted for the numbers of later ones.
pub(crate) fn split(
    stage: Option<&mut Stage>,
    chain: &mut Chain,
    barrier: &Barrier,
    mut with: Splitting<'_>,
) -> Result<(), TaskFailure> {
    if let Some(stage) = &stage {
        stage.ctx.note(&barrier.control);
    }
    let cuts = cuts(&chain.names(), with.source.is_some(), &barrier.control);
    // Said applied once carried out: after the task listing shows the new task, so that
    // whoever hears "applied" (`anduin ctl set`) finds the split there.
    let asked = chain.pipeline_changes(barrier);
    let control = chain.control_plane().map(Arc::clone);
    let applied = || {
        for (seq, instance) in &asked {
            if let Some(control) = &control {
                control.applied(*seq, *instance, barrier.epoch);
            }
        }
    };
    for head in &cuts.heads {
        tracing::info!(operator = %head, epoch = barrier.epoch.0, "`pipeline = \"split\"` on an operator that heads its task already: nothing to split");
    }
    if cuts.at.is_empty() {
        applied();
        return Ok(());
    }
    let names: Vec<String> = chain.names().into_iter().map(str::to_string).collect();
    let Some(stage) = stage else {
        return Err(OperatorError::internal(
            &names[cuts.at[0]],
            "a live split reached a run that cannot split (this is a bug: the control plane refuses the change there)",
        )
        .into());
    };
    let numbers = stage.ctx.number();
    for &at in cuts.at.iter().rev() {
        let moved = names[at..].to_vec();
        let before = match at.checked_sub(1) {
            Some(i) => names[i].clone(),
            None => with
                .source
                .as_ref()
                .map_or_else(String::new, |s| s.0.to_string()),
        };
        let ctx = Arc::clone(&stage.ctx);
        let first = chain.link_index(at).unwrap_or(usize::MAX);
        let Some(numbered) = numbers.get(&first) else {
            return Err(OperatorError::internal(
                &moved[0],
                "a live split the plan does not number (this is a bug: every process numbers the splits from the same plan and changes)",
            )
            .into());
        };
        let (task, id) = (numbered.task, numbered.first_id + stage.at.instance);
        let at_ref = InstanceRef {
            task,
            instance: stage.at.instance,
        };
        let mut name = moved.join(" -> ");
        if stage.parallelism > 1 {
            name = format!("{name} #{}", stage.at.instance);
        }
        let tail = chain.split_off(at, name.clone());
        let (outlet, rx) = channel(ctx.capacity);
        if let Err(route) = chain.feed(Route::One(outlet)) {
            let Some((_, outlets, counters)) = with.source.as_mut() else {
                return Err(OperatorError::internal(&moved[0], "a chain cut at its head").into());
            };
            let mut route = route;
            route.charge_to(counters);
            outlets.push(route);
        }
        let checkpointing = match &with.checkpoint {
            Some((dir, jobs, events)) => {
                let (tx, commands) = crossbeam_channel::unbounded();
                stage.downstream.push(tx);
                // Before this task acknowledges the barrier's checkpoint: the coordinator
                // waits for the new one from the next checkpoint on.
                let _ = events.send(Event::TaskAdded { task: id });
                Some(TaskCheckpointing {
                    task: id,
                    dir: (*dir).clone(),
                    commands,
                    jobs: (*jobs).clone(),
                    events: (*events).clone(),
                })
            }
            None => None,
        };
        let inlet = Inlet {
            rx,
            port: 0,
            last_seq: 0,
            watermark: Watermark::MIN,
            idle: with.idle,
            ended: false,
            finished: false,
            stopped: false,
            exhausted: false,
            notices: None,
            suspended: false,
        };
        let new = OperatorTask {
            name: name.clone(),
            inlets: vec![inlet],
            chain: tail,
            checkpointing,
            idle: with.idle,
            last_checkpoint: None,
            growth: None,
            stage: Some(Stage {
                ctx: Arc::clone(&ctx),
                at: at_ref,
                parallelism: stage.parallelism,
                downstream: Vec::new(),
            }),
        };
        if let Some(control) = &ctx.control {
            control.task_split(&crate::control::TaskSplit {
                from_task: stage.at.task,
                from_operator: before,
                task,
                instance: stage.at.instance,
                id,
                instances: stage.parallelism,
                operators: moved.clone(),
            });
        }
        tracing::info!(operator = %moved[0], epoch = barrier.epoch.0, task = id, name = %name, "split the chain before the operator: it and the operators after it run as a task of their own");
        let ready = ReadyTask {
            id,
            at: at_ref,
            name: name.clone(),
            replica: false,
            lost: None,
            task: Task::Operator(new),
        };
        let running =
            spawn_one(ready, &ctx.events, &ctx.abort).map_err(|e| OperatorError::Execution {
                operator: moved[0].clone(),
                message: format!(
                    "cannot start a thread for task {name} split off while the query runs: {e}"
                ),
            })?;
        ctx.lock().running.push(running);
    }
    applied();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::Link;
    use crate::control::{ChangeRequest, Injector, OperatorInfo, TaskInfo, TopologyInfo};
    use anduin_operator_api::{Collector, Operator};
    use anduin_types::BarrierKind;
    use arrow::record_batch::RecordBatch;

    fn update(operator: &str, param: &str, value: &str) -> ControlUpdate {
        ControlUpdate {
            seq: 1,
            operator: operator.into(),
            param: param.into(),
            value: value.into(),
            onto: Vec::new(),
        }
    }

    #[test]
    fn a_chain_is_cut_right_before_each_operator_asked_and_never_before_its_head() {
        let chain = ["f", "m", "w", "out"];
        let split = |ops: &[&str]| -> Vec<ControlUpdate> {
            ops.iter().map(|o| update(o, PIPELINE, SPLIT)).collect()
        };
        assert_eq!(cuts(&chain, false, &split(&["w"])).at, [2]);
        assert_eq!(cuts(&chain, false, &split(&["out", "m"])).at, [1, 3]);
        // The head of a task headed by an operator: nothing to do, said.
        let head = cuts(&chain, false, &split(&["f"]));
        assert!(head.at.is_empty());
        assert_eq!(head.heads, ["f"]);
        // Behind a source, the first operator is cut from the source.
        assert_eq!(cuts(&chain, true, &split(&["f"])).at, [0]);
        // Other params, other values, operators of other tasks: none of this chain's.
        let others = [
            update("w", "allowed_lateness", "1s"),
            update("w", PIPELINE, "fused"),
            update("elsewhere", PIPELINE, SPLIT),
        ];
        assert_eq!(
            cuts(&chain, true, &others),
            Cuts {
                at: vec![],
                heads: vec![]
            }
        );
    }

    /// A context over one task fusing source s (node 0), f (1), m (2), w (3) at parallelism
    /// 2, and a task fusing source t (4) and g (5).
    fn context() -> Pipelining {
        let task = |id: usize, chain: &[usize]| anduin_graph::TaskPlan {
            id,
            chain: chain.iter().copied().map(NodeId).collect(),
            inputs: Vec::new(),
            parallelism: 2,
            active: 2,
        };
        let names = ["s", "f", "m", "w", "t", "g"];
        let setup = PipeliningSetup {
            plan: PhysicalPlan {
                tasks: vec![task(0, &[0, 1, 2, 3]), task(1, &[4, 5])],
                channels: Vec::new(),
            },
            restored: Vec::new(),
            nodes: names
                .iter()
                .enumerate()
                .map(|(i, n)| (Some(StreamId(i)), (*n).to_string()))
                .collect(),
            capacity: 4,
        };
        Pipelining::new(setup, Events::default(), Arc::default(), None)
    }

    fn split_of(seq: u64, operator: &str) -> ControlUpdate {
        ControlUpdate {
            seq,
            ..update(operator, PIPELINE, SPLIT)
        }
    }

    #[test]
    fn processes_number_a_split_alike_whatever_order_their_instances_note_the_changes_in() {
        // Executor a: an instance splits before m at change 2, then g is split at change 5.
        let a = context();
        a.note(&[split_of(2, "m"), update("w", "allowed_lateness", "1s")]);
        let at_2 = a.number();
        a.note(&[split_of(5, "g")]);
        let at_5 = a.number();
        // Executor b: an instance of the second task passed change 5's barrier first (it has
        // no instance of the first task, which is slower there); then the first task splits.
        let b = context();
        b.note(&[split_of(5, "g")]);
        b.note(&[split_of(2, "m")]);
        let both = b.number();
        assert_eq!(at_2.get(&2), both.get(&2));
        assert_eq!(at_5.get(&5), both.get(&5));
        let m = both.get(&2).expect("m is split");
        let g = both.get(&5).expect("g is split");
        // After the two tasks (4 instances): m's task, then g's.
        assert_eq!((m.task, m.first_id, g.task, g.first_id), (2, 4, 3, 6));
    }

    /// Passes nothing on: the test only splits its chain.
    struct Quiet(&'static str);

    impl Operator for Quiet {
        fn name(&self) -> &str {
            self.0
        }

        fn process_batch(
            &mut self,
            _input: usize,
            _batch: RecordBatch,
            _out: &mut dyn Collector,
        ) -> Result<(), OperatorError> {
            Ok(())
        }
    }

    fn link(index: usize, name: &'static str) -> Link {
        Link::for_test(index, Box::new(Quiet(name)), Vec::new())
    }

    fn info(name: &str) -> OperatorInfo {
        OperatorInfo {
            name: name.into(),
            kind: "map".into(),
            inputs: Vec::new(),
            outputs: Vec::new(),
            parallelism: 1,
            task: 0,
            stateful: false,
            adjustable: Vec::new(),
            max_parallelism: None,
            owners: None,
        }
    }

    #[test]
    fn a_live_split_is_said_applied_only_once_the_task_listing_shows_it() {
        // A task fusing a and b; `ctl set q b pipeline split` waits on another thread.
        let control = Arc::new(Control::new(
            "q",
            None,
            BTreeMap::new(),
            Box::new(|_, _| Ok(())),
        ));
        let (tx, rx) = crossbeam_channel::unbounded();
        control.attach(
            vec![info("a"), info("b")],
            vec![TaskInfo {
                id: 0,
                operators: vec!["a".into(), "b".into()],
                instances: 1,
            }],
            TopologyInfo::default(),
            Injector::Coordinator(tx),
            false,
            Arc::new(AtomicBool::new(false)),
        );
        let setter = {
            let control = Arc::clone(&control);
            std::thread::spawn(move || {
                control.set(ChangeRequest {
                    operator: "b".into(),
                    param: PIPELINE.into(),
                    value: SPLIT.into(),
                    from: "test".into(),
                })
            })
        };
        let Ok(Event::Control(updates)) = rx.recv() else {
            panic!("the change is sent towards the sources");
        };
        let barrier = Barrier {
            epoch: Epoch(1),
            kind: BarrierKind::Control,
            control: updates,
        };
        let listed = || -> Vec<Vec<String>> {
            control
                .info()
                .tasks
                .into_iter()
                .map(|t| t.operators)
                .collect()
        };
        let mut chain = Chain::new(vec![link(0, "a"), link(1, "b")], Some(Arc::clone(&control)));
        // The barrier has passed every operator of the chain; the task has not split yet:
        // the change is not applied yet (its history, which `set` answers from, lacks it).
        chain.control(&barrier).expect("the barrier passes");
        assert_eq!(listed(), [["a", "b"]]);
        assert!(control.history().is_empty(), "{:?}", control.history());
        // One task fusing a (node 0) and b (node 1), one instance.
        let plan = PhysicalPlan {
            tasks: vec![anduin_graph::TaskPlan {
                id: 0,
                chain: vec![NodeId(0), NodeId(1)],
                inputs: Vec::new(),
                parallelism: 1,
                active: 1,
            }],
            channels: Vec::new(),
        };
        let setup = PipeliningSetup {
            plan,
            restored: Vec::new(),
            nodes: vec![
                (Some(StreamId(0)), "a".to_string()),
                (Some(StreamId(1)), "b".to_string()),
            ],
            capacity: 16,
        };
        let ctx = Arc::new(Pipelining::new(
            setup,
            Events::default(),
            Arc::new(AtomicBool::new(false)),
            Some(Arc::clone(&control)),
        ));
        let mut stage = Stage {
            ctx: Arc::clone(&ctx),
            at: InstanceRef {
                task: 0,
                instance: 0,
            },
            parallelism: 1,
            downstream: Vec::new(),
        };
        let with = Splitting {
            source: None,
            checkpoint: None,
            idle: false,
        };
        split(Some(&mut stage), &mut chain, &barrier, with).expect("the chain splits");
        // Once it has: applied, and the listing shows it.
        let record = setter.join().expect("no panic").expect("applied");
        assert_eq!((record.operator.as_str(), record.epoch), ("b", 1));
        assert_eq!(listed(), [vec!["a".to_string()], vec!["b".to_string()]]);
        // The new task ends with the chain that feeds it.
        chain.end_of_input().expect("the chain ends");
        crate::spawn::join_tasks(ctx.take_running(), Vec::new).expect("the new task ends");
    }
}
