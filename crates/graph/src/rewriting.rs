//! The query as the rewriting rules see it, and the rules applied to it (paper §4.2): what
//! `anduin explain --rewritten` shows. The rule engine itself is `anduin-rewrite`; this module
//! converts a checked query's [`Spec`] into its graph (an operator per operator, its params as
//! text, its inputs the producers of the streams it reads, a control stream's producer last)
//! and answers the rules' questions about operators from the [`Catalog`] ([`CatalogFacts`]).
//!
//! What of the rewritten graph runs, per pattern:
//! - hot standby: the graph the hot-standby rules make is run ([`hot_standby_spec`]): the
//!   copies and the `stream-selector` become operators of the query; the `multicast`, the
//!   `reader`/`writer` ends of a channel and the `failover` writer are left out, being what the
//!   runtime does itself (a stream read by several tasks goes to each; the selector switches);
//! - partitioning: the planner takes each operator's instances from the `merge` the rules make
//!   (module `partitioning`); the `splitter` and `merge` are the runtime's keyed exchange;
//! - pipelining: the planner cuts the stages the pipelining rules place (module
//!   `pipelining`), and live by the control plane;
//! - simple standby and checkpointing: what the runtime does anyway (per-task recovery,
//!   snapshots);
//! - a user's rules that reshape the graph: applied once, to the query as written, before it
//!   runs ([`rewritten_by`]); the result is converted back into a query
//!   ([`crate::run_spec::to_spec`]), checked like a user's, and the patterns above are applied
//!   to it. A user's rules that only set params of the operator they match are applied while
//!   the query runs (the CLI's `run_rules`).
//!
//! [`rewrite_query`] gives the whole picture `anduin explain --rewritten` shows: a user's rules,
//! then the built-in ones.

use std::collections::HashMap;

use anduin_rewrite::{
    builtin_rules, parse_rules, rewrite, rewrite_within, Facts, Graph, GraphError, Operator,
    RewriteError, Rewritten, SyntaxError, DEFAULT_LIMIT,
};
use anduin_spec::Spec;

use crate::catalog::Catalog;

/// Why a query could not be rewritten.
#[derive(Debug, thiserror::Error)]
pub enum RewriteQueryError {
    /// A name the copies of a hot standby take is the query's already.
    #[error("{0}")]
    Reserved(String),
    /// A rule file that does not parse (`FILE:LINE:COL: …`).
    #[error(transparent)]
    Rules(#[from] SyntaxError),
    /// The query's graph breaks the rule engine's model (a bug: the query was checked).
    #[error("the query's graph cannot be rewritten: {0}")]
    Graph(#[from] GraphError),
    /// A rule that cannot be applied, or rules that keep applying (the iteration limit).
    #[error(transparent)]
    Rewrite(#[from] RewriteError),
    /// The rewritten graph holds an operator the runtime cannot run.
    #[error(transparent)]
    Run(#[from] crate::run_spec::RunSpecError),
}

/// The rules' view of operators: stateless is what the catalog's signature says (an operator
/// type it does not know, a system operator, keeps no state).
pub struct CatalogFacts<'a, C>(pub &'a C);

impl<C: Catalog> Facts for CatalogFacts<'_, C> {
    fn is_stateless(&self, op: &Operator) -> bool {
        self.0.signature(&op.kind).is_none_or(|s| !s.stateful)
    }
}

/// The graph of `spec` in the rule engine's model: operators in an order where each comes
/// after the producers of its inputs (file order otherwise), named as in the query.
pub fn rule_graph(spec: &Spec) -> Result<Graph, GraphError> {
    let producer: HashMap<&str, &str> = spec
        .operators
        .iter()
        .flat_map(|op| {
            op.outputs
                .iter()
                .map(move |o| (o.name.as_str(), op.name.as_str()))
        })
        .collect();
    let reads = |op: &anduin_spec::OperatorDef| -> Vec<String> {
        op.inputs
            .iter()
            .map(|s| s.as_str())
            .chain(op.control.iter().map(|c| c.stream.as_str()))
            .filter_map(|s| producer.get(s).map(|p| (*p).to_string()))
            .collect()
    };
    let mut g = Graph::new();
    let mut left: Vec<&anduin_spec::OperatorDef> = spec.operators.iter().collect();
    while !left.is_empty() {
        let before = left.len();
        let mut i = 0;
        while i < left.len() {
            let op = left[i];
            let inputs: Option<Vec<_>> = reads(op).iter().map(|p| g.find(p)).collect();
            let Some(inputs) = inputs else {
                i += 1;
                continue;
            };
            let mut node = Operator::new(op.name.as_str(), op.kind.as_str()).with_inputs(inputs);
            for p in &op.params {
                node = node.with_param(p.name.as_str(), p.value.as_text().as_str());
            }
            // `ranges` asks for one instance per range (as the planner reads it).
            if let (Some(r), None) = (crate::ranges::Ranges::asked_by(op), op.param("parallelism"))
            {
                node = node.with_param("parallelism", r.instances().to_string());
            }
            g.add(node)?;
            left.remove(i);
        }
        if left.len() == before {
            return Err(GraphError::Cycle(left[0].name.to_string()));
        }
    }
    Ok(g)
}

/// `spec`'s graph, and the result of the rules of `user` (a file's name and text) if given,
/// then of the built-in rules, each applied to a fixed point: the order of a run, where a
/// user's rules reshape the query as written ([`rewritten_by`]) and the patterns are applied
/// to what they made.
pub fn rewrite_query<C: Catalog>(
    spec: &Spec,
    catalog: &C,
    user: Option<(&str, &str)>,
) -> Result<(Graph, Rewritten), RewriteQueryError> {
    let before = rule_graph(spec)?;
    let bound = growth_bound(&before);
    let facts = CatalogFacts(catalog);
    let mut applications = Vec::new();
    let mut mid = before.clone();
    if let Some((file, text)) = user {
        let users = rewrite_within(
            &before,
            &parse_rules(file, text)?,
            &facts,
            DEFAULT_LIMIT,
            bound,
        )?;
        applications = users.applications;
        mid = users.graph;
    }
    let after = rewrite_within(&mid, &builtin_rules(), &facts, DEFAULT_LIMIT, bound)?;
    applications.extend(after.applications);
    Ok((
        before,
        Rewritten {
            graph: after.graph,
            applications,
        },
    ))
}

/// `spec` rewritten by `rules` — a user's rules that reshape the graph, applied once before
/// the query runs, to the query as written — as a query to run ([`crate::run_spec::to_spec`]),
/// with the applications; `None` when no rule matched. The result is to be checked like a
/// user's query (the patterns' rules are applied to it after: [`hot_standby_spec`], the
/// partitioning of the physical planner).
pub fn rewritten_by<C: Catalog>(
    spec: &Spec,
    catalog: &C,
    rules: &anduin_rewrite::RuleSet,
) -> Result<Option<(Spec, Rewritten)>, RewriteQueryError> {
    if rules.rules.is_empty() {
        return Ok(None);
    }
    let before = rule_graph(spec)?;
    let after = rewrite_within(
        &before,
        rules,
        &CatalogFacts(catalog),
        DEFAULT_LIMIT,
        growth_bound(&before),
    )?;
    if after.applications.is_empty() {
        return Ok(None);
    }
    let run = crate::run_spec::to_spec(spec, &after.graph, catalog)?;
    Ok(Some((run, after)))
}

/// How large the rules may make `graph`: the generic bound of [`rewrite`] (rules that keep
/// adding operators stop there), plus the copies its operators ask for (`replicas`,
/// `parallelism`, a pattern's `overflow_instances`: up to [`anduin_rewrite::MAX_COPIES`] each, with a merge, a selector and
/// their feeders), so that what a run plans is never refused here as growing too much.
pub(crate) fn growth_bound(graph: &Graph) -> usize {
    let copies = |op: &Operator, key: &str| {
        op.param(key)
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map_or(1, |n| n.clamp(1, anduin_rewrite::MAX_COPIES))
    };
    let asked: u64 = graph
        .iter()
        .map(|(_, op)| {
            copies(op, "replicas")
                * copies(op, "parallelism")
                * copies(op, "overflow_instances")
                * 2
                + 4
        })
        .sum();
    graph
        .len()
        .saturating_mul(16)
        .max(1024)
        .saturating_add(usize::try_from(asked).unwrap_or(usize::MAX))
}

/// `spec` as a run with `--parallelism default` has the partitioning rules see it (see
/// [`crate::PhysicalPlan::instances`]): `parallelism = default` on each operator that can run
/// in parallel and sets none, when `default` is at least 2. An operator in hot standby is
/// left as it is: its copies run as one instance each.
pub fn with_default_parallelism<B>(
    spec: &Spec,
    graph: &crate::logical::LogicalGraph<B>,
    default: usize,
) -> Spec {
    let mut out = spec.clone();
    if default < 2 {
        return out;
    }
    for op in &mut out.operators {
        let node = graph.nodes.iter().find(|n| n.name() == op.name.as_str());
        let parallel = node.is_some_and(crate::partitioning::takes_default);
        if parallel && op.param("parallelism").is_none() && !op.asks_hot_standby() {
            *op = op.with_param(
                "parallelism",
                anduin_spec::Text::unplaced(default.to_string()),
            );
        }
    }
    out
}

/// The built-in rules of one pattern: those whose name starts with `prefix` (`hot_standby`,
/// `partitioning`, `pipelining`).
pub(crate) fn builtin_family(prefix: &str) -> anduin_rewrite::RuleSet {
    let mut rules = builtin_rules();
    rules.rules.retain(|r| r.name.starts_with(prefix));
    rules
}

/// A checked query's graph as the rules see it: its nodes in topological order, named as in
/// the query, their params as text and the params `extra` adds, their inputs the producers of
/// the streams they read (with `control`, a control stream's producer last, as
/// [`rule_graph`] has it; without, the data inputs only).
pub(crate) fn logical_rule_graph<B>(
    graph: &crate::logical::LogicalGraph<B>,
    control: bool,
    extra: impl Fn(&crate::logical::Node<B>) -> Option<(&'static str, String)>,
) -> Graph {
    let mut g = Graph::new();
    let mut id_of = HashMap::new();
    for &n in &graph.topo {
        let node = graph.node(n);
        let read = if control {
            node.inputs.as_slice()
        } else {
            node.data_inputs()
        };
        let inputs = read
            .iter()
            .map(|s| id_of[&graph.stream(*s).producer.0 .0])
            .collect();
        let mut op = Operator::new(node.name(), node.kind()).with_inputs(inputs);
        for p in &node.def.params {
            op = op.with_param(p.name.as_str(), p.value.as_text().as_str());
        }
        if let Some((k, v)) = extra(node) {
            op = op.with_param(k, v);
        }
        let id = g
            .add(op)
            .expect("a checked graph's names are unique and its producers come first");
        id_of.insert(n.0, id);
    }
    g
}

/// The query to run for `spec` when an operator asks for hot standby: each such operator
/// replicated (`NAME_replica_N`, outputs `STREAM__replica_K`) behind a `stream-selector`
/// that emits the operator's own stream, so that its consumers are unchanged. The system
/// operators that the runtime carries out itself are left out: a `multicast` (a stream read
/// by several operators goes to each), the `reader`/`writer` ends of a channel between tasks,
/// and `failover` (the selector switches). `None` when no operator asks for hot standby.
pub fn hot_standby_spec<C: Catalog>(
    spec: &Spec,
    catalog: &C,
) -> Result<Option<Spec>, RewriteQueryError> {
    let asks = spec.operators.iter().any(|o| o.asks_hot_standby());
    if !asks {
        return Ok(None);
    }
    // The copies a user's rule made already, behind a stream selector (they ask for hot
    // standby: `run_spec`), are not copied again.
    let copied = selected(spec);
    let mut to_copy = spec.clone();
    for op in &mut to_copy.operators {
        if copied.contains(op.name.as_str()) {
            op.params.retain(|p| p.name.as_str() != "fault_tolerance");
        }
    }
    let mut copies = if to_copy.operators.iter().any(|o| o.asks_hot_standby()) {
        reserved_names(&to_copy)?;
        let before = rule_graph(&to_copy)?;
        let after = rewrite(
            &before,
            &builtin_family("hot_standby"),
            &CatalogFacts(catalog),
            DEFAULT_LIMIT,
        )?;
        crate::run_spec::to_spec(&to_copy, &after.graph, catalog)?
    } else {
        to_copy
    };
    for op in &mut copies.operators {
        if let Some(own) = spec
            .operators
            .iter()
            .find(|o| o.name == op.name && copied.contains(o.name.as_str()))
        {
            op.params.clone_from(&own.params);
        }
    }
    // Each copy runs as one instance: the rows of several instances would interleave in
    // another order in each copy, and the selector counts rows in order.
    for op in &mut copies.operators {
        let copy = op.asks_hot_standby();
        let parallel = catalog
            .signature(op.kind.as_str())
            .is_some_and(|s| s.param("parallelism").is_some());
        if copy && parallel {
            *op = op.with_param("parallelism", anduin_spec::Text::unplaced("1"));
        }
    }
    Ok(Some(copies))
}

/// The copies of every pattern that spreads its partial matches over copies, as
/// [`overflow_spec`] made them: per pattern, the names of copy 0 (the pattern's own name)
/// to copy K − 1 (`NAME_replica_k`), in the order they hand partial matches on.
pub fn spread_chains<B>(graph: &crate::LogicalGraph<B>) -> Vec<Vec<String>> {
    let spreads = |name: &str| {
        graph
            .nodes
            .iter()
            .any(|n| n.name() == name && n.def.spread_copies().is_some())
    };
    let mut chains = Vec::new();
    for node in &graph.nodes {
        let Some(copies) = node.def.spread_copies() else {
            continue;
        };
        let base = node.name();
        // A copy is no base of its own: its base, a spreading pattern, is in the graph (the
        // names copies take are refused for anything else when the query is loaded).
        let is_copy = base
            .rsplit_once("_replica_")
            .is_some_and(|(of, _)| spreads(of));
        let names: Vec<String> = std::iter::once(base.to_string())
            .chain((1..copies).map(|k| format!("{base}_replica_{k}")))
            .collect();
        let all_there = names
            .iter()
            .all(|n| graph.nodes.iter().any(|g| g.name() == n));
        if !is_copy && all_there {
            chains.push(names);
        }
    }
    chains
}

/// The query to run for `spec` when a pattern spreads its partial matches over copies
/// (`overflow_instances = K`, paper §4.4): the built-in rule `pattern_overflow` applied — the
/// pattern and its copies `NAME_replica_1` … `NAME_replica_{K-1}` (outputs
/// `STREAM__replica_k`) each reading the pattern's whole input (the runtime multicasts it),
/// a `union` of their outputs in place of the pattern's stream. The runtime gives the first
/// the role that starts matches, the others the role that extends those handed to them, and
/// hands partial matches along at handoff points (`anduin_runtime`'s `spread`). `None` when no pattern asks for it.
pub fn overflow_spec<C: Catalog>(
    spec: &Spec,
    catalog: &C,
) -> Result<Option<Spec>, RewriteQueryError> {
    if !spec.operators.iter().any(|o| o.spread_copies().is_some()) {
        return Ok(None);
    }
    spread_names_free(spec)?;
    let before = rule_graph(spec)?;
    let after = rewrite(
        &before,
        &builtin_family("pattern_overflow"),
        &CatalogFacts(catalog),
        DEFAULT_LIMIT,
    )?;
    Ok(Some(crate::run_spec::to_spec(spec, &after.graph, catalog)?))
}

/// Refuses names the copies of a spreading pattern take (`NAME_replica_K`,
/// `STREAM__replica_K`) when another operator or stream of `spec` has one: the runtime tells
/// the copies by those names, so a clash would chain the wrong operators.
fn spread_names_free(spec: &Spec) -> Result<(), RewriteQueryError> {
    for p in spec
        .operators
        .iter()
        .filter(|o| o.spread_copies().is_some())
    {
        let copy = format!("{}_replica_", p.name);
        let streams: Vec<String> = p
            .outputs
            .iter()
            .map(|s| format!("{}__replica_", s.name))
            .collect();
        let names = spec.operators.iter().map(|o| o.name.as_str());
        let outputs = spec
            .operators
            .iter()
            .flat_map(|o| o.outputs.iter().map(|s| s.name.as_str()));
        for name in names.chain(outputs) {
            if name.starts_with(&copy) || streams.iter().any(|s| name.starts_with(s.as_str())) {
                return Err(RewriteQueryError::Reserved(format!(
                    "the name \"{name}\" is one the copies of pattern \"{}\" take (it spreads its partial matches over overflow_instances copies named {copy}K, their outputs STREAM__replica_K): rename it",
                    p.name
                )));
            }
        }
    }
    Ok(())
}

/// The operators of `spec` that a stream selector reads.
fn selected(spec: &Spec) -> std::collections::BTreeSet<&str> {
    let read: std::collections::BTreeSet<&str> = spec
        .operators
        .iter()
        .filter(|o| o.kind.as_str() == "stream-selector")
        .flat_map(|o| o.inputs.iter().map(|i| i.as_str()))
        .collect();
    spec.operators
        .iter()
        .filter(|o| o.outputs.iter().any(|s| read.contains(s.name.as_str())))
        .map(|o| o.name.as_str())
        .collect()
}

/// Refuses a query whose operator or stream names are those the copies of its hot standbys
/// take (`NAME_replica_K`, `STREAM__replica_K`, `stream-selector_K`): they would be taken for
/// copies.
fn reserved_names(spec: &Spec) -> Result<(), RewriteQueryError> {
    let hot: Vec<(&str, Vec<&str>)> = spec
        .operators
        .iter()
        .filter(|o| o.asks_hot_standby())
        .map(|o| {
            (
                o.name.as_str(),
                o.outputs.iter().map(|s| s.name.as_str()).collect(),
            )
        })
        .collect();
    // A stream selector is never taken for a copy (roles go by type).
    let names = spec
        .operators
        .iter()
        .filter(|o| o.kind.as_str() != "stream-selector")
        .map(|o| o.name.as_str());
    let streams = spec
        .operators
        .iter()
        .flat_map(|o| o.outputs.iter().map(|s| s.name.as_str()));
    for name in names.chain(streams) {
        let taken = name.starts_with("stream-selector_")
            || hot.iter().any(|(op, outs)| {
                name.starts_with(&format!("{op}_replica_"))
                    || outs
                        .iter()
                        .any(|s| name.starts_with(&format!("{s}__replica_")))
            });
        if taken {
            return Err(RewriteQueryError::Reserved(format!(
                "the name \"{name}\" is one the copies of a hot standby take (NAME_replica_K, STREAM__replica_K, stream-selector_K): rename it"
            )));
        }
    }
    Ok(())
}
