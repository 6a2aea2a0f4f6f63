//! A topological order of the operators, or a cycle.

use std::collections::BTreeSet;

use crate::logical::{NodeId, Stream, StreamId};

/// A topological order of the nodes, or the nodes of one cycle.
pub(crate) fn topological_order(
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::datatypes::Schema;

    use super::*;

    fn stream(producer: usize) -> Stream {
        Stream {
            name: format!("s{producer}"),
            type_name: None,
            schema: Arc::new(Schema::empty()),
            producer: (NodeId(producer), 0),
            consumers: vec![],
            updating_from: None,
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
}
