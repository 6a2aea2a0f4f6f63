//! Operators with inputs and outputs, one per file.

pub mod filter;
pub mod join;
pub mod map;
mod null_time;
pub mod pattern;
pub mod union;
pub mod window;
