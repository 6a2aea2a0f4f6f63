//! Connectors: sources and sinks, one per file, and the byte-level input they share.

pub mod discard;
pub mod generator;
mod input;
pub mod nexmark;
pub use input::resolve as resolve_input_paths;
mod parts;
pub mod reader;
pub mod writer;
