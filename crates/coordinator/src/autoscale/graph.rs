//! The observation's operators in an order from the sources (every operator after all it
//! reads from), or why there is none.

use std::collections::{BTreeMap, BTreeSet};

use super::error::AutoscaleError;
use super::figures::{Observation, OperatorFacts};

/// The operators in topological order; ties keep the observation's order, so the order (and
/// every decision log) is the same for the same observation.
pub(crate) fn topological(obs: &Observation) -> Result<Vec<&OperatorFacts>, AutoscaleError> {
    let mut index: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, op) in obs.operators.iter().enumerate() {
        if op.parallelism == 0 {
            return Err(AutoscaleError::ZeroParallelism {
                operator: op.name.clone(),
            });
        }
        if index.insert(op.name.as_str(), i).is_some() {
            return Err(AutoscaleError::DuplicateOperator {
                operator: op.name.clone(),
            });
        }
    }
    let mut waiting_on: Vec<BTreeSet<usize>> = Vec::with_capacity(obs.operators.len());
    let mut readers: Vec<Vec<usize>> = vec![Vec::new(); obs.operators.len()];
    for (i, op) in obs.operators.iter().enumerate() {
        let mut ups = BTreeSet::new();
        for u in &op.upstream {
            let Some(&j) = index.get(u.as_str()) else {
                return Err(AutoscaleError::UnknownUpstream {
                    operator: op.name.clone(),
                    upstream: u.clone(),
                });
            };
            if ups.insert(j) {
                if let Some(r) = readers.get_mut(j) {
                    r.push(i);
                }
            }
        }
        waiting_on.push(ups);
    }
    // Kahn's algorithm, always taking the earliest ready operator.
    let mut ready: BTreeSet<usize> = (0..obs.operators.len())
        .filter(|&i| waiting_on.get(i).is_some_and(BTreeSet::is_empty))
        .collect();
    let mut order = Vec::with_capacity(obs.operators.len());
    while let Some(i) = ready.pop_first() {
        order.push(i);
        for &r in readers.get(i).into_iter().flatten() {
            if let Some(w) = waiting_on.get_mut(r) {
                w.remove(&i);
                if w.is_empty() {
                    ready.insert(r);
                }
            }
        }
    }
    if order.len() < obs.operators.len() {
        let placed: BTreeSet<usize> = order.iter().copied().collect();
        let operators = (0..obs.operators.len())
            .filter(|i| !placed.contains(i))
            .filter_map(|i| obs.operators.get(i).map(|op| op.name.clone()))
            .collect();
        return Err(AutoscaleError::Cycle { operators });
    }
    Ok(order
        .into_iter()
        .filter_map(|i| obs.operators.get(i))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(name: &str, upstream: &[&str]) -> OperatorFacts {
        OperatorFacts {
            name: name.into(),
            upstream: upstream.iter().map(|u| u.to_string()).collect(),
            parallelism: 1,
            figures: None,
        }
    }

    fn obs(operators: Vec<OperatorFacts>) -> Observation {
        Observation {
            at_ms: 0,
            operators,
            rescales: Vec::new(),
        }
    }

    fn names(o: &Observation) -> Vec<&str> {
        topological(o)
            .expect("acyclic")
            .iter()
            .map(|op| op.name.as_str())
            .collect()
    }

    #[test]
    fn operators_come_after_everything_they_read_from_ties_in_listed_order() {
        let o = obs(vec![
            op("sink", &["join"]),
            op("join", &["left", "right", "right"]),
            op("right", &[]),
            op("left", &[]),
        ]);
        assert_eq!(names(&o), vec!["right", "left", "join", "sink"]);
    }

    #[test]
    fn a_cycle_is_refused_naming_its_operators() {
        let o = obs(vec![
            op("src", &[]),
            op("a", &["src", "b"]),
            op("b", &["a"]),
        ]);
        let err = topological(&o).expect_err("a cycle");
        assert_eq!(
            err,
            AutoscaleError::Cycle {
                operators: vec!["a".into(), "b".into()]
            }
        );
        assert!(err.to_string().contains("acyclic"), "{err}");
    }

    #[test]
    fn an_unknown_upstream_a_duplicate_and_zero_instances_are_refused() {
        let unknown = obs(vec![op("a", &["ghost"])]);
        assert!(matches!(
            topological(&unknown),
            Err(AutoscaleError::UnknownUpstream { .. })
        ));
        let twice = obs(vec![op("a", &[]), op("a", &[])]);
        assert!(matches!(
            topological(&twice),
            Err(AutoscaleError::DuplicateOperator { .. })
        ));
        let mut idle = op("a", &[]);
        idle.parallelism = 0;
        assert!(matches!(
            topological(&obs(vec![idle])),
            Err(AutoscaleError::ZeroParallelism { .. })
        ));
    }
}
