//! Pruning equivalent partial matches, so that no pattern makes the matcher exponential.
//!
//! Every thread of an attempt has consumed every row since the attempt's first: two threads
//! differ only in their instruction and in the variable each mapped every row to. When two
//! threads wait at the same instruction and every DEFINE condition reads the same values from
//! both histories, any row extends (or ends) both the same way forever after, so the less
//! preferred one can only find matches that the preferred one finds first: it goes, as in
//! Trino's matcher. Without this, `(A+)+ B` keeps a thread for each way of splitting a run of
//! A rows into iterations of the outer loop (2^n after n rows), and `(A | B)* C` over rows that
//! are both A and B one for each of their 2^n mappings.
//!
//! What the conditions read of a history ([`Needs`]) is worked out once per pattern from the
//! DEFINEs: the last (or first) `k` rows mapped to a variable (`A.x`, `LAST(A.x, k - 1)`,
//! `FIRST(A.x, k - 1)`), the variables of the last rows (`CLASSIFIER()` of an earlier row),
//! or, for an aggregate over a variable (`SUM(A.x)`), every row mapped to it (as Trino
//! compares the aggregated positions), and the variable of the row before (`PREV(CLASSIFIER())`).
//! Columns of the current row, `PREV`, `MATCH_NUMBER()` and aggregates over all rows of the
//! match are the same in every thread of an attempt.
//!
//! MEASURES (and the skip, which reads the rows of the match) need no such care, whatever
//! they read: preference is decided where two partial matches part, so every completion of
//! the kept one is preferred to every completion of the dropped one, and the dropped one's
//! completions are the kept one's (the same rows accepted by the same conditions). So the
//! match that wins never extends a dropped partial match: the measures are computed on the
//! same match with and without pruning.
//!
//! Threads that mapped every row alike are found in constant time: the matcher builds each
//! step of a history once per (previous step, variable) in an attempt's row, so that equal
//! histories are the same allocation ([`Steps`]). Otherwise the two histories are walked, as
//! far back as the conditions read: only when a second thread arrives at an instruction,
//! which in a pattern whose variables exclude each other is rare.
//!
//! "The same instruction" is the same class of labels with the same future
//! (`label_classes.rs`): the copies of a group that quantifiers unroll are one place.
//!
//! Across attempts ([`Pruner::claim`]): where the skip is past the last row, no `within`
//! bounds a match and nothing the conditions read depends on the first row of the match, a
//! later attempt's thread equivalent to one of the front attempt's (the next attempt to be
//! reported) goes too: if it completed a match, the front one's would, and the front
//! attempt's match would cover the later attempt's start.
//!
//! Here: what the conditions read ([`Needs`], `needs.rs`), what a history shows them
//! (`signature.rs`), and the pruner and shared steps of a row (`pruner.rs`).

mod needs;
mod pruner;
mod signature;

#[cfg(test)]
mod tests;

pub(crate) use needs::Needs;
pub(crate) use pruner::{Pruner, Steps};
