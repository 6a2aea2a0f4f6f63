use super::*;
use crate::test_util::facts;
use crate::{parse_graph, parse_rules, TableFacts};

type R = Result<(), Box<dyn std::error::Error>>;

/// Every match of the (only) rule, each written as `name=op,op …` sorted by name, unnamed
/// pattern nodes left out.
fn matches_with(
    graph: &str,
    rule: &str,
    facts: &dyn Facts,
) -> Result<Vec<String>, Box<dyn std::error::Error>> {
    let g = parse_graph("<graph>", graph)?;
    let rules = parse_rules("<rule>", rule)?;
    let rule = rules.rules.first().ok_or("no rule")?;
    let name = |id: &OpId| g.get(*id).map(|o| o.name.clone()).unwrap_or_default();
    Ok(find_matches(rule, &g, facts)?
        .iter()
        .map(|m| {
            m.bindings
                .iter()
                .filter(|(k, _)| !k.starts_with('_'))
                .map(|(k, b)| {
                    let ops = match b {
                        Bound::Op(id) | Bound::Stream(id) => name(id),
                        Bound::Chain { ops, .. } => {
                            ops.iter().map(name).collect::<Vec<_>>().join(",")
                        }
                    };
                    format!("{k}={ops}")
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect())
}

fn matches(graph: &str, rule: &str) -> Result<Vec<String>, Box<dyn std::error::Error>> {
    matches_with(graph, rule, &facts())
}

const CHAIN: &str = "sink := writer(a := map(b := filter(c := window(src := reader))))";

#[test]
fn any_matches_one_operator_of_any_type_consumers_first() -> R {
    assert_eq!(
        matches(CHAIN, "x := any => x")?,
        ["x=sink", "x=a", "x=b", "x=c", "x=src"]
    );
    Ok(())
}

#[test]
fn a_type_matches_only_its_operators() -> R {
    assert_eq!(matches(CHAIN, "x := filter => x")?, ["x=b"]);
    assert_eq!(matches(CHAIN, "x := join => x")?, Vec::<String>::new());
    Ok(())
}

#[test]
fn names_bind_each_node_of_the_pattern() -> R {
    assert_eq!(
        matches(CHAIN, "w := writer(m := map(f := filter(s := any*))) => w")?,
        ["f=b m=a s=c w=sink"]
    );
    Ok(())
}

#[test]
fn parentheses_fix_the_number_of_inputs() -> R {
    let g = "j := join(l := reader, r := reader)";
    assert_eq!(
        matches(g, "x := any(a := any*) => x")?,
        Vec::<String>::new()
    );
    assert_eq!(
        matches(g, "x := any(a := any*, b := any*) => x")?,
        ["a=l b=r x=j"]
    );
    assert_eq!(matches(g, "x := reader() => x")?, ["x=l", "x=r"]);
    Ok(())
}

#[test]
fn any_star_is_every_chain_longest_first_possibly_empty() -> R {
    assert_eq!(
        matches(CHAIN, "w := writer(c := any*(r := reader)) => w")?,
        ["c=a,b,c r=src w=sink"]
    );
    assert_eq!(
        matches(CHAIN, "w := writer(c := any*(s := any*)) => w")?,
        [
            "c=a,b,c s=src w=sink",
            "c=a,b s=c w=sink",
            "c=a s=b w=sink",
            "c= s=a w=sink"
        ]
    );
    assert_eq!(
        matches(CHAIN, "m := map(c := any*(f := filter)) => m")?,
        ["c= f=b m=a"]
    );
    Ok(())
}

#[test]
fn a_chain_stops_at_an_operator_with_several_inputs() -> R {
    let g = "w := writer(m := map(j := join(l := reader, r := reader)))";
    assert_eq!(
        matches(g, "c := any*(s := any*)[length(c) >= 2] => c")?,
        ["c=w,m s=j"]
    );
    Ok(())
}

#[test]
fn overlapping_matches_are_all_found() -> R {
    let g = "sink := writer(f := filter(g := filter(h := filter(src := reader))))";
    assert_eq!(
        matches(g, "a := any(f := filter(s := any*))[stateless(f)] => a")?,
        ["a=sink f=f s=g", "a=f f=g s=h", "a=g f=h s=src"]
    );
    Ok(())
}

#[test]
fn an_operator_is_matched_by_one_pattern_node_only() -> R {
    let g = "j := join(m := map(s := reader), m)";
    assert_eq!(
        matches(g, "j := join(a := any, b := any) => j")?,
        Vec::<String>::new()
    );
    assert_eq!(
        matches(g, "j := join(a := any*, b := any*) => j")?,
        ["a=m b=m j=j"]
    );
    Ok(())
}

#[test]
fn stateless_and_stateful_ask_the_facts() -> R {
    assert_eq!(
        matches(CHAIN, "x := any(s := any*)[stateful(x)] => x")?,
        ["s=src x=c"]
    );
    assert_eq!(
        matches(CHAIN, "x := any(s := any*)[stateless(x)] => x")?,
        ["s=a x=sink", "s=b x=a", "s=c x=b"]
    );
    Ok(())
}

#[test]
fn comparisons_on_types_and_params_are_numeric_when_both_sides_are_numbers() -> R {
    let g = r#"w := writer(a := map{parallelism = "4"}(b := map{parallelism = "10", mode = "fast"}(r := reader)))"#;
    assert_eq!(
        matches(g, r#"x := any[param(x, "parallelism") >= 5] => x"#)?,
        ["x=b"]
    );
    assert_eq!(
        matches(g, r#"x := any[param(x, "parallelism") < 5] => x"#)?,
        ["x=a"]
    );
    assert_eq!(
        matches(g, r#"x := any[param(x, "parallelism") = "4"] => x"#)?,
        ["x=a"]
    );
    assert_eq!(
        matches(g, r#"x := any[param(x, "mode") != "fast"] => x"#)?,
        Vec::<String>::new()
    );
    assert_eq!(
        matches(
            g,
            r#"x := any[not param(x, "mode") = "fast" and type(x) = "map"] => x"#
        )?,
        ["x=a"]
    );
    assert_eq!(
        matches(
            g,
            r#"x := any[param(x, "mode", "slow") = "slow" and (type(x) = "writer" or type(x) = "reader")] => x"#
        )?,
        ["x=w", "x=r"]
    );
    Ok(())
}

#[test]
fn figures_come_from_the_caller_and_a_missing_one_fails_the_comparison() -> R {
    let facts = TableFacts::stateless(["map"])
        .with_figure("a", "rate", 20000.0)
        .with_figure("b", "rate", 500.0);
    let g = "w := writer(a := map(b := map(r := reader)))";
    assert_eq!(
        matches_with(g, "x := any[rate(x) > 10000] => x", &facts)?,
        ["x=a"]
    );
    assert_eq!(
        matches_with(g, "x := any[not rate(x) > 10000] => x", &facts)?,
        ["x=w", "x=b", "x=r"]
    );
    Ok(())
}

#[test]
fn a_constraint_on_a_chain_holds_for_each_of_its_operators() -> R {
    let g = r#"w := writer(a := map{p = "1"}(b := map{p = "1"}(c := map(r := reader))))"#;
    assert_eq!(
        matches(
            g,
            r#"c := any*(s := any*)[length(c) >= 2 and param(c, "p") = "1"] => c"#
        )?,
        ["c=a,b s=c"]
    );
    Ok(())
}

#[test]
fn no_match_is_an_empty_list() -> R {
    assert!(matches(CHAIN, "x := any(y := join) => x")?.is_empty());
    Ok(())
}

#[test]
fn marks_keep_a_rule_off_operators_it_created_or_matched_in_the_same_role() -> R {
    let mut g = parse_graph(
        "<graph>",
        "w := writer(f := filter(g := filter(r := reader)))",
    )?;
    let rules = parse_rules("<rule>", "rule r: x := filter(s := any*) => x")?;
    let rule = rules.rules.first().ok_or("no rule")?;
    let (f, gid) = (g.find("f").ok_or("f")?, g.find("g").ok_or("g")?);
    let mark = |role: Option<&str>| Mark {
        rule: "r".into(),
        role: role.map(str::to_string),
    };
    g.get_mut(f).ok_or("f")?.marks.insert(mark(Some("x")));
    g.get_mut(gid).ok_or("g")?.marks.insert(mark(Some("s")));
    let found: Vec<OpId> = find_matches(rule, &g, &facts())?
        .iter()
        .map(|m| m.root)
        .collect();
    assert_eq!(found, [gid]);
    g.get_mut(gid).ok_or("g")?.marks.insert(mark(None));
    assert!(find_matches(rule, &g, &facts())?.is_empty());
    Ok(())
}
