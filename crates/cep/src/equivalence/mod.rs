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
//! DEFINEs, and compared as the values read, not as where the rows are: the cells of the
//! last (or first) `k` rows mapped to a variable or SUBSET, or of rows `PREV` goes back to
//! from them (`A.x`, `LAST(A.x, k - 1)`, `FIRST(U.x, k - 1)`); the variables of those rows
//! (`CLASSIFIER(U)`, `PREV(CLASSIFIER(U))`) and of the last or first rows of the match
//! (`CLASSIFIER()` of an earlier row, `PREV(CLASSIFIER())`); and for an aggregate over a
//! variable (`SUM(A.x)`, or over every row with an argument reading each row's
//! `CLASSIFIER()`) what the rows gave it so far: its summary (`eval/summary.rs`: a count, an
//! exact integer total, an extreme value…), which decides its value at every later row
//! whatever rows come. Trino compares the rows read and aggregated; values keep one partial
//! match per value where Trino keeps one per set of rows (`(A | B)* C` with `COUNT(A.*)`:
//! n + 1, not 2^n; `(A | B)* X $` with `PREV(CLASSIFIER(U), 1)`: a few, not 2^n). Columns of
//! the current row, `PREV`, `MATCH_NUMBER()` and aggregates over all rows of the match that
//! do not read their variables are the same in every thread of an attempt.
//!
//! MEASURES, ALL ROWS PER MATCH's CLASSIFIER() of each row, and the skip (which reads the
//! rows of the match) need no such care, whatever they read: the standard's answer is the
//! most preferred completed match, and preference is decided where two partial matches part
//! (the first to take the preferred branch of an alternation or quantifier), so every
//! completion of the kept one is preferred to every completion of the dropped one. The
//! dropped one's completions are the kept one's, with its own past: the same later rows
//! accepted by the same conditions (which read the same of both pasts) in the same places
//! of the pattern. So whenever the dropped one would complete, the kept one completes too
//! and wins: the match reported never extends a dropped partial match, and the measures,
//! the variable shown for each row and the match's bounds are those of the same match with
//! and without pruning. (A dropped partial match that would win needs the kept one to fail
//! where it succeeds, i.e. a condition reading something of their pasts that the key leaves
//! out: what `needs.rs` and the summaries must not miss, and what the brute-force oracle of
//! the registry's tests checks on generated patterns.)
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
//! later attempt's thread equivalent to one of an earlier attempt's goes too, if no match
//! found by an attempt before that one reaches its start: if it completed a match, the
//! earlier one's would, and the match reported would cover the later attempt's start (see
//! `Pattern::earlier_stands_for_later`). Where the conditions aggregate over a variable, only
//! once a few attempts are in flight, backing off while no later thread goes
//! (`Pattern::rivals`, [`Pruner::agg_turn`]): the summaries cost a walk each.
//!
//! Here: what the conditions read ([`Needs`], `needs.rs`), what a history shows them, as a
//! key (`signature.rs`), and the pruner and shared steps of a row (`pruner.rs`).

mod needs;
mod pruner;
mod signature;

#[cfg(test)]
mod tests;

pub(crate) use needs::{CellsOf, Needs, VarsOf};
pub(crate) use pruner::{Pruner, Steps};
pub(crate) use signature::Rows;
