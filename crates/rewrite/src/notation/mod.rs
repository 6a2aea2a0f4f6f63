//! The paper's compact notation for graphs: `sink := writer(f := filter(src := reader))`.
//!
//! A term is `[name :=] type [{params}] [@{placement}] [(inputs)]`:
//!
//! - `name := type` names an instance; without a name the parser gives the operator a fresh
//!   one, `type_1`, `type_2`, … (skipping every name written in the text).
//! - `{key = "value", n = 4}` sets params (values are text; a bare number is its digits).
//! - `@{p}`, `@{p*}`, `@{p1}`, `@{group.p1}` is the placement ([`Placement`](crate::Placement)).
//! - `(a, b)` lists the inputs in order: `j := join(l := reader, r := reader)`; no parentheses
//!   means no inputs.
//! - A name already defined, written alone, refers back to that operator: this is how an
//!   operator consumed by several is written. It is printed once, with its name and everything
//!   it reads, where the traversal meets it first, and by its name alone afterwards:
//!   `j := join(m := map(src := reader), n := filter(m))` is a diamond in which `m` feeds both
//!   `j` and `n`.
//! - Several roots (operators nobody consumes) are separated by `;`.
//!
//! The printer writes the roots sorted by name, each operator's inputs in order, params sorted
//! by key, and every name, so two graphs with the same operators, names and edges print the
//! same text whatever their ids: comparing printed text is how tests compare graphs. Marks
//! are not printed.

mod parse;
mod print;

pub use parse::parse_graph;
pub use print::print_graph;

use crate::model::Placement;

/// Reads the text between `@{` and `}`: `p` is [`Placement::Any`], `p*` is
/// [`Placement::Spread`], `group.slot` or `slot` a [`Placement::Slot`]. Slot names are made of
/// letters, digits, `_`, `-` and (in rules) `#`. `None` if the text is none of these.
pub(crate) fn placement_from(text: &str) -> Option<Placement> {
    let ok = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '#'))
    };
    match text {
        "p" => Some(Placement::Any),
        "p*" => Some(Placement::Spread),
        _ => match text.split_once('.') {
            Some((group, slot)) if ok(group) && ok(slot) => Some(Placement::slot(group, slot)),
            None if ok(text) => Some(Placement::slot("", text)),
            _ => None,
        },
    }
}

/// Whether `s` can be written as an identifier (else it is quoted).
pub(crate) fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// `s` as a double-quoted string literal.
pub(crate) fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
