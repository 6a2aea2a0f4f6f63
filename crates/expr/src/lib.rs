//! Expressions over Arrow batches: SQL expression text (a filter `condition`, a map's
//! `columns`) parsed, type-checked against a stream's schema, and compiled to a vectorized
//! physical expression, all with DataFusion's machinery.
//!
//! This crate is a thin layer: it does not evaluate anything itself. It adds what anduin needs
//! around DataFusion: errors that say where in the expression text the problem is (so that
//! callers can point at a line and column of the query file), stream-qualified column names
//! (`readings.value`), and a strict check of comparisons between numbers and text.

mod aggregate;
mod checked;
mod checked_sum;
mod coerce;
mod compile;
mod date_format;
mod dialect;
mod error;
mod flink_aliases;
mod flink_strings;
mod float_order;
mod locate;
mod narrow;
mod parse;
mod proctime;
mod provider;
mod strict;
mod user_aggregate;

pub use aggregate::{compile_aggregates, CompiledAggregate};
pub use checked_sum::SumOverflow;
pub use compile::{
    compile_expr, compile_parsed, compile_predicate, compile_projection, CompiledExpr, ExprSite,
    Scope,
};
pub use error::{ExprError, ExprErrorKind};
pub use float_order::SqlFloat;
pub use parse::{parse_text, parse_then, parse_then_with_depth};
pub use provider::{FunctionProvider, UserFunctions};
pub use user_aggregate::{UserAggregate, UserStates};
