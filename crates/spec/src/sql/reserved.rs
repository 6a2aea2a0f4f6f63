//! The function names the SQL frontend treats specially, wherever a call appears: a user's
//! function of one of these names would never be called where the frontend reads the name
//! as its own (`LAST(x)` in a `MATCH_RECOGNIZE` is navigation, `TUMBLE(…)` in `FROM` a
//! window), or would change meaning from one clause to the next. They are refused as the
//! names of user-defined functions, with what the name is.

use super::match_recognize::PATTERN_AGGREGATES;

/// Names of the row pattern's own functions (`MATCH_RECOGNIZE`'s `DEFINE` and `MEASURES`).
const PATTERN: [(&str, &str); 9] = [
    ("FIRST", "MATCH_RECOGNIZE's navigation function FIRST(…)"),
    ("LAST", "MATCH_RECOGNIZE's navigation function LAST(…)"),
    ("PREV", "MATCH_RECOGNIZE's navigation function PREV(…)"),
    ("NEXT", "MATCH_RECOGNIZE's navigation function NEXT(…)"),
    ("CLASSIFIER", "MATCH_RECOGNIZE's CLASSIFIER()"),
    ("MATCH_NUMBER", "MATCH_RECOGNIZE's MATCH_NUMBER()"),
    ("RUNNING", "MATCH_RECOGNIZE's RUNNING modifier"),
    ("FINAL", "MATCH_RECOGNIZE's FINAL modifier"),
    (
        "ARRAY_AGG",
        "MATCH_RECOGNIZE's ARRAY_AGG(…) over a variable's rows",
    ),
];

/// Names of the window table functions and their arguments (`FROM TABLE(TUMBLE(…))`).
const WINDOWS: [(&str, &str); 5] = [
    ("TUMBLE", "the window table function TUMBLE(…)"),
    ("HOP", "the window table function HOP(…)"),
    ("SESSION", "the window table function SESSION(…)"),
    ("CUMULATE", "the window table function CUMULATE(…)"),
    (
        "DESCRIPTOR",
        "DESCRIPTOR(…), the time column of a window table function",
    ),
];

/// SQL's ranking window functions (`ROW_NUMBER() OVER (…)`, top-N and deduplication).
const RANKING: [(&str, &str); 3] = [
    ("ROW_NUMBER", "SQL's window function ROW_NUMBER() OVER (…)"),
    ("RANK", "SQL's window function RANK() OVER (…)"),
    ("DENSE_RANK", "SQL's window function DENSE_RANK() OVER (…)"),
];

/// What `name` (any case) is to the SQL frontend, if a user-defined function may not take
/// it: `Some("the window table function TUMBLE(…)")`.
///
/// # Examples
/// ```
/// assert_eq!(anduin_spec::reserved_function("prev"), Some("MATCH_RECOGNIZE's navigation function PREV(…)"));
/// assert_eq!(anduin_spec::reserved_function("every"), Some("an aggregate over a variable's rows in MATCH_RECOGNIZE"));
/// assert_eq!(anduin_spec::reserved_function("add_one"), None);
/// ```
pub fn reserved_function(name: &str) -> Option<&'static str> {
    let upper = name.to_ascii_uppercase();
    PATTERN
        .iter()
        .chain(&WINDOWS)
        .chain(&RANKING)
        .find(|(n, _)| *n == upper)
        .map(|(_, what)| *what)
        .or_else(|| {
            PATTERN_AGGREGATES
                .contains(&upper.as_str())
                .then_some("an aggregate over a variable's rows in MATCH_RECOGNIZE")
        })
}

#[cfg(test)]
mod tests {
    use super::reserved_function;

    #[test]
    fn every_name_the_frontend_reads_as_its_own_is_reserved_in_any_case() {
        for name in [
            "first",
            "Last",
            "PREV",
            "next",
            "classifier",
            "match_number",
            "running",
            "final",
            "array_agg",
            "tumble",
            "hop",
            "session",
            "cumulate",
            "descriptor",
            "row_number",
            "max_by",
            "every",
            "arbitrary",
        ] {
            assert!(reserved_function(name).is_some(), "{name}");
        }
        for name in ["add_one", "shout", "firstly", "session_id"] {
            assert_eq!(reserved_function(name), None, "{name}");
        }
    }
}
