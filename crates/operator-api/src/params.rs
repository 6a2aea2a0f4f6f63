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

    /// Where a stateful operator keeps its keyed state: `state_backend = "lsm"`, or the heap.
    pub fn state_backend(&self) -> anduin_state::BackendKind {
        if self.str_or("state_backend", "heap") == "lsm" {
            anduin_state::BackendKind::Lsm
        } else {
            anduin_state::BackendKind::Heap
        }
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

    /// A size in bytes (`"1MB"`, `"64KiB"`, `"4096"`), or `default` when absent.
    pub fn byte_size_or(&self, name: &str, default: usize) -> Result<usize, Diagnostics> {
        let Some(text) = self.text(name) else {
            return Ok(default);
        };
        match parse_byte_size(text.as_str()).and_then(|n| usize::try_from(n).ok()) {
            Some(n) if n > 0 => Ok(n),
            _ => Err(self
                .error(
                    name,
                    format!("expected a positive size such as \"1MB\", \"64KB\" or \"4096\" (bytes), found \"{text}\""),
                )
                .into()),
        }
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
                text.as_written(&e.message),
                self.op.name
            ),
        )
        .into()
    }
}

/// A size in bytes: a whole number, then optionally `B`, `KB`, `MB`, `GB` or `KiB`, `MiB`,
/// `GiB` (any case, powers of 1024 both ways).
fn parse_byte_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(digits);
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "kb" | "kib" => 10,
        "mb" | "mib" => 20,
        "gb" | "gib" => 30,
        _ => return None,
    };
    number.parse::<u64>().ok()?.checked_mul(1 << shift)
}

#[cfg(test)]
mod tests {
    use super::parse_byte_size;

    #[test]
    fn byte_sizes_take_binary_units_in_any_case() {
        assert_eq!(parse_byte_size("4096"), Some(4096));
        assert_eq!(parse_byte_size("1MB"), Some(1 << 20));
        assert_eq!(parse_byte_size("1 MiB"), Some(1 << 20));
        assert_eq!(parse_byte_size("64kb"), Some(64 << 10));
        assert_eq!(parse_byte_size("2GiB"), Some(2 << 30));
        for bad in [
            "",
            "MB",
            "1.5MB",
            "-1",
            "1TB",
            "1 M",
            "99999999999999999999GB",
        ] {
            assert_eq!(parse_byte_size(bad), None, "{bad}");
        }
    }
}
