//! From a spec to a checked logical graph: every check that can run before anything runs.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use anduin_spec::{OperatorDef, Spec, Text, TypeDef, Value};
use anduin_types::{parse_duration_ms, ColumnType, Diagnostic, Diagnostics};
use arrow::datatypes::{Field, Schema, SchemaRef};

use crate::catalog::{Catalog, OperatorSignature, ParamKind};
use crate::logical::{LogicalGraph, Node, NodeId, Stream, StreamId};
use crate::suggest::did_you_mean;

/// The Arrow schema of a declared stream type. Columns are nullable (an empty CSV field is
/// null).
pub fn schema_of_type(ty: &TypeDef) -> Result<SchemaRef, Diagnostics> {
    let mut diags = Diagnostics::default();
    let mut fields = Vec::new();
    let mut seen = BTreeSet::new();
    for c in &ty.columns {
        if !seen.insert(c.name.as_str()) {
            diags.push(Diagnostic::error(
                c.name.pos(),
                format!(
                    "column `{}` is declared twice in type \"{}\"",
                    c.name, ty.name
                ),
            ));
        }
        match ColumnType::parse(c.ty.as_str()) {
            Some(t) => fields.push(Field::new(c.name.as_str(), t.arrow_type(), true)),
            None => diags.push(Diagnostic::error(
                c.ty.pos(),
                format!(
                    "unknown column type `{}`: expected one of int, double, bool, string, timestamp{}",
                    c.ty,
                    did_you_mean(c.ty.as_str(), ColumnType::NAMES.iter().copied())
                ),
            )),
        }
    }
    if ty.columns.is_empty() {
        diags.push(Diagnostic::error(
            ty.pos,
            format!(
                "type \"{}\" has no columns: add `column name = \"…\", type = \"…\"`",
                ty.name
            ),
        ));
    }
    if diags.has_errors() {
        Err(diags)
    } else {
        Ok(Arc::new(Schema::new(fields)))
    }
}

/// Checks a spec and binds every operator through `catalog`.
///
/// On success returns the graph and the warnings (for example an output nobody reads); on
/// failure every error found, sorted by position. Checks: duplicate type, column, operator and
/// stream names; unknown column types, stream types, operator types and params; param values
/// of the wrong kind; missing required params; inputs and outputs in the wrong number; streams
/// consumed but never produced; cycles; and whatever the operator's own binding rejects
/// (expressions, for instance).
pub fn check<C: Catalog>(
    spec: &Spec,
    catalog: &C,
) -> Result<(LogicalGraph<C::Bound>, Diagnostics), Diagnostics> {
    let mut diags = Diagnostics::default();

    // Types.
    let mut types: HashMap<&str, (SchemaRef, &TypeDef)> = HashMap::new();
    // Types with errors of their own: their uses are not reported again as unknown.
    let mut bad_types: BTreeSet<&str> = BTreeSet::new();
    for ty in &spec.types {
        if let Some((_, first)) = types.get(ty.name.as_str()) {
            diags.push(Diagnostic::error(
                ty.name.pos(),
                format!(
                    "type \"{}\" is declared twice (first at {}:{})",
                    ty.name, first.pos.line, first.pos.col
                ),
            ));
            continue;
        }
        match schema_of_type(ty) {
            Ok(schema) => {
                types.insert(ty.name.as_str(), (schema, ty));
            }
            Err(d) => {
                bad_types.insert(ty.name.as_str());
                diags.extend(d);
            }
        }
    }

    // Operators and their params. An operator with an error of its own is not bound (its
    // binding could only report consequences); the others still are.
    let mut broken = vec![false; spec.operators.len()];
    let mut names: HashMap<&str, &OperatorDef> = HashMap::new();
    for (i, op) in spec.operators.iter().enumerate() {
        let errors_before = diags.errors().count();
        if let Some(first) = names.get(op.name.as_str()) {
            diags.push(Diagnostic::error(
                op.name.pos(),
                format!(
                    "operator \"{}\" is declared twice (first at {}:{})",
                    op.name, first.pos.line, first.pos.col
                ),
            ));
        } else {
            names.insert(op.name.as_str(), op);
        }
        match catalog.signature(op.kind.as_str()) {
            None => diags.push(Diagnostic::error(
                op.kind.pos(),
                format!(
                    "unknown operator type `{}`{}: the types are {}",
                    op.kind,
                    did_you_mean(op.kind.as_str(), catalog.kinds()),
                    catalog.kinds().join(", ")
                ),
            )),
            Some(sig) => check_params(op, sig, &mut diags),
        }
        broken[i] = diags.errors().count() > errors_before;
    }

    // Streams: each produced by exactly one output.
    let mut streams: Vec<Stream> = Vec::new();
    let mut stream_ids: HashMap<String, StreamId> = HashMap::new();
    let mut outputs_of: Vec<Vec<StreamId>> = Vec::new();
    let mut declared: Vec<Vec<Option<SchemaRef>>> = Vec::new();
    for (i, op) in spec.operators.iter().enumerate() {
        let mut ids = Vec::new();
        let mut decl = Vec::new();
        for (port, out) in op.outputs.iter().enumerate() {
            let schema = match &out.ty {
                None => None,
                Some(t) => match types.get(t.as_str()) {
                    Some((s, _)) => Some(Arc::clone(s)),
                    None => {
                        broken[i] = true;
                        if !bad_types.contains(t.as_str()) {
                            diags.push(unknown_type(t, &out.name, op, &types));
                        }
                        None
                    }
                },
            };
            decl.push(schema.clone());
            if let Some(prev) = stream_ids.get(out.name.as_str()) {
                let producer = &spec.operators[streams[prev.0].producer.0 .0];
                diags.push(Diagnostic::error(
                    out.name.pos(),
                    format!(
                        "stream \"{}\" is already produced by operator \"{}\"",
                        out.name, producer.name
                    ),
                ));
                continue;
            }
            let id = StreamId(streams.len());
            stream_ids.insert(out.name.to_string(), id);
            ids.push(id);
            streams.push(Stream {
                name: out.name.to_string(),
                type_name: out.ty.as_ref().map(Text::to_string),
                schema: schema.unwrap_or_else(|| Arc::new(Schema::empty())),
                producer: (NodeId(i), port),
                consumers: Vec::new(),
            });
        }
        outputs_of.push(ids);
        declared.push(decl);
    }

    // Inputs: each names a produced stream.
    let mut inputs_of: Vec<Vec<StreamId>> = Vec::new();
    for (i, op) in spec.operators.iter().enumerate() {
        let mut ids = Vec::new();
        for (port, input) in op.inputs.iter().enumerate() {
            match stream_ids.get(input.as_str()) {
                Some(&id) => {
                    streams[id.0].consumers.push((NodeId(i), port));
                    ids.push(id);
                }
                None => {
                    broken[i] = true;
                    let hint = if types.contains_key(input.as_str()) {
                        format!(
                            " (`{input}` is a type; an input names a stream, the `name` of some operator's `output`)"
                        )
                    } else {
                        did_you_mean(input.as_str(), stream_ids.keys().map(String::as_str))
                    };
                    diags.push(Diagnostic::error(
                        input.pos(),
                        format!(
                            "stream \"{input}\" is consumed by operator \"{}\" but no operator produces it{hint}",
                            op.name
                        ),
                    ));
                }
            }
        }
        inputs_of.push(ids);
    }
    for s in &streams {
        if s.consumers.is_empty() {
            let op = &spec.operators[s.producer.0 .0];
            let out = &op.outputs[s.producer.1];
            diags.push(Diagnostic::warning(
                out.name.pos(),
                format!(
                    "output \"{}\" of operator \"{}\" is not read by any operator",
                    s.name, op.name
                ),
            ));
        }
    }

    // Cycles.
    let topo = match topological_order(spec.operators.len(), &inputs_of, &streams) {
        Ok(order) => order,
        Err(cycle) => {
            let path: Vec<&str> = cycle
                .iter()
                .map(|n| spec.operators[n.0].name.as_str())
                .collect();
            let first = &spec.operators[cycle[0].0];
            diags.push(Diagnostic::error(
                first.pos,
                format!(
                    "the graph has a cycle: {} -> {}; a dataflow must be acyclic",
                    path.join(" -> "),
                    path[0]
                ),
            ));
            Vec::new()
        }
    };
    if topo.is_empty() && !spec.operators.is_empty() {
        diags.sort();
        return Err(diags);
    }

    // Bind each operator to its inputs, in topological order so input schemas are known.
    let mut bound: Vec<Option<C::Bound>> = spec.operators.iter().map(|_| None).collect();
    let mut failed = vec![false; spec.operators.len()];
    for &id in &topo {
        let op = &spec.operators[id.0];
        let ins = &inputs_of[id.0];
        if broken[id.0] || ins.iter().any(|s| failed[streams[s.0].producer.0 .0]) {
            failed[id.0] = true;
            continue;
        }
        let inputs: Vec<(&str, SchemaRef)> = ins
            .iter()
            .map(|s| (streams[s.0].name.as_str(), Arc::clone(&streams[s.0].schema)))
            .collect();
        match catalog.bind(op, &inputs, &declared[id.0]) {
            Err(d) => {
                failed[id.0] = true;
                diags.extend(d);
            }
            Ok(b) => {
                diags.extend(b.warnings);
                for (port, schema) in b.outputs.into_iter().enumerate() {
                    let Some(sid) = outputs_of[id.0].get(port) else {
                        continue;
                    };
                    let out = &op.outputs[port];
                    if let (Some(declared), Some(t)) = (&declared[id.0][port], &out.ty) {
                        if let Some(problem) = schema_mismatch(declared, &schema) {
                            failed[id.0] = true;
                            diags.push(Diagnostic::error(
                                t.pos(),
                                format!(
                                    "output \"{}\" is declared as type \"{t}\" {}, but operator \"{}\" produces {}: {problem}",
                                    out.name,
                                    describe_schema(declared),
                                    op.name,
                                    describe_schema(&schema)
                                ),
                            ));
                            continue;
                        }
                    }
                    streams[sid.0].schema = schema;
                }
                bound[id.0] = Some(b.bound);
            }
        }
    }
    diags.sort();
    if diags.has_errors() {
        return Err(diags);
    }
    let nodes = spec
        .operators
        .iter()
        .zip(bound)
        .zip(inputs_of.into_iter().zip(outputs_of))
        .map(|((def, b), (inputs, outputs))| Node {
            def: def.clone(),
            inputs,
            outputs,
            bound: b.expect("every node bound when no errors"),
        })
        .collect();
    Ok((
        LogicalGraph {
            nodes,
            streams,
            topo,
        },
        diags,
    ))
}

fn unknown_type(
    t: &Text,
    output: &Text,
    op: &OperatorDef,
    types: &HashMap<&str, (SchemaRef, &TypeDef)>,
) -> Diagnostic {
    let known: Vec<&str> = {
        let mut k: Vec<&str> = types.keys().copied().collect();
        k.sort_unstable();
        k
    };
    Diagnostic::error(
        t.pos(),
        format!(
            "unknown type \"{t}\" of output \"{output}\" of operator \"{}\"{}: declare it with `type name = \"{t}\" {{ … }}`{}",
            op.name,
            did_you_mean(t.as_str(), known.iter().copied()),
            if known.is_empty() {
                String::new()
            } else {
                format!(" (declared: {})", known.join(", "))
            }
        ),
    )
}

/// Checks each param of `op` against the operator type's signature.
fn check_params(op: &OperatorDef, sig: &OperatorSignature, diags: &mut Diagnostics) {
    let mut seen: BTreeMap<&str, &anduin_spec::Param> = BTreeMap::new();
    for p in &op.params {
        let name = p.name.as_str();
        if let Some(first) = seen.insert(name, p) {
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
        let Some(spec) = sig.param(name) else {
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
        ParamKind::Text => matches!(v, Value::String(_)) || !s.is_empty(),
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
        ParamKind::Text => "must be text".into(),
        ParamKind::Int => format!("must be a whole number, found `{s}`"),
        ParamKind::Number => format!("must be a number, found `{s}`"),
        ParamKind::Bool => format!("must be `true` or `false`, found `{s}`"),
        ParamKind::Duration => {
            format!("must be a duration such as \"2s\", \"250ms\" or \"5m\", found `{s}`")
        }
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

/// A topological order of the nodes, or the nodes of one cycle.
fn topological_order(
    n: usize,
    inputs_of: &[Vec<StreamId>],
    streams: &[Stream],
) -> Result<Vec<NodeId>, Vec<NodeId>> {
    let preds: Vec<Vec<usize>> = inputs_of
        .iter()
        .map(|ins| ins.iter().map(|s| streams[s.0].producer.0 .0).collect())
        .collect();
    let mut indegree: Vec<usize> = preds.iter().map(Vec::len).collect();
    let mut succs: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (node, ps) in preds.iter().enumerate() {
        for &p in ps {
            succs[p].push(node);
        }
    }
    let mut ready: BTreeSet<usize> = (0..n).filter(|&i| indegree[i] == 0).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(next) = ready.pop_first() {
        order.push(NodeId(next));
        for &s in &succs[next] {
            indegree[s] -= 1;
            if indegree[s] == 0 {
                ready.insert(s);
            }
        }
    }
    if order.len() == n {
        return Ok(order);
    }
    // Walk predecessors among the remaining nodes until one repeats: that is a cycle.
    let start = (0..n)
        .find(|&i| indegree[i] > 0)
        .expect("some node is left when the order is short");
    let mut path = vec![start];
    let mut cur = start;
    loop {
        let prev = *preds[cur]
            .iter()
            .find(|&&p| indegree[p] > 0)
            .expect("a node left over has a predecessor left over");
        if let Some(at) = path.iter().position(|&x| x == prev) {
            let mut cycle: Vec<NodeId> = path[at..].iter().rev().map(|&i| NodeId(i)).collect();
            let min = cycle
                .iter()
                .enumerate()
                .min_by_key(|(_, id)| id.0)
                .map(|(i, _)| i)
                .unwrap_or(0);
            cycle.rotate_left(min);
            return Err(cycle);
        }
        path.push(prev);
        cur = prev;
    }
}

/// Why `actual` cannot be carried by a stream of type `declared`, if it cannot: column names
/// and language types (int, double, …) must match in order.
pub fn schema_mismatch(declared: &Schema, actual: &Schema) -> Option<String> {
    if declared.fields().len() != actual.fields().len() {
        return Some(format!(
            "{} columns declared, {} produced",
            declared.fields().len(),
            actual.fields().len()
        ));
    }
    for (d, a) in declared.fields().iter().zip(actual.fields()) {
        if d.name() != a.name() {
            return Some(format!(
                "column `{}` is declared where `{}` is produced",
                d.name(),
                a.name()
            ));
        }
        let dt = ColumnType::from_arrow(d.data_type());
        let at = ColumnType::from_arrow(a.data_type());
        if dt != at {
            return Some(format!(
                "column `{}` is declared {} but produced as {}",
                d.name(),
                dt.map(|t| t.name().to_string())
                    .unwrap_or_else(|| d.data_type().to_string()),
                at.map(|t| t.name().to_string())
                    .unwrap_or_else(|| a.data_type().to_string())
            ));
        }
    }
    None
}

/// A schema as the language writes it: `(ts timestamp, sensor int)`.
pub fn describe_schema(s: &Schema) -> String {
    let cols: Vec<String> = s
        .fields()
        .iter()
        .map(|f| {
            format!(
                "{} {}",
                f.name(),
                ColumnType::from_arrow(f.data_type())
                    .map(|t| t.name().to_string())
                    .unwrap_or_else(|| f.data_type().to_string())
            )
        })
        .collect();
    format!("({})", cols.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use anduin_types::Pos;

    fn stream(producer: usize) -> Stream {
        Stream {
            name: format!("s{producer}"),
            type_name: None,
            schema: Arc::new(Schema::empty()),
            producer: (NodeId(producer), 0),
            consumers: vec![],
        }
    }

    #[test]
    fn a_chain_is_ordered_producers_first() {
        // 2 reads 1, 1 reads 0.
        let streams = vec![stream(0), stream(1), stream(2)];
        let inputs = vec![vec![], vec![StreamId(0)], vec![StreamId(1)]];
        let order = topological_order(3, &inputs, &streams).expect("acyclic");
        assert_eq!(order, vec![NodeId(0), NodeId(1), NodeId(2)]);
    }

    #[test]
    fn a_cycle_is_reported_from_its_first_node() {
        // 0 is a source; 1 reads 0 and 2; 2 reads 1.
        let streams = vec![stream(0), stream(1), stream(2)];
        let inputs = vec![vec![], vec![StreamId(0), StreamId(2)], vec![StreamId(1)]];
        let cycle = topological_order(3, &inputs, &streams).expect_err("cyclic");
        assert_eq!(cycle, vec![NodeId(1), NodeId(2)]);
    }

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
            Some("must be a duration such as \"2s\", \"250ms\" or \"5m\", found `2 parsecs`")
        );
        assert!(kind_problem(
            ParamKind::OneOf(&["csv", "jsonl"]),
            &Value::String(Text::at("jsnl", p))
        )
        .is_some_and(|m| m.ends_with("(did you mean `jsonl`?)")));
    }

    #[test]
    fn a_declared_type_must_match_names_and_types_in_order() {
        use arrow::datatypes::DataType;
        let a = Schema::new(vec![Field::new("x", DataType::Int64, true)]);
        let b = Schema::new(vec![Field::new("x", DataType::Int32, true)]);
        let c = Schema::new(vec![Field::new("y", DataType::Int64, true)]);
        assert_eq!(
            schema_mismatch(&a, &b),
            None,
            "both are ints to the language"
        );
        assert_eq!(
            schema_mismatch(&a, &c).as_deref(),
            Some("column `x` is declared where `y` is produced")
        );
    }
}
