//! The graph model the rules work on: operators with a type, a unique instance name, text
//! params, an ordered list of inputs and a placement annotation.
//!
//! Operators live in a map keyed by [`OpId`]; ids are never reused within one graph, so an id
//! stays valid until its operator is removed. Data flows from an operator's inputs to the
//! operator: `inputs` lists the producers it consumes, in order (the left and right side of a
//! join are inputs 0 and 1).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};
use std::fmt;

use crate::error::GraphError;

/// The id of an operator in a [`Graph`]. Ids are assigned in creation order and never reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OpId(pub u32);

impl fmt::Display for OpId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// Where an operator may run (paper §4.2: `@{p1}`, `@{p2}` are distinct workers, `@{p*}` any
/// number of workers).
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Placement {
    /// No annotation: the planner decides (printed as nothing).
    #[default]
    Unplaced,
    /// `@{p}`: one worker, any; the scheduler may move the operator to another worker when
    /// its worker fails (simple standby).
    Any,
    /// `@{p*}`: the operator's instances may spread over any number of workers.
    Spread,
    /// `@{slot}` or `@{group.slot}`: a named worker slot. Within one group, operators with
    /// the same slot run on the same worker and operators with different slots run on distinct
    /// workers; slots of different groups are unrelated. The rewriter uses the name of the
    /// matched root operator as the group, so the slots of two rule applications never
    /// constrain each other. A slot written without a group has the empty group.
    Slot {
        /// The group the slot belongs to (empty when written without one).
        group: String,
        /// The slot's name, e.g. `p1`.
        slot: String,
    },
}

impl Placement {
    /// A named slot in a group.
    pub fn slot(group: impl Into<String>, slot: impl Into<String>) -> Self {
        Placement::Slot {
            group: group.into(),
            slot: slot.into(),
        }
    }
}

impl fmt::Display for Placement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Placement::Unplaced => Ok(()),
            Placement::Any => f.write_str("@{p}"),
            Placement::Spread => f.write_str("@{p*}"),
            Placement::Slot { group, slot } if group.is_empty() => write!(f, "@{{{slot}}}"),
            Placement::Slot { group, slot } => write!(f, "@{{{group}.{slot}}}"),
        }
    }
}

/// A record that a rule touched an operator; it keeps a rule from re-matching its own output
/// (see the crate docs, "Termination").
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Mark {
    /// The rule's name.
    pub rule: String,
    /// The role (left-side name) the operator was matched in, or `None` when the rule created
    /// the operator (a new operator or a replica).
    pub role: Option<String>,
}

/// One operator of a [`Graph`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Operator {
    /// The instance name, unique in its graph (`f` in `f := filter`).
    pub name: String,
    /// The operator type (`filter`, `window`, `multicast`, …).
    pub kind: String,
    /// Params by name; values are text, as in a `.flow` file.
    pub params: BTreeMap<String, String>,
    /// The producers this operator consumes, in input order.
    pub inputs: Vec<OpId>,
    /// Where the operator may run.
    pub placement: Placement,
    /// Which rules matched or created this operator (not printed).
    pub marks: BTreeSet<Mark>,
}

impl Operator {
    /// An operator without params, inputs or placement.
    pub fn new(name: impl Into<String>, kind: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            kind: kind.into(),
            params: BTreeMap::new(),
            inputs: Vec::new(),
            placement: Placement::Unplaced,
            marks: BTreeSet::new(),
        }
    }

    /// The operator with a param set.
    pub fn with_param(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.params.insert(key.into(), value.into());
        self
    }

    /// The operator with its inputs set.
    pub fn with_inputs(mut self, inputs: Vec<OpId>) -> Self {
        self.inputs = inputs;
        self
    }

    /// The value of a param, if set.
    pub fn param(&self, key: &str) -> Option<&str> {
        self.params.get(key).map(String::as_str)
    }
}

/// A dataflow graph: operators keyed by id, each naming its inputs.
///
/// Invariants kept by every method: names are unique, every input names an operator of the
/// graph. [`Graph::check`] also refuses cycles.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Graph {
    ops: BTreeMap<OpId, Operator>,
    next: u32,
    /// The operators by name (what `ops` holds, indexed: finding a name or a fresh one does
    /// not walk the graph).
    names: BTreeMap<String, OpId>,
}

impl Graph {
    /// An empty graph.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an operator and returns its id. Fails if the name is taken or an input is unknown.
    pub fn add(&mut self, op: Operator) -> Result<OpId, GraphError> {
        if self.names.contains_key(&op.name) {
            return Err(GraphError::DuplicateName(op.name));
        }
        if let Some(missing) = op.inputs.iter().find(|i| !self.ops.contains_key(i)) {
            return Err(GraphError::UnknownInput {
                op: op.name,
                input: *missing,
            });
        }
        let id = OpId(self.next);
        self.next += 1;
        self.names.insert(op.name.clone(), id);
        self.ops.insert(id, op);
        Ok(id)
    }

    /// The operator with this id.
    pub fn get(&self, id: OpId) -> Option<&Operator> {
        self.ops.get(&id)
    }

    /// The operator with this id, to change its params, placement or marks. Its name must not
    /// be changed through this reference (the graph indexes names); changing its inputs is
    /// the caller's responsibility (use [`Graph::set_inputs`] to have inputs checked).
    pub fn get_mut(&mut self, id: OpId) -> Option<&mut Operator> {
        self.ops.get_mut(&id)
    }

    /// The operator with this id, or an error naming the id.
    pub fn op(&self, id: OpId) -> Result<&Operator, GraphError> {
        self.ops.get(&id).ok_or(GraphError::UnknownOp(id))
    }

    /// The id of the operator with this name.
    pub fn find(&self, name: &str) -> Option<OpId> {
        self.names.get(name).copied()
    }

    /// Replaces an operator's inputs; every input must be in the graph.
    pub fn set_inputs(&mut self, id: OpId, inputs: Vec<OpId>) -> Result<(), GraphError> {
        if let Some(missing) = inputs.iter().find(|i| !self.ops.contains_key(i)) {
            let name = self.op(id)?.name.clone();
            return Err(GraphError::UnknownInput {
                op: name,
                input: *missing,
            });
        }
        self.ops
            .get_mut(&id)
            .ok_or(GraphError::UnknownOp(id))?
            .inputs = inputs;
        Ok(())
    }

    /// Removes an operator; fails if another operator still consumes it.
    pub fn remove(&mut self, id: OpId) -> Result<Operator, GraphError> {
        if let Some(consumer) = self.consumers(id).first() {
            let consumer = self.op(*consumer)?.name.clone();
            let op = self.op(id)?.name.clone();
            return Err(GraphError::StillConsumed { op, consumer });
        }
        let op = self.ops.remove(&id).ok_or(GraphError::UnknownOp(id))?;
        self.names.remove(&op.name);
        Ok(op)
    }

    /// Every operator, by id.
    pub fn iter(&self) -> impl Iterator<Item = (OpId, &Operator)> + '_ {
        self.ops.iter().map(|(id, op)| (*id, op))
    }

    /// Every id, ascending.
    pub fn ids(&self) -> Vec<OpId> {
        self.ops.keys().copied().collect()
    }

    /// How many operators the graph holds.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Whether the graph has no operators.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// The operators that consume `id` (once each, ascending).
    pub fn consumers(&self, id: OpId) -> Vec<OpId> {
        self.ops
            .iter()
            .filter(|(_, op)| op.inputs.contains(&id))
            .map(|(c, _)| *c)
            .collect()
    }

    /// Operators nobody consumes (the sinks and the graph's roots in the notation), ascending.
    pub fn sinks(&self) -> Vec<OpId> {
        let consumed: BTreeSet<OpId> = self
            .ops
            .values()
            .flat_map(|op| op.inputs.iter().copied())
            .collect();
        self.ops
            .keys()
            .filter(|id| !consumed.contains(id))
            .copied()
            .collect()
    }

    /// Operators with no inputs (the sources), ascending.
    pub fn sources(&self) -> Vec<OpId> {
        self.ops
            .iter()
            .filter(|(_, op)| op.inputs.is_empty())
            .map(|(id, _)| *id)
            .collect()
    }

    /// A name not used in the graph: `base` if free, else `base_1`, `base_2`, …
    pub fn fresh_name(&self, base: &str) -> String {
        (1u64..)
            .map(|k| format!("{base}_{k}"))
            .find(|n| !self.names.contains_key(n))
            .unwrap_or_else(|| base.to_string())
    }

    /// Operators ordered consumers first: every operator comes before its inputs; among
    /// operators that are ready at the same time, the smaller id first. This is the order in
    /// which the matcher tries match roots. Fails on a cycle, naming an operator on it.
    pub fn consumers_first(&self) -> Result<Vec<OpId>, GraphError> {
        // Ids are below `next`: counts and marks live in arrays indexed by id.
        let slot = |id: OpId| usize::try_from(id.0).expect("a u32 id fits in usize");
        let size = slot(OpId(self.next));
        // How many distinct consumers of each operator are not yet placed.
        let mut pending = vec![0usize; size];
        let mut distinct: Vec<OpId> = Vec::new();
        let distinct_inputs = |op: &Operator, out: &mut Vec<OpId>| {
            out.clear();
            out.extend_from_slice(&op.inputs);
            if out.len() > 1 {
                out.sort_unstable();
                out.dedup();
            }
        };
        for op in self.ops.values() {
            distinct_inputs(op, &mut distinct);
            for input in &distinct {
                if let Some(n) = pending.get_mut(slot(*input)) {
                    *n += 1;
                }
            }
        }
        let mut ready: BinaryHeap<Reverse<OpId>> = self
            .ops
            .keys()
            .filter(|id| pending.get(slot(**id)) == Some(&0))
            .map(|id| Reverse(*id))
            .collect();
        let mut order = Vec::with_capacity(self.ops.len());
        while let Some(Reverse(id)) = ready.pop() {
            order.push(id);
            distinct_inputs(self.op(id)?, &mut distinct);
            for input in &distinct {
                if let Some(n) = pending.get_mut(slot(*input)) {
                    *n = n.saturating_sub(1);
                    if *n == 0 {
                        ready.push(Reverse(*input));
                    }
                }
            }
        }
        if order.len() < self.ops.len() {
            let mut placed = vec![false; size];
            for id in &order {
                if let Some(p) = placed.get_mut(slot(*id)) {
                    *p = true;
                }
            }
            let on_cycle = self
                .ops
                .iter()
                .find(|(id, _)| placed.get(slot(**id)) != Some(&true))
                .map(|(_, op)| op.name.clone())
                .unwrap_or_default();
            return Err(GraphError::Cycle(on_cycle));
        }
        Ok(order)
    }

    /// Checks the invariants (unique names, known inputs) and that the graph has no cycle.
    pub fn check(&self) -> Result<(), GraphError> {
        let mut names = BTreeSet::new();
        for op in self.ops.values() {
            if !names.insert(op.name.as_str()) {
                return Err(GraphError::DuplicateName(op.name.clone()));
            }
            if let Some(missing) = op.inputs.iter().find(|i| !self.ops.contains_key(i)) {
                return Err(GraphError::UnknownInput {
                    op: op.name.clone(),
                    input: *missing,
                });
            }
        }
        self.consumers_first().map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain() -> Result<(Graph, OpId, OpId, OpId), GraphError> {
        let mut g = Graph::new();
        let src = g.add(Operator::new("src", "reader"))?;
        let f = g.add(Operator::new("f", "filter").with_inputs(vec![src]))?;
        let sink = g.add(Operator::new("sink", "writer").with_inputs(vec![f]))?;
        Ok((g, src, f, sink))
    }

    #[test]
    fn a_name_can_be_used_once() -> Result<(), GraphError> {
        let (mut g, _, _, _) = chain()?;
        let err = g.add(Operator::new("f", "map"));
        assert_eq!(err, Err(GraphError::DuplicateName("f".into())));
        Ok(())
    }

    #[test]
    fn consumers_come_before_their_inputs() -> Result<(), GraphError> {
        let (g, src, f, sink) = chain()?;
        assert_eq!(g.consumers_first()?, vec![sink, f, src]);
        assert_eq!(g.sinks(), vec![sink]);
        assert_eq!(g.sources(), vec![src]);
        Ok(())
    }

    #[test]
    fn a_cycle_is_refused_naming_an_operator_on_it() -> Result<(), GraphError> {
        let (mut g, src, _, sink) = chain()?;
        g.set_inputs(src, vec![sink])?;
        assert!(matches!(g.check(), Err(GraphError::Cycle(_))));
        Ok(())
    }

    #[test]
    fn an_operator_still_consumed_cannot_be_removed() -> Result<(), GraphError> {
        let (mut g, _, f, sink) = chain()?;
        assert!(matches!(g.remove(f), Err(GraphError::StillConsumed { .. })));
        g.remove(sink)?;
        g.remove(f)?;
        assert_eq!(g.len(), 1);
        Ok(())
    }

    #[test]
    fn fresh_names_skip_the_names_in_use() -> Result<(), GraphError> {
        let (mut g, _, _, _) = chain()?;
        g.add(Operator::new("f_1", "map"))?;
        assert_eq!(g.fresh_name("f"), "f_2");
        assert_eq!(g.fresh_name("merge"), "merge_1");
        Ok(())
    }
}
