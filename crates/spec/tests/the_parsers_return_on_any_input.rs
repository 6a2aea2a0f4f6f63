//! Fuzzing the `.flow` parser and the SQL frontend (issue 22, point 6) with random bytes and
//! random sequences of their tokens, long chains and deep nesting among them: each returns a
//! spec or errors with positions, without a panic and without overflowing a thread's modest
//! stack; inputs are of bounded size, so that the time per case is bounded without timing
//! it. Mutations of the example queries, through the whole check, are fuzzed in
//! `anduin-operators`' tests. `PROPTEST_CASES=N` runs more cases than the default.

use proptest::prelude::*;

const FLOW: [&str; 24] = [
    "type",
    "operator",
    "column",
    "param",
    "input",
    "output",
    "name",
    "type",
    "=",
    ",",
    "{",
    "}",
    "\"x\"",
    "\"\"\"a\nb\"\"\"",
    "42",
    "-1.5",
    "true",
    "# c\n",
    "\n",
    "\"unterminated",
    "\\",
    "1e400",
    "99999999999999999999",
    "\u{feff}",
];

const SQL: [&str; 44] = [
    "CREATE TABLE t (ts TIMESTAMP, v BIGINT) WITH (connector = 'file', path = 'x');",
    "CREATE TABLE o WITH (connector = 'file', path = 'y');",
    "INSERT INTO o",
    "SELECT",
    "FROM",
    "t",
    "WHERE",
    "GROUP BY",
    "v",
    "ts",
    "(",
    ")",
    ",",
    "+",
    "*",
    "AND",
    "OR",
    "NOT",
    "=",
    "<",
    "'a'",
    "1",
    ";",
    "AS",
    "CASE",
    "WHEN",
    "THEN",
    "ELSE",
    "END",
    "TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' SECOND))",
    "window_start",
    "COUNT(*)",
    "JOIN",
    "ON",
    "MATCH_RECOGNIZE (",
    "PATTERN (A B+)",
    "DEFINE A AS",
    "MEASURES",
    "ORDER BY ts",
    "PARTITION BY v",
    "WITHIN INTERVAL '1' SECOND",
    "--",
    "\"q\"",
    "$1",
];

/// A sequence of tokens, with runs repeated: a chain or a nesting of up to 1 500 of them.
fn soup(tokens: &'static [&'static str]) -> impl Strategy<Value = String> {
    prop::collection::vec(
        (
            0..tokens.len(),
            prop_oneof![9 => 1..3usize, 1 => 100..1_500usize],
        ),
        0..40,
    )
    .prop_map(move |parts| {
        parts
            .into_iter()
            .map(|(t, n)| format!("{} ", tokens[t]).repeat(n))
            .collect()
    })
}

/// Runs `f` on a thread with a 1 MiB stack; a panic is an error with its message.
fn guarded(f: impl FnOnce() + Send + 'static) -> Result<(), String> {
    std::thread::Builder::new()
        .stack_size(1 << 20)
        .spawn(f)
        .map_err(|e| e.to_string())?
        .join()
        .map_err(|p| {
            p.downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default()
        })
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(64)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_are_decoded_and_parsed_or_refused(bytes in prop::collection::vec(any::<u8>(), 0..2_000)) {
        let outcome = guarded(move || {
            if let Ok(text) = anduin_spec::decode(&bytes) {
                let _ = anduin_spec::parse_flow(text);
                let _ = anduin_spec::parse_sql(text);
            }
        });
        prop_assert_eq!(outcome, Ok(()));
    }

    #[test]
    fn random_flow_tokens_parse_or_are_refused(text in soup(&FLOW)) {
        eprintln!("case: {text:?}");
        prop_assert_eq!(guarded(move || { let _ = anduin_spec::parse_flow(&text); }), Ok(()));
    }

    #[test]
    fn random_sql_tokens_parse_or_are_refused(text in soup(&SQL)) {
        eprintln!("case: {} bytes", text.len());
        let shown = text.clone();
        let outcome = guarded(move || { let _ = anduin_spec::parse_sql(&text); });
        prop_assert!(outcome.is_ok(), "{:?} on {shown}", outcome);
    }
}
