//! Graph rewriting with the AnduINv2 rule notation (paper §4.2): a rule language, a matcher,
//! a rewriter that applies a rule set to a fixed point, and the built-in rules for the five
//! patterns (simple standby, checkpointing, hot standby, partitioning, pipelining).
//!
//! **What it is.** A pure library over its own small graph model ([`Graph`]: operators with a
//! type, a unique name, text params, ordered inputs and a [`Placement`]). The planner converts
//! its logical graph into a [`Graph`], calls [`rewrite`] with the rules and a [`Facts`]
//! implementation (is an operator stateless, measured figures), and converts the result back.
//!
//! **What it is not.** It does not know what an operator does, check schemas, choose workers
//! or run anything: placements are constraints for the scheduler, and the result must be
//! checked like a user's graph. It depends on no other anduin crate, nor on Arrow, DataFusion
//! or tokio: no I/O, no threads. It sits beside `anduin-graph`, below the planner.
//!
//! # Graphs in the compact notation
//!
//! `sink := writer(f := filter(src := reader))` ([`parse_graph`], [`print_graph`]; the forms
//! are in [`notation`]): types, instance names, params `{key = "v"}`, placement `@{p1}`, inputs
//! in parentheses, `;` between roots. An operator consumed by several is written once with its
//! name and referred to by name afterwards: `j := join(m := map(s := reader), n := filter(m))`.
//!
//! # Rules
//!
//! A file holds rules; `#` starts a comment. A rule is
//! `[rule NAME:] LEFT [ [CONSTRAINTS] ] => RIGHT` and may span lines (it ends where its right
//! side ends; `;` between rules is allowed). A rule without a name is called `FILE:LINE`.
//! Errors are `FILE:LINE:COL: expected …, found …` ([`SyntaxError`]).
//!
//! ```text
//! # hot standby for a stateless filter (the paper's rule)
//! a2 := any(f := filter(a1 := any*))[stateless(f)]
//!   => a2(stream-selector(failover(writer(f(reader(multicast(a1))))) | @{p1} | @{p2}))
//! ```
//!
//! **Left side**, a tree of pattern nodes `[name :=] KIND [(inputs)]`:
//! - KIND is an operator type (`filter`), `any` (one operator of any type) or `any*`.
//! - With parentheses a node matches an operator with exactly that many inputs, matched in
//!   order; `filter()` is a source. Without, any number of inputs, which stay outside the match.
//! - `x := any*(p)` is a chain: zero or more operators, each with one input, above what `p`
//!   matches. `x := any*` without inputs is a *stream*: the operator feeding the parent, kept
//!   as it is, never replaced (`a1` in the paper's rule).
//! - Every match is found ([`find_matches`]): roots consumers first, chains longest first.
//!
//! **Constraints** in brackets, with `and`, `or`, `not` and parentheses: `stateless(f)`,
//! `stateful(f)`, comparisons `=`, `!=`, `<`, `<=`, `>`, `>=` between strings, numbers,
//! `type(x)`, `param(x, "key")` (or `param(x, "key", "default")`), `length(c)` (a chain's
//! length) and figures `rate(x)` (any other `word(x)`: asked of [`Facts::figure`], for rules
//! applied at run time). Numeric when both sides read as numbers; a missing value makes the
//! comparison false; a chain name means "every operator of the chain".
//!
//! **Right side**, a tree of nodes `HEAD [{params}] [@{placement}] [(inputs)]`:
//! - HEAD is a left-side name (a *reference*) or else an operator type (a *new* operator).
//!   `x` alone keeps the matched operator with its params, placement and inputs (its
//!   subgraph); `x(a, b)` keeps the operator but gives it these inputs (as many as it has);
//!   `{k = "v"}` sets params, `@{…}` sets the placement. A stream reference takes nothing.
//!   A chain reference `c(x)` keeps the chain above `x`; `c@{p#}` places operator *i* of the
//!   chain (1 = top) at slot `p`*i*.
//! - New operators get params from literals or `param(x, "key")`: `splitter{by = "key-group",
//!   n = param(f, "parallelism")}`.
//! - Placements: `@{p}` one worker, any; `@{p*}` any number of workers; `@{p1}`, `@{p2}` named
//!   slots: distinct slots are distinct workers. The rewriter puts each application's slots in
//!   a group named after the matched root operator (`@{f.p1}`), so two applications never
//!   constrain each other.
//!
//! # Replicas
//!
//! `T | @{q1} | … | @{qn}` (only as an operator's input) makes **n copies** of the template
//! `T`, copy *i* placed at `qi`; the enclosing operator takes the n copies as its inputs, in
//! order. `replicate(T, COUNT, @{p#})` is the same with COUNT copies (a number or
//! `param(f, "replicas", "2")`), `#` in the slot standing for the copy number. Precisely:
//! - Copy 1 uses the matched operators themselves; copy *i* > 1 replaces each referenced
//!   matched operator by a new one, `NAME_replica_1`, `NAME_replica_2`, … with the same type
//!   and params. New operators get fresh names `TYPE_1`, `TYPE_2`, …
//! - Every operator of copy *i* without a placement of its own gets `qi`.
//! - A copy stops at a **fan-out** operator (`multicast` or `splitter`, [`FAN_OUT_TYPES`]) and
//!   at stream references: these are built once and feed every copy.
//!
//! So the paper's right side above, on `sink := writer(g := filter(src := reader))`, gives
//! one `multicast` reading `src`; two chains `reader → g → writer → failover`, one at
//! `@{sink.p1}` (with `g` itself), one at `@{sink.p2}` (with `g_replica_1`); one
//! `stream-selector` reading both failovers; and `sink` reading the stream selector.
//!
//! # Rewriting
//!
//! [`rewrite`] applies a rule set to a fixed point (the first rule with a match, at its first
//! match, again and again), at most `limit` times ([`RewriteError::IterationLimit`] names the
//! rules still firing). For one match ([`apply`]):
//! - The consumers of the matched root outside the match consume the replacement's root
//!   instead; stream references keep their producers, so the boundary streams stay.
//! - A matched operator the right side does not mention is removed, unless an operator still
//!   reads it.
//! - Names, types and params of kept operators stay; [`Application`]s record what matched.
//!
//! # Termination
//!
//! A rule must not re-match its own output forever. Each application marks the operators it
//! matched with `(rule, role)` and the new operators it created with `(rule, created)`
//! ([`Mark`]); a replica of a matched operator counts as its original: it gets a copy of the
//! original's marks and the original's `(rule, role)`. A rule does not match an operator it
//! created, nor an operator in a role it already matched it (or its original) in. So
//! `f := any[…] => f@{p}` applies once per operator; hot standby does not replicate its own
//! replicas, and partitioning after hot standby splits each replica once (not each
//! partition's replicas again); a chain of two filters still gets a rule applied to each.
//! Rules that create operators for one another can still cycle: the iteration limit catches
//! them ([`RewriteError::IterationLimit`]).
//!
//! # Rules at run time
//!
//! A rule whose right side only sets params of the operator its root matched
//! ([`check_run_time`]) can be applied while a query runs, its figures measured then
//! ([`param_changes`]): `anduin run --rules FILE` carries its changes out through the control
//! plane (a `parallelism` change is a live rescale).
//!
//! # Built-in rules
//!
//! [`builtin_rules`], from `src/builtin.rules` ([`BUILTIN_RULES`]): `simple_standby`
//! (`fault_tolerance = "standby"`, stateless), `checkpointing` (`"checkpoint"`, stateful),
//! `hot_standby` (`"hot-standby"`, `replicas = "N"`), `partitioning_round_robin` (a stateless
//! operator's `parallelism = "N"`: a splitter by round robin), `partitioning_range` (a stateless
//! operator's `ranges`: a splitter by range), `partitioning` (a stateful one's:
//! by key group), `partitioning_source` (a source reading in parallel), `pipelining`
//! (`pipeline = "split"` on each operator of a chain of one or more), `pipelining_source` (a
//! source),
//! `pattern_overflow` (`overflow_instances = "N"` on a `pattern`), and two-input variants of
//! hot standby, partitioning and pipelining.

#![deny(missing_docs)]

mod at_run;
mod builtin;
mod constraint;
mod error;
mod facts;
mod fixpoint;
mod lexer;
mod matched;
mod matcher;
mod model;
pub mod notation;
mod rewriter;
mod rule;
mod rule_parse;
#[cfg(test)]
mod test_util;

pub use at_run::{check_run_time, param_changes, NotRunTime, ParamChange};
pub use builtin::{builtin_rules, BUILTIN_RULES};
pub use error::{GraphError, Pos, RewriteError, SyntaxError};
pub use facts::{Facts, TableFacts};
pub use fixpoint::{rewrite, rewrite_within, Application, Rewritten, DEFAULT_LIMIT};
pub use matched::{Bound, Match};
pub use matcher::find_matches;
pub use model::{Graph, Mark, OpId, Operator, Placement};
pub use notation::{parse_graph, print_graph};
pub use rewriter::{apply, FAN_OUT_TYPES, MAX_COPIES};
pub use rule::{
    BindingKind, CmpOp, Constraint, Copies, Count, Head, Node, ParamRef, ParamValue, Pattern,
    PatternKind, Replicate, Rule, RuleSet, Term, Value,
};
pub use rule_parse::parse_rules;
