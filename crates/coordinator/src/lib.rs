//! The coordinator's pure core and its durable catalog: the decisions of the paper's query
//! scheduler, and the record of what it decided that survives its crash.
//!
//! What is here:
//! - [`life`]: a query's life as a typed state machine ([`life::step`]: state + input → next
//!   state, actions to carry out, events to log; illegal inputs refused, never a panic).
//! - [`place`]: which worker slot each task instance takes, spread over workers, honouring
//!   "distinct workers" rules, moving only what a dead worker held.
//! - [`FailureDetector`]: heartbeat bookkeeping, with the time passed in.
//! - [`choose_recovery`]: per-task recovery of a lost worker's instances, or the whole query
//!   rolled back when a restored instance's replay would not be what its consumers had.
//! - [`take_over`] and [`newest_begun`]: how a coordinator takes over the running attempt of
//!   one that died: which parts it waits for, and after which checkpoint it numbers its own
//!   (never as one its predecessors may have begun).
//! - [`controls`]: which param changes the catalog recorded after a checkpoint a resumed
//!   attempt is given again (a taken-over one at their epochs; a rolled-back one at the
//!   checkpoint's, its rescales undone).
//! - [`catalog`]: queries, plans, placements, checkpoint pointers, parameters and control
//!   history, kept durable in a state directory as HDFS keeps its namespace: a snapshot (the
//!   fsimage) plus an edit log of checksummed records, each fsynced before it is acknowledged.
//!
//! - [`autoscale`]: the autoscaler's decisions (paper §4.4, DS2): each operator's parallelism
//!   from its measured rates, behind stabilisation, scale-down delay and bounds; a pure
//!   function of recorded figures, so its decisions replay.
//!
//! What is not here: no network, no threads, no async runtime, no process spawning, no tasks.
//! The first three parts are pure functions of facts; the catalog does file I/O and nothing
//! else. The coordinator and worker processes (in `anduin-runtime` and the CLI) feed these
//! facts, carry out the actions and write the edits. Leadership (fencing epochs) and an
//! object-store catalog come with the high-availability issue.
//!
//! Where it sits: above `anduin-types` and `anduin-checkpoint` (whose owner lock keeps two
//! coordinators off one state directory); the runtime and the CLI depend on it.

#![deny(missing_docs)]

pub mod autoscale;
pub mod catalog;
pub mod controls;
mod heartbeat;
mod ids;
pub mod life;
mod placement;
mod recovery;
mod takeover;

pub use heartbeat::{FailureDetector, Heartbeat, HeartbeatSettings, HeartbeatSettingsError};
pub use ids::{QueryId, TaskRef, Txid, WorkerId};
pub use placement::{place, Constraint, Placement, PlacementError, TaskNeed, WorkerFacts};
pub use recovery::{choose_recovery, stuck_instances, InstanceFacts, RecoveryChoice};
pub use takeover::{newest_begun, take_over, Host, NumberingFacts, PartFacts, TakeOver};
