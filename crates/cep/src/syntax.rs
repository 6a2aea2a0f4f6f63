//! The row pattern language of `pattern = "…"` and SQL `PATTERN (…)`: variables, concatenation,
//! alternation `|`, groups `( … )`, `PERMUTE( … )`, the anchors `^` and `$`, exclusion
//! `{- … -}`, and the quantifiers `* + ? {n} {n,} {,m}
//! {n,m}`, each greedy or, followed by `?`, reluctant.
//!
//! Variables are identifiers as in SQL: unquoted ones are case-insensitive and named in upper
//! case (`a` is `A`, and `CLASSIFIER()` says `'A'`), double-quoted ones (`"a"`, `""` for a
//! quote inside) keep their case.

use std::collections::HashMap;

/// A parsed row pattern. Variables are numbered in order of first appearance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Pat {
    /// Matches nothing (the empty group `()`).
    Empty,
    /// `^`: the start of the partition (no row before this point).
    Start,
    /// `$`: the end of the partition (no row after this point: the input ended).
    End,
    /// `{- … -}`: rows matched inside are part of the match but not output by ALL ROWS PER
    /// MATCH.
    Exclude(Box<Pat>),
    /// One row mapped to the variable.
    Var(usize),
    /// The parts one after another.
    Concat(Vec<Pat>),
    /// The first alternative that leads to a match is preferred.
    Alt(Vec<Pat>),
    /// `inner` between `min` and `max` (unbounded: `None`) times; greedy prefers more.
    Repeat {
        inner: Box<Pat>,
        min: u32,
        max: Option<u32>,
        greedy: bool,
    },
}

/// A pattern with its variable names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Parsed {
    pub pat: Pat,
    /// Variable names by number.
    pub vars: Vec<String>,
}

/// A syntax error at a 1-based character column of the pattern text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SyntaxError {
    pub col: usize,
    pub message: String,
}

/// The most groups `( … )` a pattern may nest inside each other, as for expressions.
pub(crate) const MAX_NESTING: usize = anduin_spec::nesting::MAX_NESTING;

/// The most parts `PERMUTE( … )` may have (it unrolls to every order of them).
pub(crate) const MAX_PERMUTED: usize = 6;

/// Every order of `items[k..]` (after `items[..k]`), appended to `out`.
fn permutations(items: &mut Vec<usize>, k: usize, out: &mut Vec<Vec<usize>>) {
    if k == items.len() {
        out.push(items.clone());
        return;
    }
    for i in k..items.len() {
        items.swap(k, i);
        permutations(items, k + 1, out);
        items.swap(k, i);
    }
}

/// The largest bound a quantifier may have (bounded repetitions are unrolled).
pub(crate) const MAX_BOUND: u32 = 1000;

/// Parses a pattern such as `A B+? (C | D){2,3}`.
pub(crate) fn parse(text: &str) -> Result<Parsed, SyntaxError> {
    let mut p = P {
        chars: text.chars().collect(),
        at: 0,
        vars: Vec::new(),
        numbers: HashMap::new(),
        depth: 0,
    };
    p.skip_ws();
    if p.at == p.chars.len() {
        return Err(p.error("the pattern is empty: name at least one variable, e.g. \"A B+\""));
    }
    let pat = p.alternation()?;
    p.skip_ws();
    if let Some(c) = p.peek() {
        return Err(p.error(match c {
            ')' => "unbalanced `)`".to_string(),
            _ => format!("unexpected `{c}`"),
        }));
    }
    Ok(Parsed { pat, vars: p.vars })
}

struct P {
    chars: Vec<char>,
    at: usize,
    vars: Vec<String>,
    /// The number of each variable in `vars`.
    numbers: HashMap<String, usize>,
    /// Groups open around the current place.
    depth: usize,
}

/// The name of an unquoted identifier: SQL folds it to upper case.
pub(crate) fn unquoted(name: &str) -> String {
    name.to_uppercase()
}

impl P {
    /// The variable named `name` (as folded or quoted), numbered at its first appearance.
    fn var(&mut self, name: String) -> Pat {
        let next = self.vars.len();
        let id = *self.numbers.entry(name.clone()).or_insert(next);
        if id == next {
            self.vars.push(name);
        }
        Pat::Var(id)
    }

    fn error(&self, message: impl Into<String>) -> SyntaxError {
        SyntaxError {
            col: self.at + 1,
            message: message.into(),
        }
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.at += 1;
        }
    }

    fn alternation(&mut self) -> Result<Pat, SyntaxError> {
        let mut alts = vec![self.concatenation()?];
        loop {
            self.skip_ws();
            if self.peek() != Some('|') {
                break;
            }
            self.at += 1;
            alts.push(self.concatenation()?);
        }
        Ok(if alts.len() == 1 {
            alts.pop().expect("one alternative")
        } else {
            Pat::Alt(alts)
        })
    }

    fn concatenation(&mut self) -> Result<Pat, SyntaxError> {
        let mut parts = Vec::new();
        loop {
            self.skip_ws();
            match self.peek() {
                None | Some('|' | ')' | ',') => break,
                Some('-') if self.chars.get(self.at + 1) == Some(&'}') => break,
                _ => parts.push(self.quantified()?),
            }
        }
        match parts.len() {
            0 => Err(self.error("expected a variable or `(` here: an alternative is empty")),
            1 => Ok(parts.pop().expect("one part")),
            _ => Ok(Pat::Concat(parts)),
        }
    }

    fn quantified(&mut self) -> Result<Pat, SyntaxError> {
        let mut pat = self.primary()?;
        if matches!(pat, Pat::Start | Pat::End) {
            self.skip_ws();
            let exclusion = self.chars.get(self.at + 1) == Some(&'-');
            if matches!(self.peek(), Some('*' | '+' | '?'))
                || self.peek() == Some('{') && !exclusion
            {
                return Err(self.error("an anchor (`^`, `$`) cannot be quantified"));
            }
            return Ok(pat);
        }
        let mut quantified = false;
        loop {
            self.skip_ws();
            let start = self.at;
            let (min, max) = match self.peek() {
                Some('*') => (0, None),
                Some('+') => (1, None),
                Some('?') => (0, Some(1)),
                Some('{') if self.chars.get(self.at + 1) != Some(&'-') => self.braces()?,
                _ => break,
            };
            if quantified {
                self.at = start;
                return Err(self.error(
                    "a second quantifier: put the quantified part in parentheses, e.g. \"(A+)*\"",
                ));
            }
            if !matches!(self.chars[start], '{') {
                self.at += 1;
            }
            let greedy = if self.peek() == Some('?') {
                self.at += 1;
                false
            } else {
                true
            };
            pat = Pat::Repeat {
                inner: Box::new(pat),
                min,
                max,
                greedy,
            };
            quantified = true;
        }
        Ok(pat)
    }

    /// `{n}`, `{n,}`, `{,m}`, `{n,m}`; leaves `at` after the `}`.
    fn braces(&mut self) -> Result<(u32, Option<u32>), SyntaxError> {
        let open = self.at;
        self.at += 1;
        let n = self.number()?;
        self.skip_ws();
        let (min, max) = if self.peek() == Some(',') {
            self.at += 1;
            let m = self.number()?;
            (n.unwrap_or(0), m)
        } else {
            let Some(n) = n else {
                return Err(self.error("expected a number in `{…}`, e.g. \"{2}\" or \"{1,3}\""));
            };
            (n, Some(n))
        };
        self.skip_ws();
        if self.peek() != Some('}') {
            return Err(self.error("expected `}` to close the quantifier"));
        }
        self.at += 1;
        if let Some(max) = max {
            if max < min {
                self.at = open;
                return Err(self.error(format!(
                    "the quantifier's maximum {max} is below its minimum {min}"
                )));
            }
        }
        if min.max(max.unwrap_or(0)) > MAX_BOUND {
            self.at = open;
            return Err(self.error(format!("bounds above {MAX_BOUND} are not supported yet")));
        }
        Ok((min, max))
    }

    /// `PERMUTE(p1, p2, …)`: every order of the parts, as an alternation in the order the
    /// standard prefers them (lexicographic in the parts' positions: `PERMUTE(A, B, C)` is
    /// `A B C | A C B | B A C | B C A | C A B | C B A`). `at` is on the keyword.
    fn permute(&mut self) -> Result<Pat, SyntaxError> {
        let keyword = self.at;
        self.at += "PERMUTE".len();
        self.skip_ws();
        let open = self.at;
        if self.depth >= MAX_NESTING {
            return Err(self.error(format!(
                "the pattern nests more than {MAX_NESTING} groups inside each other: split it"
            )));
        }
        self.at += 1; // `(`
        self.depth += 1;
        let mut parts = Vec::new();
        let closed = loop {
            let part = self.alternation();
            let part = match part {
                Ok(p) => p,
                Err(e) => {
                    self.depth -= 1;
                    return Err(e);
                }
            };
            parts.push(part);
            self.skip_ws();
            match self.peek() {
                Some(',') => self.at += 1,
                Some(')') => {
                    self.at += 1;
                    break true;
                }
                _ => break false,
            }
        };
        self.depth -= 1;
        if !closed {
            self.at = open;
            return Err(self.error("this `(` of PERMUTE is never closed"));
        }
        if parts.len() > MAX_PERMUTED {
            self.at = keyword;
            return Err(self.error(format!(
                "PERMUTE of {} parts has {} orders: at most {MAX_PERMUTED} parts are supported",
                parts.len(),
                (1..=parts.len()).product::<usize>()
            )));
        }
        let mut orders = Vec::new();
        permutations(&mut (0..parts.len()).collect(), 0, &mut orders);
        orders.sort();
        let alts: Vec<Pat> = orders
            .into_iter()
            .map(|order| match order.as_slice() {
                [one] => parts[*one].clone(),
                _ => Pat::Concat(order.iter().map(|i| parts[*i].clone()).collect()),
            })
            .collect();
        Ok(match <[Pat; 1]>::try_from(alts) {
            Ok([one]) => one,
            Err(alts) => Pat::Alt(alts),
        })
    }

    fn number(&mut self) -> Result<Option<u32>, SyntaxError> {
        self.skip_ws();
        let start = self.at;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.at += 1;
        }
        if start == self.at {
            return Ok(None);
        }
        let digits: String = self.chars[start..self.at].iter().collect();
        digits
            .parse()
            .map(Some)
            .map_err(|_| self.error(format!("`{digits}` is too large for a quantifier")))
    }

    fn primary(&mut self) -> Result<Pat, SyntaxError> {
        match self.peek() {
            Some('(') => {
                let open = self.at;
                if self.depth >= MAX_NESTING {
                    return Err(self.error(format!(
                        "the pattern nests more than {MAX_NESTING} groups inside each other: split it"
                    )));
                }
                self.at += 1;
                self.skip_ws();
                if self.peek() == Some(')') {
                    self.at += 1;
                    return Ok(Pat::Empty);
                }
                self.depth += 1;
                let inner = self.alternation();
                self.depth -= 1;
                let inner = inner?;
                self.skip_ws();
                if self.peek() != Some(')') {
                    self.at = open;
                    return Err(self.error("this `(` is never closed"));
                }
                self.at += 1;
                Ok(inner)
            }
            Some(c) if c.is_alphabetic() || c == '_' => {
                let start = self.at;
                while self
                    .peek()
                    .is_some_and(|c| c.is_alphanumeric() || c == '_')
                {
                    self.at += 1;
                }
                let name: String = self.chars[start..self.at].iter().collect();
                let after = self.at;
                self.skip_ws();
                if name.eq_ignore_ascii_case("PERMUTE") && self.peek() == Some('(') {
                    self.at = start;
                    return self.permute();
                }
                self.at = after;
                Ok(self.var(unquoted(&name)))
            }
            Some('"') => {
                let open = self.at;
                self.at += 1;
                let mut name = String::new();
                loop {
                    match self.peek() {
                        None => {
                            self.at = open;
                            return Err(self.error("this `\"` is never closed"));
                        }
                        Some('"') if self.chars.get(self.at + 1) == Some(&'"') => {
                            name.push('"');
                            self.at += 2;
                        }
                        Some('"') => {
                            self.at += 1;
                            break;
                        }
                        Some(c) => {
                            name.push(c);
                            self.at += 1;
                        }
                    }
                }
                if name.is_empty() {
                    self.at = open;
                    return Err(self.error("a quoted variable needs a name: `\"\"` is empty"));
                }
                Ok(self.var(name))
            }
            Some('^') => {
                self.at += 1;
                Ok(Pat::Start)
            }
            Some('$') => {
                self.at += 1;
                Ok(Pat::End)
            }
            Some('{') if self.chars.get(self.at + 1) == Some(&'-') => {
                let open = self.at;
                if self.depth >= MAX_NESTING {
                    return Err(self.error(format!(
                        "the pattern nests more than {MAX_NESTING} groups inside each other: split it"
                    )));
                }
                self.at += 2;
                self.depth += 1;
                let inner = self.alternation();
                self.depth -= 1;
                let inner = inner?;
                self.skip_ws();
                if self.peek() != Some('-') || self.chars.get(self.at + 1) != Some(&'}') {
                    self.at = open;
                    return Err(self.error("this `{-` is never closed with `-}`"));
                }
                self.at += 2;
                Ok(Pat::Exclude(Box::new(inner)))
            }
            Some(c @ ('*' | '+' | '?' | '{')) => Err(self.error(format!(
                "`{c}` quantifies nothing: put a variable or a group before it"
            ))),
            Some(c) => Err(self.error(format!(
                "unexpected `{c}`: a pattern holds variables (A, B1, price_up), `( )`, `|` and quantifiers"
            ))),
            None => Err(self.error("the pattern ends too early")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rep(inner: Pat, min: u32, max: Option<u32>, greedy: bool) -> Pat {
        Pat::Repeat {
            inner: Box::new(inner),
            min,
            max,
            greedy,
        }
    }

    #[test]
    fn the_paper_pattern_parses_with_its_quantifiers() {
        let p = parse("A B+ C D+?").expect("parses");
        assert_eq!(p.vars, ["A", "B", "C", "D"]);
        assert_eq!(
            p.pat,
            Pat::Concat(vec![
                Pat::Var(0),
                rep(Pat::Var(1), 1, None, true),
                Pat::Var(2),
                rep(Pat::Var(3), 1, None, false),
            ])
        );
    }

    #[test]
    fn groups_alternation_and_bounds_parse() {
        let p = parse("(A | B C)*? D{2,} E{,3} F{4}").expect("parses");
        assert_eq!(p.vars, ["A", "B", "C", "D", "E", "F"]);
        let Pat::Concat(parts) = p.pat else {
            panic!("a concatenation")
        };
        assert_eq!(
            parts[0],
            rep(
                Pat::Alt(vec![
                    Pat::Var(0),
                    Pat::Concat(vec![Pat::Var(1), Pat::Var(2)])
                ]),
                0,
                None,
                false
            )
        );
        assert_eq!(parts[1], rep(Pat::Var(3), 2, None, true));
        assert_eq!(parts[2], rep(Pat::Var(4), 0, Some(3), true));
        assert_eq!(parts[3], rep(Pat::Var(5), 4, Some(4), true));
    }

    #[test]
    fn a_repeated_variable_keeps_one_number() {
        let p = parse("A B A").expect("parses");
        assert_eq!(p.vars, ["A", "B"]);
    }

    #[test]
    fn deep_groups_are_refused_at_the_group_past_the_limit() {
        let text = format!("{}A{}", "(".repeat(100_000), ")".repeat(100_000));
        let e = parse(&text).expect_err("too deep");
        assert_eq!(e.col, MAX_NESTING + 1);
        assert!(e
            .message
            .starts_with("the pattern nests more than 200 groups"));
        let text = format!("{}A{}", "(".repeat(MAX_NESTING), ")".repeat(MAX_NESTING));
        parse(&text).expect("at the limit");
    }

    #[test]
    fn errors_point_at_the_column() {
        let e = parse("A (B C").expect_err("unclosed");
        assert_eq!(e.col, 3);
        assert!(e.message.contains("never closed"));
        let e = parse("A+* B").expect_err("two quantifiers");
        assert_eq!(e.col, 3);
        assert!(e.message.contains("second quantifier"), "{e:?}");
        let e = parse("A{3,2}").expect_err("bad bounds");
        assert!(e.message.contains("below its minimum"));
        let e = parse("A | ").expect_err("empty alternative");
        assert!(e.message.contains("empty"));
        let e = parse("^* A").expect_err("quantified anchor");
        assert_eq!(
            (e.col, e.message.as_str()),
            (2, "an anchor (`^`, `$`) cannot be quantified")
        );
        assert!(parse("^ {- A -} $").is_ok());
        assert_eq!(
            parse("^A B$").expect("anchors").pat,
            Pat::Concat(vec![Pat::Start, Pat::Var(0), Pat::Var(1), Pat::End])
        );
        let e = parse("*").expect_err("nothing to quantify");
        assert_eq!(e.col, 1);
        assert!(parse("").is_err());
    }

    #[test]
    fn exclusion_wraps_a_pattern() {
        let p = parse("A {- B+ | C -} D").expect("parses");
        assert_eq!(
            p.pat,
            Pat::Concat(vec![
                Pat::Var(0),
                Pat::Exclude(Box::new(Pat::Alt(vec![
                    rep(Pat::Var(1), 1, None, true),
                    Pat::Var(2)
                ]))),
                Pat::Var(3),
            ])
        );
        let e = parse("A {- B").expect_err("unclosed");
        assert_eq!(
            (e.col, e.message.as_str()),
            (3, "this `{-` is never closed with `-}`")
        );
    }

    #[test]
    fn permute_is_every_order_lexicographically() {
        let p = parse("permute(A, B | C, D+)").expect("parses");
        assert_eq!(p.vars, ["A", "B", "C", "D"]);
        let (a, bc, d) = (
            Pat::Var(0),
            Pat::Alt(vec![Pat::Var(1), Pat::Var(2)]),
            rep(Pat::Var(3), 1, None, true),
        );
        let seq = |x: &Pat, y: &Pat, z: &Pat| Pat::Concat(vec![x.clone(), y.clone(), z.clone()]);
        assert_eq!(
            p.pat,
            Pat::Alt(vec![
                seq(&a, &bc, &d),
                seq(&a, &d, &bc),
                seq(&bc, &a, &d),
                seq(&bc, &d, &a),
                seq(&d, &a, &bc),
                seq(&d, &bc, &a),
            ])
        );
        assert_eq!(parse("PERMUTE (A)").expect("one part").pat, Pat::Var(0));
        let e = parse("PERMUTE(A, B").expect_err("unclosed");
        assert_eq!(e.col, 8);
        let e = parse("PERMUTE(A, B, C, D, E, F, G)").expect_err("too many");
        assert!(e.message.contains("5040 orders"), "{e:?}");
        // Without a parenthesis, a variable named PERMUTE.
        assert_eq!(
            parse("permute B").expect("a variable").vars,
            ["PERMUTE", "B"]
        );
    }

    #[test]
    fn unquoted_variables_fold_to_upper_case_and_quoted_ones_keep_theirs() {
        let p = parse("a B+ \"a\" b? \"x\"\"y\"").expect("parses");
        assert_eq!(p.vars, ["A", "B", "a", "x\"y"]);
        assert_eq!(
            p.pat,
            Pat::Concat(vec![
                Pat::Var(0),
                rep(Pat::Var(1), 1, None, true),
                Pat::Var(2),
                rep(Pat::Var(1), 0, Some(1), true),
                Pat::Var(3),
            ])
        );
        let e = parse("A \"b").expect_err("unclosed");
        assert_eq!(
            (e.col, e.message.as_str()),
            (3, "this `\"` is never closed")
        );
        assert_eq!(parse("\"\"").expect_err("empty").col, 1);
    }
}
