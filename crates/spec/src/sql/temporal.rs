//! `FOR SYSTEM_TIME AS OF`: Flink's lookup join (`JOIN side FOR SYSTEM_TIME AS OF b.p_time AS
//! s ON b.k = s.k`, Nexmark q13). anduin takes it on the right table of an inner or left
//! join, the side table, which must be bounded (`join/lookup.rs`); anywhere else the clause
//! is refused here, after parsing, at the versioned table, saying where it goes.

use std::collections::HashSet;
use std::ops::ControlFlow;

use anduin_types::{Diagnostic, Diagnostics};
use sqlparser::ast::{Query, SetExpr, Spanned, Statement, TableFactor, Visit, Visitor};

use super::source_text::pos;

/// Collects the versioned tables of a script and those that are the right table of a join.
#[derive(Default)]
struct Versions {
    /// Where each versioned table starts (line, column).
    found: Vec<(u64, u64)>,
    /// Where each versioned table that is a join's right table starts.
    joined: HashSet<(u64, u64)>,
}

fn at(t: &TableFactor) -> (u64, u64) {
    let s = t.span().start;
    (s.line, s.column)
}

fn versioned(t: &TableFactor) -> bool {
    matches!(
        t,
        TableFactor::Table {
            version: Some(_),
            ..
        }
    )
}

impl Visitor for Versions {
    type Break = ();

    fn pre_visit_query(&mut self, q: &Query) -> ControlFlow<()> {
        if let SetExpr::Select(s) = q.body.as_ref() {
            for from in &s.from {
                for j in &from.joins {
                    if versioned(&j.relation) {
                        self.joined.insert(at(&j.relation));
                    }
                }
            }
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, t: &TableFactor) -> ControlFlow<()> {
        if versioned(t) {
            self.found.push(at(t));
        }
        ControlFlow::Continue(())
    }
}

/// Refuses every `FOR SYSTEM_TIME AS OF` (or other table version) of `statements` that is
/// not on the right table of a join.
pub(super) fn refuse_versions_outside_joins(statements: &[Statement]) -> Result<(), Diagnostics> {
    let mut v = Versions::default();
    for st in statements {
        let _ = st.visit(&mut v);
    }
    let mut diags = Diagnostics::default();
    for (line, column) in v.found.iter().filter(|p| !v.joined.contains(p)) {
        diags.push(Diagnostic::error(
            pos(sqlparser::tokenizer::Location::new(*line, *column)),
            "FOR SYSTEM_TIME AS OF is taken only on the right table of a JOIN (a lookup join: `FROM s JOIN side FOR SYSTEM_TIME AS OF s.ts AS d ON s.k = d.k`)",
        ));
    }
    if diags.0.is_empty() {
        Ok(())
    } else {
        Err(diags)
    }
}
