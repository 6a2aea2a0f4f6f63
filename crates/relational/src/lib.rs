//! anduin's relational operators, one per file or directory: filter, map, union, window,
//! join (time-bounded), the regular join (no time bound, an updating stream), the updating
//! aggregate (`group`, a GROUP BY without a window), top-N (`top_n`, also deduplication),
//! OVER windows (`over`) and a user's operator with keyed state (`user_op`),
//! written against `anduin-operator-api`.
//!
//! This crate knows how one instance of each processes batches and checkpoints its state. It
//! does not run them (`anduin-runtime`), parse queries (`anduin-spec`), or name them to the
//! graph checker (`anduin-registry`). Row patterns are in `anduin-cep`.

pub mod extremes;
pub mod filter;
pub mod group;
mod in_turn;
pub mod join;
pub mod lookup_join;
pub mod map;
pub mod over;
pub mod regular_join;
mod replica_safe;
mod retracting;
pub mod selector;
pub mod top_n;
mod ttl;
pub mod union;
pub mod user_op;
mod volatile;
pub mod window;

#[cfg(test)]
mod checkpoint_tests;
#[cfg(test)]
mod exhaustion_tests;
#[cfg(test)]
mod test_rng;
