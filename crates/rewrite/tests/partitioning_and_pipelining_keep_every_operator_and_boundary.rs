//! Property test on seeded random graphs: applying the partitioning or the pipelining rule (or
//! both) keeps every original operator (name and type), keeps the sources and the sinks (no
//! new one, none lost), keeps which sources each sink reads from, yields a valid graph, and
//! is deterministic. Every failure message names the seed and the graph.

use std::collections::{BTreeMap, BTreeSet};

use anduin_rewrite::{
    builtin_rules, print_graph, rewrite, Graph, OpId, Operator, RuleSet, TableFacts, DEFAULT_LIMIT,
};

type R = Result<(), Box<dyn std::error::Error>>;

/// SplitMix64: a small seeded generator, enough for picking graph shapes.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

/// One or two sources, up to seven operators (maps, filters, windows with one input; joins
/// with two), each reading any operator before it (so a stream may be read by several: the
/// graphs are DAGs with fan-out and fan-in, not only chains), a writer on every operator
/// nobody consumes; random `parallelism` and `pipeline` params (on sources too).
fn random_graph(seed: u64) -> Result<Graph, Box<dyn std::error::Error>> {
    let mut rng = Rng(seed);
    let mut g = Graph::new();
    let mut producers: Vec<OpId> = Vec::new();
    for i in 0..1 + rng.below(2) {
        let mut src = Operator::new(format!("src{i}"), "reader");
        if rng.chance(30) {
            src = src.with_param("pipeline", "split");
        }
        producers.push(g.add(src)?);
    }
    for i in 0..1 + rng.below(7) {
        let two = producers.len() >= 2 && rng.chance(25);
        let (kind, inputs) = if two {
            let a = producers[rng.below(producers.len())];
            let b = producers[rng.below(producers.len())];
            ("join", vec![a, b])
        } else {
            let kind = ["map", "filter", "window"][rng.below(3)];
            (kind, vec![producers[rng.below(producers.len())]])
        };
        let mut op = Operator::new(format!("op{i}"), kind).with_inputs(inputs);
        if rng.chance(40) {
            op = op.with_param("parallelism", (1 + rng.below(3)).to_string());
        }
        if rng.chance(50) {
            op = op.with_param("pipeline", "split");
        }
        producers.push(g.add(op)?);
    }
    let open: Vec<OpId> = g
        .sinks()
        .into_iter()
        .filter(|id| g.get(*id).is_some_and(|op| op.kind != "writer"))
        .collect();
    for (i, id) in open.into_iter().enumerate() {
        g.add(Operator::new(format!("sink{i}"), "writer").with_inputs(vec![id]))?;
    }
    Ok(g)
}

fn names(g: &Graph, ids: Vec<OpId>) -> BTreeSet<String> {
    ids.into_iter()
        .filter_map(|id| g.get(id).map(|op| op.name.clone()))
        .collect()
}

/// For every sink, the names of the sources it reads from (transitively).
fn lineage(g: &Graph) -> BTreeMap<String, BTreeSet<String>> {
    let mut out = BTreeMap::new();
    for sink in g.sinks() {
        let mut seen = BTreeSet::new();
        let mut todo = vec![sink];
        let mut sources = BTreeSet::new();
        while let Some(id) = todo.pop() {
            if !seen.insert(id) {
                continue;
            }
            if let Some(op) = g.get(id) {
                if op.inputs.is_empty() {
                    sources.insert(op.name.clone());
                }
                todo.extend(op.inputs.iter().copied());
            }
        }
        if let Some(op) = g.get(sink) {
            out.insert(op.name.clone(), sources);
        }
    }
    out
}

fn only(names: &[&str]) -> RuleSet {
    RuleSet {
        rules: builtin_rules()
            .rules
            .into_iter()
            .filter(|r| names.contains(&r.name.as_str()))
            .collect(),
    }
}

fn check(seed: u64, rules: &RuleSet, label: &str) -> R {
    let facts = TableFacts::stateless(["map", "filter", "reader", "writer"]);
    let g = random_graph(seed)?;
    let ctx = format!("seed {seed}, {label}, graph:\n{}", print_graph(&g));
    let out = rewrite(&g, rules, &facts, DEFAULT_LIMIT).map_err(|e| format!("{ctx}\n{e}"))?;
    let again = rewrite(&g, rules, &facts, DEFAULT_LIMIT)?;
    let r = &out.graph;
    let rctx = format!("{ctx}\nrewritten:\n{}", print_graph(r));
    assert_eq!(out, again, "not deterministic; {rctx}");
    assert!(r.check().is_ok(), "invalid result; {rctx}");
    for (_, op) in g.iter() {
        let kept = r.find(&op.name).and_then(|id| r.get(id));
        assert_eq!(
            kept.map(|k| k.kind.as_str()),
            Some(op.kind.as_str()),
            "operator {} lost or retyped; {rctx}",
            op.name
        );
    }
    assert_eq!(
        names(&g, g.sources()),
        names(r, r.sources()),
        "sources; {rctx}"
    );
    assert_eq!(names(&g, g.sinks()), names(r, r.sinks()), "sinks; {rctx}");
    assert_eq!(lineage(&g), lineage(r), "what the sinks read; {rctx}");
    Ok(())
}

#[test]
fn partitioning_keeps_every_operator_and_boundary_and_is_deterministic() -> R {
    let rules = only(&["partitioning", "partitioning_2"]);
    for seed in 0..300 {
        check(seed, &rules, "partitioning")?;
    }
    Ok(())
}

/// The pipelining rules: for a chain, a source and an operator of two inputs.
const PIPELINING: [&str; 3] = ["pipelining", "pipelining_source", "pipelining_2"];

#[test]
fn pipelining_keeps_every_operator_and_boundary_and_is_deterministic() -> R {
    let rules = only(&PIPELINING);
    for seed in 0..300 {
        check(seed, &rules, "pipelining")?;
    }
    Ok(())
}

#[test]
fn partitioning_then_pipelining_keeps_every_operator_and_boundary() -> R {
    let rules = only(&[
        "partitioning",
        "partitioning_2",
        "pipelining",
        "pipelining_source",
        "pipelining_2",
    ]);
    for seed in 0..300 {
        check(seed, &rules, "partitioning and pipelining")?;
    }
    Ok(())
}

#[test]
fn the_random_graphs_exercise_both_rules() -> R {
    // Guards the generator: enough seeds must actually trigger each rule, on graphs that are
    // not only chains (a stream read by several operators, an operator of two inputs).
    let facts = TableFacts::stateless(["map", "filter", "reader", "writer"]);
    let rules = [&["partitioning", "partitioning_2"][..], &PIPELINING[..]].concat();
    let mut fired: BTreeMap<String, usize> = BTreeMap::new();
    let (mut fan_out, mut fan_in) = (0, 0);
    for seed in 0..300 {
        let g = random_graph(seed)?;
        fan_out += usize::from(g.iter().any(|(id, _)| g.consumers(id).len() >= 2));
        fan_in += usize::from(g.iter().any(|(_, op)| op.inputs.len() >= 2));
        let out = rewrite(&g, &only(&rules), &facts, DEFAULT_LIMIT)?;
        for a in out.applications {
            *fired.entry(a.rule).or_default() += 1;
        }
    }
    assert!(
        fan_out >= 100 && fan_in >= 100,
        "{fan_out} graphs with fan-out, {fan_in} with fan-in, of 300"
    );
    for rule in rules {
        assert!(
            fired.get(rule).copied().unwrap_or(0) >= 5,
            "{rule} fired too rarely: {fired:?}"
        );
    }
    Ok(())
}
