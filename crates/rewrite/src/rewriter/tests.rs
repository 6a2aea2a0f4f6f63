use super::*;
use crate::test_util::{expected, facts, rewritten};
use crate::{find_matches, parse_graph, parse_rules, print_graph, rewrite, RuleSet};

type R = Result<(), Box<dyn std::error::Error>>;

fn rules(text: &str) -> Result<RuleSet, crate::SyntaxError> {
    parse_rules("<rules>", text)
}

/// The first match of the first rule, applied once.
fn once(rule: &str, graph: &str) -> Result<Graph, Box<dyn std::error::Error>> {
    let rules = rules(rule)?;
    let rule = rules.rules.first().ok_or("no rule")?;
    let g = parse_graph("<graph>", graph)?;
    let m = find_matches(rule, &g, &facts())?
        .into_iter()
        .next()
        .ok_or("no match")?;
    Ok(apply(rule, &m, &g)?)
}

const PAPER: &str = "a2 := any(f := filter(a1 := any*))[stateless(f)]
  => a2(stream-selector(failover(writer(f(reader(multicast(a1))))) | @{p1} | @{p2}))";

#[test]
fn the_papers_rule_replicates_the_filter_between_a_multicast_and_a_stream_selector() -> R {
    let out = print_graph(&once(PAPER, "sink := writer(f := filter(src := reader))")?);
    assert_eq!(
        out,
        expected(
            "sink := writer(stream-selector_1 := stream-selector(
                failover_1 := failover@{sink.p1}(writer_1 := writer@{sink.p1}(
                    f := filter@{sink.p1}(reader_1 := reader@{sink.p1}(
                        multicast_1 := multicast(src := reader))))),
                failover_2 := failover@{sink.p2}(writer_2 := writer@{sink.p2}(
                    f_replica_1 := filter@{sink.p2}(reader_2 := reader@{sink.p2}(multicast_1))))))"
        )?
    );
    Ok(())
}

#[test]
fn the_consumers_of_the_matched_root_consume_the_replacement() -> R {
    let out = once(
        "f := filter => stream-selector(f | @{p1} | @{p2})",
        "a := writer(f := filter(src := reader)); b := writer(f)",
    )?;
    assert_eq!(
        print_graph(&out),
        expected(
            "a := writer(stream-selector_1 := stream-selector(f := filter@{f.p1}(src := reader),
                                                                f_replica_1 := filter@{f.p2}(src)));
             b := writer(stream-selector_1)"
        )?
    );
    Ok(())
}

#[test]
fn a_matched_operator_left_out_is_removed_unless_something_still_reads_it() -> R {
    let drop = "m := map(x := filter(s := any*)) => m(s)";
    assert_eq!(
        print_graph(&once(
            drop,
            "w := writer(m := map(x := filter(r := reader)))"
        )?),
        "w := writer(m := map(r := reader))"
    );
    assert_eq!(
        print_graph(&once(
            drop,
            "w := writer(m := map(x := filter(r := reader))); v := writer(x)"
        )?),
        expected("v := writer(x := filter(r := reader)); w := writer(m := map(r))")?
    );
    Ok(())
}

#[test]
fn params_and_placement_set_on_a_reference_keep_the_rest() -> R {
    let out = once(
        r#"f := window => f{checkpoint = "on", size = param(f, "size")}@{p}"#,
        r#"w := writer(f := window{size = "10s", key = "k"}(r := reader))"#,
    )?;
    assert_eq!(
        print_graph(&out),
        r#"w := writer(f := window{checkpoint = "on", key = "k", size = "10s"}@{p}(r := reader))"#
    );
    Ok(())
}

#[test]
fn giving_an_operator_another_number_of_inputs_is_an_error_naming_the_rule() -> R {
    let err = once(
        "rule r: f := join => f(map)",
        "w := writer(f := join(a := reader, b := reader))",
    )
    .err()
    .map(|e| e.to_string());
    assert_eq!(
        err.as_deref(),
        Some(r#"rule r: f(…) gives 1 inputs to operator "f", which has 2"#)
    );
    Ok(())
}

#[test]
fn a_replica_count_must_be_a_whole_number_from_the_param() -> R {
    let rule = r#"rule r: f := filter(s := any*) => m(replicate(f, param(f, "replicas"), @{p#}))"#;
    let err = |g: &str| once(rule, g).err().map(|e| e.to_string());
    assert_eq!(
        err(r#"w := writer(f := filter{replicas = "two"}(r := reader))"#).as_deref(),
        Some(
            r#"rule r: replica count "two" (from param(f, "replicas")) is not a whole number from 1 to 1024"#
        )
    );
    assert_eq!(
        err("w := writer(f := filter(r := reader))").as_deref(),
        Some(r#"rule r: operator "f" has no param "replicas" and the rule gives no default"#)
    );
    let out = once(
        rule,
        r#"w := writer(f := filter{replicas = "3"}(r := reader))"#,
    )?;
    assert_eq!(
        print_graph(&out),
        expected(
            r#"w := writer(m_1 := m(f := filter{replicas = "3"}@{f.p1}(r := reader),
                                     f_replica_1 := filter{replicas = "3"}@{f.p2}(r),
                                     f_replica_2 := filter{replicas = "3"}@{f.p3}(r)))"#
        )?
    );
    Ok(())
}

#[test]
fn fresh_names_skip_the_names_in_the_graph() -> R {
    let out = once(
        "f := filter => stream-selector(f | @{p1} | @{p2})",
        "w := writer(f := filter(f_replica_1 := map(stream-selector_1 := reader)))",
    )?;
    assert_eq!(
        print_graph(&out),
        expected(
            "w := writer(stream-selector_2 := stream-selector(
                f := filter@{f.p1}(f_replica_1 := map(stream-selector_1 := reader)),
                f_replica_2 := filter@{f.p2}(f_replica_1)))"
        )?
    );
    Ok(())
}

#[test]
fn a_chain_reference_places_each_operator_by_its_position() -> R {
    let out = once(
        "c := any*(s := any*)[length(c) = 2] => c@{p#}",
        "w := writer(a := map(b := filter(r := reader)))",
    )?;
    assert_eq!(
        print_graph(&out),
        "w := writer@{w.p1}(a := map@{w.p2}(b := filter(r := reader)))"
    );
    Ok(())
}

#[test]
fn a_chain_in_replicas_is_copied_whole() -> R {
    let out = once(
        "w := writer(c := any*(r := reader)) => w(merge(c | @{p1} | @{p2}))",
        "w := writer(a := map(b := filter(r := reader)))",
    )?;
    assert_eq!(
        print_graph(&out),
        expected(
            "w := writer(merge_1 := merge(a := map@{w.p1}(b := filter@{w.p1}(r := reader)),
                                          a_replica_1 := map@{w.p2}(b_replica_1 := filter@{w.p2}(r))))"
        )?
    );
    Ok(())
}

#[test]
fn a_rule_does_not_rematch_its_own_output() -> R {
    // Each application creates a filter above a filter: without marks this never ends.
    let rules = rules("rule wrap: f := filter => filter{wrapped = \"yes\"}(f)")?;
    assert_eq!(
        rewritten(&rules, "w := writer(f := filter(r := reader))")?,
        r#"w := writer(filter_1 := filter{wrapped = "yes"}(f := filter(r := reader)))"#
    );
    Ok(())
}

#[test]
fn rewriting_is_deterministic() -> R {
    let rules = rules(PAPER)?;
    let g = parse_graph(
        "<graph>",
        "j := join(a := writer(f := filter(s := reader)), b := writer(g := filter(s)))",
    )?;
    let once = rewrite(&g, &rules, &facts(), 100)?;
    let twice = rewrite(&g, &rules, &facts(), 100)?;
    assert_eq!(once, twice);
    assert_eq!(once.applications.len(), 2);
    Ok(())
}

#[test]
fn a_rule_that_makes_a_cycle_is_named_and_not_called_a_bug() {
    let g = crate::parse_graph("g", "s := writer(f := filter(r := reader))").expect("graph");
    let rules = crate::parse_rules(
        "cyc.rules",
        "rule a: s := writer(f := any(x := any*)) => f(s)",
    )
    .expect("rules");
    let e = crate::rewrite(&g, &rules, &crate::TableFacts::stateless(["filter"]), 10)
        .expect_err("a cycle")
        .to_string();
    assert!(e.contains("rule a: its right side makes a cycle"), "{e}");
}

#[test]
fn rules_that_keep_making_work_for_each_other_stop_naming_them() {
    let g = crate::parse_graph("g", "s := writer(f := filter(r := reader))").expect("graph");
    // Each rule makes an operator the other matches.
    let rules = crate::parse_rules(
        "grow.rules",
        "rule r1: x := map(y := any*) => filter(x)\nrule r2: x := filter(y := any*) => map(x)",
    )
    .expect("rules");
    let e = crate::rewrite(&g, &rules, &crate::TableFacts::stateless(["filter"]), 40)
        .expect_err("loops")
        .to_string();
    assert!(e.contains("the rules still applying: r1, r2"), "{e}");
}
