//! The `Source` trait: where rows enter the dataflow.

use std::time::Instant;

use arrow::record_batch::RecordBatch;

use crate::checkpointing::{RestoreIn, SnapshotOut};
use crate::error::{ControlError, OperatorError};

/// What a poll of a source produced.
#[derive(Debug)]
#[must_use]
pub enum SourcePoll {
    /// Some rows (at most the number asked for, unless the source reads in larger units).
    Batch(RecordBatch),
    /// Nothing is available before the deadline; poll again.
    Idle,
    /// The source has no more rows, ever (a bounded input is finished).
    Exhausted,
}

/// A source of rows: a file reader, stdin, a generator. Runs on its own thread and may block,
/// but never past the deadline it is given, so that the runtime can flush lingering rows and
/// notice a stop request.
pub trait Source: Send {
    /// The operator's name in the query.
    fn name(&self) -> &str;

    /// Produces the next rows, up to about `max_rows`, blocking at most until `deadline`.
    fn poll(&mut self, max_rows: usize, deadline: Instant) -> Result<SourcePoll, OperatorError>;

    /// How the source's rows carry event time, if they do: the runtime then emits watermarks
    /// after the rows that justify them, and `+∞` at the end of input.
    fn watermarks(&self) -> Option<crate::event_time::WatermarkSpec> {
        None
    }

    /// The largest event time the source has passed over, whether or not it emitted a row
    /// for it: a source that skips what it does not emit (a `nexmark` instance keeps one kind
    /// of event, and its share of them) says how far its input has gone, so that its watermark
    /// advances without rows. The runtime treats it as the event time of a row: once every
    /// row polled so far has been sent, the watermark moves to it minus the watermark delay.
    /// Only asked of a source with [`Source::watermarks`]; the default, `None`, leaves the
    /// watermark to the rows.
    fn event_time_progress(&self) -> Option<i64> {
        None
    }

    /// Whether the source's watermark is the least over the splits it reads (the partitions
    /// of a Kafka topic), each advancing on its own: it then reports that watermark's event
    /// time as [`Source::event_time_progress`], and the runtime does not derive watermarks
    /// from the largest event time of each batch (a batch of one split would move event time
    /// past the others'). The default, `false`: the rows' event times decide.
    fn watermark_per_split(&self) -> bool {
        false
    }

    /// Figures about the source over the run (rows it dropped, …), reported at its end as
    /// [`crate::Operator::metrics`] are: `(name, value)`, summed over parallel instances. The
    /// default reports nothing.
    fn metrics(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }

    /// An operator fused after the source uses the origins of rows (see
    /// [`crate::Operator::wants_origins`]): record them from now on, for
    /// [`Source::take_origins`]. The default records nothing.
    fn want_origins(&mut self) {}

    /// Where the rows of the batch just polled were read, if the source records that (after
    /// [`Source::want_origins`]). The default knows nothing.
    fn take_origins(&mut self) -> Option<crate::RowOrigins> {
        None
    }

    /// Whether the source can record a position and resume from it (a file can; stdin
    /// cannot). Exactly-once recovery needs every source to say yes. The default says no.
    fn can_resume(&self) -> Result<(), String> {
        Err("this source cannot resume from a position".into())
    }

    /// A checkpoint barrier leaves the source: put its position (everything emitted so far)
    /// into `out`.
    fn snapshot(&mut self, _out: &mut dyn SnapshotOut) -> Result<(), OperatorError> {
        Err(OperatorError::Execution {
            operator: self.name().to_string(),
            message: "this source cannot be checkpointed".into(),
        })
    }

    /// At a restore at another parallelism than the checkpoint's: what instance `instance` of
    /// `parallelism` resumes from, made of what every instance of the checkpoint kept inline
    /// (`parts`, by old instance). A source whose instances share splits of its input (a
    /// file reader's byte ranges) deals the splits they had left again. The default refuses:
    /// the source resumes only at the parallelism of its checkpoint.
    fn rescale_inline(
        &self,
        _parts: &[Option<serde_json::Value>],
        _instance: usize,
        _parallelism: usize,
    ) -> Result<Option<serde_json::Value>, crate::RescaleError> {
        Err(crate::RescaleError::NotRescalable)
    }

    /// The params that [`Source::set_param`] accepts while running.
    fn adjustable_params(&self) -> &'static [&'static str] {
        &[]
    }

    /// Changes a parameter while running (a meta query, paper §4.5): the next rows are read
    /// with the new value. Validates it and leaves the source unchanged when it is rejected.
    /// The default accepts none.
    fn set_param(&mut self, param: &str, _value: &str) -> Result<(), ControlError> {
        Err(ControlError::NotAdjustable {
            operator: self.name().to_string(),
            param: param.to_string(),
            adjustable: self.adjustable_params().join(", "),
        })
    }

    /// Resumes from the position recorded by [`Source::snapshot`]: the next rows are the
    /// first rows not emitted before the checkpoint.
    fn restore(&mut self, _state: RestoreIn) -> Result<(), OperatorError> {
        Err(OperatorError::Execution {
            operator: self.name().to_string(),
            message: "this source cannot resume from a checkpoint".into(),
        })
    }
}
