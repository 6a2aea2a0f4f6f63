//! `${NAME}` substitution in string values, from `--var NAME=VALUE`.

use std::collections::BTreeMap;

use anduin_types::{Diagnostic, Diagnostics, Pos};

use crate::ast::{Spec, Value};
use crate::Text;

/// What to do about a variable that is not set and has no default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Missing {
    /// It is an error (to run a query).
    Error,
    /// Keep `${NAME}` as written and warn (to check or explain a query without its variables).
    Keep,
}

/// Replaces every `${NAME}` (or `${NAME:-default}`) in the string values of `spec` by the
/// variable's value, and in the paths of its WebAssembly modules (a `CREATE FUNCTION …
/// LANGUAGE wasm AS '${DIR}/m.wasm'`, a `udf path = "${DIR}/m.wasm"` block; never in a
/// JavaScript body, whose `${…}` are its own template literals). `$${` stands for a literal `${`. A variable that is not set and has no
/// default is an error at its position, naming it, or with [`Missing::Keep`] a warning.
/// Returns the warnings.
///
/// Substituted characters take the position of the `${` they replace, so errors inside them
/// still point at the right place in the file.
///
/// # Examples
/// ```
/// use std::collections::BTreeMap;
/// let mut spec = anduin_spec::parse_flow(
///     "operator name = \"r\", type = \"reader\" { param path = \"${IN}\" }",
/// ).expect("parses");
/// let vars = BTreeMap::from([("IN".to_string(), "data.csv".to_string())]);
/// anduin_spec::substitute(&mut spec, &vars, anduin_spec::Missing::Error).expect("IN is set");
/// assert_eq!(spec.operators[0].params[0].value.as_text().as_str(), "data.csv");
/// ```
pub fn substitute(
    spec: &mut Spec,
    vars: &BTreeMap<String, String>,
    missing: Missing,
) -> Result<Diagnostics, Diagnostics> {
    let mut diags = Diagnostics::default();
    let mut apply = |t: &mut Text| match substitute_text(t, vars, missing) {
        Ok((new, warnings)) => {
            *t = new;
            diags.extend(warnings);
        }
        Err(d) => diags.push(d),
    };
    module_paths(spec, &mut apply);
    for ty in &mut spec.types {
        apply(&mut ty.name);
        for c in &mut ty.columns {
            apply(&mut c.name);
            apply(&mut c.ty);
        }
    }
    for op in &mut spec.operators {
        apply(&mut op.name);
        apply(&mut op.kind);
        for p in &mut op.params {
            if let Value::String(t) = &mut p.value {
                apply(t);
            }
        }
        op.inputs.iter_mut().for_each(&mut apply);
        for o in &mut op.outputs {
            apply(&mut o.name);
            if let Some(t) = &mut o.ty {
                apply(t);
            }
        }
    }
    if diags.has_errors() {
        Err(diags)
    } else {
        Ok(diags)
    }
}

/// [`substitute`] in the paths of `spec`'s WebAssembly modules only (what `anduin submit`
/// reads and sends with the query, before the coordinator substitutes the rest).
pub fn substitute_module_paths(
    spec: &mut Spec,
    vars: &BTreeMap<String, String>,
    missing: Missing,
) -> Result<Diagnostics, Diagnostics> {
    let mut diags = Diagnostics::default();
    module_paths(
        spec,
        &mut |t: &mut Text| match substitute_text(t, vars, missing) {
            Ok((new, warnings)) => {
                *t = new;
                diags.extend(warnings);
            }
            Err(d) => diags.push(d),
        },
    );
    if diags.has_errors() {
        Err(diags)
    } else {
        Ok(diags)
    }
}

/// Calls `apply` on each path of a WebAssembly module of `spec`.
fn module_paths(spec: &mut Spec, apply: &mut impl FnMut(&mut Text)) {
    for f in &mut spec.functions {
        if f.language.as_str() == "wasm" {
            apply(&mut f.body);
        }
    }
    for m in &mut spec.modules {
        apply(&mut m.path);
    }
}

fn substitute_text(
    t: &Text,
    vars: &BTreeMap<String, String>,
    missing: Missing,
) -> Result<(Text, Diagnostics), Diagnostic> {
    let src = t.as_str();
    let mut warnings = Diagnostics::default();
    if !src.contains("${") {
        return Ok((t.clone(), warnings));
    }
    let chars: Vec<char> = src.chars().collect();
    let pos_of = |i: usize| -> Pos { t.positions().get(i).copied().unwrap_or(t.pos()) };
    let mut value = String::new();
    let mut positions = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '$' && chars.get(i + 1) == Some(&'$') && chars.get(i + 2) == Some(&'{') {
            value.push_str("${");
            positions.extend([pos_of(i), pos_of(i + 2)]);
            i += 3;
            continue;
        }
        if c == '$' && chars.get(i + 1) == Some(&'{') {
            let at = pos_of(i);
            let Some(close) = chars[i + 2..].iter().position(|&c| c == '}') else {
                return Err(Diagnostic::error(
                    at,
                    "unterminated variable: expected `}` after `${`",
                ));
            };
            let body: String = chars[i + 2..i + 2 + close].iter().collect();
            let (name, default) = match body.split_once(":-") {
                Some((n, d)) => (n, Some(d)),
                None => (body.as_str(), None),
            };
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(Diagnostic::error(
                    at,
                    format!("malformed variable `${{{body}}}`: a name has letters, digits and `_`"),
                ));
            }
            let kept: String;
            let replacement = match (vars.get(name), default) {
                (Some(v), _) => v.as_str(),
                (None, Some(d)) => d,
                (None, None) if missing == Missing::Keep => {
                    warnings.push(Diagnostic::warning(
                        at,
                        format!("variable `{name}` is not set (pass `--var {name}=VALUE`); checked as written"),
                    ));
                    kept = format!("${{{body}}}");
                    &kept
                }
                (None, None) => {
                    return Err(Diagnostic::error(
                        at,
                        format!("variable `{name}` is not set: pass `--var {name}=VALUE`"),
                    ))
                }
            };
            for ch in replacement.chars() {
                value.push(ch);
                positions.push(at);
            }
            i += close + 3;
            continue;
        }
        value.push(c);
        positions.push(pos_of(i));
        i += 1;
    }
    if t.positions().is_empty() {
        return Ok((Text::unplaced(value), warnings));
    }
    Ok((Text::with_positions(value, positions, t.pos()), warnings))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn substitutes_defaults_and_escapes_keeping_positions() {
        let t = Text::at("${A}/x/${B:-def}/$${C}", Pos::new(3, 10));
        let (out, _) = substitute_text(&t, &vars(&[("A", "aa")]), Missing::Error).expect("ok");
        assert_eq!(out.as_str(), "aa/x/def/${C}");
        assert_eq!(out.pos_at_byte(1), Pos::new(3, 10));
        assert_eq!(out.pos_at_byte(3), Pos::new(3, 15));
    }

    #[test]
    fn a_missing_variable_is_named_at_its_position() {
        let t = Text::at("in/${INPUT}", Pos::new(2, 5));
        let d = substitute_text(&t, &vars(&[]), Missing::Error).expect_err("must fail");
        assert_eq!(d.pos, Pos::new(2, 8));
        assert_eq!(
            d.message,
            "variable `INPUT` is not set: pass `--var INPUT=VALUE`"
        );
        let (kept, warnings) = substitute_text(&t, &vars(&[]), Missing::Keep).expect("kept");
        assert_eq!(kept.as_str(), "in/${INPUT}");
        assert_eq!(warnings.0.len(), 1);
    }

    #[test]
    fn module_paths_are_substituted_and_javascript_bodies_left_alone() {
        let mut spec = crate::parse_sql(
            "CREATE FUNCTION f(x BIGINT) RETURNS BIGINT LANGUAGE wasm AS '${DIR}/m.wasm';
CREATE FUNCTION g(x BIGINT) RETURNS VARCHAR LANGUAGE javascript AS $$ return `${x}` $$;
CREATE TABLE t (x BIGINT) WITH (connector = 'file', path = 'in.csv');
CREATE TABLE o WITH (connector = 'file', path = 'out.csv');
INSERT INTO o SELECT f(x) AS y, g(x) AS z FROM t;",
        )
        .expect("parses");
        substitute(&mut spec, &vars(&[("DIR", "udfs")]), Missing::Error).expect("DIR is set");
        assert_eq!(spec.functions[0].body.as_str(), "udfs/m.wasm");
        assert_eq!(spec.functions[1].body.as_str().trim(), "return `${x}`");
        let mut flow = crate::parse_flow("udf path = \"${DIR}/m.wasm\"\n").expect("parses");
        let e = substitute_module_paths(&mut flow, &vars(&[]), Missing::Error).expect_err("unset");
        assert_eq!(e.0[0].pos, Pos::new(1, 13));
    }
}
