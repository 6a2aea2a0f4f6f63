//! What the catalog's scenarios share: a realistic run of edits, the state they make in
//! memory, and a look at the state directory.
#![allow(dead_code)] // Each scenario uses a part.

use std::path::Path;
use std::time::Instant;

use anduin_coordinator::catalog::{
    Catalog, CatalogOptions, CatalogState, CheckpointPointer, Edit, QuerySettings, QuerySource,
};
use anduin_coordinator::life::QueryState;
use anduin_coordinator::{QueryId, TaskRef, WorkerId};
use anduin_types::Epoch;

/// A coordinator's edits for one query on two workers, `n` of them (cycling through
/// checkpoints and parameter changes after the first few).
pub fn edits(n: usize) -> Vec<Edit> {
    let q = QueryId::new("q2");
    let (a, b) = (TaskRef::new(0, 0), TaskRef::new(1, 0));
    let mut out = vec![
        Edit::WorkerRegistered {
            worker: WorkerId(1),
            address: "127.0.0.1:7401".into(),
            slots: 4,
        },
        Edit::WorkerRegistered {
            worker: WorkerId(2),
            address: "127.0.0.1:7402".into(),
            slots: 4,
        },
        Edit::QuerySubmitted {
            query: q.clone(),
            source: QuerySource {
                file: "q2.sql".into(),
                text: "SELECT auction, price FROM bid WHERE price > ${MIN}".into(),
                ..QuerySource::default()
            },
            settings: QuerySettings {
                parallelism: Some(2),
                checkpoint_interval_ms: Some(1000),
                state_backend: None,
                vars: [("MIN".to_string(), "10".to_string())].into(),
                ..QuerySettings::default()
            },
            at_ms: 1_700_000_000_000,
        },
        Edit::PlanFixed {
            query: q.clone(),
            fingerprint: "plan-7f3a".into(),
            tasks: [a, b].into(),
        },
        Edit::StateChanged {
            query: q.clone(),
            state: QueryState::Scheduling,
        },
        Edit::TasksPlaced {
            query: q.clone(),
            placement: [(a, WorkerId(1)), (b, WorkerId(2))].into(),
        },
        Edit::StateChanged {
            query: q.clone(),
            state: QueryState::Running,
        },
    ];
    let mut epoch = 0;
    while out.len() < n {
        epoch += 1;
        out.push(if epoch % 3 == 0 {
            Edit::ParameterSet {
                query: q.clone(),
                operator: "filter".into(),
                param: "min".into(),
                value: epoch.to_string(),
                origin: "ctl".into(),
                epoch: Some(Epoch(epoch)),
                at_ms: 1_700_000_000_000 + epoch,
                seq: Some(epoch),
                old: None,
            }
        } else {
            Edit::CheckpointCompleted {
                query: q.clone(),
                pointer: CheckpointPointer {
                    epoch: Epoch(epoch),
                    location: format!("file:///shared/ckpt/q2/{epoch}"),
                },
            }
        });
    }
    out.truncate(n);
    out
}

/// The catalog `edits` make, applied in memory.
pub fn in_memory(edits: &[Edit]) -> CatalogState {
    let mut state = CatalogState::default();
    for e in edits {
        state.apply(e).expect("the scenario's edits apply");
    }
    state
}

/// Options that never snapshot on their own.
pub fn no_snapshots() -> CatalogOptions {
    CatalogOptions {
        snapshot_every_edits: u64::MAX,
        snapshot_every: std::time::Duration::from_secs(1 << 40),
        keep_snapshots: 2,
    }
}

/// Opens the catalog in `dir`.
pub fn open(dir: &Path, options: CatalogOptions) -> Catalog {
    Catalog::open(dir, options, Instant::now()).expect("the catalog opens")
}

/// Appends every edit.
pub fn append_all(catalog: &mut Catalog, edits: &[Edit]) {
    for e in edits {
        catalog
            .append(e.clone(), Instant::now())
            .expect("the edit is appended");
    }
}

/// The catalog's files in `dir`, by name, sorted (the lock file left out).
pub fn files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("the state directory lists")
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|n| n != "LOCK")
        .collect();
    names.sort();
    names
}

pub mod pipeline;
