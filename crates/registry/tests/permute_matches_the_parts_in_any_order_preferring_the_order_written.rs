//! Issue 18, conformance (ISO/IEC 19075-5 §4.11.3, Trino's "PERMUTE"): `PERMUTE(A, B, C)`
//! matches the parts in any order, and where several orders match, the one first in
//! lexicographic order of the parts' positions wins (`A B C`, `A C B`, `B A C`, …).

use crate::common;

fn classified(pattern: &str, defines: &[&str], rows: &[(i64, i64, i64, &str)]) -> Vec<String> {
    let mut params = format!(
        "param order_by = \"ts\" param pattern = \"{pattern}\" param rows_per_match = \"all\"\n"
    );
    for d in defines {
        params += &format!("  param define = \"{d}\"\n");
    }
    params += "  param measures = \"MATCH_NUMBER() AS m, CLASSIFIER() AS c\"";
    common::pattern_rows(&params, rows)
        .into_iter()
        .map(|r| {
            // ts, k, value, tag, m, c: keep tag, m, c.
            r.split(", ").skip(3).collect::<Vec<_>>().join(" ")
        })
        .collect()
}

#[test]
fn the_parts_match_in_any_order() {
    let rows = [
        (1, 0, 0, "c"),
        (2, 0, 0, "a"),
        (3, 0, 0, "b"),
        (4, 0, 0, "x"),
        (5, 0, 0, "b"),
        (6, 0, 0, "a"),
    ];
    let defines = ["A AS tag = 'a'", "B AS tag = 'b'", "C AS tag = 'c'"];
    // c a b is C A B; b a lacks its C.
    assert_eq!(
        classified("PERMUTE(A, B, C)", &defines, &rows),
        ["c 1 C", "a 1 A", "b 1 B"]
    );
}

#[test]
fn of_the_orders_that_match_the_first_in_the_order_written_wins() {
    let defines = ["A AS tag IN ('a', 'x')", "B AS tag IN ('b', 'x')"];
    // x x is both A B and B A: A B comes first.
    let rows = [(1, 0, 0, "x"), (2, 0, 0, "x")];
    assert_eq!(
        classified("PERMUTE(A, B)", &defines, &rows),
        ["x 1 A", "x 1 B"]
    );
    // b x is only B A.
    let rows = [(1, 0, 0, "b"), (2, 0, 0, "x")];
    assert_eq!(
        classified("PERMUTE(A, B)", &defines, &rows),
        ["b 1 B", "x 1 A"]
    );
    // Parts are patterns: PERMUTE(A+, B) over x x b prefers A+ first, and A+ greedy.
    let rows = [(1, 0, 0, "x"), (2, 0, 0, "x"), (3, 0, 0, "b")];
    assert_eq!(
        classified("PERMUTE(A+, B)", &defines, &rows),
        ["x 1 A", "x 1 A", "b 1 B"]
    );
}
