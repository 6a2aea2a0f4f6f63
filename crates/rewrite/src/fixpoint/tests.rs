use super::*;
use crate::test_util::facts;
use crate::{parse_graph, parse_rules, print_graph, GraphError, Operator};

type R = Result<(), Box<dyn std::error::Error>>;

thread_local! {
    /// Whether [`only_touched_changed`] checks (the timing probe turns it off).
    pub(super) static CHECK_TOUCHED: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
}

/// The graph before an application, for [`only_touched_changed`] (unless turned off).
pub(super) fn snapshot(g: &Graph) -> Option<Graph> {
    CHECK_TOUCHED.with(std::cell::Cell::get).then(|| g.clone())
}

/// Checks, in every test that rewrites, what the fixed-point loop relies on: an application
/// changes no operator but those it says it touched.
pub(super) fn only_touched_changed(
    before: Option<&Graph>,
    after: &Graph,
    touched: &std::collections::BTreeSet<crate::OpId>,
) {
    let Some(before) = before else {
        return;
    };
    let ids: std::collections::BTreeSet<crate::OpId> =
        before.ids().into_iter().chain(after.ids()).collect();
    for id in ids {
        if before.get(id) != after.get(id) {
            assert!(
                touched.contains(&id),
                "operator {id} changed but was not reported touched"
            );
        }
    }
}

#[test]
fn rules_that_feed_each_other_stop_at_the_limit_naming_them() -> R {
    // `a` wraps a map in a filter, `b` wraps a filter in a map: each matches what the other made.
    let rules = parse_rules(
        "cycle.rules",
        "rule a: m := map => filter(m)\nrule b: f := filter => map(f)\nrule idle: x := join => x",
    )?;
    let g = parse_graph("<graph>", "w := writer(m := map(r := reader))")?;
    let err = rewrite(&g, &rules, &facts(), 10).err();
    assert_eq!(
        err,
        Some(RewriteError::IterationLimit {
            limit: 10,
            rules: vec!["a".into(), "b".into()]
        })
    );
    assert_eq!(
        err.map(|e| e.to_string()).as_deref(),
        Some("rewriting did not reach a fixed point after 10 rule applications; the rules still applying: a, b")
    );
    Ok(())
}

#[test]
fn applications_say_which_rule_matched_where() -> R {
    let rules = parse_rules(
        "r",
        r#"rule pin: f := filter(s := any*)[param(f, "pin", "no") = "yes"] => f@{p}"#,
    )?;
    let g = parse_graph(
        "<graph>",
        r#"w := writer(f := filter{pin = "yes"}(g := filter(h := filter{pin = "yes"}(r := reader))))"#,
    )?;
    let out = rewrite(&g, &rules, &facts(), DEFAULT_LIMIT)?;
    let roots: Vec<(&str, &str)> = out
        .applications
        .iter()
        .map(|a| (a.rule.as_str(), a.root.as_str()))
        .collect();
    assert_eq!(roots, [("pin", "f"), ("pin", "h")]);
    assert_eq!(
        out.applications.first().map(|a| a.bound.clone()),
        Some(BTreeMap::from([
            ("f".to_string(), vec!["f".to_string()]),
            ("s".to_string(), vec!["g".to_string()])
        ]))
    );
    assert_eq!(
        print_graph(&out.graph),
        r#"w := writer(f := filter{pin = "yes"}@{p}(g := filter(h := filter{pin = "yes"}@{p}(r := reader))))"#
    );
    Ok(())
}

#[test]
fn a_graph_with_a_cycle_is_refused_before_rewriting() -> R {
    let mut g = Graph::new();
    let a = g.add(Operator::new("a", "map"))?;
    let b = g.add(Operator::new("b", "map").with_inputs(vec![a]))?;
    g.set_inputs(a, vec![b])?;
    let rules = parse_rules("r", "x := map => x")?;
    let err = rewrite(&g, &rules, &facts(), DEFAULT_LIMIT).err();
    assert!(
        matches!(err, Some(RewriteError::Graph(GraphError::Cycle(_)))),
        "{err:?}"
    );
    Ok(())
}

#[test]
fn no_rule_matching_leaves_the_graph_as_it_was() -> R {
    let g = parse_graph("<graph>", "w := writer(r := reader)")?;
    let out = rewrite(
        &g,
        &parse_rules("r", "x := join => x")?,
        &facts(),
        DEFAULT_LIMIT,
    )?;
    assert_eq!(out.graph, g);
    assert!(out.applications.is_empty());
    Ok(())
}

/// `src := reader`, then `n` filters in a chain, then `sink := writer`.
fn filters(n: usize) -> Result<Graph, GraphError> {
    let mut g = Graph::new();
    let mut at = g.add(Operator::new("src", "reader"))?;
    for i in 0..n {
        at = g.add(Operator::new(format!("f{i}"), "filter").with_inputs(vec![at]))?;
    }
    g.add(Operator::new("sink", "writer").with_inputs(vec![at]))?;
    Ok(g)
}

#[test]
fn a_rule_applied_to_each_of_200_filters_reads_each_operator_a_bounded_number_of_times() -> R {
    // The built-in rules are tried first in every round, as `explain --rewritten` does; the
    // chain rule (`pipelining`) must not enumerate every sub-chain of the 200 filters.
    let mut rules = crate::builtin_rules();
    rules.extend(parse_rules("pin.rules", "rule pin: f := filter => f@{p}")?);
    let g = filters(200)?;
    crate::matcher::work::take();
    let out = rewrite(&g, &rules, &facts(), DEFAULT_LIMIT)?;
    let examined = crate::matcher::work::take();
    assert_eq!(out.applications.len(), 200);
    assert!(out
        .graph
        .iter()
        .all(|(_, op)| (op.kind == "filter") == (op.placement == crate::Placement::Any)));
    // A rule looks again only where an application changed something: the whole run reads
    // each operator a few times per rule (enumerating the chains read it 12,971,334 times).
    let bound = rules.rules.len() as u64 * g.len() as u64 * 10;
    assert!(examined <= bound, "examined {examined} > {bound}");
    Ok(())
}
