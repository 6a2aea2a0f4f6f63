//! What a decoder hands back for each chunk of input: good rows as one batch, bad records
//! as [`Rejected`] entries.

use arrow::record_batch::RecordBatch;

/// The outcome of one `decode` / `finish_file` call.
#[derive(Debug, Default)]
#[must_use = "rejected records are reported here and would otherwise be lost silently"]
pub struct Decoded {
    /// Every good record decoded by this call, in input order; `None` when there were none.
    pub batch: Option<RecordBatch>,
    /// Every record rejected by this call, in input order.
    pub rejected: Vec<Rejected>,
    /// The 1-based line each row of [`Decoded::batch`] starts on, when the decoder records
    /// them (a CSV decoder after `record_lines`); otherwise empty.
    pub lines: Vec<u64>,
}

impl Decoded {
    /// Number of good rows in [`Decoded::batch`].
    pub fn num_rows(&self) -> usize {
        self.batch.as_ref().map_or(0, RecordBatch::num_rows)
    }
}

/// A record that could not be decoded. It is absent from the batch; the rest of the input is
/// unaffected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    /// The file or stream name given to `start_file`.
    pub source: String,
    /// 1-based line on which the record starts.
    pub line: u64,
    /// Why it was rejected, naming the column when one is at fault.
    pub reason: String,
    /// The raw record text (lossy UTF-8) without its line terminator.
    pub record: String,
}
