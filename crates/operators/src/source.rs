//! The `Source` trait: where rows enter the dataflow.

use std::time::Instant;

use arrow::record_batch::RecordBatch;

use crate::error::OperatorError;

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
}
