//! The `.flow` parser: tokens to a [`Spec`].
//!
//! ```text
//! file      := block*
//! block     := "type" attrs "{" column* "}"
//!            | "operator" attrs "{" (param | input | control | output)* "}"
//!            | "udf" attrs                (path: a WebAssembly module, as `--udf`)
//! column    := "column" attrs            (name, type)
//! input     := "input" attrs             (name)
//! control   := "control" attrs           (name, time?)
//! output    := "output" attrs            (name, type?)
//! param     := "param" IDENT "=" value
//! attrs     := IDENT "=" value ("," IDENT "=" value)*
//! value     := STRING | INT | FLOAT | "true" | "false"
//! ```
//! Comments run from `#` or `//` to the end of the line. Strings are `"…"` on one line or
//! `"""…"""` over several.

use anduin_types::{Diagnostic, Diagnostics, Pos};

use crate::ast::{
    ColumnDef, ControlDef, ModuleDef, OperatorDef, OutputDef, Param, Spec, TypeDef, Value,
};
use crate::lexer::{lex, Token, TokenKind};
use crate::Text;

/// Parses a `.flow` file. Variables (`${NAME}`) are left in place; see [`crate::substitute`]. A
/// byte order mark at the start is skipped.
///
/// Stops at the first syntax error, which says where and what was expected.
///
/// # Examples
/// ```
/// let spec = anduin_spec::parse_flow(
///     "type name = \"T\" { column name = \"x\", type = \"int\" }",
/// ).expect("parses");
/// assert_eq!(spec.types[0].columns[0].name.as_str(), "x");
/// ```
pub fn parse_flow(src: &str) -> Result<Spec, Diagnostics> {
    let tokens = lex(crate::without_bom(src))?;
    let mut p = Parser { tokens, i: 0 };
    p.file().map_err(Diagnostics::from)
}

struct Parser {
    tokens: Vec<Token>,
    i: usize,
}

/// An attribute `name = value` as written.
struct Attr {
    name: String,
    pos: Pos,
    value: Value,
}

const VALUE_EXPECTED: &str = "a value (a quoted string, a number, `true` or `false`)";

impl Parser {
    fn peek(&self) -> &Token {
        // The lexer always ends with Eof and the parser never moves past it.
        self.tokens
            .get(self.i)
            .or_else(|| self.tokens.last())
            .expect("the token list ends with Eof")
    }

    fn next(&mut self) -> Token {
        let t = self.peek().clone();
        if t.kind != TokenKind::Eof {
            self.i += 1;
        }
        t
    }

    fn unexpected(&self, expected: &str) -> Diagnostic {
        let t = self.peek();
        Diagnostic::error(
            t.pos,
            format!("expected {expected}, found {}", t.kind.describe()),
        )
    }

    fn file(&mut self) -> Result<Spec, Diagnostic> {
        let mut spec = Spec::default();
        loop {
            let tok = self.peek().clone();
            match &tok.kind {
                TokenKind::Eof => return Ok(spec),
                TokenKind::Ident(w) if w == "type" => {
                    self.next();
                    spec.types.push(self.type_block(tok.pos)?);
                }
                TokenKind::Ident(w) if w == "operator" => {
                    self.next();
                    spec.operators.push(self.operator_block(tok.pos)?);
                }
                TokenKind::Ident(w) if w == "udf" => {
                    self.next();
                    let attrs = self.attrs("udf")?;
                    let [path] = take_attrs(attrs, "udf", tok.pos, &["path"], &[])?;
                    spec.modules.push(ModuleDef {
                        path: expect_string(path.expect("required"), "udf", "path")?,
                        pos: tok.pos,
                    });
                }
                _ => return Err(self.unexpected("`type`, `operator` or `udf`")),
            }
        }
    }

    fn type_block(&mut self, pos: Pos) -> Result<TypeDef, Diagnostic> {
        let attrs = self.attrs("type")?;
        let [name] = take_attrs(attrs, "type", pos, &["name"], &[])?;
        let name = expect_string(name.expect("required"), "type", "name")?;
        let what = format!("type \"{}\"", name.as_str());
        let mut columns = Vec::new();
        self.open(&what)?;
        loop {
            let tok = self.peek().clone();
            match &tok.kind {
                TokenKind::RBrace => {
                    self.next();
                    break;
                }
                TokenKind::Ident(w) if w == "column" => {
                    self.next();
                    let attrs = self.attrs("column")?;
                    let [cname, cty] =
                        take_attrs(attrs, "column", tok.pos, &["name", "type"], &[])?;
                    columns.push(ColumnDef {
                        name: expect_string(cname.expect("required"), "column", "name")?,
                        ty: expect_string(cty.expect("required"), "column", "type")?,
                    });
                }
                _ => {
                    return Err(self.unexpected(&format!(
                        "`column` or `}}` to close {what} opened at {}:{}",
                        pos.line, pos.col
                    )))
                }
            }
        }
        Ok(TypeDef { name, columns, pos })
    }

    fn operator_block(&mut self, pos: Pos) -> Result<OperatorDef, Diagnostic> {
        let attrs = self.attrs("operator")?;
        let [name, kind] = take_attrs(attrs, "operator", pos, &["name", "type"], &[])?;
        let name = expect_string(name.expect("required"), "operator", "name")?;
        let kind = expect_string(kind.expect("required"), "operator", "type")?;
        let what = format!("operator \"{}\"", name.as_str());
        let mut op = OperatorDef {
            name,
            kind,
            params: Vec::new(),
            inputs: Vec::new(),
            outputs: Vec::new(),
            control: None,
            pos,
        };
        self.open(&what)?;
        loop {
            let tok = self.peek().clone();
            match &tok.kind {
                TokenKind::RBrace => {
                    self.next();
                    return Ok(op);
                }
                TokenKind::Ident(w) if w == "param" => {
                    self.next();
                    op.params.push(self.param()?);
                }
                TokenKind::Ident(w) if w == "input" => {
                    self.next();
                    let attrs = self.attrs("input")?;
                    let [name] = take_attrs(attrs, "input", tok.pos, &["name"], &[])?;
                    op.inputs
                        .push(expect_string(name.expect("required"), "input", "name")?);
                }
                TokenKind::Ident(w) if w == "control" => {
                    self.next();
                    let attrs = self.attrs("control")?;
                    let [name, time] = take_attrs(attrs, "control", tok.pos, &["name"], &["time"])?;
                    if let Some(first) = &op.control {
                        return Err(Diagnostic::error(
                            tok.pos,
                            format!(
                                "{what} has a second `control` (the first at {}:{}): one control stream per operator; merge the changes into one stream with a union",
                                first.pos.line, first.pos.col
                            ),
                        ));
                    }
                    op.control = Some(ControlDef {
                        stream: expect_string(name.expect("required"), "control", "name")?,
                        time: time
                            .map(|v| expect_string(v, "control", "time"))
                            .transpose()?,
                        pos: tok.pos,
                    });
                }
                TokenKind::Ident(w) if w == "output" => {
                    self.next();
                    let attrs = self.attrs("output")?;
                    let [name, ty] = take_attrs(attrs, "output", tok.pos, &["name"], &["type"])?;
                    op.outputs.push(OutputDef {
                        name: expect_string(name.expect("required"), "output", "name")?,
                        ty: ty.map(|v| expect_string(v, "output", "type")).transpose()?,
                    });
                }
                _ => {
                    return Err(self.unexpected(&format!(
                    "`param`, `input`, `control`, `output` or `}}` to close {what} opened at {}:{}",
                    pos.line, pos.col
                )))
                }
            }
        }
    }

    fn open(&mut self, what: &str) -> Result<(), Diagnostic> {
        if self.peek().kind == TokenKind::LBrace {
            self.next();
            Ok(())
        } else {
            Err(self.unexpected(&format!("`{{` to open the body of {what}")))
        }
    }

    /// `param NAME = VALUE`
    fn param(&mut self) -> Result<Param, Diagnostic> {
        let tok = self.peek().clone();
        let TokenKind::Ident(name) = tok.kind else {
            return Err(self.unexpected("a parameter name after `param`"));
        };
        self.next();
        if self.peek().kind != TokenKind::Eq {
            return Err(self.unexpected(&format!("`=` after `param {name}`")));
        }
        self.next();
        let value = self.value(&format!("`param {name} =`"))?;
        Ok(Param {
            name: Text::at(name, tok.pos),
            value,
        })
    }

    /// `NAME = VALUE (, NAME = VALUE)*` after a block keyword.
    fn attrs(&mut self, keyword: &str) -> Result<Vec<Attr>, Diagnostic> {
        let mut out: Vec<Attr> = Vec::new();
        loop {
            let tok = self.peek().clone();
            let TokenKind::Ident(name) = tok.kind else {
                let expected = if out.is_empty() {
                    format!("an attribute such as `name = \"…\"` after `{keyword}`")
                } else {
                    format!("an attribute name after `,` in `{keyword}`")
                };
                return Err(self.unexpected(&expected));
            };
            self.next();
            if self.peek().kind != TokenKind::Eq {
                return Err(self.unexpected(&format!("`=` after `{name}`")));
            }
            self.next();
            let value = self.value(&format!("`{name} =`"))?;
            if out.iter().any(|a| a.name == name) {
                return Err(Diagnostic::error(
                    tok.pos,
                    format!("`{name}` is given twice in `{keyword}`"),
                ));
            }
            out.push(Attr {
                name,
                pos: tok.pos,
                value,
            });
            if self.peek().kind == TokenKind::Comma {
                self.next();
            } else {
                return Ok(out);
            }
        }
    }

    fn value(&mut self, after: &str) -> Result<Value, Diagnostic> {
        let tok = self.peek().clone();
        let v = match tok.kind {
            TokenKind::Str(t) => Value::String(t),
            TokenKind::Int(v) => Value::Int(v, tok.pos),
            TokenKind::Float(v) => Value::Float(v, tok.pos),
            TokenKind::Ident(w) if w == "true" => Value::Bool(true, tok.pos),
            TokenKind::Ident(w) if w == "false" => Value::Bool(false, tok.pos),
            _ => return Err(self.unexpected(&format!("{VALUE_EXPECTED} after {after}"))),
        };
        self.next();
        Ok(v)
    }
}

/// Picks the `required` and `optional` attributes, in that order, and rejects others.
fn take_attrs<const N: usize>(
    attrs: Vec<Attr>,
    keyword: &str,
    pos: Pos,
    required: &[&str],
    optional: &[&str],
) -> Result<[Option<Value>; N], Diagnostic> {
    let mut out: [Option<Value>; N] = std::array::from_fn(|_| None);
    let names: Vec<&str> = required.iter().chain(optional).copied().collect();
    for a in attrs {
        match names.iter().position(|n| *n == a.name) {
            Some(i) => {
                if let Some(slot) = out.get_mut(i) {
                    *slot = Some(a.value);
                }
            }
            None => {
                return Err(Diagnostic::error(
                    a.pos,
                    format!(
                        "unknown attribute `{}` in `{keyword}`: expected {}",
                        a.name,
                        names
                            .iter()
                            .map(|n| format!("`{n}`"))
                            .collect::<Vec<_>>()
                            .join(" or ")
                    ),
                ))
            }
        }
    }
    for (i, name) in required.iter().enumerate() {
        if out.get(i).is_some_and(Option::is_none) {
            return Err(Diagnostic::error(
                pos,
                format!("`{keyword}` needs `{name} = \"…\"`"),
            ));
        }
    }
    Ok(out)
}

fn expect_string(v: Value, keyword: &str, attr: &str) -> Result<Text, Diagnostic> {
    match v {
        Value::String(t) => Ok(t),
        other => Err(Diagnostic::error(
            other.pos(),
            format!(
                "`{attr}` of `{keyword}` must be a quoted string, found {}",
                other.kind_name()
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SENSORS: &str = r#"# readings below 42
type name = "Reading" {
  column name = "ts", type = "timestamp"
  column name = "value", type = "int"
}
operator name = "low", type = "filter" {
  input name = "readings"
  param condition = "readings.value < 42"
  param parallelism = 4
  output name = "lowReadings", type = "Reading"
}
"#;

    fn err(src: &str) -> Diagnostic {
        parse_flow(src)
            .expect_err("must fail")
            .0
            .into_iter()
            .next()
            .expect("one diagnostic")
    }

    #[test]
    fn parses_types_and_operators_with_positions() {
        let spec = parse_flow(SENSORS).expect("parses");
        assert_eq!(spec.types.len(), 1);
        assert_eq!(spec.types[0].columns[1].ty.as_str(), "int");
        let op = &spec.operators[0];
        assert_eq!(op.kind.as_str(), "filter");
        assert_eq!(op.pos, Pos::new(6, 1));
        assert_eq!(op.inputs[0].as_str(), "readings");
        let cond = op.param("condition").expect("has condition");
        assert_eq!(cond.name.pos(), Pos::new(8, 9));
        let Value::String(t) = &cond.value else {
            panic!("condition is a string")
        };
        assert_eq!(t.pos_at_byte(9), Pos::new(8, 31));
        assert!(matches!(
            op.param("parallelism").map(|p| &p.value),
            Some(Value::Int(4, _))
        ));
        assert_eq!(op.outputs[0].ty.as_ref().map(Text::as_str), Some("Reading"));
    }

    #[test]
    fn a_missing_equals_sign_after_a_param_is_named() {
        let d = err("operator name = \"x\", type = \"filter\" {\n    param condition < \"v\"\n}");
        assert_eq!(d.pos, Pos::new(2, 21));
        assert_eq!(d.message, "expected `=` after `param condition`, found `<`");
    }

    #[test]
    fn an_unclosed_block_says_where_it_opened() {
        let d = err("type name = \"T\" {\n  column name = \"x\", type = \"int\"\n");
        assert_eq!(
            d.message,
            "expected `column` or `}` to close type \"T\" opened at 1:1, found end of file"
        );
    }

    #[test]
    fn unknown_and_missing_attributes_are_rejected() {
        let d = err("type nam = \"T\" {}");
        assert_eq!(
            d.message,
            "unknown attribute `nam` in `type`: expected `name`"
        );
        let d = err("operator name = \"x\" {}");
        assert_eq!(d.message, "`operator` needs `type = \"…\"`");
        assert_eq!(d.pos, Pos::new(1, 1));
    }

    #[test]
    fn a_stray_top_level_word_is_rejected() {
        let d = err("stream name = \"x\"");
        assert_eq!(
            d.message,
            "expected `type`, `operator` or `udf`, found `stream`"
        );
    }

    #[test]
    fn a_udf_block_names_a_module_by_its_path() {
        let spec =
            parse_flow("udf path = \"udfs/m.wasm\"\nudf path = \"n.wat\"\n").expect("parses");
        let paths: Vec<&str> = spec.modules.iter().map(|m| m.path.as_str()).collect();
        assert_eq!(paths, ["udfs/m.wasm", "n.wat"]);
        assert_eq!(spec.modules[1].pos, Pos::new(2, 1));
        let d = err("udf file = \"m.wasm\"");
        assert_eq!(
            d.message,
            "unknown attribute `file` in `udf`: expected `path`"
        );
    }

    #[test]
    fn a_value_must_follow_the_equals_sign() {
        let d = err("operator name = \"x\", type = \"filter\" {\n  param a = }\n");
        assert_eq!(
            d.message,
            "expected a value (a quoted string, a number, `true` or `false`) after `param a =`, found `}`"
        );
    }
}
