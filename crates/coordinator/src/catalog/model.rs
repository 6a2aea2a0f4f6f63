//! The catalog in memory, and [`CatalogState::apply`]: the one function through which every
//! edit changes it, live and on replay. It is pure: the same edits from the same state give
//! the same state, which is what makes replaying the log recover the catalog.

use std::collections::{BTreeMap, BTreeSet};

use anduin_types::Epoch;
use serde::{Deserialize, Serialize};

use super::edit::Edit;
use crate::ids::{QueryId, TaskRef, WorkerId};
use crate::life::QueryState;

/// How many lines of control history a query keeps (the oldest go first).
pub const CONTROL_HISTORY_KEPT: usize = 1000;

/// Everything the coordinator must not forget.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CatalogState {
    /// The queries, by name.
    pub queries: BTreeMap<QueryId, QueryEntry>,
    /// The registered workers.
    pub workers: BTreeMap<WorkerId, WorkerEntry>,
    /// The highest worker number ever given: numbers are never reused.
    pub highest_worker: Option<WorkerId>,
    /// The term of the leader that took the catalog over last (coordinators elected by a
    /// lease, whose catalog is in an object store); `None` before any did.
    #[serde(default)]
    pub leader_term: Option<u64>,
    /// The election that leader was elected by.
    #[serde(default)]
    pub elected_by: Option<String>,
}

/// A registered worker.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerEntry {
    /// Where it listens.
    pub address: String,
    /// Its slots.
    pub slots: u32,
}

/// A query's source text.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuerySource {
    /// The file it was read from, its name (`q2.sql`): its extension says the language.
    pub file: String,
    /// The file as the user gave it (`queries/q2.sql`), for the places in errors, when it
    /// is more than its name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub given: Option<String>,
    /// The text.
    pub text: String,
    /// The WebAssembly modules it loads (its `CREATE FUNCTION … LANGUAGE wasm AS 'PATH'`s
    /// and `--udf` modules), sent with it, so that the coordinator and every worker load
    /// the same ones whatever their files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub modules: Vec<ModuleFile>,
}

/// A module sent with a query: its path, relative to the query file's folder (as a
/// `CREATE FUNCTION` names it; a `--udf` module under `udf-modules/`), and its bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleFile {
    /// Where it goes, relative to the query file's folder.
    pub path: String,
    /// Its bytes (a `.wasm` module, or `.wat` text), as base64 in JSON (a third more than
    /// the bytes; an array of numbers is four times as long).
    #[serde(with = "base64_bytes")]
    pub bytes: Vec<u8>,
}

/// `Vec<u8>` as a base64 string.
mod base64_bytes {
    use base64::engine::general_purpose::STANDARD;
    use base64::Engine;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&STANDARD.encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        STANDARD.decode(text).map_err(serde::de::Error::custom)
    }
}

/// The settings a query was submitted with (the flags of `anduin run` that concern it).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct QuerySettings {
    /// `--parallelism`.
    pub parallelism: Option<u32>,
    /// `--checkpoint-interval`, in milliseconds.
    pub checkpoint_interval_ms: Option<u64>,
    /// `--state-backend`.
    pub state_backend: Option<String>,
    /// `--var NAME=VALUE`.
    pub vars: BTreeMap<String, String>,
    /// Every flag of `anduin run` the query was submitted with, as given (the typed fields
    /// above are read from them, for display).
    pub run_args: Vec<String>,
    /// The submitter's working directory: relative paths in the query are resolved there.
    pub cwd: Option<String>,
    /// The rule file applied while the query runs (`--rules FILE`): its name and text.
    pub rules: Option<QuerySource>,
    /// `--rules-interval`, as given.
    pub rules_interval: Option<String>,
}

/// Where a completed checkpoint is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointPointer {
    /// Its epoch.
    pub epoch: Epoch,
    /// Where its manifest is (a path or an object-store URL).
    pub location: String,
}

/// One line of a query's control history.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ControlRecord {
    /// Its number in the query's history, from 1.
    pub seq: u64,
    /// The operator.
    pub operator: String,
    /// The parameter.
    pub param: String,
    /// The value.
    pub value: String,
    /// Who set it.
    pub origin: String,
    /// The epoch it applied at, when known.
    pub epoch: Option<Epoch>,
    /// When, in milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// Its number in the query's control plane, when it came from there (see
    /// [`Edit::ParameterSet`]).
    #[serde(default)]
    pub change_seq: Option<u64>,
    /// The value before it, when known.
    #[serde(default)]
    pub old: Option<String>,
}

/// A failed attempt that another is to follow ([`Edit::AttemptFailed`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttemptFailure {
    /// The attempt that failed (it may not have been deployed: one more than the query's
    /// current attempt).
    pub attempt: u64,
    /// The failures in a row that completed no checkpoint, this one included (0: this
    /// attempt had completed one).
    pub failures: u32,
    /// The query's last complete checkpoint when it failed: a later one is progress.
    pub checkpoint: Option<Epoch>,
    /// Why it failed.
    pub error: String,
    /// When the next attempt starts, in milliseconds since the Unix epoch.
    pub next_at_ms: u64,
}

/// What the catalog knows of one query.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueryEntry {
    /// Its source text.
    pub source: QuerySource,
    /// Its settings.
    pub settings: QuerySettings,
    /// When it was submitted, in milliseconds since the Unix epoch.
    pub submitted_at_ms: u64,
    /// Its plan's fingerprint, once planned.
    pub plan_fingerprint: Option<String>,
    /// Its task instances, once planned.
    pub tasks: BTreeSet<TaskRef>,
    /// Where it is in its life.
    pub state: QueryState,
    /// Where each placed task instance runs (emptied when the query ends).
    pub placement: BTreeMap<TaskRef, WorkerId>,
    /// Each task instance's current attempt (one more each time it is placed): frames of an
    /// earlier attempt are stale.
    pub attempts: BTreeMap<TaskRef, u64>,
    /// Its last completed checkpoint.
    pub last_checkpoint: Option<CheckpointPointer>,
    /// The newest checkpoint given up ([`Edit::CheckpointGivenUp`]): a coordinator that takes
    /// the running attempt over numbers its checkpoints after it.
    #[serde(default)]
    pub newest_given_up: Option<Epoch>,
    /// A user asked to cancel it ([`Edit::CancelRequested`]): a coordinator that takes it over
    /// cancels it.
    #[serde(default)]
    pub cancel_requested: bool,
    /// The current value of each parameter set at run time, by operator then parameter.
    pub params: BTreeMap<String, BTreeMap<String, String>>,
    /// Its control history, the last [`CONTROL_HISTORY_KEPT`] lines.
    pub control_history: Vec<ControlRecord>,
    /// The number of the last line of control history.
    pub control_seq: u64,
    /// The query's current attempt: the last deployment of every task instance (0: none
    /// recorded).
    #[serde(default)]
    pub attempt: u64,
    /// The part each task instance belongs to in the current attempt: the worker it was
    /// deployed on (when its part was restored on another worker, `placement` says where
    /// it runs now).
    #[serde(default)]
    pub parts: BTreeMap<TaskRef, WorkerId>,
    /// How many times each part of the current attempt was restored on another worker: its
    /// incarnation (absent: 0). An executor of an older incarnation is stale.
    #[serde(default)]
    pub incarnations: BTreeMap<WorkerId, u64>,
    /// The parts of the current attempt that ended, in their current incarnation, by part:
    /// `None` when it finished its part, otherwise why not ([`Edit::PartEnded`]).
    #[serde(default)]
    pub ended: BTreeMap<WorkerId, Option<String>>,
    /// The last failed attempt another was to follow ([`Edit::AttemptFailed`]).
    #[serde(default)]
    pub last_failure: Option<AttemptFailure>,
}

impl QueryEntry {
    /// The worker that runs `part` of the current attempt now (`None`: no such part).
    pub fn host(&self, part: WorkerId) -> Option<WorkerId> {
        let task = self
            .parts
            .iter()
            .find(|(_, p)| **p == part)
            .map(|(t, _)| t)?;
        Some(self.placement.get(task).copied().unwrap_or(part))
    }

    /// The failure of the current attempt, when it failed and no attempt followed yet.
    pub fn failed_now(&self) -> Option<&AttemptFailure> {
        self.last_failure
            .as_ref()
            .filter(|f| f.attempt >= self.attempt)
    }

    /// `part`'s incarnation in the current attempt.
    pub fn incarnation(&self, part: WorkerId) -> u64 {
        self.incarnations.get(&part).copied().unwrap_or(0)
    }

    /// Where each part of the current attempt runs, when not on its own worker.
    pub fn moved_parts(&self) -> BTreeMap<WorkerId, WorkerId> {
        self.parts
            .iter()
            .filter_map(|(t, part)| {
                let host = self.placement.get(t)?;
                (host != part).then_some((*part, *host))
            })
            .collect()
    }
}

/// Why an edit does not apply: it would make the catalog inconsistent. A refused edit is
/// never written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EditRefused {
    /// A query of that name exists.
    #[error(
        "a query named `{0}` exists already: cancel or forget it first, or choose another name"
    )]
    QueryExists(QueryId),
    /// No query of that name.
    #[error("no query named `{0}`")]
    UnknownQuery(QueryId),
    /// The query is over.
    #[error("query `{query}` is {state} for good: it changes no more")]
    QueryOver {
        /// The query.
        query: QueryId,
        /// Its final state.
        state: QueryState,
    },
    /// Only a query that is over can be forgotten.
    #[error(
        "query `{query}` is {state}: only a query that is over can be forgotten; cancel it first"
    )]
    QueryNotOver {
        /// The query.
        query: QueryId,
        /// Its state.
        state: QueryState,
    },
    /// A checkpoint not after the last one recorded.
    #[error("query `{query}`: checkpoint {} does not come after checkpoint {}, the last recorded", got.0, last.0)]
    CheckpointNotAfter {
        /// The query.
        query: QueryId,
        /// The last recorded.
        last: Epoch,
        /// The one given.
        got: Epoch,
    },
    /// A task instance not in the query's plan.
    #[error("query `{query}` has no task instance {task} in its plan")]
    UnknownTask {
        /// The query.
        query: QueryId,
        /// The instance.
        task: TaskRef,
    },
    /// An attempt not after the current one.
    #[error("query `{query}`: attempt {got} does not come after attempt {last}, the current one")]
    AttemptNotAfter {
        /// The query.
        query: QueryId,
        /// The current attempt.
        last: u64,
        /// The one given.
        got: u64,
    },
    /// A part the current attempt does not have.
    #[error("query `{query}`: its current attempt has no part of {part}")]
    UnknownPart {
        /// The query.
        query: QueryId,
        /// The part.
        part: WorkerId,
    },
    /// The end of a part of another attempt than the current one.
    #[error("query `{query}`: attempt {got} is not the current one ({current})")]
    NotTheCurrentAttempt {
        /// The query.
        query: QueryId,
        /// The current attempt.
        current: u64,
        /// The one given.
        got: u64,
    },
    /// The end of a part as it no longer runs: an older incarnation, or on another worker.
    #[error("query `{query}`: part {part} runs as incarnation {incarnation} on {host}, not as incarnation {got_incarnation} on {got_host}")]
    NotThePartNow {
        /// The query.
        query: QueryId,
        /// The part.
        part: WorkerId,
        /// Its incarnation now.
        incarnation: u64,
        /// Where it runs now.
        host: WorkerId,
        /// The incarnation given.
        got_incarnation: u64,
        /// The host given.
        got_host: WorkerId,
    },
    /// A worker not registered.
    #[error("{0} is not registered")]
    UnknownWorker(WorkerId),
    /// A worker number given before.
    #[error("{worker} was given before (the highest given is {}): a returning worker registers under a new number", highest.0)]
    WorkerNumberReused {
        /// The number.
        worker: WorkerId,
        /// The highest given.
        highest: WorkerId,
    },
    /// The leader of another election than the one whose coordinators keep this catalog.
    #[error("this catalog is kept by the coordinators elected by `{theirs}`, this one is elected by `{mine}`: give every coordinator of a cluster the same election, and each cluster a checkpoint store of its own")]
    OtherElection {
        /// The catalog's election.
        theirs: String,
        /// The one given.
        mine: String,
    },
    /// A leader's term not after the one that took the catalog over last.
    #[error("leader term {got} does not come after term {current}, which took the catalog over already: this coordinator no longer leads")]
    TermNotAfter {
        /// The term that took it over last.
        current: u64,
        /// The one given.
        got: u64,
    },
}

impl CatalogState {
    /// Applies `edit`, or refuses it and changes nothing.
    pub fn apply(&mut self, edit: &Edit) -> Result<(), EditRefused> {
        self.check(edit)?;
        self.apply_checked(edit);
        Ok(())
    }

    /// Whether `edit` applies, without applying it.
    pub fn check(&self, edit: &Edit) -> Result<(), EditRefused> {
        match edit {
            Edit::QuerySubmitted { query, .. } => {
                if self.queries.contains_key(query) {
                    return Err(EditRefused::QueryExists(query.clone()));
                }
                Ok(())
            }
            Edit::QueryForgotten { query } => {
                let entry = self.query(query)?;
                if !entry.state.is_terminal() {
                    return Err(EditRefused::QueryNotOver {
                        query: query.clone(),
                        state: entry.state.clone(),
                    });
                }
                Ok(())
            }
            Edit::PlanFixed { query, .. }
            | Edit::StateChanged { query, .. }
            | Edit::CheckpointGivenUp { query, .. }
            | Edit::CancelRequested { query }
            | Edit::ParameterSet { query, .. } => self.live_query(query).map(|_| ()),
            Edit::TasksPlaced { query, placement } => {
                let entry = self.live_query(query)?;
                for (task, worker) in placement {
                    if !entry.tasks.contains(task) {
                        return Err(EditRefused::UnknownTask {
                            query: query.clone(),
                            task: *task,
                        });
                    }
                    if !self.workers.contains_key(worker) {
                        return Err(EditRefused::UnknownWorker(*worker));
                    }
                }
                Ok(())
            }
            Edit::AttemptDeployed {
                query,
                attempt,
                placement,
            } => {
                self.check(&Edit::TasksPlaced {
                    query: query.clone(),
                    placement: placement.clone(),
                })?;
                let entry = self.live_query(query)?;
                if *attempt <= entry.attempt {
                    return Err(EditRefused::AttemptNotAfter {
                        query: query.clone(),
                        last: entry.attempt,
                        got: *attempt,
                    });
                }
                Ok(())
            }
            Edit::AttemptFailed { query, failure } => {
                let entry = self.live_query(query)?;
                if failure.attempt < entry.attempt {
                    return Err(EditRefused::NotTheCurrentAttempt {
                        query: query.clone(),
                        current: entry.attempt,
                        got: failure.attempt,
                    });
                }
                Ok(())
            }
            Edit::PartRestored { query, part, host } => {
                let entry = self.live_query(query)?;
                if !entry.parts.values().any(|p| p == part) {
                    return Err(EditRefused::UnknownPart {
                        query: query.clone(),
                        part: *part,
                    });
                }
                if !self.workers.contains_key(host) {
                    return Err(EditRefused::UnknownWorker(*host));
                }
                Ok(())
            }
            Edit::PartEnded {
                query,
                attempt,
                part,
                host,
                incarnation,
                ..
            } => {
                let entry = self.live_query(query)?;
                if *attempt != entry.attempt {
                    return Err(EditRefused::NotTheCurrentAttempt {
                        query: query.clone(),
                        current: entry.attempt,
                        got: *attempt,
                    });
                }
                let Some(now) = entry.host(*part) else {
                    return Err(EditRefused::UnknownPart {
                        query: query.clone(),
                        part: *part,
                    });
                };
                if now != *host || entry.incarnation(*part) != *incarnation {
                    return Err(EditRefused::NotThePartNow {
                        query: query.clone(),
                        part: *part,
                        incarnation: entry.incarnation(*part),
                        host: now,
                        got_incarnation: *incarnation,
                        got_host: *host,
                    });
                }
                Ok(())
            }
            Edit::CheckpointCompleted { query, pointer } => {
                let entry = self.live_query(query)?;
                match &entry.last_checkpoint {
                    Some(last) if pointer.epoch <= last.epoch => {
                        Err(EditRefused::CheckpointNotAfter {
                            query: query.clone(),
                            last: last.epoch,
                            got: pointer.epoch,
                        })
                    }
                    _ => Ok(()),
                }
            }
            Edit::WorkerRegistered { worker, .. } => match self.highest_worker {
                Some(highest) if *worker <= highest && !self.workers.contains_key(worker) => {
                    Err(EditRefused::WorkerNumberReused {
                        worker: *worker,
                        highest,
                    })
                }
                _ => Ok(()),
            },
            Edit::WorkerLeft { worker } => {
                if !self.workers.contains_key(worker) {
                    return Err(EditRefused::UnknownWorker(*worker));
                }
                Ok(())
            }
            Edit::LeaderTookOver { term, election } => {
                if let Some(theirs) = self
                    .elected_by
                    .as_ref()
                    .filter(|e| !e.is_empty() && *e != election)
                {
                    return Err(EditRefused::OtherElection {
                        theirs: theirs.clone(),
                        mine: election.clone(),
                    });
                }
                match self.leader_term {
                    Some(current) if *term <= current => Err(EditRefused::TermNotAfter {
                        current,
                        got: *term,
                    }),
                    _ => Ok(()),
                }
            }
        }
    }

    fn query(&self, query: &QueryId) -> Result<&QueryEntry, EditRefused> {
        self.queries
            .get(query)
            .ok_or_else(|| EditRefused::UnknownQuery(query.clone()))
    }

    fn live_query(&self, query: &QueryId) -> Result<&QueryEntry, EditRefused> {
        let entry = self.query(query)?;
        if entry.state.is_terminal() {
            return Err(EditRefused::QueryOver {
                query: query.clone(),
                state: entry.state.clone(),
            });
        }
        Ok(entry)
    }

    /// Applies an edit [`check`](Self::check) accepted.
    fn apply_checked(&mut self, edit: &Edit) {
        match edit {
            Edit::QuerySubmitted {
                query,
                source,
                settings,
                at_ms,
            } => {
                self.queries.insert(
                    query.clone(),
                    QueryEntry {
                        source: source.clone(),
                        settings: settings.clone(),
                        submitted_at_ms: *at_ms,
                        plan_fingerprint: None,
                        tasks: BTreeSet::new(),
                        state: QueryState::Submitted,
                        placement: BTreeMap::new(),
                        attempts: BTreeMap::new(),
                        last_checkpoint: None,
                        newest_given_up: None,
                        cancel_requested: false,
                        params: BTreeMap::new(),
                        control_history: Vec::new(),
                        control_seq: 0,
                        attempt: 0,
                        parts: BTreeMap::new(),
                        incarnations: BTreeMap::new(),
                        ended: BTreeMap::new(),
                        last_failure: None,
                    },
                );
            }
            Edit::QueryForgotten { query } => {
                self.queries.remove(query);
            }
            Edit::PlanFixed {
                query,
                fingerprint,
                tasks,
            } => {
                if let Some(q) = self.queries.get_mut(query) {
                    q.plan_fingerprint = Some(fingerprint.clone());
                    q.tasks = tasks.clone();
                    q.placement.retain(|t, _| tasks.contains(t));
                    q.attempts.retain(|t, _| tasks.contains(t));
                    q.parts.retain(|t, _| tasks.contains(t));
                    let parts: BTreeSet<WorkerId> = q.parts.values().copied().collect();
                    q.ended.retain(|p, _| parts.contains(p));
                }
            }
            Edit::StateChanged { query, state } => {
                if let Some(q) = self.queries.get_mut(query) {
                    q.state = state.clone();
                    if state.is_terminal() {
                        q.placement.clear();
                        q.parts.clear();
                        q.incarnations.clear();
                        q.ended.clear();
                    }
                }
            }
            Edit::TasksPlaced { query, placement } => {
                if let Some(q) = self.queries.get_mut(query) {
                    for (task, worker) in placement {
                        q.placement.insert(*task, *worker);
                        *q.attempts.entry(*task).or_insert(0) += 1;
                    }
                }
            }
            Edit::AttemptDeployed {
                query,
                attempt,
                placement,
            } => {
                if let Some(q) = self.queries.get_mut(query) {
                    for (task, worker) in placement {
                        q.placement.insert(*task, *worker);
                        *q.attempts.entry(*task).or_insert(0) += 1;
                    }
                    q.attempt = *attempt;
                    q.parts = placement.clone();
                    q.incarnations.clear();
                    q.ended.clear();
                }
            }
            Edit::PartRestored { query, part, host } => {
                if let Some(q) = self.queries.get_mut(query) {
                    for (task, _) in q.parts.iter().filter(|(_, p)| *p == part) {
                        q.placement.insert(*task, *host);
                        *q.attempts.entry(*task).or_insert(0) += 1;
                    }
                    *q.incarnations.entry(*part).or_insert(0) += 1;
                    // Its new incarnation has not ended.
                    q.ended.remove(part);
                }
            }
            Edit::PartEnded {
                query, part, error, ..
            } => {
                if let Some(q) = self.queries.get_mut(query) {
                    q.ended.insert(*part, error.clone());
                }
            }
            Edit::CheckpointCompleted { query, pointer } => {
                if let Some(q) = self.queries.get_mut(query) {
                    q.last_checkpoint = Some(pointer.clone());
                }
            }
            Edit::CheckpointGivenUp { query, epoch } => {
                if let Some(q) = self.queries.get_mut(query) {
                    q.newest_given_up = q.newest_given_up.max(Some(*epoch));
                }
            }
            Edit::AttemptFailed { query, failure } => {
                if let Some(q) = self.queries.get_mut(query) {
                    q.last_failure = Some(failure.clone());
                }
            }
            Edit::CancelRequested { query } => {
                if let Some(q) = self.queries.get_mut(query) {
                    q.cancel_requested = true;
                }
            }
            Edit::ParameterSet {
                query,
                operator,
                param,
                value,
                origin,
                epoch,
                at_ms,
                seq,
                old,
            } => {
                if let Some(q) = self.queries.get_mut(query) {
                    q.params
                        .entry(operator.clone())
                        .or_default()
                        .insert(param.clone(), value.clone());
                    q.control_seq += 1;
                    q.control_history.push(ControlRecord {
                        seq: q.control_seq,
                        operator: operator.clone(),
                        param: param.clone(),
                        value: value.clone(),
                        origin: origin.clone(),
                        epoch: *epoch,
                        at_ms: *at_ms,
                        change_seq: *seq,
                        old: old.clone(),
                    });
                    let over = q.control_history.len().saturating_sub(CONTROL_HISTORY_KEPT);
                    q.control_history.drain(..over);
                }
            }
            Edit::WorkerRegistered {
                worker,
                address,
                slots,
            } => {
                self.workers.insert(
                    *worker,
                    WorkerEntry {
                        address: address.clone(),
                        slots: *slots,
                    },
                );
                self.highest_worker = self.highest_worker.max(Some(*worker));
            }
            Edit::WorkerLeft { worker } => {
                self.workers.remove(worker);
            }
            Edit::LeaderTookOver { term, election } => {
                self.leader_term = Some(*term);
                self.elected_by = Some(election.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q() -> QueryId {
        QueryId::new("q2")
    }

    #[test]
    fn a_module_s_bytes_are_base64_text_and_come_back_whole() {
        let m = ModuleFile {
            path: "udfs/m.wasm".into(),
            bytes: (0..=255).collect(),
        };
        let json = serde_json::to_string(&m).expect("serialises");
        assert!(json.len() < 400, "base64, not an array of numbers: {json}");
        let back: ModuleFile = serde_json::from_str(&json).expect("reads back");
        assert_eq!(back, m);
        let bad = r#"{"path":"m.wasm","bytes":"not base64!"}"#;
        assert!(serde_json::from_str::<ModuleFile>(bad).is_err());
    }

    fn submit() -> Edit {
        Edit::QuerySubmitted {
            query: q(),
            source: QuerySource {
                file: "q2.sql".into(),
                text: "SELECT 1".into(),
                ..QuerySource::default()
            },
            settings: QuerySettings::default(),
            at_ms: 1,
        }
    }

    fn applied(edits: &[Edit]) -> CatalogState {
        let mut s = CatalogState::default();
        for e in edits {
            s.apply(e).unwrap_or_else(|err| panic!("{e:?}: {err}"));
        }
        s
    }

    #[test]
    fn a_query_is_submitted_planned_placed_checkpointed_and_forgotten_once_over() {
        let (t0, t1) = (TaskRef::new(0, 0), TaskRef::new(1, 0));
        let mut s = applied(&[
            Edit::WorkerRegistered {
                worker: WorkerId(1),
                address: "a:1".into(),
                slots: 2,
            },
            submit(),
            Edit::PlanFixed {
                query: q(),
                fingerprint: "f1".into(),
                tasks: [t0, t1].into(),
            },
            Edit::TasksPlaced {
                query: q(),
                placement: [(t0, WorkerId(1)), (t1, WorkerId(1))].into(),
            },
            Edit::TasksPlaced {
                query: q(),
                placement: [(t1, WorkerId(1))].into(),
            },
            Edit::CheckpointCompleted {
                query: q(),
                pointer: CheckpointPointer {
                    epoch: Epoch(3),
                    location: "file:///ck/3".into(),
                },
            },
        ]);
        let entry = &s.queries[&q()];
        assert_eq!(entry.attempts[&t1], 2);
        assert_eq!(entry.attempts[&t0], 1);
        let older = Edit::CheckpointCompleted {
            query: q(),
            pointer: CheckpointPointer {
                epoch: Epoch(3),
                location: "x".into(),
            },
        };
        assert!(matches!(
            s.apply(&older),
            Err(EditRefused::CheckpointNotAfter { .. })
        ));
        let forget = Edit::QueryForgotten { query: q() };
        assert!(matches!(
            s.apply(&forget),
            Err(EditRefused::QueryNotOver { .. })
        ));
        s.apply(&Edit::StateChanged {
            query: q(),
            state: QueryState::Cancelled,
        })
        .expect("cancel");
        assert!(s.queries[&q()].placement.is_empty());
        let more = Edit::StateChanged {
            query: q(),
            state: QueryState::Running,
        };
        assert!(matches!(s.apply(&more), Err(EditRefused::QueryOver { .. })));
        s.apply(&forget).expect("over");
        assert!(s.queries.is_empty());
        s.apply(&submit()).expect("the name is free again");
    }

    #[test]
    fn a_restored_part_runs_elsewhere_in_the_same_attempt_with_a_new_incarnation() {
        let (t0, t1, t2) = (TaskRef::new(0, 0), TaskRef::new(0, 1), TaskRef::new(1, 0));
        let reg = |n| Edit::WorkerRegistered {
            worker: WorkerId(n),
            address: format!("h:{n}"),
            slots: 2,
        };
        let deploy = |attempt, w| Edit::AttemptDeployed {
            query: q(),
            attempt,
            placement: [(t0, WorkerId(1)), (t1, WorkerId(w)), (t2, WorkerId(w))].into(),
        };
        let mut s = applied(&[
            reg(1),
            reg(2),
            reg(3),
            submit(),
            Edit::PlanFixed {
                query: q(),
                fingerprint: "f".into(),
                tasks: [t0, t1, t2].into(),
            },
            deploy(1, 2),
            Edit::WorkerLeft {
                worker: WorkerId(2),
            },
            Edit::PartRestored {
                query: q(),
                part: WorkerId(2),
                host: WorkerId(3),
            },
        ]);
        let entry = &s.queries[&q()];
        assert_eq!(entry.attempt, 1);
        assert_eq!(entry.placement[&t1], WorkerId(3));
        assert_eq!(entry.placement[&t2], WorkerId(3));
        assert_eq!(entry.placement[&t0], WorkerId(1));
        assert_eq!(entry.parts[&t1], WorkerId(2));
        assert_eq!(entry.attempts[&t1], 2);
        assert_eq!(entry.attempts[&t0], 1);
        assert_eq!(entry.incarnations[&WorkerId(2)], 1);
        assert_eq!(entry.moved_parts(), [(WorkerId(2), WorkerId(3))].into());
        let before = s.clone();
        assert!(matches!(
            s.apply(&deploy(1, 3)),
            Err(EditRefused::AttemptNotAfter {
                last: 1,
                got: 1,
                ..
            })
        ));
        let nowhere = Edit::PartRestored {
            query: q(),
            part: WorkerId(3),
            host: WorkerId(1),
        };
        assert!(matches!(
            s.apply(&nowhere),
            Err(EditRefused::UnknownPart { .. })
        ));
        assert_eq!(s, before);
        s.apply(&deploy(2, 3)).expect("a new attempt");
        let entry = &s.queries[&q()];
        assert!(entry.incarnations.is_empty());
        assert!(entry.moved_parts().is_empty());
    }

    #[test]
    fn a_cancel_asked_for_is_kept_for_the_next_coordinator_and_refused_once_over() {
        let cancel = Edit::CancelRequested { query: q() };
        let s = applied(&[submit(), cancel.clone()]);
        assert!(s.queries[&q()].cancel_requested);
        assert!(!applied(&[submit()]).queries[&q()].cancel_requested);
        let mut over = applied(&[
            submit(),
            Edit::StateChanged {
                query: q(),
                state: QueryState::Cancelled,
            },
        ]);
        assert!(matches!(
            over.apply(&cancel),
            Err(EditRefused::QueryOver { .. })
        ));
    }

    #[test]
    fn a_failed_attempt_is_the_current_one_s_failure_until_the_next_is_deployed() {
        let t0 = TaskRef::new(0, 0);
        let failed = |attempt, failures| Edit::AttemptFailed {
            query: q(),
            failure: AttemptFailure {
                attempt,
                failures,
                checkpoint: Some(Epoch(4)),
                error: "boom".into(),
                next_at_ms: 1_500,
            },
        };
        let deploy = |attempt| Edit::AttemptDeployed {
            query: q(),
            attempt,
            placement: [(t0, WorkerId(1))].into(),
        };
        let mut s = applied(&[
            Edit::WorkerRegistered {
                worker: WorkerId(1),
                address: "a:1".into(),
                slots: 2,
            },
            submit(),
            Edit::PlanFixed {
                query: q(),
                fingerprint: "f".into(),
                tasks: [t0].into(),
            },
            deploy(1),
            failed(1, 1),
        ]);
        let entry = &s.queries[&q()];
        assert_eq!(
            entry.failed_now().map(|f| (f.attempt, f.failures)),
            Some((1, 1))
        );
        // An attempt that failed before it was deployed is numbered after the current one.
        s.apply(&failed(2, 2)).expect("the next attempt's failure");
        s.apply(&deploy(2)).expect("deployed");
        s.apply(&deploy(3)).expect("deployed");
        let entry = &s.queries[&q()];
        assert_eq!(entry.failed_now(), None, "attempt 3 runs");
        assert_eq!(entry.last_failure.as_ref().map(|f| f.failures), Some(2));
        assert!(matches!(
            s.apply(&failed(2, 3)),
            Err(EditRefused::NotTheCurrentAttempt {
                current: 3,
                got: 2,
                ..
            })
        ));
        // Kept through a snapshot (the catalog's JSON), and by a catalog written before
        // failures were recorded (no field): none.
        let json = serde_json::to_value(&s.queries[&q()]).expect("json");
        let back: QueryEntry = serde_json::from_value(json.clone()).expect("back");
        assert_eq!(back, s.queries[&q()]);
        let mut old = json;
        old.as_object_mut()
            .expect("an object")
            .remove("last_failure");
        let old: QueryEntry = serde_json::from_value(old).expect("an older entry");
        assert_eq!(old.last_failure, None);
    }

    #[test]
    fn the_newest_checkpoint_given_up_is_kept_whatever_the_order_of_the_edits() {
        let given_up = |e| Edit::CheckpointGivenUp {
            query: q(),
            epoch: Epoch(e),
        };
        let s = applied(&[submit(), given_up(3), given_up(2)]);
        assert_eq!(s.queries[&q()].newest_given_up, Some(Epoch(3)));
        let mut over = applied(&[
            submit(),
            Edit::StateChanged {
                query: q(),
                state: QueryState::Finished,
            },
        ]);
        assert!(matches!(
            over.apply(&given_up(4)),
            Err(EditRefused::QueryOver { .. })
        ));
    }

    #[test]
    fn the_end_of_a_part_is_kept_for_its_current_incarnation_and_attempt_only() {
        let (t0, t1) = (TaskRef::new(0, 0), TaskRef::new(1, 0));
        let reg = |n| Edit::WorkerRegistered {
            worker: WorkerId(n),
            address: format!("h:{n}"),
            slots: 2,
        };
        let deploy = |attempt| Edit::AttemptDeployed {
            query: q(),
            attempt,
            placement: [(t0, WorkerId(1)), (t1, WorkerId(2))].into(),
        };
        let ended = |part, host, incarnation, error: Option<&str>| Edit::PartEnded {
            query: q(),
            attempt: 1,
            part: WorkerId(part),
            host: WorkerId(host),
            incarnation,
            error: error.map(String::from),
        };
        let mut s = applied(&[
            reg(1),
            reg(2),
            reg(3),
            submit(),
            Edit::PlanFixed {
                query: q(),
                fingerprint: "f".into(),
                tasks: [t0, t1].into(),
            },
            deploy(1),
            ended(1, 1, 0, None),
        ]);
        assert_eq!(s.queries[&q()].ended, [(WorkerId(1), None)].into());
        // Part 2 is restored on worker 3: its end reported by worker 2, or as its first
        // incarnation, is stale; as its second, on worker 3, it is the part's.
        s.apply(&Edit::PartRestored {
            query: q(),
            part: WorkerId(2),
            host: WorkerId(3),
        })
        .expect("restored");
        let before = s.clone();
        assert!(matches!(
            s.apply(&ended(2, 2, 1, None)),
            Err(EditRefused::NotThePartNow { .. })
        ));
        assert!(matches!(
            s.apply(&ended(2, 3, 0, None)),
            Err(EditRefused::NotThePartNow { .. })
        ));
        assert!(matches!(
            s.apply(&ended(4, 4, 0, None)),
            Err(EditRefused::UnknownPart { .. })
        ));
        let mut other = ended(2, 3, 1, None);
        if let Edit::PartEnded { attempt, .. } = &mut other {
            *attempt = 2;
        }
        assert!(matches!(
            s.apply(&other),
            Err(EditRefused::NotTheCurrentAttempt { .. })
        ));
        assert_eq!(s, before);
        s.apply(&ended(2, 3, 1, Some("disk full")))
            .expect("the part now");
        assert_eq!(
            s.queries[&q()].ended[&WorkerId(2)].as_deref(),
            Some("disk full")
        );
        // Restored again, its new incarnation has not ended; a new attempt forgets every end.
        s.apply(&Edit::PartRestored {
            query: q(),
            part: WorkerId(2),
            host: WorkerId(1),
        })
        .expect("restored again");
        assert_eq!(s.queries[&q()].ended, [(WorkerId(1), None)].into());
        s.apply(&deploy(2)).expect("a new attempt");
        assert!(s.queries[&q()].ended.is_empty());
    }

    #[test]
    fn a_refused_edit_changes_nothing() {
        let mut s = applied(&[submit()]);
        let before = s.clone();
        let bad = Edit::TasksPlaced {
            query: q(),
            placement: [(TaskRef::new(0, 0), WorkerId(1))].into(),
        };
        assert!(matches!(
            s.apply(&bad),
            Err(EditRefused::UnknownTask { .. })
        ));
        assert!(s.apply(&submit()).is_err());
        assert_eq!(s, before);
    }

    #[test]
    fn worker_numbers_are_never_given_twice_but_a_worker_may_re_attach() {
        let reg = |n| Edit::WorkerRegistered {
            worker: WorkerId(n),
            address: format!("h:{n}"),
            slots: 1,
        };
        let mut s = applied(&[
            reg(1),
            reg(2),
            reg(2),
            Edit::WorkerLeft {
                worker: WorkerId(1),
            },
        ]);
        assert_eq!(
            s.apply(&reg(1)),
            Err(EditRefused::WorkerNumberReused {
                worker: WorkerId(1),
                highest: WorkerId(2)
            })
        );
        s.apply(&reg(3)).expect("a new number");
        assert_eq!(s.workers.len(), 2);
    }

    #[test]
    fn parameters_keep_their_last_value_and_the_history_its_last_lines() {
        let mut s = applied(&[submit()]);
        for i in 0..(CONTROL_HISTORY_KEPT as u64 + 5) {
            s.apply(&Edit::ParameterSet {
                query: q(),
                operator: "f".into(),
                param: "threshold".into(),
                value: i.to_string(),
                origin: "ctl".into(),
                epoch: None,
                at_ms: i,
                seq: Some(i + 1),
                old: None,
            })
            .expect("set");
        }
        let entry = &s.queries[&q()];
        assert_eq!(
            entry.params["f"]["threshold"],
            (CONTROL_HISTORY_KEPT + 4).to_string()
        );
        assert_eq!(entry.control_history.len(), CONTROL_HISTORY_KEPT);
        assert_eq!(entry.control_history[0].seq, 6);
        assert_eq!(entry.control_seq, CONTROL_HISTORY_KEPT as u64 + 5);
    }
}
