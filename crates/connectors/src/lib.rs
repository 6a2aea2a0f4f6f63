//! anduin's connectors: the sources (reader, generator, nexmark, kafka, nats) and sinks
//! (writer, discard, kafka, nats),
//! one per file, the CSV and JSON Lines codecs they share ([`codec`]), the byte-level input
//! of files, and the part files of transactional sinks.
//!
//! Each connector is written against `anduin-operator-api`. This crate does not run them
//! (`anduin-runtime`) and does not name them to the graph checker (`anduin-registry`).

mod addresses;
pub mod changelog;
pub mod codec;
pub mod discard;
mod file_splits;
pub mod generator;
mod input;
pub mod kafka;
pub mod nats;
pub mod nexmark;
mod pace;
mod partitioned;
mod parts;
pub mod reader;
mod source_schema;
#[cfg(test)]
mod test_fakes;
pub mod writer;

pub use input::resolve as resolve_input_paths;
pub(crate) use source_schema::declared_source_schema;
