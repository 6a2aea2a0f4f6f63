//! `CREATE VIEW name AS SELECT …`: a named query, read in FROM as a table is (in a plain
//! `FROM v`, a join, a window table function's `TABLE v`, an OVER window, …), as in Flink.
//!
//! A view is checked where it is created: its query is lowered on a copy of the tables
//! declared so far, so that a view over an unknown table (or a later view), or with a query
//! anduin refuses, is an error at its own position even when no INSERT reads it. It is
//! lowered for real where a query first reads it, its operators named `view_{name}_…`; every
//! later reader shares its stream, as a table's readers share its source. A view over views
//! reads them so. A view that no INSERT reads runs nothing, reads no table.

use anduin_types::{Diagnostic, Pos};
use sqlparser::ast::Spanned;
use sqlparser::ast::{CreateTableOptions, CreateView, ObjectName, Query};

use super::derived::Derived;
use super::insert::{lower_select, plain_select, unsupported, Script};
use super::source_text::pos;
use super::tables::Tables;
use crate::ast::Spec;

/// A declared view.
#[derive(Debug, Clone)]
pub(crate) struct View {
    pub name: String,
    pub pos: Pos,
    pub query: Query,
    pub state: ViewState,
}

/// What became of a view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ViewState {
    /// Checked; no query has read it yet.
    Declared,
    /// Its query was refused (the error is reported where it is created).
    Refused,
    /// Lowered: the stream its readers read.
    Lowered(String),
}

/// Records a `CREATE VIEW`, after checking its query against the tables, views and
/// `functions` declared before it.
pub(super) fn declare(
    cv: &CreateView,
    script: &Script<'_, '_>,
    tables: &mut Tables,
    functions: &[crate::ast::FunctionDef],
) -> Result<(), Diagnostic> {
    let at = pos(cv.name.span().start);
    let name = super::tables::name_of(&cv.name);
    let refused = |what: &str| Err(unsupported(at, format!("{what} (view `{name}`)")));
    if cv.materialized {
        return refused("CREATE MATERIALIZED VIEW");
    }
    if cv.or_replace || cv.or_alter {
        return refused("CREATE OR REPLACE VIEW");
    }
    if !cv.columns.is_empty() {
        return refused(
            "column names after a view's name (name the columns with AS in its SELECT)",
        );
    }
    if !matches!(cv.options, CreateTableOptions::None) || cv.to.is_some() {
        return refused("options of a view");
    }
    tables.check_free(&name, at)?;
    let view = View {
        name,
        pos: at,
        query: (*cv.query).clone(),
        state: ViewState::Declared,
    };
    // Lowered on copies: what it reads is not marked read, no operator is kept.
    let mut scratch = tables.clone();
    let mut spec = Spec {
        functions: functions.to_vec(),
        ..Spec::default()
    };
    let checked = lower(&view, script, &mut scratch, &mut spec);
    let refused = checked.is_err();
    tables.add_view(View {
        state: if refused {
            ViewState::Refused
        } else {
            ViewState::Declared
        },
        ..view
    });
    checked.map(|_| ())
}

/// The stream a query reads as `name`: a view's (lowered at its first reader), else the
/// table's ([`Tables::read`]).
pub(super) fn read(
    name: &ObjectName,
    script: &Script<'_, '_>,
    tables: &mut Tables,
    spec: &mut Spec,
) -> Result<String, Diagnostic> {
    let Some(view) = tables.view(name).cloned() else {
        return tables.read(name);
    };
    match &view.state {
        ViewState::Lowered(stream) => Ok(stream.clone()),
        ViewState::Refused => Err(Diagnostic::error(
            pos(name.span().start),
            format!(
                "view `{}` cannot be read: its query is refused (at {}:{})",
                view.name, view.pos.line, view.pos.col
            ),
        )),
        ViewState::Declared => {
            let stream = lower(&view, script, tables, spec)?;
            tables.view_lowered(&view.name, stream.clone());
            Ok(stream)
        }
    }
}

/// Lowers `view`'s query into `spec`, records its stream's columns and returns its name.
fn lower(
    view: &View,
    script: &Script<'_, '_>,
    tables: &mut Tables,
    spec: &mut Spec,
) -> Result<String, Diagnostic> {
    let prefix = format!("view_{}", view.name);
    let lowered = lower_select(plain_select(&view.query)?, &prefix, script, tables, spec)?;
    tables.derive(Derived {
        stream: lowered.stream.clone(),
        columns: lowered.columns,
    });
    Ok(lowered.stream)
}
