//! Replacing one match by a rule's right side (the semantics are in the crate docs,
//! "Rewriting" and "Replicas").

use std::collections::{BTreeMap, BTreeSet};

use crate::error::{GraphError, RewriteError};
use crate::matched::{Bound, Match};
use crate::model::{Graph, Mark, OpId, Operator, Placement};
use crate::rule::{Copies, Count, Head, Node, ParamRef, ParamValue, Rule, Term};

/// Operator types at which the copies of a replicated template stop: they are built once and
/// feed every copy (see the crate docs, "Replicas").
pub const FAN_OUT_TYPES: &[&str] = &["multicast", "splitter"];

/// The graph with the match replaced by the rule's right side.
pub fn apply(rule: &Rule, m: &Match, graph: &Graph) -> Result<Graph, RewriteError> {
    let mut g = graph.clone();
    apply_in_place(rule, m, &mut g)?;
    g.consumers_first().map_err(|source| cycle(rule, source))?;
    Ok(g)
}

/// A cycle a rule made, as [`RewriteError::Cycle`] naming the rule.
pub(crate) fn cycle(rule: &Rule, source: GraphError) -> RewriteError {
    match source {
        GraphError::Cycle(op) => RewriteError::Cycle {
            rule: rule.name.clone(),
            op,
        },
        other => internal(rule, other),
    }
}

/// [`apply`] on the graph itself, without the check for a cycle (the caller makes it: the
/// fixed-point loop orders the graph right after), returning the operators it touched: every
/// operator it added or changed (inputs, params, placement, marks) and every operator it
/// removed. The others are as they were, so the fixed-point loop needs to look again only at
/// what depends on these. On an error the graph is half rewritten: the caller drops it.
pub(crate) fn apply_in_place(
    rule: &Rule,
    m: &Match,
    graph: &mut Graph,
) -> Result<BTreeSet<OpId>, RewriteError> {
    let Term::Node(right) = &rule.right else {
        // The parser refuses replicas as the root.
        return Ok(BTreeSet::new());
    };
    let region = m.region();
    let region_ids: BTreeSet<OpId> = region.iter().map(|(id, _)| *id).collect();
    let group = graph
        .op(m.root)
        .map_err(|source| internal(rule, source))?
        .name
        .clone();
    let external: Vec<OpId> = graph
        .consumers(m.root)
        .into_iter()
        .filter(|c| !region_ids.contains(c))
        .collect();
    // The matched operators (and streams) as they were: replicas copy them, not what the
    // first copy made of them.
    let old: BTreeMap<OpId, Operator> = m
        .bindings
        .values()
        .flat_map(|b| match b {
            Bound::Op(id) | Bound::Stream(id) => vec![*id],
            Bound::Chain { ops, .. } => ops.clone(),
        })
        .filter_map(|id| graph.get(id).map(|op| (id, op.clone())))
        .collect();
    let mut b = Builder {
        rule,
        m,
        old,
        g: graph,
        group,
        used: BTreeSet::new(),
        created: Vec::new(),
        replicas: Vec::new(),
    };
    let new_root = b.node(right, None, &mut BTreeMap::new())?;
    let Builder {
        g,
        used,
        created,
        replicas,
        ..
    } = b;

    // Only the match, what the replacement made, and the consumers given a new input change.
    let mut touched: BTreeSet<OpId> = region_ids.clone();
    touched.extend(created.iter().copied());
    touched.extend(replicas.iter().map(|(id, _)| *id));

    // The consumers of the matched root consume the replacement's root.
    if new_root != m.root {
        touched.extend(external.iter().copied());
        for c in external {
            let inputs: Vec<OpId> = g
                .op(c)
                .map_err(|source| internal(rule, source))?
                .inputs
                .iter()
                .map(|i| if *i == m.root { new_root } else { *i })
                .collect();
            g.set_inputs(c, inputs)
                .map_err(|source| internal(rule, source))?;
        }
    }

    // Matched operators the replacement does not use go, unless something still reads them.
    let mut dropped: BTreeSet<OpId> = region_ids.difference(&used).copied().collect();
    loop {
        let still_read: Vec<OpId> = dropped
            .iter()
            .filter(|d| g.consumers(**d).iter().any(|c| !dropped.contains(c)))
            .copied()
            .collect();
        if still_read.is_empty() {
            break;
        }
        for d in still_read {
            dropped.remove(&d);
        }
    }
    if !dropped.is_empty() {
        let order = g.consumers_first().map_err(|source| cycle(rule, source))?;
        for id in order.into_iter().filter(|id| dropped.contains(id)) {
            g.remove(id).map_err(|source| internal(rule, source))?;
        }
    }

    // A replica counts as its original: it carries the original's marks (copied when it was
    // made) and the role its original was matched in.
    let matched = region
        .into_iter()
        .chain(replicas.iter().map(|(id, role)| (*id, role.as_str())));
    for (id, role) in matched {
        if let Some(op) = g.get_mut(id) {
            op.marks.insert(Mark {
                rule: rule.name.clone(),
                role: Some(role.to_string()),
            });
        }
    }
    for id in created {
        if let Some(op) = g.get_mut(id) {
            op.marks.insert(Mark {
                rule: rule.name.clone(),
                role: None,
            });
        }
    }
    // Names stay unique and inputs known (the graph's methods refuse anything else).
    Ok(touched)
}

fn internal(rule: &Rule, source: crate::GraphError) -> RewriteError {
    RewriteError::Internal {
        rule: rule.name.clone(),
        detail: source.to_string(),
    }
}

/// The most copies one `replicate` or `|` makes.
pub const MAX_COPIES: u64 = 1024;

/// Which copy of a replicated template is being built.
#[derive(Clone)]
struct Copy {
    /// 1-based; copy 1 is the matched operators themselves.
    index: usize,
    placement: Placement,
}

/// Fan-out operators already built for one replica set, by the template node they come from.
type FanOuts = BTreeMap<*const Node, OpId>;

struct Builder<'a> {
    rule: &'a Rule,
    m: &'a Match,
    /// The matched operators as they were (the match's operators, chains and streams).
    old: BTreeMap<OpId, Operator>,
    g: &'a mut Graph,
    /// The placement group: the matched root's name.
    group: String,
    /// Matched operators the replacement keeps.
    used: BTreeSet<OpId>,
    /// New operators the replacement created.
    created: Vec<OpId>,
    /// Replicas of matched operators, with the role of their original.
    replicas: Vec<(OpId, String)>,
}

impl Builder<'_> {
    fn node(
        &mut self,
        n: &Node,
        copy: Option<&Copy>,
        fan: &mut FanOuts,
    ) -> Result<OpId, RewriteError> {
        match &n.head {
            Head::New(kind) => {
                let fan_out = FAN_OUT_TYPES.contains(&kind.as_str());
                if copy.is_some() && fan_out {
                    let key: *const Node = n;
                    if let Some(id) = fan.get(&key) {
                        return Ok(*id);
                    }
                    let id = self.node(n, None, fan)?;
                    fan.insert(key, id);
                    return Ok(id);
                }
                let inputs = self.inputs(n, copy, fan)?.unwrap_or_default();
                let mut op = Operator::new(self.g.fresh_name(kind), kind.clone());
                op.params = self.params(n)?;
                op.inputs = inputs;
                op.placement = self.placement(n, copy, None).unwrap_or_default();
                self.add(op)
            }
            Head::Ref(name, _) => match self.m.bindings.get(name).cloned() {
                Some(Bound::Stream(id)) => Ok(id),
                Some(Bound::Op(id)) => self.op_ref(n, name, id, copy, fan),
                Some(Bound::Chain { ops, below }) => {
                    self.chain_ref(n, name, &ops, below, copy, fan)
                }
                None => Err(self.internal_missing(name)),
            },
        }
    }

    /// A reference to a matched operator: the operator itself (copy 1, or outside replicas) or
    /// a new replica of it.
    fn op_ref(
        &mut self,
        n: &Node,
        name: &str,
        id: OpId,
        copy: Option<&Copy>,
        fan: &mut FanOuts,
    ) -> Result<OpId, RewriteError> {
        let original = self.original(id)?;
        let inputs = self.inputs(n, copy, fan)?;
        if let Some(given) = &inputs {
            if given.len() != original.inputs.len() {
                return Err(RewriteError::Arity {
                    rule: self.rule.name.clone(),
                    name: name.to_string(),
                    op: original.name,
                    given: given.len(),
                    has: original.inputs.len(),
                });
            }
        }
        let params = self.params(n)?;
        let placement = self.placement(n, copy, None);
        if copy.is_some_and(|c| c.index > 1) {
            let mut op = Operator::new(
                self.g.fresh_name(&format!("{}_replica", original.name)),
                original.kind.clone(),
            );
            op.params = original.params.clone();
            op.params.extend(params);
            op.inputs = inputs.unwrap_or(original.inputs);
            op.placement = placement.unwrap_or(original.placement);
            op.marks = original.marks;
            return self.add_replica(op, name);
        }
        self.used.insert(id);
        if let Some(inputs) = inputs {
            self.g
                .set_inputs(id, inputs)
                .map_err(|s| internal(self.rule, s))?;
        }
        let op = self
            .g
            .get_mut(id)
            .ok_or_else(|| internal(self.rule, crate::GraphError::UnknownOp(id)))?;
        op.params.extend(params);
        if let Some(p) = placement {
            op.placement = p;
        }
        Ok(id)
    }

    /// A reference to a matched chain: its operators (or replicas of them), top first.
    fn chain_ref(
        &mut self,
        n: &Node,
        name: &str,
        ops: &[OpId],
        below: OpId,
        copy: Option<&Copy>,
        fan: &mut FanOuts,
    ) -> Result<OpId, RewriteError> {
        let input = self.inputs(n, copy, fan)?.and_then(|v| v.first().copied());
        if ops.is_empty() {
            return Ok(input.unwrap_or(below));
        }
        let params = self.params(n)?;
        let replica = copy.is_some_and(|c| c.index > 1);
        // Built bottom-up so that every input exists when its consumer is added.
        let mut feed = input.unwrap_or(below);
        for (pos, id) in ops.iter().enumerate().rev() {
            let placement = self.placement(n, copy, Some(pos + 1));
            let original = self.original(*id)?;
            if replica {
                let mut op = Operator::new(
                    self.g.fresh_name(&format!("{}_replica", original.name)),
                    original.kind.clone(),
                );
                op.params = original.params.clone();
                op.params.extend(params.clone());
                op.inputs = vec![feed];
                op.placement = placement.unwrap_or(original.placement);
                op.marks = original.marks;
                feed = self.add_replica(op, name)?;
            } else {
                self.used.insert(*id);
                self.g
                    .set_inputs(*id, vec![feed])
                    .map_err(|s| internal(self.rule, s))?;
                let op = self
                    .g
                    .get_mut(*id)
                    .ok_or_else(|| internal(self.rule, crate::GraphError::UnknownOp(*id)))?;
                op.params.extend(params.clone());
                if let Some(p) = placement {
                    op.placement = p;
                }
                feed = *id;
            }
        }
        Ok(feed)
    }

    /// The node's inputs built, or `None` when it has no parentheses.
    fn inputs(
        &mut self,
        n: &Node,
        copy: Option<&Copy>,
        fan: &mut FanOuts,
    ) -> Result<Option<Vec<OpId>>, RewriteError> {
        let Some(terms) = &n.inputs else {
            return Ok(None);
        };
        let mut out = Vec::new();
        for t in terms {
            match t {
                Term::Node(child) => out.push(self.node(child, copy, fan)?),
                Term::Replicate(r) => {
                    let placements: Vec<Placement> = match &r.copies {
                        Copies::Listed(ps) => ps.clone(),
                        Copies::Counted { count, placement } => {
                            let n = self.count(count)?;
                            (1..=n).map(|i| hash_to(placement, i as usize)).collect()
                        }
                    };
                    let mut own = FanOuts::new();
                    for (i, p) in placements.iter().enumerate() {
                        let c = Copy {
                            index: i + 1,
                            placement: self.grouped(&hash_to(p, i + 1)),
                        };
                        out.push(self.node(&r.template, Some(&c), &mut own)?);
                    }
                }
            }
        }
        Ok(Some(out))
    }

    /// The node's own placement (with `#` as the chain position, else the copy number, and
    /// the match's group), else the copy's placement, else `None` (keep).
    fn placement(
        &self,
        n: &Node,
        copy: Option<&Copy>,
        position: Option<usize>,
    ) -> Option<Placement> {
        match &n.placement {
            Some(p) => {
                let hashed = match (position, copy) {
                    (Some(pos), _) => hash_to(p, pos),
                    (None, Some(c)) => hash_to(p, c.index),
                    (None, None) => p.clone(),
                };
                Some(self.grouped(&hashed))
            }
            None => copy.map(|c| c.placement.clone()),
        }
    }

    /// A slot without a group gets the match's group.
    fn grouped(&self, p: &Placement) -> Placement {
        match p {
            Placement::Slot { group, slot } if group.is_empty() => {
                Placement::slot(self.group.clone(), slot.clone())
            }
            other => other.clone(),
        }
    }

    fn params(&self, n: &Node) -> Result<BTreeMap<String, String>, RewriteError> {
        let mut out = BTreeMap::new();
        for (k, v) in &n.params {
            let value = match v {
                ParamValue::Text(t) => t.clone(),
                ParamValue::Param(p) => self.param(p)?,
            };
            out.insert(k.clone(), value);
        }
        Ok(out)
    }

    /// A matched operator's param (the top of a chain's), or the default.
    fn param(&self, p: &ParamRef) -> Result<String, RewriteError> {
        let op = self.m.ops(&p.name).first().and_then(|id| self.old.get(id));
        op.and_then(|op| op.param(&p.key).map(str::to_string))
            .or_else(|| p.default.clone())
            .ok_or_else(|| RewriteError::MissingParam {
                rule: self.rule.name.clone(),
                op: op.map(|o| o.name.clone()).unwrap_or_else(|| p.name.clone()),
                key: p.key.clone(),
            })
    }

    fn count(&self, c: &Count) -> Result<u64, RewriteError> {
        let (text, from) = match c {
            Count::Literal(n) => (n.to_string(), "a literal".to_string()),
            Count::Param(p) => (self.param(p)?, format!("param({}, {:?})", p.name, p.key)),
        };
        match text.trim().parse::<u64>() {
            Ok(n) if (1..=MAX_COPIES).contains(&n) => Ok(n),
            _ => Err(RewriteError::BadCount {
                rule: self.rule.name.clone(),
                value: text,
                from,
            }),
        }
    }

    fn add(&mut self, op: Operator) -> Result<OpId, RewriteError> {
        let id = self.g.add(op).map_err(|s| internal(self.rule, s))?;
        self.created.push(id);
        Ok(id)
    }

    fn add_replica(&mut self, op: Operator, role: &str) -> Result<OpId, RewriteError> {
        let id = self.g.add(op).map_err(|s| internal(self.rule, s))?;
        self.replicas.push((id, role.to_string()));
        Ok(id)
    }

    /// A matched operator as it was before the rewrite.
    fn original(&self, id: OpId) -> Result<Operator, RewriteError> {
        self.old
            .get(&id)
            .cloned()
            .ok_or_else(|| internal(self.rule, GraphError::UnknownOp(id)))
    }

    fn internal_missing(&self, name: &str) -> RewriteError {
        RewriteError::Internal {
            rule: self.rule.name.clone(),
            detail: format!("the right side names `{name}`, which the match does not bind"),
        }
    }
}

/// `#` in a slot replaced by `n`.
fn hash_to(p: &Placement, n: usize) -> Placement {
    match p {
        Placement::Slot { group, slot } => {
            Placement::slot(group.clone(), slot.replace('#', &n.to_string()))
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests;
