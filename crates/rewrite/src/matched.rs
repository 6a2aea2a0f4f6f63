//! A match of a rule's left side: what each left-side name is bound to.

use std::collections::BTreeMap;

use crate::model::OpId;

/// What a left-side name is bound to in one match.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Bound {
    /// One operator, part of the match.
    Op(OpId),
    /// A chain, part of the match.
    Chain {
        /// The chain's operators, top (consumer side) first; possibly empty.
        ops: Vec<OpId>,
        /// The operator feeding the chain's bottom (where the chain's input pattern matched);
        /// for an empty chain, the operator the chain stands for.
        below: OpId,
    },
    /// The operator whose stream feeds the parent; outside the match, kept as it is.
    Stream(OpId),
}

/// One match of a rule's left side in a graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Match {
    /// The rule's name.
    pub rule: String,
    /// The operator the pattern's root matched (for a chain root, the chain's top).
    pub root: OpId,
    /// Every left-side name (unnamed nodes as `_1`, `_2`, …) and what it is bound to.
    pub bindings: BTreeMap<String, Bound>,
}

impl Match {
    /// The matched operators (bound to operators and chains, not streams), each once, with
    /// the name of the role it was matched in.
    pub fn region(&self) -> Vec<(OpId, &str)> {
        let mut out: Vec<(OpId, &str)> = Vec::new();
        for (name, bound) in &self.bindings {
            match bound {
                Bound::Op(id) => out.push((*id, name)),
                Bound::Chain { ops, .. } => out.extend(ops.iter().map(|id| (*id, name.as_str()))),
                Bound::Stream(_) => {}
            }
        }
        out.sort();
        out
    }

    /// The operator ids bound to `name` (one for an operator or a stream, the chain's for a
    /// chain).
    pub fn ops(&self, name: &str) -> Vec<OpId> {
        match self.bindings.get(name) {
            Some(Bound::Op(id) | Bound::Stream(id)) => vec![*id],
            Some(Bound::Chain { ops, .. }) => ops.clone(),
            None => Vec::new(),
        }
    }
}
