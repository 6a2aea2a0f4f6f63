//! The intermediate representation as JSON, so that other frontends (SQL, a graphical tool)
//! can target it and `anduin explain --format json` can show it.
//!
//! ```json
//! {"types": [{"name": "Reading", "columns": [{"name": "ts", "type": "timestamp"}]}],
//!  "operators": [{"name": "low", "type": "filter", "inputs": ["readings"],
//!                 "params": {"condition": "readings.value < 42"},
//!                 "outputs": [{"name": "lowReadings", "type": "Reading"}]}]}
//! ```

use anduin_types::{Diagnostic, Diagnostics, Pos};
use serde::{Deserialize, Serialize};

use crate::ast::{ColumnDef, OperatorDef, OutputDef, Param, Spec, TypeDef, Value};
use crate::Text;

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonSpec {
    #[serde(default)]
    types: Vec<JsonType>,
    #[serde(default)]
    operators: Vec<JsonOperator>,
    /// The paths of the `udf` blocks' modules.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    udfs: Vec<String>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonType {
    name: String,
    columns: Vec<JsonColumn>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonColumn {
    name: String,
    #[serde(rename = "type")]
    ty: String,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonOperator {
    name: String,
    #[serde(rename = "type")]
    kind: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    inputs: Vec<String>,
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    params: serde_json::Map<String, serde_json::Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    outputs: Vec<JsonOutput>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    control: Option<JsonControl>,
    /// `append-only` or `updating`: what the operator emits (a sink: takes), as `anduin
    /// explain` shows it. Derived by the planner: ignored when read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    changes: Option<String>,
    /// The operator that makes an updating stream so (itself, or one upstream). Derived by
    /// the planner: ignored when read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    updating_from: Option<String>,
}

/// What an operator emits (a sink: what it takes), as `anduin explain --format json` adds it
/// to each operator (`"changes"`, and `"updating_from"`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Changes {
    /// Rows that stay true once emitted.
    AppendOnly,
    /// Changes of a table (`+I -U +U -D`), made so by operator `from` (this one, or one
    /// upstream).
    Updating {
        /// The operator that makes the stream updating.
        from: String,
    },
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonControl {
    name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    time: Option<String>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonOutput {
    name: String,
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    ty: Option<String>,
}

/// The spec as pretty-printed JSON. Params keep their kinds (string, integer, number, boolean).
pub fn to_json(spec: &Spec) -> String {
    to_json_with(spec, &|_| None)
}

/// The spec as [`to_json`] writes it, each operator with what it emits (a sink: takes), as
/// `changes` names it (`None`: nothing said): `"changes": "append-only"`, or `"changes":
/// "updating", "updating_from": "NAME"`. [`from_json`] reads it back, ignoring both.
///
/// # Examples
/// ```
/// let spec = anduin_spec::parse_flow(
///     "operator name = \"w\", type = \"writer\" { input name = \"s\" param path = \"-\" }",
/// ).expect("parses");
/// let json = anduin_spec::to_json_explained(&spec, &|_| {
///     Some(anduin_spec::Changes::Updating { from: "g".to_string() })
/// });
/// assert!(json.contains("\"changes\": \"updating\""), "{json}");
/// assert!(json.contains("\"updating_from\": \"g\""), "{json}");
/// assert_eq!(anduin_spec::to_json(&anduin_spec::from_json(&json).expect("reads")), anduin_spec::to_json(&spec));
/// ```
pub fn to_json_explained(spec: &Spec, changes: &dyn Fn(&str) -> Option<Changes>) -> String {
    to_json_with(spec, changes)
}

fn to_json_with(spec: &Spec, changes: &dyn Fn(&str) -> Option<Changes>) -> String {
    let js = JsonSpec {
        types: spec
            .types
            .iter()
            .map(|t| JsonType {
                name: t.name.to_string(),
                columns: t
                    .columns
                    .iter()
                    .map(|c| JsonColumn {
                        name: c.name.to_string(),
                        ty: c.ty.to_string(),
                    })
                    .collect(),
            })
            .collect(),
        operators: spec
            .operators
            .iter()
            .map(|o| JsonOperator {
                name: o.name.to_string(),
                kind: o.kind.to_string(),
                inputs: o.inputs.iter().map(Text::to_string).collect(),
                params: o
                    .params
                    .iter()
                    .map(|p| (p.name.to_string(), value_to_json(&p.value)))
                    .collect(),
                outputs: o
                    .outputs
                    .iter()
                    .map(|out| JsonOutput {
                        name: out.name.to_string(),
                        ty: out.ty.as_ref().map(Text::to_string),
                    })
                    .collect(),
                control: o.control.as_ref().map(|c| JsonControl {
                    name: c.stream.to_string(),
                    time: c.time.as_ref().map(Text::to_string),
                }),
                changes: changes(o.name.as_str()).map(|c| match c {
                    Changes::AppendOnly => "append-only".to_string(),
                    Changes::Updating { .. } => "updating".to_string(),
                }),
                updating_from: match changes(o.name.as_str()) {
                    Some(Changes::Updating { from }) => Some(from),
                    _ => None,
                },
            })
            .collect(),
        udfs: spec.modules.iter().map(|m| m.path.to_string()).collect(),
    };
    serde_json::to_string_pretty(&js).expect("a JSON tree of strings and numbers serialises")
}

fn value_to_json(v: &Value) -> serde_json::Value {
    match v {
        Value::String(t) => serde_json::Value::String(t.to_string()),
        Value::Int(i, _) => serde_json::Value::from(*i),
        Value::Float(f, _) => serde_json::Value::from(*f),
        Value::Bool(b, _) => serde_json::Value::Bool(*b),
    }
}

/// Reads a spec from its JSON form. Positions are unknown; messages name the operator instead.
pub fn from_json(src: &str) -> Result<Spec, Diagnostics> {
    let js: JsonSpec = serde_json::from_str(crate::without_bom(src)).map_err(|e| {
        Diagnostic::error(
            Pos::new(
                u32::try_from(e.line()).unwrap_or(u32::MAX),
                u32::try_from(e.column()).unwrap_or(u32::MAX),
            ),
            format!("malformed JSON query: {e}"),
        )
    })?;
    let mut diags = Diagnostics::default();
    let mut spec = Spec::default();
    for path in js.udfs {
        spec.modules.push(crate::ModuleDef {
            path: Text::unplaced(path),
            pos: Pos::default(),
        });
    }
    for t in js.types {
        spec.types.push(TypeDef {
            name: Text::unplaced(t.name),
            columns: t
                .columns
                .into_iter()
                .map(|c| ColumnDef {
                    name: Text::unplaced(c.name),
                    ty: Text::unplaced(c.ty),
                })
                .collect(),
            pos: Pos::default(),
        });
    }
    for o in js.operators {
        let mut params = Vec::new();
        for (name, v) in o.params {
            let p = Pos::default();
            let value = match v {
                serde_json::Value::String(s) => Value::String(Text::unplaced(s)),
                serde_json::Value::Bool(b) => Value::Bool(b, p),
                serde_json::Value::Number(n) => match n.as_i64() {
                    Some(i) => Value::Int(i, p),
                    None => Value::Float(n.as_f64().unwrap_or(f64::NAN), p),
                },
                other => {
                    diags.push(Diagnostic::error(
                        p,
                        format!(
                            "operator \"{}\": param `{name}` must be a string, number or boolean, found {other}",
                            o.name
                        ),
                    ));
                    continue;
                }
            };
            params.push(Param {
                name: Text::unplaced(name),
                value,
            });
        }
        spec.operators.push(OperatorDef {
            name: Text::unplaced(o.name),
            kind: Text::unplaced(o.kind),
            params,
            inputs: o.inputs.into_iter().map(Text::unplaced).collect(),
            outputs: o
                .outputs
                .into_iter()
                .map(|out| OutputDef {
                    name: Text::unplaced(out.name),
                    ty: out.ty.map(Text::unplaced),
                })
                .collect(),
            control: o.control.map(|c| crate::ast::ControlDef {
                stream: Text::unplaced(c.name),
                time: c.time.map(Text::unplaced),
                pos: Pos::default(),
            }),
            pos: Pos::default(),
        });
    }
    if diags.0.is_empty() {
        Ok(spec)
    } else {
        Err(diags)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_flow;

    #[test]
    fn flow_and_json_describe_the_same_spec() {
        let src = r#"udf path = "udfs/m.wasm"
type name = "T" { column name = "x", type = "int" }
operator name = "g", type = "generator" { param count = 10 param rate = 2.5 param flag = true output name = "s", type = "T" }
operator name = "w", type = "writer" { input name = "s" param path = "-" }"#;
        let spec = parse_flow(src).expect("parses");
        let json = to_json(&spec);
        let back = from_json(&json).expect("reads back");
        assert_eq!(to_json(&back), json);
        assert_eq!(back.operators[1].inputs, spec.operators[1].inputs);
        assert!(json.contains("\"count\": 10"), "{json}");
        assert!(json.contains("\"rate\": 2.5"), "{json}");
        assert_eq!(back.modules[0].path.as_str(), "udfs/m.wasm");
    }

    #[test]
    fn malformed_json_is_reported_with_its_position() {
        let d = from_json("{\"types\": [}").expect_err("must fail");
        assert!(d.0[0].message.starts_with("malformed JSON query"));
        assert_eq!(d.0[0].pos.line, 1);
    }
}
