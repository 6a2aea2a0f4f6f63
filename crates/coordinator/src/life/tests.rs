use std::collections::{BTreeMap, BTreeSet};

use anduin_types::Epoch;
use proptest::prelude::*;

use super::*;

const A: TaskRef = TaskRef::new(0, 0);
const B: TaskRef = TaskRef::new(1, 0);
const W1: WorkerId = WorkerId(1);
const W2: WorkerId = WorkerId(2);
const W3: WorkerId = WorkerId(3);

fn ok(life: &QueryLife, input: Input) -> Step {
    step(life, &input).unwrap_or_else(|e| panic!("{input:?} in {}: {e}", life.state()))
}

fn submitted() -> QueryLife {
    QueryLife::new(QueryId::new("q"), [A, B])
}

fn scheduling() -> QueryLife {
    ok(&submitted(), Input::Submitted).life
}

fn running() -> QueryLife {
    ok(
        &scheduling(),
        Input::Placed {
            placement: [(A, W1), (B, W2)].into(),
        },
    )
    .life
}

fn checkpointing() -> QueryLife {
    ok(&running(), Input::CheckpointStarted { epoch: Epoch(1) }).life
}

fn recovering() -> QueryLife {
    ok(&running(), Input::WorkerDead { worker: W2 }).life
}

fn stopping() -> QueryLife {
    ok(&running(), Input::StopRequested).life
}

fn life_in(kind: StateKind) -> QueryLife {
    match kind {
        StateKind::Submitted => submitted(),
        StateKind::Scheduling => scheduling(),
        StateKind::Running => running(),
        StateKind::Checkpointing => checkpointing(),
        StateKind::Recovering => recovering(),
        StateKind::Stopping => stopping(),
        StateKind::Finished => ok(&running(), Input::AllTasksFinished).life,
        StateKind::Failed => {
            ok(
                &scheduling(),
                Input::PlacementImpossible {
                    needed: 2,
                    free: 1,
                    why: "too few".into(),
                },
            )
            .life
        }
        StateKind::Cancelled => ok(&running(), Input::CancelRequested).life,
    }
}

/// One input of every kind, fitted to `life` where it can be (a placement of what awaits).
fn every_input(life: &QueryLife) -> Vec<Input> {
    vec![
        Input::Submitted,
        Input::Placed {
            placement: life.awaiting().iter().map(|t| (*t, W3)).collect(),
        },
        Input::PlacementImpossible {
            needed: 1,
            free: 0,
            why: "none free".into(),
        },
        Input::TaskFailed {
            task: A,
            worker: W1,
            cause: "boom".into(),
        },
        Input::WorkerDead { worker: W1 },
        Input::CheckpointStarted { epoch: Epoch(5) },
        Input::CheckpointCompleted { epoch: Epoch(1) },
        Input::CheckpointFailed {
            epoch: Epoch(1),
            cause: "disk full".into(),
        },
        Input::AllTasksFinished,
        Input::CancelRequested,
        Input::StopRequested,
        Input::PerTaskRecoveryImpossible {
            why: "backup trimmed".into(),
        },
        Input::RecoveryDone,
        Input::RecoveryFailed {
            why: "checkpoint unreadable".into(),
        },
    ]
}

#[test]
fn every_state_takes_exactly_the_inputs_of_the_transition_table() {
    use InputKind as I;
    let accepts = |state: StateKind| -> Vec<InputKind> {
        match state {
            StateKind::Submitted => vec![I::Submitted, I::CancelRequested, I::StopRequested],
            StateKind::Scheduling => vec![
                I::Placed,
                I::PlacementImpossible,
                I::WorkerDead,
                I::CancelRequested,
                I::StopRequested,
            ],
            StateKind::Running => vec![
                I::TaskFailed,
                I::WorkerDead,
                I::CheckpointStarted,
                I::AllTasksFinished,
                I::CancelRequested,
                I::StopRequested,
            ],
            StateKind::Checkpointing => vec![
                I::TaskFailed,
                I::WorkerDead,
                I::CheckpointCompleted,
                I::CheckpointFailed,
                I::AllTasksFinished,
                I::CancelRequested,
                I::StopRequested,
            ],
            StateKind::Recovering => vec![
                I::Placed,
                I::PlacementImpossible,
                I::TaskFailed,
                I::WorkerDead,
                I::CancelRequested,
                I::PerTaskRecoveryImpossible,
                I::RecoveryFailed,
                I::AllTasksFinished,
            ],
            StateKind::Stopping => vec![
                I::TaskFailed,
                I::WorkerDead,
                I::CheckpointStarted,
                I::AllTasksFinished,
                I::CancelRequested,
            ],
            StateKind::Finished | StateKind::Failed | StateKind::Cancelled => vec![],
        }
    };
    for kind in StateKind::ALL {
        let life = life_in(kind);
        assert_eq!(life.state().kind(), kind);
        for input in every_input(&life) {
            let outcome = step(&life, &input);
            let expected = accepts(kind).contains(&input.kind());
            assert_eq!(
                outcome.is_ok(),
                expected,
                "{kind} with {input:?}: {outcome:?}"
            );
            if let Err(refused) = outcome {
                assert_eq!(refused.query, QueryId::new("q"));
                if kind.is_terminal() {
                    assert!(matches!(refused.why, Refusal::Terminal { .. }), "{refused}");
                }
                assert!(refused.to_string().starts_with("query `q`: "), "{refused}");
            }
        }
    }
}

#[test]
fn a_recovering_query_whose_every_part_ended_well_is_finished() {
    // The driver says every task finished only once every part of the attempt ended well:
    // what still awaited a slot has nothing left to do.
    let life = recovering();
    assert!(!life.awaiting().is_empty());
    let next = ok(&life, Input::AllTasksFinished);
    assert_eq!(next.life.state(), &QueryState::Finished);
}

#[test]
fn a_query_is_placed_started_checkpointed_and_finished() {
    let s = ok(&submitted(), Input::Submitted);
    assert_eq!(
        s.actions,
        vec![Action::PlaceTasks {
            tasks: [A, B].into()
        }]
    );
    assert_eq!(
        s.events,
        vec![LifeEvent::Transition {
            from: StateKind::Submitted,
            to: QueryState::Scheduling
        }]
    );
    let placement: BTreeMap<_, _> = [(A, W1), (B, W2)].into();
    let s = ok(
        &s.life,
        Input::Placed {
            placement: placement.clone(),
        },
    );
    assert_eq!(s.life.state(), &QueryState::Running);
    assert_eq!(s.actions, vec![Action::StartTasks { placement }]);
    let s = ok(&s.life, Input::CheckpointStarted { epoch: Epoch(1) });
    assert_eq!(s.actions, vec![Action::InjectBarrier { epoch: Epoch(1) }]);
    let s = ok(&s.life, Input::CheckpointCompleted { epoch: Epoch(1) });
    assert_eq!(
        s.actions,
        vec![Action::CommitCheckpoint { epoch: Epoch(1) }]
    );
    assert_eq!(s.life.last_completed(), Some(Epoch(1)));
    let s = ok(&s.life, Input::AllTasksFinished);
    assert_eq!(s.life.state(), &QueryState::Finished);
    assert!(s.life.state().is_terminal());
}

#[test]
fn a_dead_worker_restores_only_its_tasks_from_the_last_checkpoint() {
    let life = ok(
        &checkpointing(),
        Input::CheckpointCompleted { epoch: Epoch(1) },
    )
    .life;
    let life = ok(&life, Input::CheckpointStarted { epoch: Epoch(2) }).life;
    // Worker 2 dies with checkpoint 2 in flight: it is aborted, B awaits a slot.
    let s = ok(&life, Input::WorkerDead { worker: W2 });
    assert_eq!(
        s.actions,
        vec![
            Action::AbortCheckpoint { epoch: Epoch(2) },
            Action::PlaceTasks { tasks: [B].into() }
        ]
    );
    assert!(s.events.contains(&LifeEvent::PerTaskRecovery {
        tasks: [B].into(),
        reason: RecoveryReason::WorkerDead { worker: W2 }
    }));
    assert_eq!(s.life.placement(), &BTreeMap::from([(A, W1)]));
    let s = ok(
        &s.life,
        Input::Placed {
            placement: [(B, W3)].into(),
        },
    );
    assert_eq!(
        s.actions,
        vec![Action::RestoreTasks {
            placement: [(B, W3)].into(),
            from: Some(Epoch(1))
        }],
        "A is not restarted"
    );
    let s = ok(&s.life, Input::RecoveryDone);
    assert_eq!(s.life.state(), &QueryState::Running);
    assert_eq!(s.life.placement(), &BTreeMap::from([(A, W1), (B, W3)]));
    // The next checkpoint comes after the aborted one.
    let refused = step(&s.life, &Input::CheckpointStarted { epoch: Epoch(2) }).expect_err("reused");
    assert!(
        matches!(refused.why, Refusal::EpochNotAfter { .. }),
        "{refused}"
    );
}

#[test]
fn a_second_failure_during_a_recovery_joins_it_and_keeps_its_reason() {
    let life = recovering();
    let s = ok(
        &life,
        Input::TaskFailed {
            task: A,
            worker: W1,
            cause: "oom".into(),
        },
    );
    assert_eq!(s.life.state(), life.state(), "same reason");
    assert_eq!(s.life.awaiting(), &BTreeSet::from([A, B]));
    assert_eq!(s.actions, vec![Action::PlaceTasks { tasks: [A].into() }]);
    let refused = step(&s.life, &Input::RecoveryDone).expect_err("still placing");
    assert!(matches!(refused.why, Refusal::StillPlacing { .. }));
    let refused = step(
        &s.life,
        &Input::Placed {
            placement: [(A, W3)].into(),
        },
    )
    .expect_err("B too");
    assert_eq!(
        refused.why,
        Refusal::PlacementMismatch {
            missing: vec![B],
            unexpected: vec![]
        }
    );
}

#[test]
fn when_per_task_recovery_cannot_apply_the_whole_query_rolls_back_once_placed() {
    let life = recovering();
    let s = ok(
        &life,
        Input::PerTaskRecoveryImpossible {
            why: "producer trimmed".into(),
        },
    );
    assert!(s.actions.is_empty(), "waits for B's slot: {:?}", s.actions);
    assert_eq!(
        s.events,
        vec![LifeEvent::WholeQueryRollback {
            to: None,
            why: "producer trimmed".into()
        }]
    );
    let s = ok(
        &s.life,
        Input::Placed {
            placement: [(B, W3)].into(),
        },
    );
    assert_eq!(
        s.actions,
        vec![Action::RollBack {
            placement: [(A, W1), (B, W3)].into(),
            to: None
        }]
    );
    let s = ok(&s.life, Input::RecoveryDone);
    assert_eq!(s.life.state(), &QueryState::Running);
}

#[test]
fn stale_and_unknown_reports_are_refused_and_a_worker_with_none_of_ours_changes_nothing() {
    let life = running();
    let stale = step(
        &life,
        &Input::TaskFailed {
            task: A,
            worker: W2,
            cause: "x".into(),
        },
    )
    .expect_err("A runs on 1");
    assert!(stale.to_string().contains("stale"), "{stale}");
    let unknown = step(
        &life,
        &Input::TaskFailed {
            task: TaskRef::new(9, 9),
            worker: W1,
            cause: "x".into(),
        },
    )
    .expect_err("no such task");
    assert!(matches!(unknown.why, Refusal::UnknownTask { .. }));
    let s = ok(
        &life,
        Input::WorkerDead {
            worker: WorkerId(42),
        },
    );
    assert_eq!(s.life, life);
    assert!(s.actions.is_empty() && s.events.is_empty());
    let late = step(&life, &Input::CheckpointCompleted { epoch: Epoch(1) }).expect_err("none");
    assert!(late.to_string().contains("not in flight"), "{late}");
}

#[test]
fn a_stop_drains_lets_the_checkpoint_in_flight_end_and_a_failure_interrupts_it() {
    let s = ok(&checkpointing(), Input::StopRequested);
    assert_eq!(s.life.state(), &QueryState::Stopping);
    assert_eq!(s.actions, vec![Action::Drain]);
    let s = ok(&s.life, Input::CheckpointCompleted { epoch: Epoch(1) });
    assert_eq!(
        s.actions,
        vec![Action::CommitCheckpoint { epoch: Epoch(1) }]
    );
    assert_eq!(s.life.state(), &QueryState::Stopping);
    let again = step(&s.life, &Input::StopRequested).expect_err("already");
    assert!(again.to_string().contains("already stopping"), "{again}");
    let s2 = ok(&s.life, Input::WorkerDead { worker: W1 });
    assert!(matches!(s2.life.state(), QueryState::Recovering { .. }));
    assert!(s2
        .events
        .iter()
        .any(|e| matches!(e, LifeEvent::StopInterrupted { .. })));
    let s = ok(&s.life, Input::AllTasksFinished);
    assert_eq!(s.life.state(), &QueryState::Finished);
}

#[test]
fn a_cancel_stops_every_placed_task_and_aborts_the_checkpoint_in_flight() {
    let s = ok(&checkpointing(), Input::CancelRequested);
    assert_eq!(
        s.actions,
        vec![
            Action::AbortCheckpoint { epoch: Epoch(1) },
            Action::CancelTasks {
                tasks: [A, B].into()
            }
        ]
    );
    assert_eq!(s.life.state(), &QueryState::Cancelled);
    let s = ok(&submitted(), Input::CancelRequested);
    assert!(s.actions.is_empty(), "nothing placed");
}

#[test]
fn a_query_without_slots_fails_naming_them_and_a_recovery_without_slots_too() {
    let err = crate::placement::PlacementError::NotEnoughSlots { needed: 2, free: 1 };
    let s = ok(&scheduling(), Input::placement_impossible(&err));
    match s.life.state() {
        QueryState::Failed {
            reason: FailureReason::CannotPlace { needed, free, why },
        } => {
            assert_eq!((*needed, *free), (2, 1));
            assert!(why.contains("2 task instances"), "{why}");
        }
        other => panic!("{other:?}"),
    }
    let s = ok(&recovering(), Input::placement_impossible(&err));
    assert!(matches!(s.life.state(), QueryState::Failed { .. }));
    assert_eq!(s.actions, vec![Action::CancelTasks { tasks: [A].into() }]);
}

#[test]
fn a_reattached_query_runs_or_recovers_what_ran_nowhere() {
    let life = QueryLife::reattached(
        QueryId::new("q"),
        [A, B],
        [(A, W1), (B, W2)].into(),
        Some(Epoch(4)),
    );
    assert_eq!(life.state(), &QueryState::Running);
    assert!(step(&life, &Input::CheckpointStarted { epoch: Epoch(4) }).is_err());
    let life = QueryLife::reattached(QueryId::new("q"), [A, B], [(A, W1)].into(), Some(Epoch(4)));
    assert!(matches!(
        life.state(),
        QueryState::Recovering {
            reason: RecoveryReason::LostWhileNoCoordinator { .. }
        }
    ));
    let s = ok(
        &life,
        Input::Placed {
            placement: [(B, W3)].into(),
        },
    );
    assert_eq!(
        s.actions,
        vec![Action::RestoreTasks {
            placement: [(B, W3)].into(),
            from: Some(Epoch(4))
        }]
    );
}

#[test]
fn a_checkpoint_completed_elsewhere_is_where_a_rollback_goes() {
    let mut life = running();
    life.note_completed(Epoch(7));
    life.note_completed(Epoch(5));
    assert_eq!(life.last_completed(), Some(Epoch(7)));
    assert!(step(&life, &Input::CheckpointStarted { epoch: Epoch(7) }).is_err());
    let s = ok(&life, Input::WorkerDead { worker: W2 });
    let s = ok(
        &s.life,
        Input::PerTaskRecoveryImpossible { why: "test".into() },
    );
    assert!(
        s.events.iter().any(|e| matches!(
            e,
            LifeEvent::WholeQueryRollback {
                to: Some(Epoch(7)),
                ..
            }
        )),
        "{:?}",
        s.events
    );
}

#[test]
fn states_inputs_actions_and_events_are_serialisable_for_the_log() {
    let s = ok(
        &recovering(),
        Input::Placed {
            placement: [(B, W3)].into(),
        },
    );
    let json = serde_json::to_string(&(&s.actions, s.life.state())).expect("serialisable");
    assert!(json.contains(r#""action":"restore_tasks""#), "{json}");
    assert!(json.contains(r#""1#0":3"#), "{json}");
    let back: QueryState =
        serde_json::from_str(&serde_json::to_string(s.life.state()).expect("json"))
            .expect("read back");
    assert_eq!(&back, s.life.state());
}

/// What the property test asks of the machine: an input of a kind, fitted to the life or not.
#[derive(Clone, Debug)]
enum Ask {
    Fitting(u8, u8),
    Raw(Input),
}

fn raw_input() -> impl Strategy<Value = Input> {
    let task = (0u32..3, 0u32..2).prop_map(|(t, i)| TaskRef::new(t, i));
    let worker = (1u32..4).prop_map(WorkerId);
    let epoch = (0u64..6).prop_map(Epoch);
    prop_oneof![
        Just(Input::Submitted),
        proptest::collection::btree_map(task.clone(), worker.clone(), 0..4)
            .prop_map(|placement| Input::Placed { placement }),
        Just(Input::PlacementImpossible {
            needed: 3,
            free: 1,
            why: "x".into()
        }),
        (task, worker.clone()).prop_map(|(task, worker)| Input::TaskFailed {
            task,
            worker,
            cause: "x".into()
        }),
        worker.prop_map(|worker| Input::WorkerDead { worker }),
        epoch
            .clone()
            .prop_map(|epoch| Input::CheckpointStarted { epoch }),
        epoch
            .clone()
            .prop_map(|epoch| Input::CheckpointCompleted { epoch }),
        epoch.prop_map(|epoch| Input::CheckpointFailed {
            epoch,
            cause: "x".into()
        }),
        Just(Input::AllTasksFinished),
        Just(Input::CancelRequested),
        Just(Input::StopRequested),
        Just(Input::PerTaskRecoveryImpossible { why: "x".into() }),
        Just(Input::RecoveryDone),
        Just(Input::RecoveryFailed { why: "x".into() }),
    ]
}

fn ask() -> impl Strategy<Value = Ask> {
    prop_oneof![
        3 => (any::<u8>(), any::<u8>()).prop_map(|(a, b)| Ask::Fitting(a, b)),
        2 => raw_input().prop_map(Ask::Raw),
    ]
}

/// An input likely to fit `life`: what a well-behaved coordinator would send next.
fn fitting(life: &QueryLife, a: u8, b: u8) -> Input {
    let placed: Vec<(TaskRef, WorkerId)> = life.placement().iter().map(|(t, w)| (*t, *w)).collect();
    let next_epoch = Epoch(
        life.last_started
            .max(life.last_completed)
            .map_or(1, |e| e.0 + 1),
    );
    match (life.state().kind(), a % 4) {
        (StateKind::Submitted, _) => Input::Submitted,
        (StateKind::Scheduling | StateKind::Recovering, 0 | 1) if !life.awaiting().is_empty() => {
            Input::Placed {
                placement: life
                    .awaiting()
                    .iter()
                    .map(|t| (*t, WorkerId(1 + u32::from(b) % 3)))
                    .collect(),
            }
        }
        (StateKind::Recovering, 2) if b.is_multiple_of(5) => {
            Input::PerTaskRecoveryImpossible { why: "x".into() }
        }
        (StateKind::Recovering, _) => Input::RecoveryDone,
        (StateKind::Running | StateKind::Stopping, 0) => {
            Input::CheckpointStarted { epoch: next_epoch }
        }
        (StateKind::Checkpointing | StateKind::Stopping, 1) => match life.in_flight() {
            Some(epoch) if b.is_multiple_of(3) => Input::CheckpointFailed {
                epoch,
                cause: "x".into(),
            },
            Some(epoch) => Input::CheckpointCompleted { epoch },
            None => Input::CheckpointStarted { epoch: next_epoch },
        },
        (_, 2) if !placed.is_empty() => {
            let (task, worker) = placed[usize::from(b) % placed.len()];
            if b.is_multiple_of(2) {
                Input::TaskFailed {
                    task,
                    worker,
                    cause: "x".into(),
                }
            } else {
                Input::WorkerDead { worker }
            }
        }
        (_, 3) if b.is_multiple_of(16) => Input::CancelRequested,
        (_, 3) if b % 16 == 1 => Input::StopRequested,
        (_, 3) if b % 16 == 2 => Input::AllTasksFinished,
        _ => Input::CheckpointStarted { epoch: next_epoch },
    }
}

fn check_invariants(life: &QueryLife) -> Result<(), TestCaseError> {
    for t in life.placement().keys().chain(life.awaiting()) {
        prop_assert!(life.tasks().contains(t), "{t} is not a task");
    }
    prop_assert!(life
        .placement()
        .keys()
        .all(|t| !life.awaiting().contains(t)));
    match life.state() {
        QueryState::Running | QueryState::Checkpointing { .. } | QueryState::Stopping => {
            prop_assert!(life.awaiting().is_empty());
            prop_assert_eq!(life.placement().len(), life.tasks().len());
        }
        QueryState::Scheduling => prop_assert!(life.placement().is_empty()),
        _ => {}
    }
    match life.state() {
        QueryState::Checkpointing { epoch } => prop_assert_eq!(life.in_flight(), Some(*epoch)),
        QueryState::Stopping => {}
        _ => prop_assert_eq!(life.in_flight(), None),
    }
    if life.state().is_terminal() {
        prop_assert!(life.placement().is_empty() || life.state() == &QueryState::Finished);
        prop_assert!(life.awaiting().is_empty());
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_inputs_never_panic_keep_the_invariants_and_terminal_states_stay_terminal(
        asks in proptest::collection::vec(ask(), 0..60),
    ) {
        let tasks = [TaskRef::new(0, 0), TaskRef::new(0, 1), TaskRef::new(1, 0), TaskRef::new(2, 1)];
        let mut life = QueryLife::new(QueryId::new("p"), tasks);
        let mut committed: Option<Epoch> = None;
        for ask in asks {
            let input = match ask {
                Ask::Fitting(a, b) => fitting(&life, a, b),
                Ask::Raw(input) => input,
            };
            match step(&life, &input) {
                Ok(s) => {
                    prop_assert!(!life.state().is_terminal(), "left terminal {} on {:?}", life.state(), input);
                    let moved = s.life.state() != life.state();
                    let logged = s.events.iter().any(|e| matches!(e, LifeEvent::Transition { .. }));
                    prop_assert_eq!(moved, logged, "a transition is logged iff the state changed");
                    for action in &s.actions {
                        match action {
                            Action::RestoreTasks { placement, from } => {
                                // Only lost tasks are restored, from the last completed checkpoint.
                                for t in placement.keys() {
                                    prop_assert!(life.awaiting().contains(t), "{t} restored without being lost");
                                }
                                prop_assert_eq!(*from, life.last_completed());
                            }
                            Action::CommitCheckpoint { epoch } => {
                                prop_assert!(committed < Some(*epoch), "commits go forward");
                                committed = Some(*epoch);
                            }
                            Action::PlaceTasks { tasks } => {
                                for t in tasks {
                                    prop_assert!(s.life.awaiting().contains(t));
                                }
                            }
                            _ => {}
                        }
                    }
                    prop_assert!(s.life.last_completed() >= life.last_completed());
                    check_invariants(&s.life)?;
                    life = s.life;
                }
                Err(refused) => {
                    prop_assert_eq!(&refused.query, life.query());
                    if life.state().is_terminal() {
                        let is_terminal_refusal = matches!(refused.why, Refusal::Terminal { .. });
                        prop_assert!(is_terminal_refusal);
                    }
                    prop_assert!(!refused.to_string().is_empty());
                }
            }
        }
    }
}
