//! Connectors: sources and sinks, one per file, and the byte-level input they share.

pub mod discard;
pub mod generator;
mod input;
mod parts;
pub mod reader;
pub mod writer;
