use super::*;
use anduin_graph::{LogicalGraph, PhysicalPlan, PlanOptions};
use anduin_operator_api::Bound;
use anduin_registry::BuiltinCatalog;

/// Generated events counted per sensor in a keyed window (2 instances), mapped (its own
/// task: a rescalable task fuses nothing after it), written.
const WINDOWED: &str = r#"
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param count = 10
  param event_time = "ts"
  output name = "events", type = "Event"
}
operator name = "w", type = "window" {
  input name = "events"
  param kind = "tumbling"
  param size = "1s"
  param time = "ts"
  param keys = "sensor"
  param aggregates = "COUNT(*) AS n"
  output name = "counts"
}
operator name = "m", type = "map" {
  input name = "counts"
  param columns = "sensor, n * 2 AS twice"
  output name = "twice"
}
operator name = "out", type = "writer" {
  input name = "twice"
  param path = "out.csv"
}
"#;

/// The query's topology at parallelism 2, spread over `workers` workers, and the window's
/// task.
fn spread(workers: u32) -> (Topology, usize) {
    let spec = anduin_spec::parse_flow(WINDOWED).expect("the query parses");
    let (graph, _): (LogicalGraph<Bound>, _) =
        anduin_graph::check(&spec, &BuiltinCatalog).expect("the query checks");
    let options = PlanOptions {
        chaining: true,
        default_parallelism: 2,
        max_parallelism: Some(2),
    };
    let plan = PhysicalPlan::plan(&graph, options).expect("the graph plans");
    let mut topology = Topology::new(&graph, &plan, |n| matches!(n.bound, Bound::Source(_)));
    topology.spread(workers);
    let window = topology
        .tasks
        .iter()
        .find(|t| {
            t.operators
                .first()
                .is_some_and(|n| graph.node(*n).name() == "w")
        })
        .map(|t| t.task)
        .expect("the window has a task");
    (topology, window)
}

/// Every channel is where its number says, in the routes of its producer and the inlets of
/// its consumer (but those of instances retired, which nothing reaches); every route and
/// inlet names a channel that exists.
fn assert_consistent(t: &Topology) {
    let routed: BTreeSet<ChannelId> = t
        .instances()
        .flat_map(|i| i.routes.iter().flat_map(|r| r.channels.iter().copied()))
        .collect();
    for (k, c) in t.channels.iter().enumerate() {
        assert_eq!(c.id, ChannelId(k));
        if !routed.contains(&c.id) {
            assert!(
                t.instances()
                    .all(|i| i.inlets.iter().all(|x| x.channel != c.id)),
                "channel {k} is an inlet but no route's"
            );
            continue;
        }
        let from = t.instance(c.from).expect("the producer exists");
        assert_eq!(c.ids, (from.id, t.instance(c.to).expect("the consumer").id));
        assert!(from.routes.iter().any(|r| r.channels.contains(&c.id)));
        let to = t.instance(c.to).expect("the consumer exists");
        assert!(to
            .inlets
            .iter()
            .any(|i| i.channel == c.id && i.from == c.from && i.port == c.to_input));
    }
    for i in t.instances() {
        for r in &i.routes {
            for c in &r.channels {
                assert_eq!(t.channels[c.0].from, i.at);
                assert_eq!(t.channels[c.0].to.task, r.to_task);
            }
        }
    }
}

#[test]
fn a_window_grown_from_two_to_four_is_numbered_placed_and_wired_alike_everywhere() {
    let (mut t, w) = spread(2);
    let planned = t.clone();
    let grown = t.grow(w, 4).expect("it grows").expect("it adds");
    assert_eq!(grown.before, 2);
    let added: Vec<usize> = grown.added.iter().map(|a| a.instance).collect();
    assert_eq!(added, [2, 3]);
    let task = &t.tasks[w];
    assert_eq!(
        (task.parallelism, task.active, task.instances.len()),
        (4, 4, 4)
    );
    let ids: Vec<usize> = task.instances[2..].iter().map(|i| i.id).collect();
    assert_eq!(ids, [GROWN_IDS, GROWN_IDS + 1]);
    assert_eq!(task.instances[3].name, format!("{} #3", task.name));
    // Placed one on each of the two workers that run the window (as loaded: they run as
    // many instances).
    let workers: BTreeSet<WorkerId> = task.instances[2..].iter().map(|i| i.worker).collect();
    assert_eq!(workers.len(), 2);
    assert_consistent(&t);
    // Every producer's route into the window reaches the four instances.
    for i in t.instances().filter(|i| i.at.task != w) {
        for r in i.routes.iter().filter(|r| r.to_task == w) {
            assert_eq!(r.channels.len(), 4);
        }
    }
    // A new instance routes as instance 0 does, to every consumer instance, and is fed as
    // instance 0 is.
    let (zero, three) = (&task.instances[0], &task.instances[3]);
    assert_eq!(three.routes.len(), zero.routes.len());
    for (a, b) in zero.routes.iter().zip(&three.routes) {
        assert_eq!(
            (a.from, a.to_task, a.to_input),
            (b.from, b.to_task, b.to_input)
        );
        assert_eq!(a.exchange, b.exchange);
        assert_eq!(a.channels.len(), b.channels.len());
    }
    let ports = |i: &TaskInstance| i.inlets.iter().map(|x| x.port).collect::<Vec<_>>();
    assert_eq!(ports(three), ports(zero));
    // The planned channels keep their numbers; the new ones come after them.
    assert_eq!(t.channels[..planned.channels.len()], planned.channels[..]);
    assert_eq!(
        grown.channels.first(),
        Some(&ChannelId(planned.channels.len()))
    );
    assert_eq!(
        grown.channels.len(),
        t.channels.len() - planned.channels.len()
    );
    // Another process growing the same plan by the same change gets the same topology.
    let mut again = planned.clone();
    assert_eq!(again.grow(w, 4), Ok(Some(grown)));
    assert_eq!(again, t);
}

#[test]
fn growing_again_numbers_after_the_instances_added_before_and_nothing_below_adds() {
    let (mut t, w) = spread(2);
    t.grow(w, 3).expect("it grows");
    // Down, or to as many: nothing is added.
    assert_eq!(t.grow(w, 3), Ok(None));
    assert_eq!(t.grow(w, 1), Ok(None));
    let grown = t.grow(w, 5).expect("it grows").expect("it adds");
    let ids: Vec<usize> = t.tasks[w].instances[3..].iter().map(|i| i.id).collect();
    assert_eq!(ids, [GROWN_IDS + 1, GROWN_IDS + 2]);
    assert_eq!(grown.before, 3);
    assert_consistent(&t);
    // Each new instance went to the least-loaded worker of the window's.
    let on = |w0: u32| t.instances().filter(|i| i.worker == WorkerId(w0)).count();
    assert!(on(0).abs_diff(on(1)) <= 1, "{} and {}", on(0), on(1));
}

#[test]
fn a_scale_down_retires_the_instances_added_and_those_added_later_are_named_by_new_numbers() {
    let (mut t, w) = spread(2);
    let planned = t.clone();
    t.grow(w, 4).expect("it grows");
    let grown = t.clone();
    assert_eq!(t.retire(w, 4), []);
    assert_eq!(t.retire(9, 1), []);
    let retired = t.retire(w, 2);
    assert_eq!(
        retired.iter().map(|a| a.instance).collect::<Vec<_>>(),
        [2, 3]
    );
    let task = &t.tasks[w];
    assert_eq!((task.parallelism, task.instances.len()), (2, 2));
    // Routes and inlets are those planned again; the channels keep their numbers.
    for (now, then) in t.instances().zip(planned.instances()) {
        assert_eq!(now.routes, then.routes, "{}", now.name);
        assert_eq!(now.inlets, then.inlets, "{}", now.name);
    }
    assert_eq!(t.channels, grown.channels);
    assert_consistent(&t);
    // Grown again: the same indices, new numbers, new channels after the old ones.
    let again = t.grow(w, 4).expect("it grows").expect("it adds");
    let ids: Vec<usize> = t.tasks[w].instances[2..].iter().map(|i| i.id).collect();
    assert_eq!(ids, [GROWN_IDS + 2, GROWN_IDS + 3]);
    assert_eq!(
        again.channels.first(),
        Some(&ChannelId(grown.channels.len()))
    );
    assert_consistent(&t);
    // No two channels are named alike in a handshake (plan channel, the instances' numbers),
    // those of the retired instances included: a producer cannot reach a retired end.
    let name = |c: &Channel| {
        (
            c.plan_channel,
            crate::net::handshake_name(c.from, c.ids.0),
            crate::net::handshake_name(c.to, c.ids.1),
        )
    };
    let names: BTreeSet<(usize, u32, u32)> = t.channels.iter().map(name).collect();
    assert_eq!(names.len(), t.channels.len());
}

#[test]
fn each_worker_builds_its_new_instances_and_holds_one_end_of_each_new_channel_across() {
    let (mut t, w) = spread(2);
    let grown = t.grow(w, 4).expect("it grows").expect("it adds");
    let built: Vec<(Vec<InstanceRef>, Builder)> =
        (0..2).map(|k| grown.built_on(&t, WorkerId(k))).collect();
    // Every new instance is built once, by the task's lowest instance on its worker.
    let mut all: Vec<InstanceRef> = built.iter().flat_map(|(a, _)| a.clone()).collect();
    all.sort();
    assert_eq!(all, grown.added);
    for (k, (added, builder)) in built.iter().enumerate() {
        let Builder::Instance(builder) = builder else {
            panic!("worker {k} runs the window: {builder:?}");
        };
        assert_eq!(t.worker_of(*builder), WorkerId(k as u32));
        assert!(builder.instance < grown.before);
        for at in added {
            assert_eq!(t.worker_of(*at), WorkerId(k as u32));
            assert_eq!(grown.to_build(&t, *builder, WorkerId(k as u32)), *added);
        }
    }
    // Each new channel has its two ends on the workers of its instances, some across.
    let across = grown
        .channels
        .iter()
        .filter(|c| t.crosses(&t.channels[c.0]))
        .count();
    assert!(across > 0 && across < grown.channels.len());
    // A worker that runs none of the window's instances builds nothing.
    assert!(grown.built_on(&t, WorkerId(7)).0.is_empty());
}

/// The window's instances on worker `window`, its reader's (the map's) on worker 1,
/// everything else on worker 0.
fn window_beside_its_reader(window: u32) -> (Topology, usize, usize) {
    let (mut t, w) = spread(1);
    let m = *t
        .readers_of(w)
        .iter()
        .next()
        .expect("the window feeds the map");
    let (ws, ms): (Vec<usize>, Vec<usize>) = (
        t.tasks[w].instances.iter().map(|i| i.id).collect(),
        t.tasks[m].instances.iter().map(|i| i.id).collect(),
    );
    t.assign(|id| match (ws.contains(&id), ms.contains(&id)) {
        (true, _) => WorkerId(window),
        (_, true) => WorkerId(1),
        _ => WorkerId(0),
    });
    (t, w, m)
}

#[test]
fn instances_added_go_to_a_worker_that_only_reads_the_task_when_it_is_the_least_loaded() {
    let (mut t, w, m) = window_beside_its_reader(0);
    let grown = t.grow(w, 4).expect("it grows").expect("it adds");
    let workers: Vec<WorkerId> = grown.added.iter().map(|a| t.worker_of(*a)).collect();
    // The least loaded of the workers that run or read the window, one after the other:
    // worker 1 runs the map's 2 instances, worker 0 the window's and 3 more.
    assert_eq!(workers, [WorkerId(1), WorkerId(1)]);
    assert_eq!(grown.owners_before, 2);
    assert_consistent(&t);
    // On worker 1 no instance of the window builds them: the first instance of the map
    // there to align the barrier does; no other task's instance does.
    let (added, builder) = grown.built_on(&t, WorkerId(1));
    assert_eq!(
        (added.clone(), builder),
        (grown.added.clone(), Builder::FirstReader)
    );
    for i in t.tasks[m].instances.iter() {
        assert_eq!(grown.to_build(&t, i.at, WorkerId(1)), added);
    }
    let other = t.instances().find(|i| i.at.task != m && i.at.task != w);
    let other = other.expect("a task besides the window and the map").at;
    assert!(grown.to_build(&t, other, WorkerId(1)).is_empty());
    assert!(grown.built_on(&t, WorkerId(0)).0.is_empty());
    // A worker that neither runs nor reads it gets none: with the window beside the map
    // on worker 1, worker 0 (the generator and the writer) stays out however loaded.
    let (mut beside, w1, _) = window_beside_its_reader(1);
    beside.grow(w1, 6).expect("it grows");
    assert!(beside.tasks[w1]
        .instances
        .iter()
        .all(|i| i.worker == WorkerId(1)));
}

#[test]
fn instances_added_go_to_a_worker_the_rescale_names_that_runs_nothing_and_its_process_builds_them_alone(
) {
    let (mut t, w, m) = window_beside_its_reader(0);
    // Worker 7 runs nothing of the query: named by the rescale, it is the least loaded.
    let grown = t.grow_onto(w, 5, &[7]).expect("it grows").expect("it adds");
    let workers: Vec<WorkerId> = grown.added.iter().map(|a| t.worker_of(*a)).collect();
    // 7 (no instance), then 1 (the map's one; tied with 7 at 1, the lowest), then 7 (1
    // against 2).
    assert_eq!(workers, [WorkerId(7), WorkerId(1), WorkerId(7)]);
    assert_consistent(&t);
    // Nothing on worker 7 aligns the barrier: its process builds them when told it, and no
    // instance anywhere does.
    let (added, builder) = grown.built_on(&t, WorkerId(7));
    assert_eq!(builder, Builder::Alone);
    assert_eq!(added, [grown.added[0], grown.added[2]]);
    assert_eq!(grown.alone_on(&t, WorkerId(7)), added);
    for i in t.instances() {
        assert!(
            grown.to_build(&t, i.at, WorkerId(7)).is_empty(),
            "{:?} builds nothing of worker 7",
            i.at
        );
    }
    // On worker 1 the map's first instance to align it builds the one there, as before.
    assert_eq!(grown.built_on(&t, WorkerId(1)).1, Builder::FirstReader);
    assert!(grown.alone_on(&t, WorkerId(1)).is_empty());
    // A later rescale places on worker 7 as on any that runs the window (tied with 1 at 2,
    // then the least loaded), where the window's lowest instance there builds.
    let again = t.grow_onto(w, 7, &[]).expect("it grows").expect("it adds");
    let workers: Vec<WorkerId> = again.added.iter().map(|a| t.worker_of(*a)).collect();
    assert_eq!(workers, [WorkerId(1), WorkerId(7)]);
    assert_eq!(
        again.built_on(&t, WorkerId(7)).1,
        Builder::Instance(grown.added[0])
    );
    assert!(t.readers_of(w).contains(&m));
}

#[test]
fn the_least_loaded_worker_is_chosen_the_lowest_of_those_tied() {
    let candidates = BTreeSet::from([WorkerId(1), WorkerId(2), WorkerId(3)]);
    let load = BTreeMap::from([(WorkerId(1), 3), (WorkerId(2), 2), (WorkerId(3), 2)]);
    assert_eq!(least_loaded(&candidates, &load), Some(WorkerId(2)));
    // A worker not loaded at all (only candidates count: worker 0 runs none of the task).
    let load = BTreeMap::from([(WorkerId(0), 0), (WorkerId(1), 1)]);
    assert_eq!(least_loaded(&candidates, &load), Some(WorkerId(2)));
    assert_eq!(least_loaded(&BTreeSet::new(), &load), None);
}

#[test]
fn a_task_feeding_instance_by_instance_or_not_planned_is_refused() {
    let (mut t, w) = spread(1);
    assert_eq!(t.grow(99, 3), Err(GrowRefused::NoTask(99)));
    let to = t.tasks[w].instances[0].routes[0].to_task;
    for i in &mut t.tasks[w].instances {
        i.routes[0].exchange = Exchange::Forward;
    }
    let before = t.clone();
    assert_eq!(t.grow(w, 3), Err(GrowRefused::Forward { task: w, to }));
    assert_eq!(t, before, "a refused growth changes nothing");
}

#[test]
fn the_numbers_a_topology_gives_are_those_the_checkpoint_coordinator_reserves() {
    let (mut t, w) = spread(2);
    let numbers = crate::grow::Numbers::for_tests(w, "w", 2);
    // Change 3: w to 4; change 4: w to 1 (the two added retire); change 5: w to 6; change
    // 6: w to 5 (the last retires); change 7: w to 6.
    for (seq, to) in [(3, 4), (4, 1), (5, 6), (6, 5), (7, 6)] {
        let reserved = numbers.reserve(seq, "w", to);
        let retired: Vec<(usize, usize)> = t
            .retire(w, to.max(2))
            .into_iter()
            .map(|a| (a.instance, 0))
            .collect();
        let numbered: Vec<(usize, usize)> = numbers
            .retired(seq)
            .into_iter()
            .map(|(j, _)| (j, 0))
            .collect();
        assert_eq!(retired, numbered, "change {seq}");
        let added: Vec<(usize, usize)> = match t.grow(w, to).expect("it grows") {
            Some(g) => g
                .added
                .iter()
                .map(|a| (a.instance, t.instance(*a).expect("added").id))
                .collect(),
            None => Vec::new(),
        };
        assert_eq!(added, reserved, "change {seq}");
    }
}
