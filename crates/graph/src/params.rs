//! Checking an operator's params, inputs and outputs against its type's signature.

use std::collections::BTreeMap;

use anduin_spec::{OperatorDef, Value};
use anduin_types::{duration_ms, parse_duration_ms, Diagnostic, Diagnostics};

use crate::catalog::{OperatorSignature, ParamKind};
use anduin_types::did_you_mean;

/// The param of a state time-to-live (`anduin run --state-ttl`), refused with its own
/// message by an operator that takes none.
const STATE_TTL: &str = "state_ttl";

/// Checks each param of `op` against the operator type's signature.
pub(crate) fn check_params(op: &OperatorDef, sig: &OperatorSignature, diags: &mut Diagnostics) {
    let mut seen: BTreeMap<&str, &anduin_spec::Param> = BTreeMap::new();
    for p in &op.params {
        let name = p.name.as_str();
        let repeated = sig
            .param(name)
            .is_some_and(|s| matches!(s.kind, ParamKind::Repeated));
        if let Some(first) = seen.insert(name, p).filter(|_| !repeated) {
            let fp = first.name.pos();
            diags.push(Diagnostic::error(
                p.name.pos(),
                format!(
                    "param `{name}` is given twice in operator \"{}\" (first at {}:{})",
                    op.name, fp.line, fp.col
                ),
            ));
            continue;
        }
        let Some(spec) = sig.param(name).or_else(|| crate::qos::qos_param(name)) else {
            if name == STATE_TTL {
                diags.push(Diagnostic::error(
                    p.name.pos(),
                    format!(
                        "operator \"{}\" (type `{}`) keeps no updating state per key that could expire: `state_ttl` is a param of the regular_join, aggregate, over and top_n operators",
                        op.name, sig.kind
                    ),
                ));
                continue;
            }
            let known: Vec<&str> = sig.params.iter().map(|p| p.name).collect();
            diags.push(Diagnostic::error(
                p.name.pos(),
                format!(
                    "unknown param `{name}` for operator type `{}`{}: it accepts {}",
                    sig.kind,
                    did_you_mean(name, known.iter().copied()),
                    if known.is_empty() {
                        "no params".to_string()
                    } else {
                        known.join(", ")
                    }
                ),
            ));
            continue;
        };
        if let Some(problem) = kind_problem(spec.kind, &p.value) {
            diags.push(Diagnostic::error(
                p.value.pos(),
                format!("param `{name}` of operator \"{}\" {problem}", op.name),
            ));
        }
    }
    for spec in sig.params.iter().filter(|p| p.required) {
        if !seen.contains_key(spec.name) {
            diags.push(Diagnostic::error(
                op.pos,
                format!(
                    "operator \"{}\" of type `{}` needs `param {} = …` ({})",
                    op.name, sig.kind, spec.name, spec.doc
                ),
            ));
        }
    }
    if !sig.inputs.allows(op.inputs.len()) {
        diags.push(Diagnostic::error(
            op.pos,
            format!(
                "operator \"{}\" of type `{}` takes {} input(s), found {}",
                op.name,
                sig.kind,
                sig.inputs.describe(),
                op.inputs.len()
            ),
        ));
    }
    if !sig.outputs.allows(op.outputs.len()) {
        diags.push(Diagnostic::error(
            op.pos,
            format!(
                "operator \"{}\" of type `{}` takes {} output(s), found {}",
                op.name,
                sig.kind,
                sig.outputs.describe(),
                op.outputs.len()
            ),
        ));
    }
}

/// What is wrong with `v` for a param of kind `kind`, if anything.
fn kind_problem(kind: ParamKind, v: &Value) -> Option<String> {
    let text = v.as_text();
    let s = text.as_str();
    let ok = match kind {
        ParamKind::Text | ParamKind::Repeated => matches!(v, Value::String(_)) || !s.is_empty(),
        ParamKind::Int => s.parse::<i64>().is_ok(),
        ParamKind::Number => s.parse::<f64>().is_ok(),
        ParamKind::Bool => s == "true" || s == "false",
        ParamKind::Duration => parse_duration_ms(s).is_some(),
        ParamKind::OneOf(words) => words.contains(&s),
    };
    if ok {
        return None;
    }
    Some(match kind {
        ParamKind::Text | ParamKind::Repeated => "must be text".into(),
        ParamKind::Int => format!("must be a whole number, found `{s}`"),
        ParamKind::Number => format!("must be a number, found `{s}`"),
        ParamKind::Bool => format!("must be `true` or `false`, found `{s}`"),
        ParamKind::Duration => format!(
            "must be a duration such as \"2s\", \"250ms\" or \"5m\": {}",
            duration_ms(s).err().unwrap_or_default()
        ),
        ParamKind::OneOf(words) => format!(
            "must be one of {}, found `{s}`{}",
            words
                .iter()
                .map(|w| format!("\"{w}\""))
                .collect::<Vec<_>>()
                .join(", "),
            did_you_mean(s, words.iter().copied())
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use anduin_spec::Text;
    use anduin_types::Pos;

    #[test]
    fn param_kinds_accept_quoted_and_bare_values() {
        let p = Pos::new(1, 1);
        assert_eq!(kind_problem(ParamKind::Int, &Value::Int(3, p)), None);
        assert_eq!(
            kind_problem(ParamKind::Int, &Value::String(Text::at("3", p))),
            None
        );
        assert_eq!(
            kind_problem(ParamKind::Duration, &Value::String(Text::at("2s", p))),
            None
        );
        assert_eq!(
            kind_problem(
                ParamKind::Duration,
                &Value::String(Text::at("2 parsecs", p))
            )
            .as_deref(),
            Some("must be a duration such as \"2s\", \"250ms\" or \"5m\": unknown unit `parsecs` in `2 parsecs`: use ms, s, m, h or d")
        );
        assert_eq!(
            kind_problem(ParamKind::Duration, &Value::Float(12.5, p)).as_deref(),
            Some("must be a duration such as \"2s\", \"250ms\" or \"5m\": `12.5` has no unit: add one, e.g. \"12.5s\" (ms, s, m, h or d)")
        );
        assert!(kind_problem(
            ParamKind::OneOf(&["csv", "jsonl"]),
            &Value::String(Text::at("jsnl", p))
        )
        .is_some_and(|m| m.ends_with("(did you mean `jsonl`?)")));
    }
}
