//! What an operator instance is built with ([`BuildContext`]), and what the graph checker
//! hands the runtime for each operator ([`Bound`]): a factory of instances.

use std::sync::Arc;

use anduin_state::RunStateDir;
use anduin_types::{SharedClock, SystemClock};

use crate::dead_letter::DeadLetter;
use crate::stop::StopRequest;
use crate::{Operator, OperatorError, Source};

/// What an instance is built with.
#[derive(Debug, Clone)]
pub struct BuildContext {
    /// Where sources send malformed records.
    pub dead_letter: Arc<DeadLetter>,
    /// Whether the query runs with checkpoints: sinks then write transactionally.
    pub checkpointing: bool,
    /// The checkpoint the query resumes from, if it does (sinks clean up what was written
    /// after it); `None` for a fresh start.
    pub restore_epoch: Option<anduin_types::Epoch>,
    /// The run only restores the operators of a finished query's last checkpoint, so that
    /// sinks commit what it holds, and runs nothing: a sink that needs a server only to
    /// commit connects when its restore finds something to commit.
    pub commit_only: bool,
    /// The lineage of the run's checkpoints, when it takes them: drawn by the first run that
    /// started with no checkpoint to resume from, kept in the checkpoint location beside the
    /// checkpoints (written before anything runs), and found again by a run started once
    /// more in the same location before a checkpoint completed; a deliberate start over
    /// (`--from-scratch`) draws another. A sink that names what it writes by the run (the
    /// NATS sink's message ids) names it by this, so that two runs with checkpoints in
    /// different locations never share names, and a run killed before its first checkpoint
    /// and started again keeps them. `None`: the runner keeps none.
    pub lineage: Option<Arc<str>>,
    /// Where an operator keeps facts for the lineage (the runtime sets it when the run takes
    /// checkpoints and keeps a lineage): a source whose input may be replaced under the same
    /// name keeps what tells it apart, so that a run started again before the first
    /// checkpoint refuses another input rather than read it under the earlier run's lineage
    /// (see [`crate::LineageFacts`]). `None`: nothing is kept.
    pub lineage_facts: Option<Arc<dyn crate::LineageFacts>>,
    /// How often the run takes checkpoints, when it takes them on a timer (the runtime sets
    /// it): a sink that deduplicates what a resumed run writes again within a window (the
    /// NATS sink's message ids) refuses a window shorter than this. `None`: no checkpoints,
    /// or only every so many rows.
    pub checkpoint_interval: Option<std::time::Duration>,
    /// The digest of the query as this run runs it (its plan, and the contents of its UDF
    /// modules), when the runner knows it. A sink that names its rows by the lineage keeps it
    /// in its checkpoints: restored from a checkpoint another query took (the query edited in
    /// between), it names the rows after it in a lineage of their own, since they are other
    /// rows than those the interrupted run wrote after it. `None`: unknown, the checkpoint's
    /// lineage is kept.
    pub query_digest: Option<Arc<str>>,
    /// Which instance the factory builds, from 0 (`instance < parallelism`). The runtime sets
    /// it for each instance it builds; made elsewhere, a context says 0.
    pub instance: usize,
    /// How many instances of the operator run (1 when it does not run in parallel). A source
    /// that splits its input between its instances reads its share from `instance` and this.
    pub parallelism: usize,
    /// The run's state directory, where LSM backends keep their working files (each in
    /// [`BuildContext::backend_dir`]); `None`: each in a temporary directory of its own.
    pub state_dir: Option<Arc<RunStateDir>>,
    /// The query file, as rejected rows name the place of an expression (`FILE:LINE:COL`).
    pub query_file: Option<Arc<str>>,
    /// The query's name (`anduin run --name`, or its file's stem), if known: an operator
    /// following a control stream ignores rows that name another query.
    pub query: Option<Arc<str>>,
    /// The run's clock: a source paced to a rate reads the time from it (the runtime sets
    /// its `RunConfig::clock`).
    pub clock: SharedClock,
    /// Whether the run was asked to stop (the runtime sets its `RunConfig::stop`): an
    /// operator whose work can go on for long gives it up [`crate::GRACE`] after (see
    /// [`crate::StopDeadline`]).
    pub stop: StopRequest,
}

impl Default for BuildContext {
    /// A context for one instance without checkpoints, rejects on stderr: for tests and tools.
    fn default() -> Self {
        Self {
            dead_letter: Arc::new(DeadLetter::new(crate::DeadLetterTarget::Stderr)),
            checkpointing: false,
            restore_epoch: None,
            commit_only: false,
            lineage: None,
            lineage_facts: None,
            checkpoint_interval: None,
            query_digest: None,
            instance: 0,
            parallelism: 1,
            state_dir: None,
            query_file: None,
            query: None,
            clock: Arc::new(SystemClock),
            stop: StopRequest::default(),
        }
    }
}

impl BuildContext {
    /// Where the LSM backend of this instance of operator `operator` works, if the run has a
    /// state directory.
    pub fn backend_dir(&self, operator: &str) -> Option<std::path::PathBuf> {
        self.state_dir
            .as_ref()
            .map(|d| d.backend_dir(operator, self.instance))
    }

    /// This context for instance `instance` of `parallelism`.
    pub fn for_instance(&self, instance: usize, parallelism: usize) -> Self {
        Self {
            instance,
            parallelism,
            ..self.clone()
        }
    }
}

/// Makes an instance of an operator.
pub type OperatorFactory =
    Arc<dyn Fn(&BuildContext) -> Result<Box<dyn Operator>, OperatorError> + Send + Sync>;

/// Makes an instance of a source.
pub type SourceFactory =
    Arc<dyn Fn(&BuildContext) -> Result<Box<dyn Source>, OperatorError> + Send + Sync>;

/// A checked operator, ready to be instantiated by the runtime.
#[derive(Clone)]
pub enum Bound {
    /// A source: no inputs, runs on its own thread.
    Source(SourceFactory),
    /// An operator with inputs (including sinks, which have no outputs).
    Operator(OperatorFactory),
}

impl std::fmt::Debug for Bound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Bound::Source(_) => "Bound::Source",
            Bound::Operator(_) => "Bound::Operator",
        })
    }
}
