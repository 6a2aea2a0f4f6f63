//! Spreading an operator's partial matches over further instances when they outgrow its
//! memory (paper §4.4, the `P+` operator): every instance receives the whole input; the
//! first one ([`SpreadRole::Start`]) starts matches, the others ([`SpreadRole::Extend`]) only
//! extend the partial matches handed to them ([`Operator::spread`],
//! [`Operator::take_spread`]), so that no match is reported twice or lost, and the union of
//! their outputs is the output of one instance (as a multiset: matches of several instances
//! interleave). Only the `pattern` operator spreads, and only where its matches do not depend
//! on each other; the runtime that multicasts the input to the copies, hands partial matches
//! between them at barriers and unions their outputs is described in `docs/autoscale.md`.
//!
//! [`Operator::spread`]: crate::Operator::spread
//! [`Operator::take_spread`]: crate::Operator::take_spread

/// What an instance of a spread operator does with rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum SpreadRole {
    /// Starts matches at every row (the only instance of an operator that is not spread).
    #[default]
    Start,
    /// Starts none: extends the partial matches handed to it and reports their matches.
    Extend,
}

/// Partial matches an instance handed over, in the operator's own form (it crosses processes
/// as bytes), read only by [`Operator::take_spread`] of another instance of the same operator
/// that saw the same input up to the same point.
///
/// [`Operator::take_spread`]: crate::Operator::take_spread
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[must_use = "partial matches handed over are lost unless another instance takes them"]
pub struct Handed {
    /// How many partial matches (a match attempt from one start row each) were handed.
    pub partial_matches: u64,
    /// Of how many partitions.
    pub partitions: u64,
    /// The partial matches and the rows they need.
    pub bytes: Vec<u8>,
}
