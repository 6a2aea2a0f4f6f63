//! Facts an operator keeps beside the run's lineage ([`LineageFacts`]), so that a run started
//! again before its first checkpoint completed can tell whether it reads what the earlier run
//! of the lineage read.
//!
//! A sink that names its rows by the lineage (the NATS sink's message ids) gives a run started
//! again with no checkpoint the ids the earlier run gave: the stream drops the rows it stored.
//! That is right only if the rows are the same; a source whose input was replaced in between
//! (a NATS stream deleted and made again numbers its messages from 1 again) makes other rows
//! under the same ids, and they would be dropped, silently. A checkpoint keeps what the source
//! needs to tell; before the first one, the runner keeps it beside the lineage, through this.

/// Where an operator keeps facts for the run's lineage (the runner's: beside the lineage in
/// the checkpoint location). Set in [`crate::BuildContext::lineage_facts`] when the run takes
/// checkpoints and keeps a lineage.
pub trait LineageFacts: Send + Sync + std::fmt::Debug {
    /// Keeps `value` as fact `fact` of operator `operator` for the lineage, unless one is kept
    /// already, and says which. `fact`: 1 to 64 letters, digits, `.`, `-` and `_`; `value`:
    /// one line. Only one instance of an operator may keep facts. An error says why in words
    /// (the file or object that cannot be read or written).
    fn keep(&self, operator: &str, fact: &str, value: &str) -> Result<KeptFact, String>;
}

/// What [`LineageFacts::keep`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
#[non_exhaustive]
pub enum KeptFact {
    /// None was kept for the lineage (its first run): this one is now.
    New,
    /// The same value was kept: an earlier run of the lineage saw what this one sees.
    Same,
    /// Another value was kept, which stays: an earlier run of the lineage saw `kept`.
    Differs {
        /// The value kept.
        kept: String,
    },
}
