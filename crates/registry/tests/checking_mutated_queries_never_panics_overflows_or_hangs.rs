//! Fuzzing the whole check of a query (issue 22, point 6): the example queries and the
//! Nexmark benchmark's, mutated (spans deleted, duplicated, swapped; deep nesting, long chains
//! and stray tokens inserted), go through the `.flow` parser or the SQL frontend, then the
//! graph check, which binds every operator (compiling its expressions, patterns, windows and
//! joins). Whatever the input, the check returns (a spec or errors with positions): no panic,
//! no stack overflow on a thread with a modest stack, and inputs of bounded size so that the
//! time per case is bounded without timing it.
//!
//! `PROPTEST_CASES=5000 cargo nextest run -p anduin-registry --test scenarios -E 'test(/^checking_mutated_queries/)'`
//! runs more cases than the default.

use anduin_registry::BuiltinCatalog;
use proptest::prelude::*;

/// The queries mutated: every example and benchmark query.
const SEEDS: [(&str, &str); 24] = [
    ("flow", include_str!("../../../examples/cep_paper.flow")),
    ("flow", include_str!("../../../examples/generate.flow")),
    (
        "flow",
        include_str!("../../../examples/generator_filter_discard.flow"),
    ),
    ("flow", include_str!("../../../examples/join.flow")),
    ("flow", include_str!("../../../examples/nexmark_bids.flow")),
    ("flow", include_str!("../../../examples/q1.flow")),
    ("flow", include_str!("../../../examples/q2.flow")),
    ("flow", include_str!("../../../examples/q3.flow")),
    ("flow", include_str!("../../../examples/q4.flow")),
    ("flow", include_str!("../../../examples/sensors.flow")),
    ("flow", include_str!("../../../examples/union.flow")),
    ("sql", include_str!("../../../examples/join.sql")),
    ("sql", include_str!("../../../examples/q1.sql")),
    ("sql", include_str!("../../../examples/q2.sql")),
    ("sql", include_str!("../../../examples/q3.sql")),
    ("sql", include_str!("../../../examples/q4.sql")),
    ("sql", include_str!("../../../benches/nexmark/q0.sql")),
    ("sql", include_str!("../../../benches/nexmark/q2.sql")),
    ("sql", include_str!("../../../benches/nexmark/q5.sql")),
    ("sql", include_str!("../../../benches/nexmark/q7.sql")),
    ("sql", include_str!("../../../benches/nexmark/q8.sql")),
    ("sql", include_str!("../../../benches/nexmark/cep_q1.sql")),
    ("sql", include_str!("../../../benches/nexmark/cep_q2.sql")),
    ("sql", include_str!("../../../benches/nexmark/cep_q3.sql")),
];

/// Tokens inserted here and there: expression and SQL syntax, and the `.flow` language's.
const TOKENS: [&str; 40] = [
    "(",
    ")",
    ",",
    " + ",
    " * ",
    " / ",
    " - ",
    " AND ",
    " OR ",
    " NOT ",
    " = ",
    " < ",
    " IS NULL",
    " CASE WHEN ",
    " THEN ",
    " ELSE ",
    " END ",
    "abs(",
    "CAST(",
    " AS BIGINT)",
    "'x'",
    "\"",
    "\"\"\"",
    "1e400",
    "-9223372036854775808",
    "9223372036854775808",
    "{",
    "}",
    "=",
    "param ",
    "operator ",
    " SELECT ",
    " FROM ",
    " WHERE ",
    " GROUP BY ",
    ";",
    "MATCH_RECOGNIZE (",
    " PATTERN (A+ B*?)",
    "${",
    "\u{feff}",
];

/// One change to a query's text, at places given as fractions of its length.
#[derive(Clone, Debug)]
enum Mutation {
    Delete(f64, f64),
    Duplicate(f64, f64),
    Swap(f64, f64, f64),
    /// `(` × n, then `)` × n further on.
    Nest(f64, usize),
    /// ` + x` (or another operator) × n.
    Chain(f64, usize, usize),
    Token(f64, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let at = 0.0..1.0f64;
    prop_oneof![
        (at.clone(), 0.0..0.2f64).prop_map(|(a, l)| Mutation::Delete(a, l)),
        (at.clone(), 0.0..0.2f64).prop_map(|(a, l)| Mutation::Duplicate(a, l)),
        (at.clone(), at.clone(), 0.0..0.2f64).prop_map(|(a, b, l)| Mutation::Swap(a, b, l)),
        (at.clone(), prop_oneof![1..60usize, 150..400usize])
            .prop_map(|(a, n)| Mutation::Nest(a, n)),
        (
            at.clone(),
            prop_oneof![1..100usize, 900..1_200usize],
            0..4usize
        )
            .prop_map(|(a, n, op)| Mutation::Chain(a, n, op)),
        (at, 0..TOKENS.len()).prop_map(|(a, t)| Mutation::Token(a, t)),
    ]
}

/// The char boundary at fraction `f` of `s`.
fn at(s: &str, f: f64) -> usize {
    let mut i = ((s.len() as f64) * f.clamp(0.0, 1.0)) as usize;
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn apply(s: &str, m: &Mutation) -> String {
    let span = |a: f64, l: f64| (at(s, a), at(s, (a + l).min(1.0)));
    match *m {
        Mutation::Delete(a, l) => {
            let (from, to) = span(a, l);
            format!("{}{}", &s[..from], &s[to..])
        }
        Mutation::Duplicate(a, l) => {
            let (from, to) = span(a, l);
            format!("{}{}", &s[..to], &s[from..])
        }
        Mutation::Swap(a, b, l) => {
            let (a, b) = (a.min(b), a.max(b));
            let (f1, t1) = span(a, l);
            let f2 = at(s, b).max(t1);
            let t2 = at(s, (b + l).min(1.0)).max(f2);
            format!(
                "{}{}{}{}{}",
                &s[..f1],
                &s[f2..t2],
                &s[t1..f2],
                &s[f1..t1],
                &s[t2..]
            )
        }
        Mutation::Nest(a, n) => {
            let i = at(s, a);
            let j = at(s, (a + 0.01).min(1.0)).max(i);
            format!(
                "{}{}{}{}{}",
                &s[..i],
                "(".repeat(n),
                &s[i..j],
                ")".repeat(n),
                &s[j..]
            )
        }
        Mutation::Chain(a, n, op) => {
            let i = at(s, a);
            let piece = [" + value", " AND x", " OR value > 1", " || 'a'"][op % 4];
            format!("{}{}{}", &s[..i], piece.repeat(n), &s[i..])
        }
        Mutation::Token(a, t) => {
            let i = at(s, a);
            format!("{}{}{}", &s[..i], TOKENS[t % TOKENS.len()], &s[i..])
        }
    }
}

/// Parses and checks `text` on a thread with a 1 MiB stack; returns whether the check
/// returned (a panic fails the case; an overflow would abort the test).
fn check(kind: &'static str, text: String) -> Result<(), String> {
    std::thread::Builder::new()
        .stack_size(1 << 20)
        .spawn(move || {
            let spec = match kind {
                "sql" => anduin_spec::parse_sql(&text),
                _ => anduin_spec::parse_flow(&text),
            };
            if let Ok(mut spec) = spec {
                let vars = std::collections::BTreeMap::new();
                if anduin_spec::substitute(&mut spec, &vars, anduin_spec::Missing::Keep).is_ok() {
                    let _ = anduin_graph::check(&spec, &BuiltinCatalog);
                }
            }
        })
        .map_err(|e| e.to_string())?
        .join()
        .map_err(|panic| {
            panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default()
        })
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(40)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn a_mutated_example_is_checked_without_a_panic(
        seed in 0..SEEDS.len(),
        mutations in prop::collection::vec(mutation(), 1..4),
    ) {
        let (kind, text) = SEEDS[seed];
        let mutated = mutations.iter().fold(text.to_string(), |s, m| apply(&s, m));
        // Shown if the case aborts the test (a stack overflow), which proptest cannot report.
        eprintln!("case: {kind} seed {seed} with {mutations:?}");
        let outcome = check(kind, mutated.clone());
        prop_assert!(outcome.is_ok(), "panic {:?} on {kind} seed {seed} with {mutations:?}", outcome);
    }
}

#[test]
fn every_seed_checks_as_it_is() {
    for (kind, text) in SEEDS {
        assert_eq!(check(kind, text.to_string()), Ok(()));
    }
}
