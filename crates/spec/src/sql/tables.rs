//! `CREATE TABLE name [(columns)] WITH (connector = '…', …)`: tables as sources (readers,
//! generators) and sinks (writers, discard).

use anduin_types::{did_you_mean, Diagnostic, Pos};
use sqlparser::ast::Spanned;
use sqlparser::ast::{
    ColumnDef as SqlColumnDef, ColumnOption, CreateTable, CreateTableOptions, DataType, Expr,
    HiveDistributionStyle, ObjectName, SqlOption, Value as SqlValue,
};

use super::derived::{is_proctime, Attr, Derived};
use super::source_text::{is_word, pos, Source};
use super::views::{View, ViewState};
use crate::ast::{ColumnDef, OperatorDef, OutputDef, Param, Spec, TypeDef, Value};
use crate::Text;

/// The connectors a table may name: `file` (read by a reader, written by a writer), `kafka`
/// and `nats` (read and written by the operator of that name), the sources `generator` and
/// `nexmark`, and the sinks `discard` (or `blackhole`, Flink's name).
const CONNECTORS: [&str; 7] = [
    "file",
    "kafka",
    "nats",
    "generator",
    "nexmark",
    "discard",
    "blackhole",
];

/// A declared table.
#[derive(Debug, Clone)]
pub(crate) struct Table {
    pub name: String,
    pub pos: Pos,
    pub columns: Option<Vec<ColumnDef>>,
    pub connector: Text,
    pub options: Vec<Param>,
    /// Its column computed as `PROCTIME()` (Flink's `p_time AS PROCTIME()`), if any: not
    /// read from the connector, but added to every row as it is read (a map after the
    /// source), and a processing time for the windows over it.
    pub proctime: Option<String>,
    /// `PARTITIONED BY (…)`: its columns, and where the clause is.
    pub partitioned: Option<(Vec<String>, Pos)>,
    read: bool,
    written: bool,
}

impl Table {
    /// The stream its readers read: the table's own, or with a computed `PROCTIME()` column
    /// the map's that adds it.
    fn stream(&self) -> String {
        match &self.proctime {
            Some(_) => format!("{}_proctime", self.name),
            None => self.name.clone(),
        }
    }
}

/// The tables of a script.
#[derive(Debug, Default, Clone)]
pub(crate) struct Tables {
    tables: Vec<Table>,
    /// Streams made by subqueries in FROM (and by views).
    derived: Vec<Derived>,
    /// The views declared (`views.rs`).
    views: Vec<View>,
}

pub(crate) fn name_of(n: &ObjectName) -> String {
    n.0.iter()
        .filter_map(|p| p.as_ident().map(|i| i.value.clone()))
        .collect::<Vec<_>>()
        .join(".")
}

impl Tables {
    /// Records a `CREATE TABLE`.
    pub(crate) fn declare(
        &mut self,
        ct: &CreateTable,
        source: &Source<'_>,
    ) -> Result<(), Diagnostic> {
        let name = name_of(&ct.name);
        let at = pos(ct.name.span().start);
        self.check_free(&name, at)?;
        if ct.query.is_some() {
            return Err(Diagnostic::error(
                at,
                "CREATE TABLE … AS SELECT is not supported: create the table, then INSERT INTO it",
            ));
        }
        let partitioned = match &ct.hive_distribution {
            HiveDistributionStyle::PARTITIONED { columns } => Some((
                columns
                    .iter()
                    .map(|c| c.name.value.clone())
                    .collect::<Vec<_>>(),
                partitioned_at(columns, source),
            )),
            _ => None,
        };
        let mut proctime = None;
        let columns = if ct.columns.is_empty() {
            None
        } else {
            let mut cols = Vec::new();
            for c in &ct.columns {
                if let Some(expr) = computed(c) {
                    let at = pos(c.name.span.start);
                    if !is_proctime(expr) {
                        return Err(Diagnostic::error(
                            at,
                            format!("column `{}`: a computed column other than `AS PROCTIME()` is not supported: compute it in a view (CREATE VIEW v AS SELECT *, {expr} AS {} FROM {name})", c.name.value, c.name.value),
                        ));
                    }
                    if let Some(first) = &proctime {
                        return Err(Diagnostic::error(
                            at,
                            format!("column `{}`: table `{name}` has a processing time already (`{first}`)", c.name.value),
                        ));
                    }
                    proctime = Some(c.name.value.clone());
                    cols.push(ColumnDef {
                        name: Text::at(c.name.value.clone(), at),
                        ty: Text::at("timestamp", at),
                    });
                    continue;
                }
                let ty = column_type(&c.data_type).ok_or_else(|| {
                    Diagnostic::error(
                        pos(c.name.span.start),
                        format!(
                            "column `{}`: type {} is not supported: use BIGINT, DOUBLE, BOOLEAN, VARCHAR or TIMESTAMP",
                            c.name.value, c.data_type
                        ),
                    )
                })?;
                cols.push(ColumnDef {
                    name: Text::at(c.name.value.clone(), pos(c.name.span.start)),
                    ty: Text::at(ty, pos(c.name.span.start)),
                });
            }
            Some(cols)
        };
        let options = match &ct.table_options {
            CreateTableOptions::With(o) => o.as_slice(),
            CreateTableOptions::None => &[],
            _ => {
                return Err(Diagnostic::error(
                    at,
                    "table options go in `WITH (key = 'value', …)`",
                ));
            }
        };
        let mut connector = None;
        let mut params = Vec::new();
        for o in options {
            let SqlOption::KeyValue { key, value } = o else {
                return Err(Diagnostic::error(
                    at,
                    format!("expected `key = 'value'` in WITH (…), found `{o}`"),
                ));
            };
            let key_text = Text::at(key.value.to_lowercase(), pos(key.span.start));
            let value = option_value(value, source)?;
            if key_text.as_str() == "connector" {
                connector = Some(value.as_text());
            } else {
                params.push(Param {
                    name: key_text,
                    value,
                });
            }
        }
        // A bad clause is reported, and the table declared without it: its uses are not
        // reported again.
        let mut bad_partition = None;
        if let Some((cols, p_at)) = &partitioned {
            let declared: Vec<&str> = (columns.iter().flatten())
                .map(|c| c.name.as_str())
                .collect();
            if declared.is_empty() {
                bad_partition = Some(Diagnostic::error(
                    *p_at,
                    format!("PARTITIONED BY ({}): declare the table's columns, the partition columns among them", cols.join(", ")),
                ));
            } else if let Some(c) = cols.iter().find(|c| !declared.contains(&c.as_str())) {
                bad_partition = Some(Diagnostic::error(
                    *p_at,
                    format!(
                        "PARTITIONED BY: `{c}` is not a column of table `{name}` (columns: {})",
                        declared.join(", ")
                    ),
                ));
            }
        }
        let partitioned = partitioned.filter(|_| bad_partition.is_none());
        let connector = connector.ok_or_else(|| {
            Diagnostic::error(at, format!("table `{name}` needs a connector: WITH (connector = 'file', path = '…') (or 'generator', 'discard')"))
        })?;
        // A table with an unknown connector is still declared: its uses are not reported again.
        let unknown = (!CONNECTORS.contains(&connector.as_str())).then(|| {
            Diagnostic::error(
                connector.pos(),
                format!(
                    "unknown connector `{connector}`{}: the connectors are {}",
                    did_you_mean(connector.as_str(), CONNECTORS),
                    CONNECTORS.join(", ")
                ),
            )
        });
        self.tables.push(Table {
            name,
            pos: at,
            columns,
            connector,
            options: params,
            proctime,
            partitioned,
            read: false,
            written: false,
        });
        bad_partition.or(unknown).map_or(Ok(()), Err)
    }

    /// Refuses `name` for a new table or view (at `at`) when a table or view has it.
    pub(crate) fn check_free(&self, name: &str, at: Pos) -> Result<(), Diagnostic> {
        let table = self.tables.iter().find(|t| t.name == name).map(|t| t.pos);
        let view = self.views.iter().find(|v| v.name == name).map(|v| v.pos);
        let (what, first) = match (table, view) {
            (Some(p), _) => ("table", p),
            (None, Some(p)) => ("view", p),
            (None, None) => return Ok(()),
        };
        Err(Diagnostic::error(
            at,
            format!(
                "`{name}` is created twice (first as a {what} at {}:{})",
                first.line, first.col
            ),
        ))
    }

    /// Records a view (checked by `views.rs`).
    pub(crate) fn add_view(&mut self, view: View) {
        self.views.push(view);
    }

    /// The view called `name`, if one is.
    pub(crate) fn view(&self, name: &ObjectName) -> Option<&View> {
        let n = name_of(name);
        self.views.iter().find(|v| v.name == n)
    }

    /// View `name` was lowered to `stream`: its later readers read that.
    pub(crate) fn view_lowered(&mut self, name: &str, stream: String) {
        if let Some(v) = self.views.iter_mut().find(|v| v.name == name) {
            v.state = ViewState::Lowered(stream);
        }
    }

    fn find(&mut self, name: &ObjectName) -> Result<&mut Table, Diagnostic> {
        let n = name_of(name);
        let at = pos(name.span().start);
        let known: Vec<String> = self.tables.iter().map(|t| t.name.clone()).collect();
        self.tables.iter_mut().find(|t| t.name == n).ok_or_else(|| {
            Diagnostic::error(
                at,
                format!(
                    "unknown table `{n}`: create it with CREATE TABLE {n} (…) WITH (…){}",
                    if known.is_empty() {
                        String::new()
                    } else {
                        format!(" (tables: {})", known.join(", "))
                    }
                ),
            )
        })
    }

    /// A table read by a query: the name of its stream (the table's name).
    pub(crate) fn read(&mut self, name: &ObjectName) -> Result<String, Diagnostic> {
        let at = pos(name.span().start);
        let t = self.find(name)?;
        if let Some((cols, _)) = &t.partitioned {
            return Err(Diagnostic::error(
                at,
                format!(
                    "table `{}` is PARTITIONED BY ({}): it is written, as a directory per partition; reading it is not supported",
                    t.name,
                    cols.join(", ")
                ),
            ));
        }
        if t.columns.is_none() {
            return Err(Diagnostic::error(
                at,
                format!(
                    "table `{}` is read, so it needs its columns: CREATE TABLE {} (col TYPE, …)",
                    t.name, t.name
                ),
            ));
        }
        if t.written {
            return Err(Diagnostic::error(
                at,
                format!(
                    "table `{}` is both written and read: not supported yet",
                    t.name
                ),
            ));
        }
        t.read = true;
        Ok(t.stream())
    }

    /// The declared table whose readers read `stream`.
    fn table_of(&self, stream: &str) -> Option<&Table> {
        self.tables
            .iter()
            .find(|t| t.name == stream || (t.proctime.is_some() && t.stream() == stream))
    }

    /// Records the stream of a subquery.
    pub(crate) fn derive(&mut self, d: Derived) {
        self.derived.push(d);
    }

    /// The stream of a subquery, if `name` is one.
    pub(crate) fn derived(&self, name: &str) -> Option<&Derived> {
        self.derived.iter().find(|d| d.stream == name)
    }

    /// What column `column` of stream `name` is: a window bound, a time, or plain.
    pub(crate) fn attr(&self, name: &str, column: &str) -> Attr {
        if let Some(d) = self.derived(name) {
            return d.attr(column);
        }
        if (self.table_of(name)).is_some_and(|t| t.proctime.as_deref() == Some(column)) {
            return Attr::ProcTime;
        }
        if self.time_columns(name).iter().any(|c| c == column) {
            Attr::Time
        } else {
            Attr::Plain
        }
    }

    /// The column names of a declared table (empty if it declares none) or of a subquery.
    pub(crate) fn columns(&self, name: &str) -> Vec<String> {
        if let Some(d) = self.derived(name) {
            return d.columns.iter().map(|(c, _)| c.clone()).collect();
        }
        self.table_of(name)
            .and_then(|t| t.columns.as_ref())
            .map(|cols| cols.iter().map(|c| c.name.as_str().to_string()).collect())
            .unwrap_or_default()
    }

    /// The `event_time` option of a declared table, or the event time of a subquery.
    pub(crate) fn event_time(&self, name: &str) -> Option<String> {
        if let Some(d) = self.derived(name) {
            return d.event_time().map(str::to_string);
        }
        self.table_of(name)?
            .options
            .iter()
            .find(|o| o.name.as_str() == "event_time")
            .map(|o| o.value.as_text().as_str().to_string())
    }

    /// The columns of a declared table that can be its event time: its `event_time` option
    /// and its TIMESTAMP columns.
    pub(crate) fn time_columns(&self, name: &str) -> Vec<String> {
        if let Some(d) = self.derived(name) {
            let mut out: Vec<String> = d.event_time().map(str::to_string).into_iter().collect();
            for (c, a) in &d.columns {
                if a.is_time() && !out.contains(c) {
                    out.push(c.clone());
                }
            }
            return out;
        }
        let Some(t) = self.table_of(name) else {
            return Vec::new();
        };
        let mut out: Vec<String> = t
            .options
            .iter()
            .filter(|o| o.name.as_str() == "event_time")
            .map(|o| o.value.as_text().as_str().to_string())
            .collect();
        for c in t.columns.iter().flatten() {
            let computed = t.proctime.as_deref() == Some(c.name.as_str());
            if c.ty.as_str() == "timestamp"
                && !computed
                && !out.iter().any(|x| x == c.name.as_str())
            {
                out.push(c.name.as_str().to_string());
            }
        }
        out
    }

    /// The declared columns of table `name` (empty when it declares none or is unknown).
    pub(crate) fn declared(&self, name: &ObjectName) -> Vec<String> {
        self.columns(&name_of(name))
    }

    /// Whether declared table `name` is bounded, read once to its end: a `file` table, or a
    /// `generator` with a `count`; `None` for no declared table of that name.
    pub(crate) fn bounded(&self, name: &str) -> Option<bool> {
        let t = self.tables.iter().find(|t| t.name == name)?;
        Some(match t.connector.as_str() {
            "file" => true,
            "generator" => t.options.iter().any(|p| p.name.as_str() == "count"),
            _ => false,
        })
    }

    /// Takes the options named `keys` out of table `name`'s (none if there is no such table):
    /// options that are not the connector's.
    pub(crate) fn take_options(&mut self, name: &ObjectName, keys: &[&str]) -> Vec<Param> {
        let name = name_of(name);
        let Some(t) = self.tables.iter_mut().find(|t| t.name == name) else {
            return Vec::new();
        };
        let (taken, kept) = std::mem::take(&mut t.options)
            .into_iter()
            .partition(|p| keys.contains(&p.name.as_str()));
        t.options = kept;
        taken
    }

    /// A table written by an INSERT: its writer operator, reading `stream`.
    pub(crate) fn write(
        &mut self,
        name: &ObjectName,
        stream: &str,
        spec: &mut Spec,
    ) -> Result<Option<String>, Diagnostic> {
        let at = pos(name.span().start);
        if let Some(v) = self.view(name) {
            return Err(Diagnostic::error(
                at,
                format!(
                    "view `{}` cannot be written: INSERT INTO a table (the view is at {}:{})",
                    v.name, v.pos.line, v.pos.col
                ),
            ));
        }
        let t = self.find(name)?;
        if t.read {
            return Err(Diagnostic::error(
                at,
                format!(
                    "table `{}` is both read and written: not supported yet",
                    t.name
                ),
            ));
        }
        if t.written {
            return Err(Diagnostic::error(
                at,
                format!(
                    "table `{}` is written by two INSERTs: not supported yet; use two tables",
                    t.name
                ),
            ));
        }
        if let Some(p) = &t.proctime {
            return Err(Diagnostic::error(
                at,
                format!(
                    "table `{}` has a computed column `{p}`: it can be read, not written",
                    t.name
                ),
            ));
        }
        t.written = true;
        let kind = match t.connector.as_str() {
            "file" => "writer",
            "kafka" => "kafka",
            "nats" => "nats",
            "discard" | "blackhole" => "discard",
            // Reported where the table is declared.
            unknown if !CONNECTORS.contains(&unknown) => return Ok(None),
            other => {
                return Err(Diagnostic::error(
                    t.connector.pos(),
                    format!(
                    "connector '{other}' cannot be written to: use 'file', 'kafka', 'nats' or 'discard'"
                ),
                ))
            }
        };
        let mut params = t.options.clone();
        if let Some((cols, p_at)) = &t.partitioned {
            if kind != "writer" {
                return Err(Diagnostic::error(
                    *p_at,
                    format!(
                        "PARTITIONED BY: a '{}' table is not partitioned; a 'file' table is (a directory per partition)",
                        t.connector
                    ),
                ));
            }
            params.push(Param {
                name: Text::at("partition_by", *p_at),
                value: Value::String(Text::at(cols.join(", "), *p_at)),
            });
        }
        spec.operators.push(OperatorDef {
            name: Text::at(t.name.clone(), t.pos),
            kind: Text::at(kind, t.connector.pos()),
            params,
            inputs: vec![Text::at(stream, at)],
            outputs: vec![],
            control: None,
            pos: t.pos,
        });
        Ok(t.columns.as_ref().map(|_| t.name.clone()))
    }

    /// Adds the types of declared tables and the sources of the tables read, first.
    pub(crate) fn finish(&self, spec: &mut Spec) {
        let mut sources = Vec::new();
        for t in &self.tables {
            if let Some(cols) = &t.columns {
                if t.read || t.written {
                    // What the connector reads: not the computed column.
                    let read: Vec<ColumnDef> = (cols.iter())
                        .filter(|c| t.proctime.as_deref() != Some(c.name.as_str()))
                        .cloned()
                        .collect();
                    spec.types.push(TypeDef {
                        name: Text::at(t.name.clone(), t.pos),
                        columns: read,
                        pos: t.pos,
                    });
                }
            }
            if !t.read {
                continue;
            }
            let kind = match t.connector.as_str() {
                "file" => "reader",
                other => other,
            };
            sources.push(OperatorDef {
                name: Text::at(t.name.clone(), t.pos),
                kind: Text::at(kind, t.connector.pos()),
                params: t.options.clone(),
                inputs: vec![],
                outputs: vec![OutputDef {
                    name: Text::at(t.name.clone(), t.pos),
                    ty: Some(Text::at(t.name.clone(), t.pos)),
                }],
                control: None,
                pos: t.pos,
            });
            if let Some(p) = &t.proctime {
                let columns = format!("*, PROCTIME() AS {}", super::insert::quoted(p));
                sources.push(super::insert::operator(
                    t.stream(),
                    "map",
                    t.pos,
                    &t.name,
                    vec![("columns", Text::at(columns, t.pos))],
                ));
            }
        }
        spec.operators.splice(0..0, sources);
    }
}

/// The expression of a computed column (`name AS expr`, see `dialect.rs`), if `c` is one.
fn computed(c: &SqlColumnDef) -> Option<&Expr> {
    let DataType::Custom(name, args) = &c.data_type else {
        return None;
    };
    if !args.is_empty() || !name.to_string().eq_ignore_ascii_case("AS") {
        return None;
    }
    c.options.iter().find_map(|o| match &o.option {
        ColumnOption::Generated {
            generation_expr: Some(e),
            ..
        } => Some(e),
        _ => None,
    })
}

/// The anduin column type of a SQL type.
fn column_type(t: &DataType) -> Option<&'static str> {
    use DataType::*;
    Some(match t {
        Int(_) | Integer(_) | BigInt(_) | SmallInt(_) | TinyInt(_) | Int64 | Int32 => "int",
        Double(_) | DoublePrecision | Float(_) | Real | Float64 | Float32 => "double",
        Boolean | Bool => "bool",
        Varchar(_) | String(_) | Text | Char(_) | CharacterVarying(_) => "string",
        Timestamp(_, _) | Datetime(_) => "timestamp",
        _ => return None,
    })
}

/// An option's value: a string (with its position in the script), a number or a boolean.
fn option_value(e: &Expr, source: &Source<'_>) -> Result<Value, Diagnostic> {
    let at = pos(e.span().start);
    let Expr::Value(v) = e else {
        return Err(Diagnostic::error(
            at,
            format!("expected a quoted value, found `{e}`"),
        ));
    };
    Ok(match &v.value {
        SqlValue::SingleQuotedString(s) | SqlValue::DoubleQuotedString(s) => {
            // The text between the quotes, with positions, unless escapes changed it.
            let inner = source.text(e.span()).and_then(|t| {
                let chars: Vec<char> = t.as_str().chars().collect();
                (chars.len() >= 2).then(|| t.sub(1, chars.len() - 1))
            });
            match inner {
                Some(t) if t.as_str() == s => Value::String(t),
                _ => Value::String(Text::at(s.clone(), at.right(1))),
            }
        }
        SqlValue::Number(n, _) => match n.parse::<i64>() {
            Ok(i) => Value::Int(i, at),
            Err(_) => Value::Float(n.parse().unwrap_or(f64::NAN), at),
        },
        SqlValue::Boolean(b) => Value::Bool(*b, at),
        other => {
            return Err(Diagnostic::error(
                at,
                format!("expected a quoted value, found `{other}`"),
            ))
        }
    })
}

/// Where a `PARTITIONED BY (…)` clause is: its `PARTITIONED`.
fn partitioned_at(columns: &[SqlColumnDef], source: &Source<'_>) -> Pos {
    let first = columns.first().map(|c| c.name.span.start);
    first
        .and_then(|first| {
            (source.tokens().iter())
                .take_while(|t| t.tok.span.start < first)
                .filter(|t| is_word(&t.tok, "PARTITIONED"))
                .last()
                .map(|t| pos(t.tok.span.start))
        })
        .or(first.map(pos))
        .unwrap_or(Pos::new(1, 1))
}
