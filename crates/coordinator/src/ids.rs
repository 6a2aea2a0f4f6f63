//! The names the coordinator gives things: queries, workers, task instances and catalog
//! transactions.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A query, by the name it was submitted under (`anduin status q2`, `anduin cancel q2`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct QueryId(pub String);

impl QueryId {
    /// The query named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        QueryId(name.into())
    }
}

impl fmt::Display for QueryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A worker process, by the number the coordinator gave it when it first registered. Numbers
/// are never reused: a worker declared dead that comes back registers again under a new one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct WorkerId(pub u32);

impl fmt::Display for WorkerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "worker {}", self.0)
    }
}

/// One instance of one task of a query's physical plan: the unit that is placed, takes one
/// slot of a worker, fails and is restored. (The runtime's `InstanceRef` names the same thing
/// with `usize` fields.) Written `task#instance`, also in the catalog's files.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TaskRef {
    /// The task's index in the physical plan.
    pub task: u32,
    /// The instance, `0..parallelism`.
    pub instance: u32,
}

impl TaskRef {
    /// Instance `instance` of task `task`.
    pub const fn new(task: u32, instance: u32) -> Self {
        TaskRef { task, instance }
    }
}

impl fmt::Display for TaskRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}#{}", self.task, self.instance)
    }
}

impl std::str::FromStr for TaskRef {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || format!("`{s}` is not a task instance: expected `TASK#INSTANCE`, as `3#0`");
        let (task, instance) = s.split_once('#').ok_or_else(bad)?;
        Ok(TaskRef {
            task: task.parse().map_err(|_| bad())?,
            instance: instance.parse().map_err(|_| bad())?,
        })
    }
}

// As a string, so that a `TaskRef` can be the key of a map in JSON.
impl Serialize for TaskRef {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for TaskRef {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// The number of an edit of the catalog, from 1 on, one more for every edit (HDFS' txid). A
/// snapshot holds every edit up to its txid; `Txid(0)` is the empty catalog.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Txid(pub u64);

impl Txid {
    /// The txid after this one.
    pub fn next(self) -> Txid {
        Txid(self.0 + 1)
    }
}

impl fmt::Display for Txid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "txid {}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_ref_is_written_task_hash_instance_and_read_back_also_as_a_json_map_key() {
        let t = TaskRef::new(3, 1);
        assert_eq!(t.to_string(), "3#1");
        assert_eq!("3#1".parse::<TaskRef>(), Ok(t));
        assert!("3".parse::<TaskRef>().is_err());
        assert!("a#1".parse::<TaskRef>().is_err());
        let map: std::collections::BTreeMap<TaskRef, WorkerId> = [(t, WorkerId(2))].into();
        let json = serde_json::to_string(&map).expect("a string key");
        assert_eq!(json, r##"{"3#1":2}"##);
        let back: std::collections::BTreeMap<TaskRef, WorkerId> =
            serde_json::from_str(&json).expect("read back");
        assert_eq!(back, map);
    }
}
