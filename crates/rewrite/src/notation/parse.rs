//! Parsing a graph written in the compact notation.

use std::collections::BTreeSet;

use super::placement_from;
use crate::error::SyntaxError;
use crate::lexer::{Cursor, Tok};
use crate::model::{Graph, OpId, Operator, Placement};

/// Parses a graph in the compact notation (see [`crate::notation`]). `file` labels positions
/// in errors (`FILE:LINE:COL: …`).
///
/// # Examples
///
/// ```
/// use anduin_rewrite::{parse_graph, print_graph};
/// let g = parse_graph("<graph>", "j := join(a := reader, b := reader{path = \"b.csv\"})")?;
/// assert_eq!(g.len(), 3);
/// assert_eq!(
///     print_graph(&g),
///     "j := join(a := reader, b := reader{path = \"b.csv\"})"
/// );
/// # Ok::<(), anduin_rewrite::SyntaxError>(())
/// ```
pub fn parse_graph(file: &str, text: &str) -> Result<Graph, SyntaxError> {
    let mut p = Parser {
        cur: Cursor::new(file, text)?,
        graph: Graph::new(),
        reserved: BTreeSet::new(),
    };
    p.reserved = p.cur.defined_names().into_iter().collect();
    loop {
        while p.cur.eat(&Tok::Semi) {}
        if p.cur.peek() == &Tok::Eof {
            break;
        }
        p.term()?;
        if !matches!(p.cur.peek(), Tok::Semi | Tok::Eof) {
            return Err(p.cur.expected("`;` between roots, or the end of the graph"));
        }
    }
    Ok(p.graph)
}

struct Parser {
    cur: Cursor,
    graph: Graph,
    /// Every name written with `:=`, kept out of the fresh names.
    reserved: BTreeSet<String>,
}

impl Parser {
    fn term(&mut self) -> Result<OpId, SyntaxError> {
        let pos = self.cur.pos();
        let first = self.cur.ident("an operator type or name")?;
        let (name, kind) = if self.cur.eat(&Tok::Assign) {
            let kind = self.cur.ident("an operator type after `:=`")?;
            if self.graph.find(&first).is_some() {
                return Err(self
                    .cur
                    .error_at(pos, format!("name `{first}` is defined twice")));
            }
            (first, kind)
        } else if let Some(id) = self.graph.find(&first) {
            if matches!(
                self.cur.peek(),
                Tok::LParen | Tok::LBrace | Tok::Placement(_)
            ) {
                return Err(self.cur.expected(&format!(
                    "nothing after `{first}`, which refers to an operator already defined"
                )));
            }
            return Ok(id);
        } else if self.reserved.contains(&first) {
            return Err(self.cur.error_at(
                pos,
                format!("expected `{first}` to be defined (`{first} := type`) before it is used"),
            ));
        } else {
            (self.fresh(&first), first)
        };
        let mut op = Operator::new(name, kind);
        if self.cur.eat(&Tok::LBrace) {
            self.params(&mut op)?;
        }
        if let Tok::Placement(text) = self.cur.peek().clone() {
            op.placement = placement_from(&text).ok_or_else(|| {
                self.cur
                    .expected("a placement `@{p}`, `@{p*}`, `@{p1}` or `@{group.p1}`")
            })?;
            self.cur.bump();
        }
        if self.cur.eat(&Tok::LParen) && !self.cur.eat(&Tok::RParen) {
            loop {
                let input = self.term()?;
                op.inputs.push(input);
                if self.cur.eat(&Tok::RParen) {
                    break;
                }
                self.cur.expect(&Tok::Comma, "`,` or `)` in the inputs")?;
            }
        }
        let name = op.name.clone();
        self.graph
            .add(op)
            .map_err(|e| self.cur.error_at(pos, format!("operator `{name}`: {e}")))
    }

    /// After `{`: `key = value, …}`.
    fn params(&mut self, op: &mut Operator) -> Result<(), SyntaxError> {
        if self.cur.eat(&Tok::RBrace) {
            return Ok(());
        }
        loop {
            let key = match self.cur.bump() {
                Tok::Ident(k) | Tok::Str(k) => k,
                _ => return Err(self.cur.expected("a param name")),
            };
            self.cur.expect(&Tok::Eq, "`=` after the param name")?;
            let value = match self.cur.peek().clone() {
                Tok::Str(v) | Tok::Num(v) | Tok::Ident(v) => {
                    self.cur.bump();
                    v
                }
                _ => return Err(self.cur.expected("a param value (a string or a number)")),
            };
            op.params.insert(key, value);
            if self.cur.eat(&Tok::RBrace) {
                return Ok(());
            }
            self.cur.expect(&Tok::Comma, "`,` or `}` in the params")?;
        }
    }

    fn fresh(&self, kind: &str) -> String {
        (1u64..)
            .map(|k| format!("{kind}_{k}"))
            .find(|n| !self.reserved.contains(n) && self.graph.find(n).is_none())
            .unwrap_or_else(|| kind.to_string())
    }
}

impl Placement {
    /// Parses the text of a placement annotation, with or without `@{…}`.
    ///
    /// # Examples
    ///
    /// ```
    /// use anduin_rewrite::Placement;
    /// assert_eq!(Placement::parse("@{p*}"), Some(Placement::Spread));
    /// assert_eq!(Placement::parse("f.p2"), Some(Placement::slot("f", "p2")));
    /// ```
    pub fn parse(text: &str) -> Option<Placement> {
        let inner = text
            .strip_prefix("@{")
            .and_then(|t| t.strip_suffix('}'))
            .unwrap_or(text);
        placement_from(inner.trim())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notation::print_graph;

    fn roundtrip(text: &str) -> Result<String, SyntaxError> {
        Ok(print_graph(&parse_graph("g", text)?))
    }

    #[test]
    fn the_papers_example_prints_as_written() -> Result<(), SyntaxError> {
        let text = "sink := writer(f := filter(src := reader))";
        assert_eq!(roundtrip(text)?, text);
        Ok(())
    }

    #[test]
    fn unnamed_operators_get_fresh_names_that_skip_written_ones() -> Result<(), SyntaxError> {
        assert_eq!(
            roundtrip("writer(filter_1 := filter(filter(reader)))")?,
            "writer_1 := writer(filter_1 := filter(filter_2 := filter(reader_1 := reader)))"
        );
        Ok(())
    }

    #[test]
    fn a_shared_operator_is_printed_once_then_by_name() -> Result<(), SyntaxError> {
        let text = "j := join(m := map(src := reader), n := filter(m))";
        let g = parse_graph("g", text)?;
        assert_eq!(g.len(), 4);
        assert_eq!(print_graph(&g), text);
        Ok(())
    }

    #[test]
    fn several_roots_are_sorted_by_name() -> Result<(), SyntaxError> {
        assert_eq!(
            roundtrip("z := writer(m := map(src := reader)); a := writer(m)")?,
            "a := writer(m := map(src := reader));\nz := writer(m)"
        );
        Ok(())
    }

    #[test]
    fn params_and_placements_roundtrip() -> Result<(), SyntaxError> {
        let text = "s := splitter{by = \"key-group\", n = \"4\"}@{f.p1}(x := reader@{p*})";
        assert_eq!(roundtrip(text)?, text);
        assert_eq!(
            roundtrip("s := splitter{n = 4}@{p}")?,
            "s := splitter{n = \"4\"}@{p}"
        );
        Ok(())
    }

    #[test]
    fn a_name_used_before_its_definition_is_an_error_at_its_position() {
        let err = parse_graph("g.txt", "j := join(m, m := reader)").err();
        assert_eq!(
            err.map(|e| e.to_string()),
            Some("g.txt:1:11: expected `m` to be defined (`m := type`) before it is used".into())
        );
    }

    #[test]
    fn a_missing_parenthesis_says_what_was_expected() {
        let err = parse_graph("g.txt", "w := writer(f := filter(r := reader)").err();
        assert_eq!(
            err.map(|e| e.to_string()),
            Some("g.txt:1:37: expected `,` or `)` in the inputs, found the end of the text".into())
        );
    }
}
