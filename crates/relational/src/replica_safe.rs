//! The copies of an operator in hot standby must compute the same rows in the same order: the
//! stream selector that switches between them counts rows. An expression that calls a
//! volatile function (`random()`, `uuid()`, `PROCTIME()`) gives each copy other values — a
//! filter on it keeps other rows in each — so a switch could lose or repeat a row, silently.
//! Such an expression is refused on an operator that asks for hot standby (and on its copies,
//! which keep the request), when the query is checked and when a running one is changed.

use anduin_expr::{ExprError, ExprSite};

/// Refuses volatile function `volatile` in an expression at `site` of an operator in hot
/// standby (`replicated`).
pub(crate) fn replica_safe(
    replicated: bool,
    volatile: Option<String>,
    site: &ExprSite,
) -> Result<(), ExprError> {
    match volatile {
        Some(f) if replicated => Err(ExprError::at(
            site.line,
            site.col,
            format!("`{f}()` gives another value in each copy of a hot standby, so its copies would not compute the same rows and the stream selector could lose or repeat a row when it switches: compute it in an operator that does not ask for hot standby"),
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_volatile_call_in_a_replicated_operator_is_refused() {
        let site = ExprSite {
            text: "random() < 0.1".into(),
            line: 1,
            col: 1,
        };
        assert!(replica_safe(false, Some("random".into()), &site).is_ok());
        assert!(replica_safe(true, None, &site).is_ok());
        let e = replica_safe(true, Some("random".into()), &site).expect_err("volatile");
        assert!(
            e.message
                .starts_with("`random()` gives another value in each copy"),
            "{}",
            e.message
        );
    }
}
