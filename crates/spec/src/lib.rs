//! The query specification: the `.flow` language (the paper's dataflow notation, §4.1), a SQL
//! frontend lowered to the same intermediate representation, that representation as JSON,
//! and `${VAR}` substitution.
//!
//! A [`Spec`] is what a user wrote: stream types and operators with their params, inputs and
//! outputs, each name and value with its position in the file. It is not yet checked: whether
//! streams connect, types exist or expressions are valid is `anduin-graph`'s and the
//! operators' business. This crate is pure (no I/O); it reads text and returns values or
//! [`Diagnostics`](anduin_types::Diagnostics).
//!
//! Every piece of SQL anduin reads is measured by [`nesting`] before a tree is built of it, and
//! parsed with its [`rereading`] counted, so that no input overflows a stack or takes time out of
//! proportion to its length.

mod ast;
mod json;
mod lexer;
pub mod nesting;
mod parser;
pub mod rereading;
mod source;
mod sql;
mod text;
mod vars;

pub use ast::{
    ColumnDef, ControlDef, FunctionDef, ModuleDef, OperatorDef, OutputDef, Param, Spec, TypeDef,
    Value,
};
pub use json::{from_json, to_json, to_json_explained, Changes};
pub use parser::parse_flow;
pub use source::{decode, without_bom};
pub use sql::{parse_sql, reserved_function, PATTERN_AGGREGATES};
pub use text::Text;
pub use vars::{substitute, substitute_module_paths, Missing};
