//! The planner's rewrite that places an `extreme_filter`: for each interval join of a stream
//! `S` with the `MAX` (or `MIN`) of a column of `S` over a tumbling window, joined on that
//! column, the filter goes between `S` and both the window and the join.
//!
//! What it recognises, in the checked graph (any frontend: SQL or `.flow`):
//! - a `join` of `kind = "interval"`, inner (or left, with `S` its right input: a left join
//!   keeps its left rows whatever), without `prune = "off"`;
//! - on one side `S`, on the other a stream computed from `W`, a global (`keys`-less)
//!   tumbling event-time `window` over the same stream `S`, through `map`s that only rename
//!   columns (a `map` with `*` or plain column references) and any `filter`s (which only
//!   drop rows of `W`: fewer partners);
//! - among the join's equalities, `S.v = R.m` where `m` is `W`'s `MAX(v)` or `MIN(v)` (no
//!   `FILTER`, no `DISTINCT`), `v` an integer, a date or a timestamp;
//! - the join's time on `R` is `W`'s `window_end` or `window_start`, its time on `S` the
//!   window's `time`, and a row can be joined with at most [`super::MOST_WINDOWS`] windows.
//!
//! Other equalities only narrow the join: they do not stop the rewrite. The maps on the way
//! are named in the filter's `relies_on`: their params may then not change while the query
//! runs (a changed map could join something else than the extreme).

use std::collections::BTreeSet;

use anduin_graph::{LogicalGraph, NodeId, StreamId};
use anduin_operator_api::Params;
use anduin_spec::{OperatorDef, OutputDef, Param, Spec, Text, Value};
use arrow::datatypes::Schema;
use sqlparser::ast::{Expr, FunctionArg, FunctionArgExpr, FunctionArguments, SelectItem};
use sqlparser::parser::Parser;

use super::best::Reach;
use super::MOST_WINDOWS;

/// The join param that turns the rewrite off (`prune = "off"`).
pub const PRUNE_PARAM: &str = "prune";

/// One place the filter goes.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Placement {
    join: String,
    /// The join's input `S` comes in at (0 or 1).
    side: usize,
    window: String,
    stream: String,
    value: String,
    time: String,
    max: bool,
    reach: Reach,
    relies_on: Vec<String>,
}

/// `spec` (checked into `graph`) with an `extreme_filter` before every join it recognises
/// (see the module's documentation); `None` when there is none.
pub fn prune_extremes<B>(spec: &Spec, graph: &LogicalGraph<B>) -> Option<Spec> {
    let mut windows_used = BTreeSet::new();
    let mut placements = Vec::new();
    for i in 0..graph.nodes.len() {
        // A window feeds one filter: a second join with it keeps all its rows.
        if let Some(p) = placement(graph, NodeId(i)) {
            if windows_used.insert(p.window.clone()) {
                placements.push(p);
            }
        }
    }
    if placements.is_empty() {
        return None;
    }
    let mut spec = spec.clone();
    for p in placements {
        place(&mut spec, &p);
    }
    Some(spec)
}

/// Where the filter of join `join` would go, if the join is one the rewrite recognises.
fn placement<B>(graph: &LogicalGraph<B>, join: NodeId) -> Option<Placement> {
    let node = graph.node(join);
    let def = &node.def;
    if node.kind() != "join" || node.control.is_some() || def.asks_hot_standby() {
        return None;
    }
    let p = Params::new(def);
    if p.str_or("kind", "interval") != "interval" || p.str_or(PRUNE_PARAM, "on") == "off" {
        return None;
    }
    let left_outer = p.str_or("how", "inner") == "left";
    let [ls, rs] = node.data_inputs() else {
        return None;
    };
    let (left, right) = (graph.stream(*ls), graph.stream(*rs));
    let (lname, rname) = crate::join::input_names(&p, &left.name, &right.name).ok()?;
    let (lk, rk) = crate::join::keys(
        &p,
        (lname.as_str(), &left.schema),
        (rname.as_str(), &right.schema),
    )
    .ok()?;
    let lower = crate::join::signed_duration(p.text("lower")?.as_str())?;
    let upper = crate::join::signed_duration(p.text("upper")?.as_str())?;
    let times = [
        p.text("left_time")?.as_str().trim().to_string(),
        p.text("right_time")?.as_str().trim().to_string(),
    ];
    // S on the left: the window's time minus S's in [lower, upper]; on the right, in
    // [-upper, -lower].
    let sides: &[usize] = if left_outer { &[1] } else { &[0, 1] };
    for &side in sides {
        let (s_stream, r_stream) = if side == 0 { (*ls, *rs) } else { (*rs, *ls) };
        let (s_keys, r_keys) = if side == 0 { (&lk, &rk) } else { (&rk, &lk) };
        let s_schema = &graph.stream(s_stream).schema;
        let r_schema = &graph.stream(r_stream).schema;
        let (lo, hi) = if side == 0 {
            (lower, upper)
        } else {
            (upper.checked_neg()?, lower.checked_neg()?)
        };
        for (sk, rk) in s_keys.iter().zip(r_keys) {
            let value = s_schema.field(*sk).name().clone();
            let tracked = [r_schema.field(*rk).name().clone(), times[1 - side].clone()];
            let Some((window, [aggregate, anchor], relies_on)) =
                trace_to_window(graph, r_stream, tracked)
            else {
                continue;
            };
            let w = graph.node(window);
            if w.data_inputs() != [s_stream] {
                continue;
            }
            let Some((size, w_time)) = tumbling(w) else {
                continue;
            };
            if w_time != times[side] || !super::comparable(s_schema.field(*sk).data_type()) {
                continue;
            }
            let Some(max) = extreme_of(w, &aggregate, &value) else {
                continue;
            };
            let at_end = match anchor.as_str() {
                "window_end" => true,
                "window_start" => false,
                _ => continue,
            };
            let reach = Reach {
                size,
                at_end,
                lower: lo,
                upper: hi,
            };
            if reach.most_windows() > MOST_WINDOWS {
                continue;
            }
            return Some(Placement {
                join: node.name().to_string(),
                side,
                window: w.name().to_string(),
                stream: graph.stream(s_stream).name.clone(),
                value,
                time: times[side].clone(),
                max,
                reach,
                relies_on,
            });
        }
    }
    None
}

/// Follows the columns `tracked` of `stream` back through maps that rename and filters to the
/// window that computes them: the window, the columns' names in its output, and the maps on
/// the way.
fn trace_to_window<B>(
    graph: &LogicalGraph<B>,
    mut stream: StreamId,
    mut tracked: [String; 2],
) -> Option<(NodeId, [String; 2], Vec<String>)> {
    let mut maps = Vec::new();
    // A chain is finite (the graph is acyclic); the bound only guards the loop.
    for _ in 0..graph.nodes.len() {
        let (id, port) = graph.stream(stream).producer;
        let node = graph.node(id);
        if node.control.is_some() || node.def.asks_hot_standby() {
            return None;
        }
        match node.kind() {
            "window" if port == 0 => return Some((id, tracked, maps)),
            "filter" => {}
            "map" => {
                let input = &graph.stream(*node.data_inputs().first()?).schema;
                let columns = Params::new(&node.def).text("columns")?;
                for name in &mut tracked {
                    *name = renamed_from(columns.as_str(), name, input)?;
                }
                maps.push(node.name().to_string());
            }
            _ => return None,
        }
        stream = *node.data_inputs().first()?;
    }
    None
}

/// The input column a map's output column `name` is a plain copy of, if it is one.
fn renamed_from(columns: &str, name: &str, input: &Schema) -> Option<String> {
    let items = anduin_expr::parse_text(columns, |p| {
        p.parse_comma_separated(Parser::parse_select_item)
    })
    .ok()?;
    let column = |e: &Expr| -> Option<String> {
        let id = match e {
            Expr::Identifier(id) => id,
            Expr::CompoundIdentifier(ids) => ids.last()?,
            _ => return None,
        };
        input
            .index_of(&id.value)
            .ok()
            .map(|i| input.field(i).name().clone())
    };
    for item in &items {
        match item {
            SelectItem::UnnamedExpr(e) => {
                if let Some(c) = column(e).filter(|c| c == name) {
                    return Some(c);
                }
            }
            SelectItem::ExprWithAlias { expr, alias } if alias.value == name => {
                return column(expr);
            }
            SelectItem::Wildcard(_) if input.index_of(name).is_ok() => {
                return Some(name.to_string())
            }
            _ => {}
        }
    }
    None
}

/// A global tumbling event-time window's length in milliseconds and time column.
fn tumbling<B>(w: &anduin_graph::Node<B>) -> Option<(i64, String)> {
    let p = Params::new(&w.def);
    if p.str_or("time_kind", "event") != "event" {
        return None;
    }
    if p.text("keys")
        .is_some_and(|k| k.as_str().split(',').any(|c| !c.trim().is_empty()))
    {
        return None;
    }
    let ms = |name: &str| {
        p.text(name)
            .and_then(|t| anduin_types::parse_duration_ms(t.as_str()))
            .and_then(|ms| i64::try_from(ms).ok())
            .filter(|ms| *ms > 0)
    };
    let size = match p.str_or("kind", "tumbling").as_str() {
        "tumbling" => ms("size")?,
        "sliding" | "hop" => Some(ms("size")?).filter(|s| Some(*s) == ms("slide"))?,
        _ => return None,
    };
    Some((size, p.text("time")?.as_str().trim().to_string()))
}

/// Whether the window's aggregate named `name` is `MAX(value)` (`Some(true)`) or
/// `MIN(value)` (`Some(false)`), plain: no `FILTER`, no `DISTINCT`.
fn extreme_of<B>(w: &anduin_graph::Node<B>, name: &str, value: &str) -> Option<bool> {
    let text = Params::new(&w.def).text("aggregates")?;
    let items = anduin_expr::parse_text(text.as_str(), |p| {
        p.parse_comma_separated(Parser::parse_select_item)
    })
    .ok()?;
    let expr = items.iter().find_map(|item| match item {
        SelectItem::ExprWithAlias { expr, alias } if alias.value == name => Some(expr),
        _ => None,
    })?;
    let Expr::Function(f) = expr else {
        return None;
    };
    if f.filter.is_some() || f.over.is_some() || !f.within_group.is_empty() {
        return None;
    }
    let FunctionArguments::List(list) = &f.args else {
        return None;
    };
    if list.duplicate_treatment.is_some() || !list.clauses.is_empty() {
        return None;
    }
    let [FunctionArg::Unnamed(FunctionArgExpr::Expr(arg))] = list.args.as_slice() else {
        return None;
    };
    let column = match arg {
        Expr::Identifier(id) => &id.value,
        Expr::CompoundIdentifier(ids) => &ids.last()?.value,
        _ => return None,
    };
    if column != value {
        return None;
    }
    match f.name.to_string().to_ascii_uppercase().as_str() {
        "MAX" => Some(true),
        "MIN" => Some(false),
        _ => None,
    }
}

/// Puts the filter of `p` into `spec`: before the window, reading `S`; the window reads every
/// row from it and the join the rows it keeps.
fn place(spec: &mut Spec, p: &Placement) {
    let taken: BTreeSet<String> = spec
        .operators
        .iter()
        .flat_map(|o| {
            std::iter::once(o.name.to_string()).chain(o.outputs.iter().map(|s| s.name.to_string()))
        })
        .collect();
    let mut name = format!("{}_prune", p.join);
    let mut n = 1;
    while taken.contains(&name) || taken.contains(&format!("{name}_all")) {
        n += 1;
        name = format!("{}_prune{n}", p.join);
    }
    let every = format!("{name}_all");
    let Some(join_at) = spec
        .operators
        .iter()
        .position(|o| o.name.as_str() == p.join)
    else {
        return;
    };
    let Some(window_at) = spec
        .operators
        .iter()
        .position(|o| o.name.as_str() == p.window)
    else {
        return;
    };
    let at = spec.operators[join_at].pos;
    let ms = |v: i64| format!("{v}ms");
    let mut params = vec![
        ("value", p.value.clone()),
        ("extreme", if p.max { "max" } else { "min" }.to_string()),
        ("time", p.time.clone()),
        ("size", ms(p.reach.size)),
        (
            "window_time",
            if p.reach.at_end { "end" } else { "start" }.to_string(),
        ),
        ("lower", ms(p.reach.lower)),
        ("upper", ms(p.reach.upper)),
    ];
    if !p.relies_on.is_empty() {
        params.push(("relies_on", p.relies_on.join(", ")));
    }
    let filter = OperatorDef {
        name: Text::at(name.clone(), at),
        kind: Text::at("extreme_filter", at),
        params: params
            .into_iter()
            .map(|(k, v)| Param {
                name: Text::at(k, at),
                value: Value::String(Text::at(v, at)),
            })
            .collect(),
        inputs: vec![Text::at(p.stream.clone(), at)],
        outputs: vec![
            OutputDef {
                name: Text::at(name.clone(), at),
                ty: None,
            },
            OutputDef {
                name: Text::at(every.clone(), at),
                ty: None,
            },
        ],
        control: None,
        pos: at,
    };
    // The join's `on` and the names of its output columns name its inputs: they keep the
    // names of the streams it read.
    let join = &mut spec.operators[join_at];
    if join.param("names").is_none() {
        let names: Vec<&str> = join.inputs.iter().map(|i| i.as_str()).collect();
        let names = names.join(", ");
        join.params.push(Param {
            name: Text::at("names", at),
            value: Value::String(Text::at(names, at)),
        });
    }
    if let Some(input) = spec.operators[join_at].inputs.get_mut(p.side) {
        *input = Text::at(name, input.pos());
    }
    if let Some(input) = spec.operators[window_at].inputs.first_mut() {
        *input = Text::at(every, input.pos());
    }
    spec.operators.insert(window_at.min(join_at), filter);
}
