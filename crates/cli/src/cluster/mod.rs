//! Running queries on a cluster of processes: a coordinator ([`coordinator`]), workers that
//! offer it their slots ([`worker`]), one executor process per worker and query attempt
//! ([`executor`]: `anduin run` on the worker's share of the task instances), and the clients
//! `anduin submit | status | cancel` ([`client`]) and `anduin cluster` ([`local`]), which
//! starts a coordinator and workers on this machine.
//!
//! Between executors, channels cross the network (the runtime's `net`); between the processes
//! and the coordinator, the control protocol of [`proto`]. A query's checkpoints go to a
//! directory every process reaches at the same path, or to an object store that each
//! executor uploads its tasks' files to ([`store`]).
//!
//! Every connection starts with the connecting side proving it knows the cluster's secret
//! ([`secret`]); without one, every listener binds to loopback only.
//!
//! Which workers there are is the coordinator's [`scheduler`]'s business (`static`: they
//! register themselves; `process`: it starts them on its machine; `kubernetes`: it keeps them as
//! pods, [`kubernetes`]). A dead worker's task
//! instances, or a failed executor's, are restored alone on live workers ([`restore`]).

pub mod client;
mod controls;
pub mod coordinator;
pub mod coordinators;
mod driver;
pub mod executor;
mod exiting;
pub mod figures;
mod growth;
pub mod kubernetes;
pub mod leadership;
mod life_events;
pub mod local;
mod modules;
pub mod proto;
mod restarts;
mod restore;
pub mod scheduler;
pub mod secret;
mod silence;
mod slots;
pub mod store;
pub mod worker;

/// Writes `line` and a newline to stderr in one write. A worker and its executors share
/// their stderr, and `eprintln!` writes a formatted line in pieces, which then interleave
/// with another process's (a script or a test waiting for the line never sees it whole).
pub fn say(line: &str) {
    use std::io::Write;
    let _ = std::io::stderr().write_all(format!("{line}\n").as_bytes());
}
