//! Typed access to an operator's params, with diagnostics that point at them.
//!
//! The graph check has already verified each param's kind (number, duration, one of a list),
//! so the accessors here parse without failing; they fall back to defaults when absent.

use anduin_expr::ExprError;
use anduin_spec::{OperatorDef, Text};
use anduin_types::{parse_duration_ms, Diagnostic, Diagnostics};

/// The params of one operator.
#[derive(Clone, Copy)]
pub struct Params<'a> {
    op: &'a OperatorDef,
}

impl<'a> Params<'a> {
    /// The params of `op`.
    pub fn new(op: &'a OperatorDef) -> Self {
        Self { op }
    }

    /// The operator's name.
    pub fn operator(&self) -> &str {
        self.op.name.as_str()
    }

    /// The value of param `name` as text, if given.
    pub fn text(&self, name: &str) -> Option<Text> {
        self.op.param(name).map(|p| p.value.as_text())
    }

    /// The value of a required param (the graph check guarantees it is there).
    pub fn required(&self, name: &str) -> Text {
        self.text(name)
            .unwrap_or_else(|| Text::unplaced(String::new()))
    }

    /// The value of param `name`, or `default`.
    pub fn str_or(&self, name: &str, default: &str) -> String {
        self.text(name)
            .map(|t| t.to_string())
            .unwrap_or_else(|| default.to_string())
    }

    /// A boolean param, or `default`.
    pub fn bool_or(&self, name: &str, default: bool) -> bool {
        self.text(name)
            .map(|t| t.as_str() == "true")
            .unwrap_or(default)
    }

    /// A whole-number param, if given.
    pub fn int(&self, name: &str) -> Option<i64> {
        self.text(name).and_then(|t| t.as_str().parse().ok())
    }

    /// A numeric param, if given.
    pub fn number(&self, name: &str) -> Option<f64> {
        self.text(name).and_then(|t| t.as_str().parse().ok())
    }

    /// A duration param in milliseconds, or `default`.
    pub fn duration_ms_or(&self, name: &str, default: u64) -> u64 {
        self.text(name)
            .and_then(|t| parse_duration_ms(t.as_str()))
            .unwrap_or(default)
    }

    /// The CSV `delimiter` param (default `,`): one ASCII character.
    pub fn delimiter(&self) -> Result<u8, Diagnostics> {
        let delim = self.str_or("delimiter", ",");
        match delim.as_bytes() {
            [b'"' | b'\r' | b'\n'] => Err(self
                .error(
                    "delimiter",
                    "the delimiter cannot be a quote or a line break: CSV uses those to quote fields and end records",
                )
                .into()),
            [b] if b.is_ascii() => Ok(*b),
            _ => Err(self
                .error(
                    "delimiter",
                    format!("the delimiter must be one ASCII character, found \"{delim}\""),
                )
                .into()),
        }
    }

    /// An error about param `name` (at its value), or about the operator if it is absent.
    pub fn error(&self, name: &str, message: impl std::fmt::Display) -> Diagnostic {
        let pos = self
            .op
            .param(name)
            .map(|p| p.value.pos())
            .unwrap_or(self.op.pos);
        Diagnostic::error(
            pos,
            format!(
                "{message} (param `{name}` of operator \"{}\")",
                self.op.name
            ),
        )
    }

    /// An expression error in param `name`, located in the file through the param's text.
    pub fn expr_error(&self, name: &str, text: &Text, e: ExprError) -> Diagnostics {
        let pos = if e.line == 0 {
            text.pos()
        } else {
            text.pos_at_line_col(e.line, e.col)
        };
        Diagnostic::error(
            pos,
            format!(
                "{} (in param `{name}` of operator \"{}\")",
                e.message, self.op.name
            ),
        )
        .into()
    }
}
