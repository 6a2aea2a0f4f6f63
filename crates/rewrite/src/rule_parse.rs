//! Parsing rule files (the language is described in the crate docs).

use std::collections::BTreeMap;

use crate::error::{Pos, SyntaxError};
use crate::lexer::{Cursor, Tok};
use crate::model::Placement;
use crate::notation::placement_from;
use crate::rule::{
    BindingKind, CmpOp, Constraint, Copies, Count, Head, Node, ParamRef, ParamValue, Pattern,
    PatternKind, Replicate, Rule, RuleSet, Term, Value,
};

/// Parses the rules of one file. `file` names it in errors (`FILE:LINE:COL: expected …`) and
/// in the names of unnamed rules (`FILE:LINE`).
///
/// # Examples
///
/// ```
/// use anduin_rewrite::parse_rules;
/// let rules = parse_rules("ft.rules", r#"
///     a2 := any(f := filter(a1 := any*))[stateless(f)]   # hot standby (paper §4.2)
///       => a2(stream-selector(failover(writer(f(reader(multicast(a1))))) | @{p1} | @{p2}))
///     rule pin: w := writer => w@{p}
/// "#)?;
/// assert_eq!(rules.rules.len(), 2);
/// assert_eq!(rules.rules[0].name, "ft.rules:2");
/// assert_eq!(rules.rules[1].name, "pin");
/// # Ok::<(), anduin_rewrite::SyntaxError>(())
/// ```
pub fn parse_rules(file: &str, text: &str) -> Result<RuleSet, SyntaxError> {
    let mut cur = Cursor::new(file, text)?;
    let mut rules: Vec<Rule> = Vec::new();
    loop {
        while cur.eat(&Tok::Semi) {}
        if cur.peek() == &Tok::Eof {
            return Ok(RuleSet { rules });
        }
        let rule = RuleParser::new(&mut cur, file).rule()?;
        if rules.iter().any(|r| r.name == rule.name) {
            return Err(cur.error_at(rule.pos, format!("rule `{}` is defined twice", rule.name)));
        }
        rules.push(rule);
    }
}

/// Words that cannot be operator types on the right side, nor names on the left.
const RESERVED: &[&str] = &["any", "rule", "replicate", "and", "or", "not"];

struct RuleParser<'a> {
    cur: &'a mut Cursor,
    file: &'a str,
    /// Left-side names and what they are bound to.
    bound: BTreeMap<String, BindingKind>,
    unnamed: usize,
    /// The `and`s and `or`s of the rule's constraint so far (bounded, as nesting is: its
    /// evaluation recurses once per connective).
    connectives: usize,
}

impl<'a> RuleParser<'a> {
    fn new(cur: &'a mut Cursor, file: &'a str) -> Self {
        Self {
            cur,
            file,
            bound: BTreeMap::new(),
            unnamed: 0,
            connectives: 0,
        }
    }

    /// Counts one more `and` or `or` at `pos`: more than [`MAX_NESTING`] in one rule is an
    /// error.
    fn connective(&mut self, pos: crate::error::Pos) -> Result<(), SyntaxError> {
        self.connectives += 1;
        if self.connectives > crate::lexer::MAX_NESTING {
            return Err(self.cur.error_at(
                pos,
                format!(
                    "more than {} `and`s and `or`s in one rule's constraint: split the rule",
                    crate::lexer::MAX_NESTING
                ),
            ));
        }
        Ok(())
    }

    fn rule(mut self) -> Result<Rule, SyntaxError> {
        let pos = self.cur.pos();
        let name = if self.cur.peek() == &Tok::Ident("rule".into())
            && matches!(self.cur.peek_at(1), Tok::Ident(_))
            && self.cur.peek_at(2) == &Tok::Colon
        {
            self.cur.bump();
            let name = self.cur.ident("a rule name after `rule`")?;
            self.cur.bump();
            name
        } else {
            format!("{}:{}", self.file, pos.line)
        };
        let left = self.pattern()?;
        if left.binding_kind() == BindingKind::Stream {
            return Err(self.cur.error_at(
                pos,
                "expected a pattern rooted at an operator or a chain, found a bare `any*`".into(),
            ));
        }
        let constraint = if self.cur.eat(&Tok::LBracket) {
            let c = self.or()?;
            self.cur
                .expect(&Tok::RBracket, "`]` closing the constraints")?;
            Some(c)
        } else {
            None
        };
        self.cur
            .expect(&Tok::Arrow, "`=>` between the pattern and the replacement")?;
        let right_pos = self.cur.pos();
        let right = match self.term()? {
            Term::Node(n) => n,
            Term::Replicate(_) => {
                return Err(self.cur.error_at(
                    right_pos,
                    "expected one operator as the replacement's root, found replicas (`|` or \
                     `replicate`), which must be an operator's input"
                        .into(),
                ))
            }
        };
        check_right(self.cur, &right, false)?;
        Ok(Rule {
            name,
            pos,
            left,
            constraint,
            right: Term::Node(right),
        })
    }

    // ---- left side ----

    fn pattern(&mut self) -> Result<Pattern, SyntaxError> {
        let pos = self.cur.pos();
        let first = self
            .cur
            .ident("an operator type, `any`, `any*` or `name :=`")?;
        let (name, kind_word) = if self.cur.eat(&Tok::Assign) {
            if RESERVED.contains(&first.as_str()) {
                return Err(self
                    .cur
                    .error_at(pos, format!("`{first}` is a reserved word, not a name")));
            }
            if self.bound.contains_key(&first) {
                return Err(self
                    .cur
                    .error_at(pos, format!("name `{first}` is bound twice")));
            }
            let kind = self
                .cur
                .ident("an operator type, `any` or `any*` after `:=`")?;
            (Some(first), kind)
        } else {
            (None, first)
        };
        let kind = match kind_word.as_str() {
            "any" if self.cur.eat(&Tok::Star) => PatternKind::Star,
            "any" => PatternKind::Any,
            _ => PatternKind::Type(kind_word),
        };
        let name = name.unwrap_or_else(|| {
            self.unnamed += 1;
            format!("_{}", self.unnamed)
        });
        // Reserve the name before the inputs so that a nested `x := …` cannot reuse it.
        self.bound.insert(name.clone(), BindingKind::Op);
        let inputs = if self.cur.eat(&Tok::LParen) {
            let mut v = Vec::new();
            if !self.cur.eat(&Tok::RParen) {
                loop {
                    v.push(self.pattern()?);
                    if self.cur.eat(&Tok::RParen) {
                        break;
                    }
                    self.cur
                        .expect(&Tok::Comma, "`,` or `)` in the pattern's inputs")?;
                }
            }
            Some(v)
        } else {
            None
        };
        if kind == PatternKind::Star && inputs.as_ref().is_some_and(|v| v.len() != 1) {
            return Err(self.cur.error_at(
                pos,
                "expected `any*(pattern)` with exactly one input pattern (a chain has one input)"
                    .into(),
            ));
        }
        let p = Pattern { name, kind, inputs };
        self.bound.insert(p.name.clone(), p.binding_kind());
        Ok(p)
    }

    // ---- constraints ----

    fn or(&mut self) -> Result<Constraint, SyntaxError> {
        let mut c = self.and()?;
        let mut pos = self.cur.pos();
        while self.cur.eat(&Tok::Ident("or".into())) {
            self.connective(pos)?;
            c = Constraint::Or(Box::new(c), Box::new(self.and()?));
            pos = self.cur.pos();
        }
        Ok(c)
    }

    fn and(&mut self) -> Result<Constraint, SyntaxError> {
        let mut c = self.not()?;
        let mut pos = self.cur.pos();
        while self.cur.eat(&Tok::Ident("and".into())) {
            self.connective(pos)?;
            c = Constraint::And(Box::new(c), Box::new(self.not()?));
            pos = self.cur.pos();
        }
        Ok(c)
    }

    fn not(&mut self) -> Result<Constraint, SyntaxError> {
        if self.cur.eat(&Tok::Ident("not".into())) {
            return Ok(Constraint::Not(Box::new(self.not()?)));
        }
        if self.cur.eat(&Tok::LParen) {
            let c = self.or()?;
            self.cur
                .expect(&Tok::RParen, "`)` closing the parenthesis")?;
            return Ok(c);
        }
        if let (Tok::Ident(w), Tok::LParen) = (self.cur.peek().clone(), self.cur.peek_at(1)) {
            if w == "stateless" || w == "stateful" {
                self.cur.bump();
                self.cur.bump();
                let name = self.bound_name()?;
                self.cur.expect(&Tok::RParen, "`)` after the name")?;
                return Ok(if w == "stateless" {
                    Constraint::Stateless(name)
                } else {
                    Constraint::Stateful(name)
                });
            }
        }
        let left = self.value()?;
        let op = match self.cur.peek() {
            Tok::Eq => CmpOp::Eq,
            Tok::Ne => CmpOp::Ne,
            Tok::Lt => CmpOp::Lt,
            Tok::Le => CmpOp::Le,
            Tok::Gt => CmpOp::Gt,
            Tok::Ge => CmpOp::Ge,
            _ => {
                return Err(self
                    .cur
                    .expected("a comparison (`=`, `!=`, `<`, `<=`, `>`, `>=`)"))
            }
        };
        self.cur.bump();
        let right = self.value()?;
        Ok(Constraint::Compare(left, op, right))
    }

    fn value(&mut self) -> Result<Value, SyntaxError> {
        match self.cur.peek().clone() {
            Tok::Str(s) => {
                self.cur.bump();
                Ok(Value::Str(s))
            }
            Tok::Num(n) => {
                let pos = self.cur.pos();
                self.cur.bump();
                n.parse::<f64>()
                    .map(Value::Num)
                    .map_err(|_| self.cur.error_at(pos, format!("expected a number, found {n}")))
            }
            Tok::Ident(f) if self.cur.peek_at(1) == &Tok::LParen => {
                if f == "param" {
                    return Ok(Value::Param(self.param_ref()?));
                }
                self.cur.bump();
                self.cur.bump();
                let name = self.bound_name()?;
                self.cur.expect(&Tok::RParen, "`)` after the name")?;
                Ok(match f.as_str() {
                    "type" => Value::Type(name),
                    "length" => Value::Length(name),
                    _ => Value::Figure { figure: f, name },
                })
            }
            _ => Err(self.cur.expected(
                "a value: a string, a number, `type(x)`, `param(x, \"key\")`, `length(x)` or a figure such as `rate(x)`",
            )),
        }
    }

    /// `param(x, "key" [, "default"])`, at `param`.
    fn param_ref(&mut self) -> Result<ParamRef, SyntaxError> {
        self.cur.bump();
        self.cur.expect(&Tok::LParen, "`(` after `param`")?;
        let name = self.bound_name()?;
        self.cur
            .expect(&Tok::Comma, "`,` after the name in `param(x, \"key\")`")?;
        let key = match self.cur.bump() {
            Tok::Str(k) => k,
            _ => return Err(self.cur.expected("the param's name as a string")),
        };
        let default = if self.cur.eat(&Tok::Comma) {
            match self.cur.peek().clone() {
                Tok::Str(d) | Tok::Num(d) => {
                    self.cur.bump();
                    Some(d)
                }
                _ => return Err(self.cur.expected("a default value (a string or a number)")),
            }
        } else {
            None
        };
        self.cur.expect(&Tok::RParen, "`)` closing `param(…)`")?;
        Ok(ParamRef { name, key, default })
    }

    fn bound_name(&mut self) -> Result<String, SyntaxError> {
        let pos = self.cur.pos();
        let name = self.cur.ident("a name bound on the left side")?;
        if !self.bound.contains_key(&name) {
            let known: Vec<&str> = self
                .bound
                .keys()
                .filter(|n| !n.starts_with('_'))
                .map(String::as_str)
                .collect();
            return Err(self.cur.error_at(
                pos,
                format!(
                    "expected a name bound on the left side ({}), found `{name}`",
                    known.join(", ")
                ),
            ));
        }
        Ok(name)
    }

    // ---- right side ----

    fn term(&mut self) -> Result<Term, SyntaxError> {
        let pos = self.cur.pos();
        if self.cur.peek() == &Tok::Ident("replicate".into()) && self.cur.peek_at(1) == &Tok::LParen
        {
            self.cur.bump();
            self.cur.bump();
            let template = self.node()?;
            self.cur
                .expect(&Tok::Comma, "`,` and a count after the template")?;
            let count = match self.cur.peek().clone() {
                Tok::Num(n) => {
                    self.cur.bump();
                    Count::Literal(n.parse::<u64>().map_err(|_| {
                        self.cur
                            .error_at(pos, format!("expected a whole count, found {n}"))
                    })?)
                }
                Tok::Ident(p) if p == "param" => Count::Param(self.param_ref()?),
                _ => {
                    return Err(self
                        .cur
                        .expected("a count: a whole number or `param(x, \"key\")`"))
                }
            };
            self.cur
                .expect(&Tok::Comma, "`,` and a placement `@{p#}` after the count")?;
            let placement = self.placement()?;
            self.cur
                .expect(&Tok::RParen, "`)` closing `replicate(…)`")?;
            return Ok(Term::Replicate(Replicate {
                template: Box::new(template),
                copies: Copies::Counted { count, placement },
            }));
        }
        let node = self.node()?;
        if self.cur.peek() != &Tok::Pipe {
            return Ok(Term::Node(node));
        }
        let mut placements = Vec::new();
        while self.cur.eat(&Tok::Pipe) {
            placements.push(self.placement()?);
        }
        Ok(Term::Replicate(Replicate {
            template: Box::new(node),
            copies: Copies::Listed(placements),
        }))
    }

    fn placement(&mut self) -> Result<Placement, SyntaxError> {
        match self.cur.peek().clone() {
            Tok::Placement(text) => {
                let p = placement_from(&text).ok_or_else(|| {
                    self.cur
                        .expected("a placement `@{p}`, `@{p*}`, `@{p1}` or `@{p#}`")
                })?;
                self.cur.bump();
                Ok(p)
            }
            _ => Err(self
                .cur
                .expected("a placement `@{p1}` (after `|`, a copy's placement)")),
        }
    }

    fn node(&mut self) -> Result<Node, SyntaxError> {
        let pos = self.cur.pos();
        let word = self
            .cur
            .ident("an operator type or a name bound on the left side")?;
        if RESERVED.contains(&word.as_str()) {
            return Err(self.cur.error_at(
                pos,
                format!(
                    "expected an operator type or a bound name, found the reserved word `{word}`"
                ),
            ));
        }
        let head = match self.bound.get(&word) {
            Some(kind) => Head::Ref(word.clone(), *kind),
            None => Head::New(word.clone()),
        };
        let mut params = Vec::new();
        if self.cur.eat(&Tok::LBrace) && !self.cur.eat(&Tok::RBrace) {
            loop {
                let key = match self.cur.bump() {
                    Tok::Ident(k) | Tok::Str(k) => k,
                    _ => return Err(self.cur.expected("a param name")),
                };
                self.cur.expect(&Tok::Eq, "`=` after the param name")?;
                let value = match self.cur.peek().clone() {
                    Tok::Str(v) | Tok::Num(v) => {
                        self.cur.bump();
                        ParamValue::Text(v)
                    }
                    Tok::Ident(p) if p == "param" => ParamValue::Param(self.param_ref()?),
                    _ => {
                        return Err(self
                            .cur
                            .expected("a param value: a string, a number or `param(x, \"key\")`"))
                    }
                };
                params.push((key, value));
                if self.cur.eat(&Tok::RBrace) {
                    break;
                }
                self.cur.expect(&Tok::Comma, "`,` or `}` in the params")?;
            }
        }
        let placement = match self.cur.peek() {
            Tok::Placement(_) => Some(self.placement()?),
            _ => None,
        };
        let inputs = if self.cur.eat(&Tok::LParen) {
            let mut v = Vec::new();
            if !self.cur.eat(&Tok::RParen) {
                loop {
                    v.push(self.term()?);
                    if self.cur.eat(&Tok::RParen) {
                        break;
                    }
                    self.cur.expect(&Tok::Comma, "`,` or `)` in the inputs")?;
                }
            }
            Some(v)
        } else {
            None
        };
        if let Head::Ref(name, kind) = &head {
            check_ref(self.cur, pos, name, *kind, &params, &placement, &inputs)?;
        }
        Ok(Node {
            head,
            params,
            placement,
            inputs,
            pos,
        })
    }
}

/// Replicas nest nowhere; `#` in a slot needs a copy number (inside replicas) or a chain
/// position (a chain reference's own placement).
fn check_right(cur: &Cursor, node: &Node, in_replica: bool) -> Result<(), SyntaxError> {
    let hash = matches!(&node.placement, Some(Placement::Slot { slot, .. }) if slot.contains('#'));
    let chain = matches!(node.head, Head::Ref(_, BindingKind::Chain));
    if hash && !in_replica && !chain {
        return Err(cur.error_at(
            node.pos,
            "expected `#` in a slot only inside replicas (the copy number) or on a chain \
             (the position in the chain)"
                .into(),
        ));
    }
    for input in node.inputs.iter().flatten() {
        match input {
            Term::Node(n) => check_right(cur, n, in_replica)?,
            Term::Replicate(r) if in_replica => {
                return Err(cur.error_at(
                    r.template.pos,
                    "expected no replicas inside replicas".into(),
                ))
            }
            Term::Replicate(r) => check_right(cur, &r.template, true)?,
        }
    }
    Ok(())
}

/// What a reference may carry, by what its name is bound to.
fn check_ref(
    cur: &Cursor,
    pos: Pos,
    name: &str,
    kind: BindingKind,
    params: &[(String, ParamValue)],
    placement: &Option<Placement>,
    inputs: &Option<Vec<Term>>,
) -> Result<(), SyntaxError> {
    match kind {
        BindingKind::Stream if !params.is_empty() || placement.is_some() || inputs.is_some() => {
            Err(cur.error_at(
                pos,
                format!(
                    "expected `{name}` alone: it is bound to a stream (`any*` without inputs), \
                     which takes no params, placement or inputs"
                ),
            ))
        }
        BindingKind::Chain if inputs.as_ref().is_some_and(|v| v.len() != 1) => Err(cur.error_at(
            pos,
            format!("expected one input for chain `{name}` (a chain has one input)"),
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests;
