//! Whatever the edits (accepted or refused), wherever the snapshots fall and however often the
//! catalog is reopened, it holds what applying the accepted edits in memory gives.

use crate::common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use anduin_coordinator::catalog::{
    Catalog, CatalogError, CatalogOptions, CatalogState, CheckpointPointer, Edit, QuerySettings,
    QuerySource,
};
use anduin_coordinator::life::QueryState;
use anduin_coordinator::{QueryId, TaskRef, Txid, WorkerId};
use anduin_types::Epoch;
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Step {
    Append(Box<Edit>),
    Snapshot,
    Reopen,
}

fn edit() -> impl Strategy<Value = Edit> {
    let query = (0u8..2).prop_map(|q| QueryId::new(format!("q{q}")));
    let worker = (1u32..5).prop_map(WorkerId);
    let task = (0u32..2, 0u32..2).prop_map(|(t, i)| TaskRef::new(t, i));
    let state = prop_oneof![
        3 => Just(QueryState::Scheduling),
        3 => Just(QueryState::Running),
        3 => (1u64..9).prop_map(|e| QueryState::Checkpointing { epoch: Epoch(e) }),
        2 => Just(QueryState::Stopping),
        1 => Just(QueryState::Finished),
        1 => Just(QueryState::Cancelled),
    ];
    prop_oneof![
        3 => (worker.clone(), 1u32..8).prop_map(|(worker, slots)| Edit::WorkerRegistered {
            worker,
            address: format!("127.0.0.1:{}", 7400 + worker.0),
            slots
        }),
        1 => worker.clone().prop_map(|worker| Edit::WorkerLeft { worker }),
        3 => (query.clone(), "[a-z ]{0,40}", proptest::option::of(1u32..8)).prop_map(|(query, text, parallelism)| {
            Edit::QuerySubmitted {
                query,
                source: QuerySource { file: "q.sql".into(), text, ..QuerySource::default() },
                settings: QuerySettings { parallelism, ..QuerySettings::default() },
                at_ms: 7,
            }
        }),
        3 => (query.clone(), proptest::collection::btree_set(task.clone(), 0..5)).prop_map(|(query, tasks)| {
            Edit::PlanFixed { query, fingerprint: format!("f{}", tasks.len()), tasks }
        }),
        2 => (query.clone(), state).prop_map(|(query, state)| Edit::StateChanged { query, state }),
        4 => (query.clone(), proptest::collection::btree_map(task.clone(), worker.clone(), 0..3))
            .prop_map(|(query, placement)| Edit::TasksPlaced { query, placement }),
        3 => (query.clone(), 1u64..6, proptest::collection::btree_map(task, worker.clone(), 0..3))
            .prop_map(|(query, attempt, placement)| Edit::AttemptDeployed { query, attempt, placement }),
        2 => (query.clone(), worker.clone(), worker.clone())
            .prop_map(|(query, part, host)| Edit::PartRestored { query, part, host }),
        3 => (query.clone(), 1u64..30).prop_map(|(query, e)| Edit::CheckpointCompleted {
            query,
            pointer: CheckpointPointer { epoch: Epoch(e), location: format!("file:///c/{e}") }
        }),
        2 => (query.clone(), 1u64..30)
            .prop_map(|(query, e)| Edit::CheckpointGivenUp { query, epoch: Epoch(e) }),
        2 => (query.clone(), 1u64..4, worker.clone(), worker.clone(), 0u64..2, proptest::option::of("[a-z]{1,8}"))
            .prop_map(|(query, attempt, part, host, incarnation, error)| Edit::PartEnded {
                query, attempt, part, host, incarnation, error
            }),
        3 => (query.clone(), "[a-c]", "[x-z]", "[0-9]{1,3}").prop_map(|(query, operator, param, value)| {
            Edit::ParameterSet { query, operator, param, value, origin: "ctl".into(), epoch: None, at_ms: 1, seq: Some(1), old: None }
        }),
        1 => query.prop_map(|query| Edit::QueryForgotten { query }),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        12 => edit().prop_map(|e| Step::Append(Box::new(e))),
        1 => Just(Step::Snapshot),
        1 => Just(Step::Reopen),
    ]
}

fn reopen(
    dir: &std::path::Path,
    options: CatalogOptions,
    expected: &CatalogState,
    accepted: u64,
) -> Result<Catalog, TestCaseError> {
    let catalog = Catalog::open(dir, options, Instant::now())
        .map_err(|e| TestCaseError::fail(format!("reopen: {e}")))?;
    prop_assert_eq!(catalog.state(), expected);
    prop_assert_eq!(catalog.last_txid(), Txid(accepted));
    prop_assert_eq!(catalog.recovered().torn_tail.as_ref(), None);
    Ok(catalog)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn random_edits_and_snapshots_reopen_to_the_in_memory_state(
        steps in proptest::collection::vec(step(), 0..80),
        every in 1u64..12,
        keep in 1usize..4,
    ) {
        let dir = tempfile::tempdir().expect("tempdir");
        let options = CatalogOptions {
            snapshot_every_edits: every,
            snapshot_every: Duration::from_secs(3600),
            keep_snapshots: keep,
        };
        let mut expected = CatalogState::default();
        let mut accepted = 0u64;
        let mut catalog = Catalog::open(dir.path(), options, Instant::now()).expect("opens");
        for step in steps {
            match step {
                Step::Append(edit) => {
                    let in_memory = expected.apply(&edit);
                    match catalog.append(*edit, Instant::now()) {
                        Ok(txid) => {
                            prop_assert!(in_memory.is_ok());
                            accepted += 1;
                            prop_assert_eq!(txid, Txid(accepted));
                        }
                        Err(CatalogError::Refused(why)) => {
                            prop_assert_eq!(in_memory, Err(why));
                        }
                        Err(other) => prop_assert!(false, "append failed: {other}"),
                    }
                    prop_assert_eq!(catalog.state(), &expected);
                }
                Step::Snapshot => {
                    catalog.snapshot().expect("a snapshot");
                }
                Step::Reopen => {
                    drop(catalog);
                    catalog = reopen(dir.path(), options, &expected, accepted)?;
                }
            }
        }
        drop(catalog);
        let catalog = reopen(dir.path(), options, &expected, accepted)?;
        // Never more snapshots than kept, and no segment older than the oldest kept needs.
        let snapshots: BTreeSet<String> = common::files(dir.path())
            .into_iter()
            .filter(|f| f.starts_with("snapshot-"))
            .collect();
        prop_assert!(snapshots.len() <= keep, "{:?}", snapshots);
        prop_assert!(catalog.recovered().replayed <= accepted);
    }
}
