//! `order_by`'s tie-breakers: after the event-time column, the columns that order the rows of
//! one event time (`"ts, seq, name DESC NULLS LAST"`), as SQL's `ORDER BY` does. Rows equal in
//! every tie-breaker keep their arrival order.

use std::cmp::Ordering;

use super::value::Value;

/// A tie-breaker: a column, its direction, and where its NULLs go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tie {
    pub col: usize,
    pub desc: bool,
    pub nulls_first: bool,
}

/// A tie-breaker as written, `name [ASC | DESC] [NULLS FIRST | NULLS LAST]`: the column's
/// name, whether it is descending and whether its NULLs come first. Without `NULLS`, they come
/// last ascending and first descending, as in Oracle, PostgreSQL and DataFusion (Trino puts
/// them last either way: write `NULLS LAST` for its order). The error says what was expected.
pub(crate) fn parse_tie(item: &str) -> Result<(&str, bool, bool), String> {
    let words: Vec<&str> = item.split_whitespace().collect();
    let is = |w: &str, k: &str| w.eq_ignore_ascii_case(k);
    let (name, rest) = match words.as_slice() {
        [name, rest @ ..] => (*name, rest),
        [] => return Err(expected(item)),
    };
    let (desc, rest) = match rest {
        [dir, rest @ ..] if is(dir, "asc") => (false, rest),
        [dir, rest @ ..] if is(dir, "desc") => (true, rest),
        _ => (false, rest),
    };
    let nulls_first = match rest {
        [] => desc,
        [nulls, which] if is(nulls, "nulls") && is(which, "first") => true,
        [nulls, which] if is(nulls, "nulls") && is(which, "last") => false,
        _ => return Err(expected(item)),
    };
    Ok((name, desc, nulls_first))
}

fn expected(item: &str) -> String {
    format!(
        "expected a column, optionally followed by ASC or DESC and NULLS FIRST or NULLS LAST, found \"{}\" (the event-time column comes first, then tie-breakers: \"ts, seq DESC NULLS LAST\")",
        item.trim()
    )
}

/// The order of two rows of one event time (their cells) by `ties`.
pub(crate) fn tie_order(ties: &[Tie], a: &[Value], b: &[Value]) -> Ordering {
    for t in ties {
        let (Some(x), Some(y)) = (a.get(t.col), b.get(t.col)) else {
            continue;
        };
        let o = match (x.is_null(), y.is_null()) {
            (true, true) => Ordering::Equal,
            (true, false) if t.nulls_first => Ordering::Less,
            (true, false) => Ordering::Greater,
            (false, true) if t.nulls_first => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) => {
                let o = x.order(y).unwrap_or(Ordering::Equal);
                if t.desc {
                    o.reverse()
                } else {
                    o
                }
            }
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tie_breaker_reads_as_in_sql() {
        assert_eq!(parse_tie("seq"), Ok(("seq", false, false)));
        assert_eq!(parse_tie(" seq asc "), Ok(("seq", false, false)));
        assert_eq!(parse_tie("seq DESC"), Ok(("seq", true, true)));
        assert_eq!(parse_tie("seq NULLS FIRST"), Ok(("seq", false, true)));
        assert_eq!(parse_tie("seq desc nulls last"), Ok(("seq", true, false)));
        for wrong in ["", "seq up", "seq NULLS", "seq NULLS FIRST DESC", "a b"] {
            let e = parse_tie(wrong).expect_err(wrong);
            assert!(e.starts_with("expected a column"), "{wrong}: {e}");
        }
    }

    #[test]
    fn nulls_go_where_the_tie_breaker_says_whatever_its_direction() {
        let rows = [vec![Value::Int(2)], vec![Value::Null], vec![Value::Int(1)]];
        let sorted = |desc: bool, nulls_first: bool| -> Vec<Value> {
            let ties = [Tie {
                col: 0,
                desc,
                nulls_first,
            }];
            let mut r = rows.to_vec();
            r.sort_by(|a, b| tie_order(&ties, a, b));
            r.into_iter().map(|c| c[0].clone()).collect()
        };
        let (one, two) = (Value::Int(1), Value::Int(2));
        assert_eq!(
            sorted(false, false),
            [one.clone(), two.clone(), Value::Null]
        );
        assert_eq!(sorted(false, true), [Value::Null, one.clone(), two.clone()]);
        assert_eq!(sorted(true, true), [Value::Null, two.clone(), one.clone()]);
        assert_eq!(sorted(true, false), [two, one, Value::Null]);
    }
}
