//! Rules as values: a left side ([`Pattern`] and an optional [`Constraint`]) and a right side
//! ([`Term`]). The text form is parsed by [`parse_rules`](crate::parse_rules); the crate docs
//! describe the language.

use crate::error::Pos;
use crate::model::Placement;

/// Rules in the order they were written; the fixed-point loop tries them in this order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RuleSet {
    /// The rules.
    pub rules: Vec<Rule>,
}

impl RuleSet {
    /// The rule with this name.
    pub fn get(&self, name: &str) -> Option<&Rule> {
        self.rules.iter().find(|r| r.name == name)
    }

    /// Appends the rules of `other` (e.g. a user's `--rules FILE` after the built-ins).
    pub fn extend(&mut self, other: RuleSet) {
        self.rules.extend(other.rules);
    }
}

/// One rule: `[rule NAME:] LEFT [CONSTRAINTS] => RIGHT`.
#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    /// The name given with `rule NAME:`, or `FILE:LINE` of the rule's first token.
    pub name: String,
    /// Where the rule starts.
    pub pos: Pos,
    /// The pattern to find.
    pub left: Pattern,
    /// The condition a match must meet (`[…]` after the pattern).
    pub constraint: Option<Constraint>,
    /// What replaces a match.
    pub right: Term,
}

/// What a left-side pattern node matches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PatternKind {
    /// An operator of this type.
    Type(String),
    /// `any`: one operator of any type.
    Any,
    /// `any*`: with an input pattern, a chain of zero or more single-input operators above
    /// it; without, the stream feeding the parent (kept as it is, never replaced).
    Star,
}

/// A node of a left side: `[name :=] kind [(inputs)]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pattern {
    /// The bound name, or `_1`, `_2`, … (pre-order) for an unnamed node.
    pub name: String,
    /// What it matches.
    pub kind: PatternKind,
    /// `None` without parentheses: any number of inputs, which stay outside the match.
    /// `Some(v)`: exactly `v.len()` inputs, matched in order.
    pub inputs: Option<Vec<Pattern>>,
}

/// What a left-side name is bound to, known from the pattern alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BindingKind {
    /// One operator (`any`, a type): part of the match.
    Op,
    /// A chain (`any*(…)`): zero or more operators, part of the match.
    Chain,
    /// A stream (`any*` without inputs): the operator feeding the parent, outside the match.
    Stream,
}

impl Pattern {
    /// What this node's name is bound to.
    pub fn binding_kind(&self) -> BindingKind {
        match (&self.kind, &self.inputs) {
            (PatternKind::Star, None) => BindingKind::Stream,
            (PatternKind::Star, Some(_)) => BindingKind::Chain,
            _ => BindingKind::Op,
        }
    }

    /// Every node in pre-order (this node first).
    pub fn nodes(&self) -> Vec<&Pattern> {
        let mut out = vec![self];
        for input in self.inputs.iter().flatten() {
            out.extend(input.nodes());
        }
        out
    }

    /// The node bound to `name`.
    pub fn find(&self, name: &str) -> Option<&Pattern> {
        self.nodes().into_iter().find(|p| p.name == name)
    }
}

/// A condition on a match (`[…]`).
#[derive(Clone, Debug, PartialEq)]
pub enum Constraint {
    /// `a and b`.
    And(Box<Constraint>, Box<Constraint>),
    /// `a or b`.
    Or(Box<Constraint>, Box<Constraint>),
    /// `not a`.
    Not(Box<Constraint>),
    /// `stateless(x)` (asked of [`Facts`](crate::Facts)).
    Stateless(String),
    /// `stateful(x)`: not stateless.
    Stateful(String),
    /// `left op right`.
    Compare(Value, CmpOp, Value),
}

/// A comparison operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    /// `=`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

/// A side of a comparison.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// `"text"`.
    Str(String),
    /// `42`, `2.5`.
    Num(f64),
    /// `type(x)`.
    Type(String),
    /// `param(x, "key")` or `param(x, "key", "default")`.
    Param(ParamRef),
    /// `length(x)`: the number of operators in a chain (1 for an operator, 0 for a stream).
    Length(String),
    /// `rate(x)` or any other `figure(x)`: a measured figure the caller supplies.
    Figure {
        /// The figure's name (`rate`).
        figure: String,
        /// The operator's left-side name.
        name: String,
    },
}

/// `param(x, "key" [, "default"])`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamRef {
    /// The left-side name.
    pub name: String,
    /// The param.
    pub key: String,
    /// The value when the operator has no such param.
    pub default: Option<String>,
}

/// A right side, or an input on it.
#[derive(Clone, Debug, PartialEq)]
pub enum Term {
    /// One operator.
    Node(Node),
    /// Copies of a template (only as an input of a node): `T | @{p1} | @{p2}` or
    /// `replicate(T, count, @{p#})`.
    Replicate(Replicate),
}

/// The head of a right-side node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Head {
    /// A left-side name: the matched operator (or chain, or stream) itself.
    Ref(String, BindingKind),
    /// A new operator of this type.
    New(String),
}

/// `head [{params}] [@{placement}] [(inputs)]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// The matched operator or a new one.
    pub head: Head,
    /// Params to set.
    pub params: Vec<(String, ParamValue)>,
    /// The placement to set (slots may hold `#`).
    pub placement: Option<Placement>,
    /// New inputs, or `None` to keep a reference's inputs (a new operator without
    /// parentheses has none).
    pub inputs: Option<Vec<Term>>,
    /// Where the node starts.
    pub pos: Pos,
}

/// A param value on the right side.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParamValue {
    /// Literal text (a string or a number's digits).
    Text(String),
    /// The value of a matched operator's param.
    Param(ParamRef),
}

/// Copies of a template (see the crate docs, "Replicas").
#[derive(Clone, Debug, PartialEq)]
pub struct Replicate {
    /// The template: one node and what it reads.
    pub template: Box<Node>,
    /// How many copies and where.
    pub copies: Copies,
}

/// How many copies of a template and where each is placed.
#[derive(Clone, Debug, PartialEq)]
pub enum Copies {
    /// `T | @{p1} | @{p2}`: one copy per placement.
    Listed(Vec<Placement>),
    /// `replicate(T, count, @{p#})`: `count` copies; `#` in the slot is the copy number.
    Counted {
        /// How many.
        count: Count,
        /// The placement of copy `i`, with `#` replaced by `i`.
        placement: Placement,
    },
}

/// A replica count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Count {
    /// A literal.
    Literal(u64),
    /// A matched operator's param.
    Param(ParamRef),
}
