use super::*;

fn err(text: &str) -> String {
    match parse_rules("r.rules", text) {
        Ok(rules) => format!("parsed {} rules", rules.rules.len()),
        Err(e) => e.to_string(),
    }
}

const PAPER: &str = "a2 := any(f := filter(a1 := any*))[stateless(f)]
  => a2(stream-selector(failover(writer(f(reader(multicast(a1))))) | @{p1} | @{p2}))";

#[test]
fn the_papers_rule_parses_into_a_pattern_a_constraint_and_two_replicas() -> Result<(), SyntaxError>
{
    let rules = parse_rules("r.rules", PAPER)?;
    let [rule] = rules.rules.as_slice() else {
        panic!("one rule expected, got {:?}", rules.rules);
    };
    assert_eq!(rule.name, "r.rules:1");
    assert_eq!(rule.left.name, "a2");
    assert_eq!(rule.left.kind, PatternKind::Any);
    assert_eq!(
        rule.left.find("a1").map(Pattern::binding_kind),
        Some(BindingKind::Stream)
    );
    assert_eq!(rule.constraint, Some(Constraint::Stateless("f".into())));
    let Term::Node(root) = &rule.right else {
        panic!("a node expected at the root");
    };
    assert_eq!(root.head, Head::Ref("a2".into(), BindingKind::Op));
    let Some([Term::Node(selector)]) = root.inputs.as_deref() else {
        panic!("one input expected: {root:?}");
    };
    assert_eq!(selector.head, Head::New("stream-selector".into()));
    let Some([Term::Replicate(r)]) = selector.inputs.as_deref() else {
        panic!("replicas expected under the stream selector: {selector:?}");
    };
    assert_eq!(r.template.head, Head::New("failover".into()));
    assert_eq!(
        r.copies,
        Copies::Listed(vec![Placement::slot("", "p1"), Placement::slot("", "p2")])
    );
    Ok(())
}

#[test]
fn a_file_holds_several_rules_named_or_not_with_comments() -> Result<(), SyntaxError> {
    let rules = parse_rules(
        "r.rules",
        "# first\nrule pin: w := writer => w@{p}\n\n# second\nf := filter => f{x = \"1\"};\nrule last: m := map(s := any*) => m(s)\n",
    )?;
    let names: Vec<&str> = rules.rules.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["pin", "r.rules:5", "last"]);
    Ok(())
}

#[test]
fn and_binds_tighter_than_or_and_not_tightest() -> Result<(), SyntaxError> {
    let rules = parse_rules(
        "r",
        r#"f := any[not stateless(f) or type(f) = "window" and param(f, "n", "1") >= 2.5] => f"#,
    )?;
    let c = rules.rules.first().and_then(|r| r.constraint.clone());
    let expected = Constraint::Or(
        Box::new(Constraint::Not(Box::new(Constraint::Stateless("f".into())))),
        Box::new(Constraint::And(
            Box::new(Constraint::Compare(
                Value::Type("f".into()),
                CmpOp::Eq,
                Value::Str("window".into()),
            )),
            Box::new(Constraint::Compare(
                Value::Param(ParamRef {
                    name: "f".into(),
                    key: "n".into(),
                    default: Some("1".into()),
                }),
                CmpOp::Ge,
                Value::Num(2.5),
            )),
        )),
    );
    assert_eq!(c, Some(expected));
    Ok(())
}

#[test]
fn figures_are_any_other_function_of_a_name() -> Result<(), SyntaxError> {
    let rules = parse_rules("r", "f := any[rate(f) > 10000 and length(f) = 1] => f")?;
    let Some(Constraint::And(a, _)) = rules.rules.first().and_then(|r| r.constraint.clone()) else {
        panic!("an `and` expected");
    };
    assert_eq!(
        *a,
        Constraint::Compare(
            Value::Figure {
                figure: "rate".into(),
                name: "f".into()
            },
            CmpOp::Gt,
            Value::Num(10000.0)
        )
    );
    Ok(())
}

#[test]
fn new_operators_take_params_from_literals_and_matched_params() -> Result<(), SyntaxError> {
    let rules = parse_rules(
        "r",
        r#"f := any(a := any*) => merge(replicate(f(splitter{by = "key-group", n = param(f, "parallelism")}(a)), param(f, "parallelism"), @{p#}))"#,
    )?;
    let Some(Term::Node(merge)) = rules.rules.first().map(|r| &r.right) else {
        panic!("a node expected");
    };
    let Some([Term::Replicate(r)]) = merge.inputs.as_deref() else {
        panic!("replicas expected");
    };
    assert_eq!(
        r.copies,
        Copies::Counted {
            count: Count::Param(ParamRef {
                name: "f".into(),
                key: "parallelism".into(),
                default: None
            }),
            placement: Placement::slot("", "p#"),
        }
    );
    Ok(())
}

#[test]
fn a_missing_arrow_says_what_was_expected_where() {
    assert_eq!(
        err("f := filter\n  f@{p}"),
        "r.rules:2:3: expected `=>` between the pattern and the replacement, found `f`"
    );
}

#[test]
fn a_constraint_on_an_unbound_name_lists_the_bound_ones() {
    assert_eq!(
        err("a := any(f := filter)[stateless(g)] => a"),
        "r.rules:1:33: expected a name bound on the left side (a, f), found `g`"
    );
}

#[test]
fn a_stream_takes_no_inputs_on_the_right() {
    assert_eq!(
        err("f := filter(s := any*) => f(s(map))"),
        "r.rules:1:29: expected `s` alone: it is bound to a stream (`any*` without inputs), \
         which takes no params, placement or inputs"
    );
}

#[test]
fn replicas_cannot_be_the_root_nor_nest() {
    assert!(err("f := filter => f | @{p1} | @{p2}")
        .contains("expected one operator as the replacement's root"));
    assert!(err("f := filter => m(x(f | @{p1}) | @{p2})")
        .contains("expected no replicas inside replicas"));
}

#[test]
fn a_hash_needs_replicas_or_a_chain() {
    assert_eq!(
        err("f := filter => f@{p#}"),
        "r.rules:1:16: expected `#` in a slot only inside replicas (the copy number) or on a \
         chain (the position in the chain)"
    );
    assert_eq!(err("c := any*(s := any*) => c@{p#}"), "parsed 1 rules");
}

#[test]
fn names_are_bound_once_and_rules_named_once() {
    assert_eq!(
        err("f := any(f := filter) => f"),
        "r.rules:1:10: name `f` is bound twice"
    );
    assert_eq!(
        err("rule a: f := any => f\nrule a: g := any => g"),
        "r.rules:2:1: rule `a` is defined twice"
    );
}

#[test]
fn a_chain_has_one_input_pattern_and_a_root_is_not_a_bare_stream() {
    assert!(err("c := any*(a := any, b := any) => c").contains("exactly one input pattern"));
    assert!(err("c := any* => c").contains("found a bare `any*`"));
}

#[test]
fn a_constraint_of_more_connectives_than_the_limit_is_refused_not_overflowing_the_stack() {
    for op in ["and", "or"] {
        let terms: Vec<String> = (0..5000).map(|i| format!("rate(x) > {i}")).collect();
        let text = format!("x := window [{}] => x", terms.join(&format!(" {op} ")));
        let e = err(&text);
        assert!(
            e.starts_with("r.rules:1:") && e.contains("more than 256 `and`s and `or`s"),
            "{e}"
        );
    }
    let fine: Vec<String> = (0..257).map(|i| format!("rate(x) > {i}")).collect();
    assert_eq!(
        err(&format!("x := window [{}] => x", fine.join(" and "))),
        "parsed 1 rules"
    );
}
