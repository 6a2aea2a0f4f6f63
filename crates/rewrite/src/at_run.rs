//! Rules applied at run time (paper §4.2, constraints on measured figures such as
//! `rate(f) > 10000`): what a running query can carry out without rebuilding its graph is a
//! change of its operators' params. So a run-time rule's right side sets params of the
//! operator its left side's root matched, and nothing else:
//!
//! ```text
//! rule scale_busy_window:
//!   w := window [rate(w) > 10000 and param(w, "parallelism", "1") < 4] => w{parallelism = "4"}
//! ```
//!
//! [`check_run_time`] refuses any other right side; [`param_changes`] finds every match of
//! every rule in a graph whose params are the running query's current values, and answers the
//! params each match would change (values equal to the current one are not changes). The
//! caller measures the figures ([`Facts::figure`]) and carries the changes out (the control
//! plane); a rule is evaluated afresh each time, with no memory of earlier rounds, so its
//! constraints say when it stops applying (`param(w, "parallelism") < 4`).

use crate::error::{GraphError, Pos};
use crate::facts::Facts;
use crate::matched::Bound;
use crate::matcher::find_matches;
use crate::model::Graph;
use crate::rule::{BindingKind, Head, ParamValue, Rule, RuleSet, Term};

/// A rule that cannot be applied while a query runs.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "{file}:{pos}: rule {rule}: {why}; at run time a rule may only set params of the operator \
     its left side's root matches (`{root}{{param = \"value\"}}`): show rules that reshape \
     the graph with `anduin explain --rewritten --rules`"
)]
pub struct NotRunTime {
    /// The rule file.
    pub file: String,
    /// Where the rule starts.
    pub pos: Pos,
    /// The rule.
    pub rule: String,
    /// The left side's root name.
    pub root: String,
    /// What its right side does instead.
    pub why: String,
}

/// Refuses a rule whose right side does anything but set params of the left side's root.
pub fn check_run_time(file: &str, rule: &Rule) -> Result<(), NotRunTime> {
    let root = rule.left.name.clone();
    let refuse = |why: String| NotRunTime {
        file: file.to_string(),
        pos: rule.pos,
        rule: rule.name.clone(),
        root: root.clone(),
        why,
    };
    if rule.left.binding_kind() != BindingKind::Op {
        return Err(refuse(
            "its left side's root is a chain or a stream, not one operator".to_string(),
        ));
    }
    let Term::Node(node) = &rule.right else {
        return Err(refuse("its right side makes copies".to_string()));
    };
    match &node.head {
        Head::Ref(name, BindingKind::Op) if *name == root => {}
        Head::Ref(name, _) => {
            return Err(refuse(format!(
                "its right side is `{name}`, not the root `{root}` (the rest of the match \
                 would be removed)"
            )))
        }
        Head::New(kind) => {
            return Err(refuse(format!(
                "its right side makes a new `{kind}` operator"
            )))
        }
    }
    if node.placement.is_some() {
        return Err(refuse("its right side places the operator".to_string()));
    }
    if node.inputs.is_some() {
        return Err(refuse(
            "its right side gives the operator other inputs".to_string(),
        ));
    }
    if node.params.is_empty() {
        return Err(refuse("its right side sets no param".to_string()));
    }
    Ok(())
}

/// One param a rule's match would change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamChange {
    /// The rule.
    pub rule: String,
    /// The operator (the match's root).
    pub operator: String,
    /// The param.
    pub param: String,
    /// Its value now (`None`: not set).
    pub old: Option<String>,
    /// The value the rule gives it.
    pub new: String,
}

/// Every param change the rules' matches in `graph` ask for, rules in order and each rule's
/// matches in the matcher's order; a param that an earlier change of this call already sets
/// is left to that one (the first rule in the file wins). `graph`'s params must be the running
/// query's current values; the rules must have passed [`check_run_time`] (others are skipped).
pub fn param_changes(
    rules: &RuleSet,
    graph: &Graph,
    facts: &dyn Facts,
) -> Result<Vec<ParamChange>, GraphError> {
    let mut out: Vec<ParamChange> = Vec::new();
    for rule in &rules.rules {
        let Term::Node(node) = &rule.right else {
            continue;
        };
        for m in find_matches(rule, graph, facts)? {
            let op = graph.op(m.root)?;
            for (param, value) in &node.params {
                let new = match value {
                    ParamValue::Text(t) => Some(t.clone()),
                    ParamValue::Param(r) => match m.bindings.get(&r.name) {
                        Some(Bound::Op(id) | Bound::Stream(id)) => graph
                            .op(*id)
                            .ok()
                            .and_then(|o| facts.param(o, &r.key).map(str::to_string))
                            .or_else(|| r.default.clone()),
                        _ => r.default.clone(),
                    },
                };
                let Some(new) = new else { continue };
                let old = facts.param(op, param).map(str::to_string);
                let taken = out
                    .iter()
                    .any(|c| c.operator == op.name && c.param == *param);
                if old.as_deref() != Some(new.as_str()) && !taken {
                    out.push(ParamChange {
                        rule: rule.name.clone(),
                        operator: op.name.clone(),
                        param: param.clone(),
                        old,
                        new,
                    });
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{parse_graph, parse_rules, TableFacts};

    const GRAPH: &str = r#"out := writer(w := window{parallelism = "1"}(g := generator))"#;

    fn changes(rules: &str, facts: &TableFacts) -> Vec<(String, String, String)> {
        let g = parse_graph("g", GRAPH).expect("a graph");
        let rules = parse_rules("r", rules).expect("rules");
        for r in &rules.rules {
            check_run_time("r", r).expect("a run-time rule");
        }
        param_changes(&rules, &g, facts)
            .expect("matches")
            .into_iter()
            .map(|c| (c.rule, c.operator, format!("{:?}→{}", c.old, c.new)))
            .collect()
    }

    #[test]
    fn a_rule_applies_when_its_figures_hold_and_not_when_they_do_not_or_are_unmeasured() {
        let rule = r#"rule up: w := window [rate(w) > 100 and param(w, "parallelism", "1") < 4]
                        => w{parallelism = "4"}"#;
        let busy = TableFacts::default().with_figure("w", "rate", 500.0);
        assert_eq!(
            changes(rule, &busy),
            [("up".into(), "w".into(), "Some(\"1\")→4".into())]
        );
        let idle = TableFacts::default().with_figure("w", "rate", 5.0);
        assert!(changes(rule, &idle).is_empty());
        assert!(
            changes(rule, &TableFacts::default()).is_empty(),
            "not measured"
        );
    }

    #[test]
    fn a_value_already_set_is_no_change_and_the_first_rule_wins_a_param() {
        let facts = TableFacts::default().with_figure("w", "rate", 500.0);
        assert!(changes(r#"w := window => w{parallelism = "1"}"#, &facts).is_empty());
        let two = r#"rule a: w := window [rate(w) > 1] => w{parallelism = "2"}
                     rule b: w := window [rate(w) > 1] => w{parallelism = "3"}"#;
        assert_eq!(
            changes(two, &facts),
            [("a".into(), "w".into(), "Some(\"1\")→2".into())]
        );
        let copied = r#"w := window(g := generator) => w{seed = param(g, "seed", "7")}"#;
        assert_eq!(changes(copied, &facts)[0].2, "None→7");
    }

    #[test]
    fn rules_that_reshape_the_graph_are_refused_at_run_time_saying_where() {
        let refused = |text: &str, says: &str| {
            let rules = parse_rules("my.rules", text).expect("parses");
            let e = check_run_time("my.rules", &rules.rules[0]).expect_err(text);
            let message = e.to_string();
            assert!(message.contains(says), "{message}");
            assert!(message.starts_with("my.rules:1:"), "{message}");
        };
        refused("f := filter => f@{p}", "places");
        refused("f := filter => merge(f)", "new `merge`");
        refused("a := any(f := filter) => f{x = \"1\"}", "not the root");
        refused("f := filter => f", "sets no param");
        refused("c := any*(f := filter) => c{x = \"1\"}", "chain");
    }
}
