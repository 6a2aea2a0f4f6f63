//! A control input (`control name = "…", time = "…"` in an operator's block): a stream of rows
//! `<query?, operator, param, value, time?>` that change the operator's params while it runs —
//! the paper's meta query over a control stream (§4.5). Checked here before anything runs:
//! the stream's columns, the event-time column on both sides, and that the operator's type can
//! follow such a stream (stateless, with params adjustable while running).

use anduin_spec::{ControlDef, OperatorDef};
use anduin_types::{ColumnType, Diagnostic, Diagnostics};
use arrow::datatypes::{DataType, Schema};

use crate::catalog::Catalog;

/// Where a node's control input arrives and which columns it reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ControlInput {
    /// The control stream's name.
    pub stream: String,
    /// The input port it arrives on: after the data inputs.
    pub port: usize,
    /// The column holding the query's name, if the stream has one (rows naming another query
    /// are ignored).
    pub query: Option<usize>,
    /// The column holding the operator's name (rows naming another operator are ignored).
    pub operator: usize,
    /// The column holding the param's name.
    pub param: usize,
    /// The column holding the new value, as text.
    pub value: usize,
    /// With event time: the time column of the control stream and of the data input (a change
    /// at time t applies to the data rows with event time ≥ t). Without it, a change applies
    /// from its arrival on.
    pub time: Option<ControlTime>,
    /// The params the stream may change (the type's adjustable ones).
    pub adjustable: Vec<&'static str>,
}

/// The event-time columns a control input is ordered by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ControlTime {
    /// The column's name (the same on both sides).
    pub name: String,
    /// Its index in the control stream.
    pub control: usize,
    /// Its index in the (single) data input.
    pub data: usize,
}

/// Checks `control` of `op` against the data inputs' schemas and the control stream's.
pub(crate) fn check_control<C: Catalog>(
    op: &OperatorDef,
    control: &ControlDef,
    port: usize,
    data: &[&Schema],
    stream: &Schema,
    catalog: &C,
) -> Result<ControlInput, Diagnostics> {
    let mut diags = Diagnostics::default();
    let adjustable = catalog.adjustable(op.kind.as_str());
    let stateful = catalog
        .signature(op.kind.as_str())
        .is_none_or(|s| s.stateful);
    if adjustable.is_empty() || stateful || data.len() != 1 {
        return Err(Diagnostic::error(
            control.pos,
            format!(
                "operator \"{}\" of type `{}` cannot take a control input: a control stream drives a stateless operator with one input and params adjustable while running (filter, map); change the params of other operators with `anduin ctl set`",
                op.name, op.kind
            ),
        )
        .into());
    }
    let name = control.stream.as_str();
    let mut text_column = |column: &str, required: bool| -> Option<usize> {
        match stream.index_of(column) {
            Ok(i) if stream.field(i).data_type() == &DataType::Utf8 => Some(i),
            Ok(i) => {
                diags.push(Diagnostic::error(
                    control.stream.pos(),
                    format!(
                        "column `{column}` of control stream \"{name}\" is {}, but it must be a string",
                        stream.field(i).data_type()
                    ),
                ));
                None
            }
            Err(_) if required => {
                diags.push(Diagnostic::error(
                    control.stream.pos(),
                    format!(
                        "control stream \"{name}\" has no column `{column}`: a control stream has string columns `operator`, `param` and `value` (and optionally `query`); it has {}",
                        columns(stream)
                    ),
                ));
                None
            }
            Err(_) => None,
        }
    };
    let operator = text_column("operator", true);
    let param = text_column("param", true);
    let value = text_column("value", true);
    let query = text_column("query", false);
    let time = match &control.time {
        None => None,
        Some(t) => {
            let col = t.as_str();
            let on = |schema: &Schema, what: &str| {
                match schema.index_of(col) {
                Ok(i) if is_time(schema.field(i).data_type()) => Ok(i),
                Ok(i) => Err(Diagnostic::error(
                    t.pos(),
                    format!(
                        "column `{col}` of {what} is {}, but an event time must be a timestamp or an int of epoch milliseconds",
                        schema.field(i).data_type()
                    ),
                )),
                Err(_) => Err(Diagnostic::error(
                    t.pos(),
                    format!(
                        "{what} has no column `{col}`: `time` names the event-time column that both the operator's input and the control stream carry; it has {}",
                        columns(schema)
                    ),
                )),
            }
            };
            let input = data.first().expect("one data input, checked above");
            match (
                on(stream, &format!("control stream \"{name}\"")),
                on(input, "the operator's input"),
            ) {
                (Ok(control), Ok(data)) => Some(ControlTime {
                    name: col.to_string(),
                    control,
                    data,
                }),
                (a, b) => {
                    for d in [a.err(), b.err()].into_iter().flatten() {
                        diags.push(d);
                    }
                    None
                }
            }
        }
    };
    match (operator, param, value) {
        (Some(operator), Some(param), Some(value)) if !diags.has_errors() => Ok(ControlInput {
            stream: name.to_string(),
            port,
            query,
            operator,
            param,
            value,
            time,
            adjustable,
        }),
        _ => Err(diags),
    }
}

fn is_time(t: &DataType) -> bool {
    matches!(
        ColumnType::from_arrow(t),
        Some(ColumnType::Timestamp | ColumnType::Int)
    )
}

fn columns(schema: &Schema) -> String {
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    if names.is_empty() {
        "no columns".into()
    } else {
        names.join(", ")
    }
}
