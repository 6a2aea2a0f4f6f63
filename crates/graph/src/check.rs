//! From a spec to a checked logical graph: every check that can run before anything runs.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use anduin_spec::{OperatorDef, Spec, Text, TypeDef};
use anduin_types::{did_you_mean, ColumnType, Diagnostic, Diagnostics, Pos};
use arrow::datatypes::{Field, Schema, SchemaRef};

use crate::catalog::{Binding, Catalog};
use crate::control_input::{check_control, ControlInput};
use crate::logical::{LogicalGraph, Node, NodeId, Stream, StreamId};
use crate::params::check_params;
use crate::schema::{describe_schema, schema_mismatch};
use crate::topo::topological_order;

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

    if spec.operators.is_empty() {
        diags.push(Diagnostic::error(
            spec.types.first().map_or(Pos::new(1, 1), |t| t.pos),
            "the query has no operators: nothing would run; declare at least a source and what reads it, e.g. operator name = \"events\", type = \"reader\" { … }",
        ));
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
                updating_from: None,
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
        if let Some(control) = &op.control {
            match stream_ids.get(control.stream.as_str()) {
                Some(&id) => {
                    streams[id.0].consumers.push((NodeId(i), op.inputs.len()));
                    ids.push(id);
                }
                None => {
                    broken[i] = true;
                    diags.push(Diagnostic::error(
                        control.stream.pos(),
                        format!(
                            "control stream \"{}\" of operator \"{}\" is not produced by any operator{}",
                            control.stream,
                            op.name,
                            did_you_mean(control.stream.as_str(), stream_ids.keys().map(String::as_str))
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
    let mut partitions: Vec<Vec<Option<Vec<usize>>>> =
        spec.operators.iter().map(|_| Vec::new()).collect();
    let mut failed = vec![false; spec.operators.len()];
    let mut controls: Vec<Option<ControlInput>> = spec.operators.iter().map(|_| None).collect();
    let mut volatile: Vec<Option<crate::VolatileCall>> =
        spec.operators.iter().map(|_| None).collect();
    for &id in &topo {
        let op = &spec.operators[id.0];
        let ins = &inputs_of[id.0];
        if broken[id.0] || ins.iter().any(|s| failed[streams[s.0].producer.0 .0]) {
            failed[id.0] = true;
            continue;
        }
        let mut inputs: Vec<(&str, SchemaRef)> = ins
            .iter()
            .map(|s| (streams[s.0].name.as_str(), Arc::clone(&streams[s.0].schema)))
            .collect();
        let control_schema = match op.control {
            Some(_) => inputs.pop().map(|(_, schema)| schema),
            None => None,
        };
        // Changes flow from the first operator that makes a stream updating to every
        // operator after it; one that does not handle them is refused here, naming it.
        let updating_input = ins
            .iter()
            .take(inputs.len())
            .find(|s| streams[s.0].updating_from.is_some());
        let origin = updating_input.and_then(|s| streams[s.0].updating_from);
        if let (Some(input), Some(from)) = (updating_input, origin) {
            if let Err(why) = catalog.consumes_updates(op) {
                let maker = &spec.operators[from.0];
                failed[id.0] = true;
                diags.push(Diagnostic::error(
                    op.pos,
                    format!(
                        "operator \"{}\" ({}) cannot take the updating stream \"{}\": {why}. The stream carries changes (+I, -U, +U, -D) because of operator \"{}\" ({}) at {}:{}",
                        op.name,
                        op.kind,
                        streams[input.0].name,
                        maker.name,
                        maker.kind,
                        maker.pos.line,
                        maker.pos.col
                    ),
                ));
                continue;
            }
        }
        // A control input changes params while the operator runs, which over an updating
        // stream would make a retraction no longer match the row it takes back (as
        // `check_change` refuses for a change through the API).
        if let (Some(control), Some(input)) = (&op.control, updating_input) {
            failed[id.0] = true;
            diags.push(Diagnostic::error(
                control.pos,
                format!(
                    "operator \"{}\" reads the updating stream \"{}\": a control input cannot change its params while it runs (the retraction of a row it passed before a change would be computed with the new value and no longer match, a wrong result); not supported yet",
                    op.name, streams[input.0].name
                ),
            ));
            continue;
        }
        let bound_op = catalog.bind(op, &inputs, &declared[id.0]).and_then(|b| {
            match (&op.control, control_schema) {
                (Some(def), Some(schema)) => {
                    let data: Vec<&arrow::datatypes::Schema> =
                        inputs.iter().map(|(_, s)| s.as_ref()).collect();
                    let input = check_control(op, def, inputs.len(), &data, &schema, catalog)?;
                    let bound = catalog.with_control(op, b.bound, &inputs[0].1, &input)?;
                    controls[id.0] = Some(input);
                    Ok(Binding { bound, ..b })
                }
                _ => Ok(b),
            }
        });
        match bound_op {
            Err(d) => {
                failed[id.0] = true;
                diags.extend(d);
            }
            Ok(b) => {
                volatile[id.0] = catalog.volatile_call(op, &inputs);
                diags.extend(b.warnings);
                for (port, schema) in b.outputs.into_iter().enumerate() {
                    let Some(sid) = outputs_of[id.0].get(port) else {
                        continue;
                    };
                    let out = &op.outputs[port];
                    if let (Some(declared), Some(t)) = (&declared[id.0][port], &out.ty) {
                        // A declared type names the columns of the rows; the change kind of
                        // an updating stream's rows is not one of them.
                        let rows = without_change_column(&schema);
                        if let Some(problem) = schema_mismatch(declared, &rows) {
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
                    let changes = origin.is_some() || catalog.makes_updates(op);
                    if let Some(problem) = reserved_column(&schema, changes) {
                        failed[id.0] = true;
                        diags.push(Diagnostic::error(
                            op.pos,
                            format!(
                                "output \"{}\" of operator \"{}\": {problem}",
                                out.name, op.name
                            ),
                        ));
                        continue;
                    }
                    streams[sid.0].updating_from =
                        anduin_types::is_updating(&schema).then_some(origin.unwrap_or(id));
                    streams[sid.0].schema = schema;
                }
                bound[id.0] = Some(b.bound);
                partitions[id.0] = b.partition_by;
            }
        }
    }
    diags.extend(crate::ending::check_ending(
        spec, catalog, &topo, &inputs_of, &streams,
    ));
    diags.extend(crate::feedback::check_feedback(spec, catalog));
    diags.extend(crate::qos::check_qos(spec, catalog));
    diags.extend(crate::qos::check_selectors(spec, catalog));
    diags.sort();
    if diags.has_errors() {
        return Err(diags);
    }
    let nodes = spec
        .operators
        .iter()
        .zip(bound)
        .zip(inputs_of.into_iter().zip(outputs_of))
        .zip(
            partitions
                .into_iter()
                .zip(controls.into_iter().zip(volatile)),
        )
        .map(
            |(((def, b), (inputs, outputs)), (partition_by, (control, volatile)))| Node {
                control,
                volatile,
                parallelism: def
                    .param("parallelism")
                    .and_then(|p| p.value.as_text().as_str().parse().ok())
                    // Split by ranges: one instance per range.
                    .or_else(|| crate::ranges::Ranges::asked_by(def).map(|r| r.instances())),
                parallelizable: catalog
                    .signature(def.kind.as_str())
                    .is_some_and(|s| s.param("parallelism").is_some()),
                stateful: catalog
                    .signature(def.kind.as_str())
                    .is_none_or(|s| s.stateful),
                survives_input_loss: catalog.survives_input_loss(def.kind.as_str()),
                def: def.clone(),
                inputs,
                outputs,
                bound: b.expect("every node bound when no errors"),
                partition_by,
            },
        )
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

/// Why an output of `schema` misuses the change-kind column's name, if it does: the name is
/// reserved for the last column of an updating stream, which only an operator that makes or
/// passes on changes (`changes`) has.
fn reserved_column(schema: &Schema, changes: bool) -> Option<String> {
    let named = schema
        .fields()
        .iter()
        .filter(|f| f.name() == anduin_types::CHANGE_COLUMN)
        .count();
    let fine = named == 0 || (named == 1 && changes && anduin_types::is_updating(schema));
    (!fine).then(|| {
        format!(
            "a column is named `{}`, the name of the change kind of an updating stream's rows, which a column cannot take: rename it",
            anduin_types::CHANGE_COLUMN
        )
    })
}

/// `schema` without the change-kind column of an updating stream (unchanged otherwise).
fn without_change_column(schema: &SchemaRef) -> SchemaRef {
    if anduin_types::is_updating(schema) {
        let mut fields: Vec<_> = schema.fields().iter().cloned().collect();
        fields.pop();
        Arc::new(Schema::new(fields))
    } else {
        Arc::clone(schema)
    }
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
