//! The crate's errors, one type per kind of failure: a bad graph, bad text (rules or the
//! compact notation), a rewrite that cannot be carried out.

use std::fmt;

use crate::model::OpId;

/// A 1-based line and column (in characters) in a text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Pos {
    /// 1-based line.
    pub line: u32,
    /// 1-based column, in characters.
    pub col: u32,
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.col)
    }
}

/// A graph that breaks an invariant of the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GraphError {
    /// Two operators with one name.
    #[error("operator name {0:?} is used twice")]
    DuplicateName(String),
    /// An input that is not an operator of the graph.
    #[error("operator {op:?} consumes {input}, which is not in the graph")]
    UnknownInput {
        /// The consumer.
        op: String,
        /// The missing producer.
        input: OpId,
    },
    /// An id that is not in the graph.
    #[error("no operator {0} in the graph")]
    UnknownOp(OpId),
    /// A cycle (the model is a DAG).
    #[error("the graph has a cycle through operator {0:?}")]
    Cycle(String),
    /// Removing an operator that another still consumes.
    #[error("operator {op:?} cannot be removed: {consumer:?} consumes it")]
    StillConsumed {
        /// The operator to remove.
        op: String,
        /// One of its consumers.
        consumer: String,
    },
}

/// Text that does not parse (a rule file or a graph in the compact notation). Displayed as
/// `FILE:LINE:COL: message`; the message says what was expected and what was found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{pos}: {message}")]
pub struct SyntaxError {
    /// The file name (or a label such as `<graph>` for text not read from a file).
    pub file: String,
    /// Where in the text.
    pub pos: Pos,
    /// What was expected, what was found.
    pub message: String,
}

/// A rewrite that cannot be carried out. Every variant names the rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RewriteError {
    /// `x(a, b)` gives an operator a number of inputs other than it has.
    #[error("rule {rule}: {name}(…) gives {given} inputs to operator {op:?}, which has {has}")]
    Arity {
        /// The rule.
        rule: String,
        /// The left-side name.
        name: String,
        /// The operator bound to it.
        op: String,
        /// Inputs given on the right side.
        given: usize,
        /// Inputs the operator has.
        has: usize,
    },
    /// A replica count that is not a whole number from 1 to [`crate::MAX_COPIES`].
    #[error(
        "rule {rule}: replica count {value:?} (from {from}) is not a whole number from 1 to 1024"
    )]
    BadCount {
        /// The rule.
        rule: String,
        /// The text found.
        value: String,
        /// Where it came from (`param(f, "replicas")` or a literal).
        from: String,
    },
    /// A param value taken from a param the operator does not have (and no default).
    #[error("rule {rule}: operator {op:?} has no param {key:?} and the rule gives no default")]
    MissingParam {
        /// The rule.
        rule: String,
        /// The operator.
        op: String,
        /// The param.
        key: String,
    },
    /// The rule set kept matching after the iteration limit.
    #[error("rewriting did not reach a fixed point after {limit} rule applications; the rules still applying: {}", rules.join(", "))]
    IterationLimit {
        /// The limit.
        limit: usize,
        /// The rules applied in the second half of the run, in the rule set's order.
        rules: Vec<String>,
    },
    /// The graph to rewrite is not a valid graph (a cycle, an unknown input).
    #[error("the graph to rewrite is invalid: {0}")]
    Graph(#[from] GraphError),
    /// A rule's right side makes the graph cyclic (an operator reading its own output).
    #[error("rule {rule}: its right side makes a cycle through operator {op:?}: a dataflow graph has none; change the rule")]
    Cycle {
        /// The rule.
        rule: String,
        /// An operator on the cycle.
        op: String,
    },
    /// The rules keep adding operators: the graph grew past the limit.
    #[error("rewriting made the graph grow to {size} operators (more than {limit}); the rules still applying: {}", rules.join(", "))]
    Growth {
        /// Operators in the graph.
        size: usize,
        /// The most allowed.
        limit: usize,
        /// The rules applied in the second half of the run, in the rule set's order.
        rules: Vec<String>,
    },
    /// The rewrite broke an invariant: a bug in this crate.
    #[error("rule {rule}: internal error ({detail}); a bug in anduin-rewrite")]
    Internal {
        /// The rule.
        rule: String,
        /// What broke.
        detail: String,
    },
}
