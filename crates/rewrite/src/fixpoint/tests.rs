use super::*;
use crate::test_util::facts;
use crate::{parse_graph, parse_rules, print_graph, GraphError, Operator};

type R = Result<(), Box<dyn std::error::Error>>;

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
