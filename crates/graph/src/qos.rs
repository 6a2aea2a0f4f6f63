//! What a user asks of an operator's fault tolerance and distribution, as params any operator
//! takes (paper §4.2): `fault_tolerance = "standby" | "checkpoint" | "hot-standby"`,
//! `replicas = N` (for hot standby) and `pipeline = "split"`. The rewriting rules
//! (`anduin-rewrite`'s built-in rules, see [`crate::rewriting`]) turn them into a plan;
//! this module checks that a request makes sense for the operator it is on.
//!
//! - `standby` (pattern 1) is for a stateless operator: it is restarted on another worker
//!   when its worker is lost, with nothing to restore. That is what every task of a cluster
//!   query gets today (per-task recovery).
//! - `checkpoint` (pattern 2) is for a stateful operator: its state is snapshotted and
//!   restored elsewhere. That is what every stateful operator gets when the query runs with
//!   checkpoints (`--checkpoint-interval`).
//! - `hot-standby` (pattern 3) runs `replicas` copies (default 2) on distinct workers fed by
//!   one multicast; a stream selector forwards one copy's output. Copies must compute the same
//!   rows in the same order: anduin's operators are deterministic given their input's order
//!   (event time, watermarks that travel with the rows, no clock), and a multicast gives every
//!   copy the same order of *one* input; the interleaving of *two* inputs is not fixed, so an
//!   operator with several inputs (a join, a union) is refused hot standby. Shown by `anduin
//!   explain --rewritten`; `anduin run` runs the copies on threads of its process behind a
//!   `stream-selector` ([`crate::rewriting::hot_standby_spec`]), and goes on when a copy
//!   fails, with checkpoints or without, in process or over `--loopback-workers`; a cluster
//!   (`anduin submit`) places the copies on distinct workers.
//! - `pipeline = "split"` (pattern 5) on each operator of a chain splits the chain into one
//!   task per operator (the stages the pipelining rules place: `crate::pipelining`), on
//!   distinct workers on a cluster. It
//!   runs: at plan time, and also live (`anduin ctl set q w pipeline split`, or a rule
//!   applied at run time), cutting the chain at a barrier, embedded or on a cluster (where
//!   the new task stays on the worker of the task it split from).

use anduin_spec::{OperatorDef, Spec};
use anduin_types::{Diagnostic, Diagnostics};

use crate::catalog::{Catalog, ParamKind, ParamSpec};

/// The QoS params every operator type accepts besides its own.
pub const QOS_PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "fault_tolerance",
        required: false,
        kind: ParamKind::OneOf(&["standby", "checkpoint", "hot-standby"]),
        default: None,
        doc: "how the operator survives the loss of its worker: standby (stateless: restarted elsewhere), checkpoint (stateful: restored from its last snapshot), hot-standby (replicas behind a stream selector, the query going on when one fails)",
    },
    ParamSpec {
        name: "replicas",
        required: false,
        kind: ParamKind::Int,
        default: Some("2"),
        doc: "with fault_tolerance = \"hot-standby\": how many copies run, 2 to 8",
    },
    ParamSpec {
        name: "pipeline",
        required: false,
        kind: ParamKind::OneOf(&["split"]),
        default: None,
        doc: "split: this operator is a task of its own, apart from the operators before and after it in its chain (on a cluster, two split operators one after the other run on distinct workers); applied when the query is planned, and live in an embedded run by `anduin ctl set QUERY OP pipeline split`",
    },
    ParamSpec {
        name: "placement",
        required: false,
        kind: ParamKind::Text,
        default: None,
        doc: "a named worker slot, `GROUP.SLOT` (what a rewriting rule's `@{p1}` sets): on a cluster, operators of one group with distinct slots run on distinct workers, and must be in distinct tasks; nothing in an embedded run",
    },
];

/// The QoS param named `name`, if it is one.
pub fn qos_param(name: &str) -> Option<&'static ParamSpec> {
    QOS_PARAMS.iter().find(|p| p.name == name)
}

fn text<'a>(op: &'a OperatorDef, name: &str) -> Option<(String, &'a anduin_spec::Param)> {
    op.param(name)
        .map(|p| (p.value.as_text().as_str().to_string(), p))
}

/// Refuses an operator that goes on without one of its inputs (a stream selector) unless its
/// inputs are copies of one operator — the same type, the same inputs and the same params,
/// the QoS ones aside — as `fault_tolerance = "hot-standby"` makes them: it forwards one
/// input's rows as if they were any other's, and a checkpoint gives a lost input's producer
/// its twin's state.
pub fn check_selectors<C: Catalog>(spec: &Spec, catalog: &C) -> Diagnostics {
    let mut diags = Diagnostics::default();
    let producer = |stream: &str| {
        spec.operators
            .iter()
            .find(|o| o.outputs.iter().any(|s| s.name.as_str() == stream))
    };
    // What makes two operators copies of each other.
    let shape = |o: &OperatorDef| {
        let mut params: Vec<(String, String)> = o
            .params
            .iter()
            .filter(|p| !QOS_PARAMS.iter().any(|q| q.name == p.name.as_str()))
            .map(|p| (p.name.to_string(), p.value.as_text().as_str().to_string()))
            .collect();
        params.sort();
        let inputs: Vec<String> = o.inputs.iter().map(|i| i.to_string()).collect();
        (o.kind.as_str().to_string(), inputs, params)
    };
    for op in spec
        .operators
        .iter()
        .filter(|o| catalog.survives_input_loss(o.kind.as_str()))
    {
        let producers: Vec<&OperatorDef> = op
            .inputs
            .iter()
            .filter_map(|i| producer(i.as_str()))
            .collect();
        let Some(first) = producers.first() else {
            continue;
        };
        if let Some(other) = producers.iter().find(|p| shape(p) != shape(first)) {
            // Copies that differ only by reading copies of their own: a chain copied whole.
            let (mut a, mut b) = (shape(first), shape(other));
            a.1.clear();
            b.1.clear();
            let chain = a == b;
            diags.push(Diagnostic::error(
                op.pos,
                if chain {
                    format!(
                        "operator \"{}\" ({}): its inputs \"{}\" and \"{}\" read other streams: copies of a chain of operators behind one selector are not supported yet; copy one operator (its input multicast to the copies)",
                        op.name, op.kind, first.name, other.name
                    )
                } else {
                    format!(
                        "operator \"{}\" ({}): its inputs must be copies of one operator (the same type, inputs and params), as fault_tolerance = \"hot-standby\" makes them, but \"{}\" and \"{}\" differ: ask for hot standby on the operator instead",
                        op.name, op.kind, first.name, other.name
                    )
                },
            ));
        }
    }
    diags
}

/// The QoS requests of `spec` that do not fit the operator they are on (standby on a
/// stateful operator, checkpoint on a stateless one, replicas without hot standby or out of
/// range, hot standby of an operator with several inputs or with none).
pub fn check_qos<C: Catalog>(spec: &Spec, catalog: &C) -> Diagnostics {
    let mut diags = Diagnostics::default();
    for op in &spec.operators {
        let Some(sig) = catalog.signature(op.kind.as_str()) else {
            continue;
        };
        let ft = text(op, "fault_tolerance");
        if let Some((value, p)) = &ft {
            let problem = match value.as_str() {
                "standby" if sig.stateful => Some(format!(
                    "fault_tolerance = \"standby\" restarts an operator with nothing to restore, but a {} keeps state: use \"checkpoint\" (or \"hot-standby\")",
                    sig.kind
                )),
                "checkpoint" if !sig.stateful => Some(format!(
                    "fault_tolerance = \"checkpoint\" snapshots an operator's state, and a {} keeps none: use \"standby\"",
                    sig.kind
                )),
                "hot-standby"
                    if op
                        .param("parallelism")
                        .is_some_and(|p| p.value.as_text().as_str() != "1") =>
                {
                    Some("fault_tolerance = \"hot-standby\" runs each copy as one instance (the rows of several would interleave in another order in each copy): remove `parallelism`".to_string())
                }
                "hot-standby" if op.spread_copies().is_some() => Some(
                    "fault_tolerance = \"hot-standby\" with overflow_instances is not supported yet (each copy of the hot standby would need copies of its own to spread to); remove one of them".to_string(),
                ),
                "hot-standby" if op.param(crate::ranges::PARAM).is_some() => Some(
                    "fault_tolerance = \"hot-standby\" runs each copy as one instance (the rows of several would interleave in another order in each copy): remove `ranges`".to_string(),
                ),
                "hot-standby" if op.control.is_some() => Some(
                    "fault_tolerance = \"hot-standby\" is not supported for an operator with a control input (each replica would need the control stream too)".to_string(),
                ),
                "hot-standby" if op.outputs.len() > 1 => Some(format!(
                    "fault_tolerance = \"hot-standby\" is for an operator with one output, and this {} has {}",
                    sig.kind,
                    op.outputs.len()
                )),
                "hot-standby" if op.outputs.is_empty() => Some(format!(
                    "fault_tolerance = \"hot-standby\" replicates an operator whose copies' outputs a stream selector merges, and a {} is a sink: its copies would each write the output",
                    sig.kind
                )),
                "hot-standby" if op.inputs.len() != 1 => Some(if op.inputs.is_empty() {
                    format!("fault_tolerance = \"hot-standby\" replicates an operator fed by a multicast of its input, and a {} has no input: a source is not replicated (it resumes from its checkpointed position when restarted)", sig.kind)
                } else {
                    format!("fault_tolerance = \"hot-standby\" needs replicas that compute the same rows, and the {} inputs of a {} can interleave differently in each replica: not supported for an operator with several inputs", op.inputs.len(), sig.kind)
                }),
                _ => None,
            };
            if let Some(problem) = problem {
                diags.push(Diagnostic::error(
                    p.value.pos(),
                    format!("operator \"{}\": {problem}", op.name),
                ));
            }
        }
        if let Some((value, p)) = text(op, "replicas") {
            let hot = ft.as_ref().is_some_and(|(v, _)| v == "hot-standby");
            let problem = if !hot {
                Some("`replicas` is for fault_tolerance = \"hot-standby\"".to_string())
            } else {
                match value.parse::<u32>() {
                    Ok(2..=8) => None,
                    _ => Some(format!("`replicas` must be 2 to 8, not {value}")),
                }
            };
            if let Some(problem) = problem {
                diags.push(Diagnostic::error(
                    p.value.pos(),
                    format!("operator \"{}\": {problem}", op.name),
                ));
            }
        }
    }
    diags
}
