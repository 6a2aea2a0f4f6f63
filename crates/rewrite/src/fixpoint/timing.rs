//! A timing probe (not a test of timing): `cargo test -p anduin-rewrite --release -- --ignored
//! --nocapture timing` prints how long the fixpoint takes on generated chains.

use std::time::Instant;

use crate::test_util::facts;
use crate::{builtin_rules, parse_rules, rewrite, Graph, Operator, DEFAULT_LIMIT};

fn chain(n: usize) -> Graph {
    let mut g = Graph::new();
    let mut at = g.add(Operator::new("src", "reader")).expect("fresh name");
    for i in 0..n {
        at = g
            .add(Operator::new(format!("f{i}"), "filter").with_inputs(vec![at]))
            .expect("fresh name");
    }
    g.add(Operator::new("sink", "writer").with_inputs(vec![at]))
        .expect("fresh name");
    g
}

#[test]
#[ignore = "a timing probe: run with --ignored --nocapture"]
fn timing() {
    super::tests::CHECK_TOUCHED.with(|c| c.set(false));
    let mut rules = builtin_rules();
    let user = parse_rules("pin.rules", "rule pin: f := filter => f@{p}").expect("parses");
    rules.rules.extend(user.rules);
    for n in [50, 100, 200, 1000] {
        let g = chain(n);
        let t = Instant::now();
        let out = rewrite(&g, &rules, &facts(), DEFAULT_LIMIT).map(|o| o.applications.len());
        println!("pin on {n} filters: {:?} in {:?}", out, t.elapsed());
    }
}

#[test]
#[ignore = "a timing probe: run with --ignored --nocapture"]
fn timing_cycle() {
    super::tests::CHECK_TOUCHED.with(|c| c.set(false));
    let mut rules = builtin_rules();
    let user = parse_rules(
        "cycle.rules",
        "rule a: m := map => filter(m)\nrule b: f := filter => map(f)",
    )
    .expect("parses");
    rules.rules.extend(user.rules);
    let g = crate::parse_graph("g", "w := writer(m := map(r := reader))").expect("parses");
    let t = Instant::now();
    let out = rewrite(&g, &rules, &facts(), DEFAULT_LIMIT).map(|o| o.applications.len());
    println!("cycle: {:?} in {:?}", out.err(), t.elapsed());
}

#[test]
#[ignore = "a timing probe: run with --ignored --nocapture"]
fn timing_per_rule() {
    let g = chain(200);
    for rule in &builtin_rules().rules {
        let t = Instant::now();
        let found = crate::find_matches(rule, &g, &facts()).map(|m| m.len());
        println!(
            "{} on 200 filters: {:?} in {:?}",
            rule.name,
            found,
            t.elapsed()
        );
    }
    let t = Instant::now();
    let order = g.consumers_first().map(|o| o.len());
    println!("consumers_first: {order:?} in {:?}", t.elapsed());
}
