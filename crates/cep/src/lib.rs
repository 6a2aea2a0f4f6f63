//! anduin's complex event processing: the `pattern` operator, written against
//! `anduin-operator-api`. It finds sequences of rows that match a row pattern
//! (`A B+ C D+`, with `*`, `+`, `?`, `{n,m}`, reluctant `+?`, groups and `|`), per partition,
//! in event-time order, with SQL MATCH_RECOGNIZE's semantics: every variable's DEFINE
//! condition may look at the row, at earlier rows of the match (`A.x`, `FIRST`, `LAST`,
//! running aggregates of expressions) and at earlier rows of the partition (`PREV`), with
//! DataFusion's scalar functions for the rest of the expression language (`df.rs`);
//! the most preferred match from a start row wins; after a match, the skip strategy says
//! where the next one may start. `within` bounds a match's duration and the state; partial
//! matches that run out of time can go to a second output.
//!
//! Rows are buffered until the watermark passes them and then fed in event-time order (ties
//! in the order of `order_by`'s tie-breakers, then of arrival, `order.rs`); rows behind the
//! watermark are late: counted and dropped.

mod calls;
mod cells;
mod change;
mod df;
mod equivalence;
mod eval;
mod expr;
mod key;
mod label_classes;
mod matcher;
mod modifiers;
mod navigation;
mod order;
mod output;
mod program;
mod running;
mod spread;
mod store;
mod syntax;
#[cfg(test)]
mod test_rng;
mod value;

use std::sync::Arc;

use anduin_graph::{Arity, Binding, OperatorSignature, ParamKind, ParamSpec};
use anduin_spec::OperatorDef;
use anduin_state::BackendKind;
use anduin_types::{parse_duration_ms, ColumnType, Diagnostics};
use arrow::datatypes::{Field, Schema, SchemaRef};

use anduin_operator_api::Bound;
use anduin_operator_api::Params;
use anduin_operator_api::{ExprAt, OnError};
use expr::{Scope, Sel, Typed, E};
use matcher::{Pattern, Skip};
pub(crate) use running::PatternOp;

/// The `pattern` operator type.
pub const SIGNATURE: OperatorSignature = OperatorSignature {
    kind: "pattern",
    doc: "finds sequences of rows matching a row pattern per partition (CEP, as SQL MATCH_RECOGNIZE)",
    inputs: Arity::Exactly(1),
    outputs: Arity::AtLeast(1),
    stateful: true,
    params: &[
        ParamSpec { name: "partition_by", required: false, kind: ParamKind::Text, default: None, doc: "columns whose rows are matched separately, e.g. \"sensor\" (without it: one partition)" },
        ParamSpec { name: "order_by", required: true, kind: ParamKind::Text, default: None, doc: "the event-time column (timestamp, or int of epoch milliseconds); rows are matched in its order; tie-breakers may follow: \"ts, seq, name DESC NULLS LAST\" (NULLs last ascending, first descending, unless NULLS FIRST / NULLS LAST says)" },
        ParamSpec { name: "pattern", required: true, kind: ParamKind::Text, default: None, doc: "the row pattern, e.g. \"A B+ C D+?\": variables, ( ), |, and * + ? {n} {n,} {n,m}, reluctant with a trailing ?; adjustable while running" },
        ParamSpec { name: "define", required: false, kind: ParamKind::Repeated, default: None, doc: "\"B AS B.value < PREV(B.value)\": a variable's condition (several, comma-separated or one per `param define`); a variable without one matches any row; adjustable while running (a new value replaces every condition)" },
        ParamSpec { name: "subset", required: false, kind: ParamKind::Text, default: None, doc: "union variables: \"U = (A, B), V = (C, D)\"; U.x, LAST(U.x), COUNT(U.*), CLASSIFIER(U) and skip to first/last U range over the rows mapped to any of its variables" },
        ParamSpec { name: "measures", required: false, kind: ParamKind::Text, default: None, doc: "output columns computed from a match: \"A.ts AS start, LAST(D.ts) AS end, COUNT(B.*) AS drops\"" },
        ParamSpec { name: "rows_per_match", required: false, kind: ParamKind::OneOf(&["one", "all", "all show empty", "all omit empty", "all with unmatched"]), default: Some("one"), doc: "one: a row per match (partition columns, then measures); all (= all show empty): every row of the match (its columns, then running measures), an empty match as one row of nulls; all omit empty: no row for an empty match; all with unmatched: also every row in no match, with null measures" },
        ParamSpec { name: "after_match", required: false, kind: ParamKind::Text, default: Some("skip past last row"), doc: "where the next match may start: \"skip past last row\", \"skip to next row\", \"skip to first V\", \"skip to last V\" (\"skip to V\" = last)" },
        ParamSpec { name: "within", required: false, kind: ParamKind::Duration, default: None, doc: "a row belongs to a match only while row time - first row time < within; bounds the state; adjustable while running" },
        ParamSpec { name: "timeout_output", required: false, kind: ParamKind::Text, default: None, doc: "the name of an output of this operator that receives partial matches the `within` bound ended (same columns as the matches)" },
        ParamSpec { name: "parallelism", required: false, kind: ParamKind::Int, default: Some("1"), doc: "how many instances run the pattern, each owning a share of the partitions (default: the query's --parallelism)" },
        ParamSpec { name: "state_backend", required: false, kind: ParamKind::OneOf(&["heap", "lsm"]), default: Some("heap"), doc: "where partitions are kept between checkpoints: heap (memory) or lsm (an LSM tree on local disk, for state larger than memory; default: the query's --state-backend)" },
        ParamSpec { name: "overflow_instances", required: false, kind: ParamKind::Int, default: Some("1"), doc: "2 to 64: when an instance's partial matches outgrow `max_partial_matches`, the oldest spread over up to this many instances that all see the input; the first starts matches, the others only extend the ones handed to them (paper §4.4). Needs matches independent of each other: after_match \"skip to next row\", no \"all with unmatched\", no MATCH_NUMBER() (refused otherwise). The copies hand over at checkpoint barriers and after batches between them; with `parallelism = N` each copy runs N instances, instance i of each handing to instance i of the next; their input must come from one instance; on a cluster they may run on several workers" },
        ParamSpec { name: "stage_age", required: false, kind: ParamKind::Duration, default: None, doc: "with `overflow_instances`: hand partial matches on by age instead of by number (the pipelined form P+ = P | (P P+), paper §4.4): copy k keeps the attempts that started less than (k + 1) × stage_age before its event time and hands older ones to the next copy, the last keeps the rest; not with `max_partial_matches`" },
        ParamSpec { name: "max_partial_matches", required: false, kind: ParamKind::Int, default: Some("1000000"), doc: "with `overflow_instances`: how many partial matches (match attempts from one start row, live or waiting to be reported) one instance keeps before it hands the oldest to another; the `partial_matches` metric counts them" },
        ParamSpec { name: "cache_partitions", required: false, kind: ParamKind::Int, default: Some("4096"), doc: "lsm: how many partitions stay in memory; idle ones beyond are kept only in the LSM tree" },
        anduin_operator_api::ON_ERROR,
    ],
};

/// What a running pattern operator is built from.
#[derive(Debug)]
pub(crate) struct Setup {
    pub name: String,
    /// The definition it was compiled from (with the changes made while running), and the
    /// name of its input stream: what a change compiles again.
    pub def: OperatorDef,
    pub stream: String,
    pub pattern: Pattern,
    /// The input's columns and their types.
    pub input: SchemaRef,
    pub types: Vec<ColumnType>,
    /// The input columns a row's cells hold, in order: all of them when a row may be shown
    /// whole (ALL ROWS PER MATCH; the dead letters of a condition or measure that can fail),
    /// else only those the order, the partition and the expressions read (cep_q0 keeps 4 of
    /// a bid's 7: the rows waiting for the watermark are most of the memory). Every cell
    /// index below (and in the compiled expressions) counts among these. In input order,
    /// except that the cells of [`Setup::shed`] come last.
    pub cells_of: Vec<usize>,
    /// The cells (among a row's) that only a dead letter shows, where that dead letter can
    /// show a row only while it is taken or when a match it ends is reported (see
    /// `compile`); empty otherwise. They are the last cells of a row, and a row taken
    /// without ending a match never holds them: cep_q3 keeps every column of a bid for its
    /// dead letters (its conditions can overflow), but its rows in partial matches, 5 s each,
    /// hold 4 cells, not 7 with the `channel`, `url` and `extra` strings (a dead letter of a
    /// row being taken shows it from its batch, see `running.rs`).
    pub shed: Vec<usize>,
    /// The partition columns: among the input's (keys), among a row's cells (output).
    pub partition: Vec<usize>,
    pub partition_cells: Vec<usize>,
    /// The event time: among the input's columns, among a row's cells.
    pub order: usize,
    pub order_cell: usize,
    /// The columns after the event time in `order_by` (among a row's cells), which order
    /// rows of one event time (descending: `true`); rows equal in them keep their arrival
    /// order.
    pub ties: Vec<order::Tie>,
    pub measures: Vec<(String, E)>,
    /// The DEFINE conditions and then the measures, as a row they fail on names them: the
    /// condition of variable `v` is `sites[define_site[v]]`, measure `m` is
    /// `sites[measure_sites + m]`.
    pub sites: Vec<ExprAt>,
    pub define_site: Vec<Option<usize>>,
    pub measure_sites: usize,
    pub on_error: Option<OnError>,
    pub all_rows: bool,
    /// ALL ROWS PER MATCH OMIT EMPTY MATCHES: an empty match outputs no row.
    pub omit_empty: bool,
    /// The result's columns: partition columns (one row per match) or every input column
    /// (all rows), then the measures.
    pub schema: SchemaRef,
    pub out_types: Vec<cells::OutType>,
    /// The output port of timed-out partial matches.
    pub timeout_port: Option<usize>,
    /// Where partitions are kept, and (LSM) how many stay in memory.
    pub backend: BackendKind,
    pub cache: usize,
    /// What `overflow_instances` and `max_partial_matches` ask for (`None`: no spreading).
    pub overflow: Option<spread::Overflow>,
    /// Warnings for `anduin check` (spreading asked for is not run yet).
    pub warnings: Diagnostics,
}

impl Setup {
    /// How many cells a row keeps once it is taken without ending a match: the first ones,
    /// those something reads (all of them without [`Setup::shed`]).
    pub(crate) fn kept(&self) -> usize {
        self.cells_of.len() - self.shed.len()
    }

    /// A row of cells (those of [`Setup::cells_of`], in its order; missing ones NULL) as a
    /// dead letter shows it: a JSON object of the input's columns.
    pub(crate) fn row_json(&self, cells: &[value::Value]) -> serde_json::Value {
        let mut ordered = vec![value::Value::Null; self.types.len()];
        for (cell, c) in cells.iter().zip(&self.cells_of) {
            if let Some(o) = ordered.get_mut(*c) {
                *o = cell.clone();
            }
        }
        cells::row_json(&self.input, &self.types, &ordered)
    }
}

/// The farthest `PREV` (and `PREV` inside `FIRST` / `LAST`, `NEXT`'s reference) may go back:
/// a partition keeps that many rows before a match's first.
const MAX_PREV: usize = 100_000;

/// The most threads (partial matches in flight) one start row may have.
const MAX_THREADS: usize = 100_000;

/// The params a running pattern can change ([`Operator::set_param`]): at the switch, every
/// row that arrived before it is matched under the old definition and the partial matches
/// still open are dropped (the matches they held back are emitted); from the switch on, every
/// partition starts afresh under the new one (see `change.rs`).
///
/// [`Operator::set_param`]: anduin_operator_api::Operator::set_param
pub const ADJUSTABLE: &[&str] = &["pattern", "define", "within"];

/// Checks this operator's params and inputs as the query declares them, and binds it to a
/// factory of instances (called by the registry's catalog).
pub fn bind(op: &OperatorDef, inputs: &[(&str, SchemaRef)]) -> Result<Binding<Bound>, Diagnostics> {
    let setup = Arc::new(compile(op, inputs)?);
    let warnings = setup.warnings.clone();
    let outputs = vec![Arc::clone(&setup.schema); 1 + usize::from(setup.timeout_port.is_some())];
    let partition_by = vec![if setup.partition.is_empty() {
        None
    } else {
        Some(setup.partition.clone())
    }];
    Ok(Binding {
        bound: Bound::Operator(Arc::new(move |ctx| {
            Ok(Box::new(PatternOp::new(Arc::clone(&setup), ctx)?))
        })),
        outputs,
        warnings,
        partition_by,
    })
}

/// The first function the pattern's conditions (`define`, DEFINE in SQL) or measures
/// (`measures`, MEASURES) call whose value changes from call to call (`random()`), and where
/// (see [`anduin_graph::Catalog::volatile_call`]); `None` if none, or if the pattern does not
/// compile (the binding says why).
pub fn volatile_call(
    op: &OperatorDef,
    inputs: &[(&str, SchemaRef)],
) -> Option<anduin_graph::VolatileCall> {
    let setup = compile(op, inputs).ok()?;
    let defines = (setup.pattern.defines.iter().zip(&setup.define_site))
        .filter_map(|(e, site)| Some((e.as_ref()?, (*site)?)));
    let measures =
        (setup.measures.iter().enumerate()).map(|(m, (_, e))| (e, setup.measure_sites + m));
    defines.chain(measures).find_map(|(e, site)| {
        let mut function = None;
        e.walk(&mut |x| {
            if let (None, E::Df(df, _)) = (&function, x) {
                function = df.volatile_function();
            }
        });
        Some(anduin_graph::VolatileCall {
            function: function?,
            pos: setup.sites.get(site)?.pos,
        })
    })
}

/// The program of pattern operator `op` over `inputs` (one: its stream's name and columns),
/// checked as `anduin check` checks it. A running pattern compiles its definition again,
/// with a param changed, to switch to it.
pub(crate) fn compile(
    op: &OperatorDef,
    inputs: &[(&str, SchemaRef)],
) -> Result<Setup, Diagnostics> {
    let p = Params::new(op);
    let [(stream, input)] = inputs else {
        return Err(p
            .error("pattern", "a pattern takes exactly one input")
            .into());
    };
    let mut columns = Vec::new();
    for f in input.fields() {
        let t = ColumnType::from_arrow(f.data_type()).ok_or_else(|| {
            Diagnostics::from(p.error(
                "pattern",
                format!(
                    "column `{}` has the unsupported type {}",
                    f.name(),
                    f.data_type()
                ),
            ))
        })?;
        columns.push((f.name().clone(), t));
    }
    let column = |param: &str, name: &str| -> Result<usize, Diagnostics> {
        columns.iter().position(|(n, _)| n == name).ok_or_else(|| {
            let names: Vec<&str> = columns.iter().map(|(n, _)| n.as_str()).collect();
            p.error(
                param,
                format!(
                    "unknown column `{name}`: the input has {}",
                    names.join(", ")
                ),
            )
            .into()
        })
    };
    let partition: Vec<usize> = match p.text("partition_by") {
        None => Vec::new(),
        Some(t) => t
            .as_str()
            .split(',')
            .map(|c| column("partition_by", c.trim()))
            .collect::<Result<_, _>>()?,
    };
    let order_text = p.required("order_by");
    let mut order_items = order_text.as_str().split(',');
    let order = column("order_by", order_items.next().unwrap_or_default().trim())?;
    let mut ties = Vec::new();
    for item in order_items {
        let (name, desc, nulls_first) =
            order::parse_tie(item).map_err(|e| Diagnostics::from(p.error("order_by", e)))?;
        ties.push(order::Tie {
            col: column("order_by", name)?,
            desc,
            nulls_first,
        });
    }
    if !matches!(columns[order].1, ColumnType::Timestamp | ColumnType::Int) {
        return Err(p
            .error(
                "order_by",
                "must be the event-time column: a timestamp, or an int of epoch milliseconds",
            )
            .into());
    }
    let pattern_text = p.required("pattern");
    let parsed = syntax::parse(pattern_text.as_str()).map_err(|e| {
        Diagnostics::from(anduin_types::Diagnostic::error(
            pattern_text.pos_at_line_col(1, e.col as u64),
            format!(
                "{} (in param `pattern` of operator \"{}\")",
                e.message, op.name
            ),
        ))
    })?;
    let (prog, excluded) = program::compile_marked(&parsed.pat)
        .map_err(|e| Diagnostics::from(p.error("pattern", too_big(e, pattern_text.as_str()))))?;
    let subsets = match p.text("subset") {
        None => Vec::new(),
        Some(t) => subsets(t.as_str(), &parsed.vars)
            .map_err(|e| Diagnostics::from(p.error("subset", e)))?,
    };
    let scope = Scope {
        subsets: &subsets,
        ..Scope::new(&columns, &parsed.vars)
    };
    let mut defines: Vec<Option<E>> = vec![None; parsed.vars.len()];
    let mut sites: Vec<ExprAt> = Vec::new();
    let mut define_site: Vec<Option<usize>> = vec![None; parsed.vars.len()];
    for param in op.params_named("define") {
        let text = param.value.as_text();
        if text.as_str().trim().is_empty() {
            continue;
        }
        let list = expr::compile_defines(text.as_str(), &scope)
            .map_err(|e| p.expr_error("define", &text, e))?;
        for (v, Typed { e, .. }, site) in list {
            if defines[v].is_some() {
                return Err(p
                    .error("define", format!("`{}` is defined twice", parsed.vars[v]))
                    .into());
            }
            defines[v] = Some(e);
            define_site[v] = Some(sites.len());
            sites.push(ExprAt::new(
                format!("condition of `{}`", parsed.vars[v]),
                &text,
                &site,
            ));
        }
    }
    let measure_sites = sites.len();
    let measures: Vec<(String, Typed)> = match p.text("measures") {
        None => Vec::new(),
        Some(text) => expr::compile_measures(text.as_str(), &scope)
            .map_err(|e| p.expr_error("measures", &text, e))?
            .into_iter()
            .map(|(name, t, site)| {
                sites.push(ExprAt::new(format!("measure `{name}`"), &text, &site));
                (name, t)
            })
            .collect(),
    };
    let rows_per_match = p.str_or("rows_per_match", "one");
    let all_rows = rows_per_match.starts_with("all");
    let omit_empty = rows_per_match == "all omit empty";
    let unmatched = rows_per_match == "all with unmatched";
    if unmatched && excluded.contains(&true) {
        return Err(p
            .error(
                "rows_per_match",
                "a pattern with an exclusion `{- … -}` cannot show unmatched rows (the standard forbids it): use \"all\"",
            )
            .into());
    }
    let skip = skip(&p, &parsed.vars, &subsets)?;
    let within = match p.text("within") {
        None => None,
        Some(t) => Some(
            parse_duration_ms(t.as_str())
                .filter(|ms| *ms > 0)
                .and_then(|ms| i64::try_from(ms).ok())
                .ok_or_else(|| {
                    Diagnostics::from(
                        p.error("within", "must be a positive duration, e.g. \"10s\""),
                    )
                })?,
        ),
    };
    let mut fields: Vec<Field> = Vec::new();
    let mut out_types = Vec::new();
    let shown: Vec<usize> = if all_rows {
        (0..columns.len()).collect()
    } else {
        partition.clone()
    };
    for c in shown {
        fields.push(input.field(c).as_ref().clone().with_nullable(true));
        out_types.push(cells::OutType::Cell(columns[c].1));
    }
    for (name, t) in &measures {
        if fields.iter().any(|f| f.name() == name) {
            return Err(p
                .error(
                    "measures",
                    format!("measure `{name}` has the name of an output column of the input: name it otherwise with AS"),
                )
                .into());
        }
        let item = t.ty.unwrap_or(ColumnType::Int);
        let ty = if t.e.is_list() {
            cells::OutType::List(item)
        } else {
            cells::OutType::Cell(item)
        };
        fields.push(Field::new(name, ty.arrow_type(), true));
        out_types.push(ty);
    }
    let schema: SchemaRef = Arc::new(Schema::new(fields));
    let timeout_port = match p.text("timeout_output") {
        None => None,
        Some(name) => match op.outputs.iter().position(|o| o.name.as_str() == name.as_str()) {
            Some(0) | None => {
                return Err(p
                    .error("timeout_output", format!("name one of this operator's outputs other than the first (the matches), e.g. add `output name = \"{name}\"`"))
                    .into())
            }
            Some(i) => Some(i),
        },
    };
    let expected_outputs = 1 + usize::from(timeout_port.is_some());
    if op.outputs.len() != expected_outputs {
        return Err(p
            .error(
                "timeout_output",
                format!("a pattern has one output (its matches), and a second one only for `timeout_output`; found {}", op.outputs.len()),
            )
            .into());
    }
    if let Some(n) = p.int("parallelism") {
        if n < 1 {
            return Err(p.error("parallelism", "must be at least 1").into());
        }
        if n > 1 && partition.is_empty() {
            return Err(p
                .error("parallelism", "a pattern without `partition_by` sees every row in one partition and cannot run in parallel: give it partition_by, or parallelism 1")
                .into());
        }
    }
    let whole =
        all_rows || matcher::fallible(&defines) || measures.iter().any(|(_, t)| t.e.can_fail());
    let mut defines = defines;
    let mut measures = measures;
    // The columns something reads: the order, the tie-breakers, the partition, the
    // expressions.
    let mut read = vec![false; columns.len()];
    read[order] = true;
    for t in &ties {
        read[t.col] = true;
    }
    for c in &partition {
        read[*c] = true;
    }
    for e in defines
        .iter()
        .flatten()
        .chain(measures.iter().map(|(_, t)| &t.e))
    {
        read_columns(e, &mut read);
    }
    let ends = prog.contains(&program::Inst::End);
    // A row is shown whole only by a dead letter of its own condition (while it is pushed)
    // or of a measure of a match it ends, unless a match may end at the end of the input
    // (`$`), a partial match timed out is output, every row is, or copies spread partial
    // matches (and replay rows): then a row taken without ending a match holds only the
    // columns something reads (see `Setup::shed`). (`overflow_instances` above 1 spreads, or
    // is refused below.)
    let sheds = whole
        && !all_rows
        && !unmatched
        && !ends
        && timeout_port.is_none()
        && p.int("overflow_instances").is_none_or(|n| n <= 1);
    let kept: Vec<bool> = read.iter().map(|r| whole || *r).collect();
    // A row's cells: the columns kept, renumbered in order (the identity when all are); where
    // rows drop the columns only dead letters show, those come last, so that a row without
    // them is the beginning of one with them.
    let cells_of: Vec<usize> = if sheds {
        let (unread, read): (Vec<usize>, Vec<usize>) = (0..columns.len()).partition(|c| !read[*c]);
        read.into_iter().chain(unread).collect()
    } else {
        (0..columns.len()).filter(|c| kept[*c]).collect()
    };
    let mut slot = vec![usize::MAX; columns.len()];
    for (i, c) in cells_of.iter().enumerate() {
        slot[*c] = i;
    }
    for e in defines
        .iter_mut()
        .flatten()
        .chain(measures.iter_mut().map(|(_, t)| &mut t.e))
    {
        e.renumber_columns(&slot);
    }
    for t in &mut ties {
        t.col = slot[t.col];
    }
    let partition_cells: Vec<usize> = partition.iter().map(|c| slot[*c]).collect();
    let order_cell = slot[order];
    let mut max_back = 0;
    let sources = (defines.iter().flatten().map(|e| ("define", e)))
        .chain(measures.iter().map(|(_, t)| ("measures", &t.e)));
    for (param, e) in sources {
        let back = deepest_prev(e);
        // Every row of a partition is kept while a PREV may still reach it from a match's
        // first row: an offset beyond the limit would keep all of them.
        if back > MAX_PREV {
            return Err(p
                .error(
                    param,
                    format!("PREV goes back {back} rows, more than the limit of {MAX_PREV}: a partition keeps that many rows before every match's first"),
                )
                .into());
        }
        max_back = max_back.max(back);
    }
    let anchored = prog.contains(&program::Inst::Start);
    let pattern = Pattern {
        classes: label_classes::label_classes(&prog),
        prog,
        fallible: matcher::fallible(&defines),
        needs: equivalence::Needs::of(&defines),
        running: matcher::Running::of(&defines),
        defines,
        vars: parsed.vars.iter().map(|v| Arc::from(v.as_str())).collect(),
        within,
        skip,
        max_back,
        max_threads: MAX_THREADS,
        anchored,
        ends,
        excluded,
        unmatched,
        timed_out_rows: timeout_port.is_some(),
    };
    let warnings = Diagnostics::default();
    let overflow = spread::overflow(&p, &pattern, measures.iter().map(|(_, t)| &t.e))?;
    debug_assert!(
        !sheds || overflow.is_none(),
        "a pattern that spreads keeps rows whole"
    );
    let shed: Vec<usize> = if sheds {
        (0..columns.len())
            .filter(|c| !read[*c])
            .map(|c| slot[c])
            .collect()
    } else {
        Vec::new()
    };
    Ok(Setup {
        name: op.name.to_string(),
        def: op.clone(),
        stream: stream.to_string(),
        pattern,
        input: Arc::clone(input),
        types: columns.iter().map(|(_, t)| *t).collect(),
        cells_of,
        shed,
        partition,
        partition_cells,
        order,
        order_cell,
        ties,
        measures: measures.into_iter().map(|(n, t)| (n, t.e)).collect(),
        sites,
        define_site,
        measure_sites,
        on_error: OnError::param(&p),
        all_rows,
        omit_empty,
        schema: Arc::clone(&schema),
        out_types,
        timeout_port,
        backend: p.state_backend(),
        cache: match p.int("cache_partitions") {
            Some(n) if n < 1 => {
                return Err(p.error("cache_partitions", "must be at least 1").into())
            }
            Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
            None => 4096,
        },
        overflow,
        warnings,
    })
}

/// `after_match`: "skip past last row", "skip to next row", "skip to first V", "skip to last
/// V", "skip to V".
fn skip(p: &Params<'_>, vars: &[String], subsets: &[(String, u64)]) -> Result<Skip, Diagnostics> {
    let Some(text) = p.text("after_match") else {
        return Ok(Skip::PastLastRow);
    };
    let words: Vec<&str> = text.as_str().split_whitespace().collect();
    let lower: Vec<String> = words.iter().map(|w| w.to_lowercase()).collect();
    let lower: Vec<&str> = lower.iter().map(String::as_str).collect();
    let var = |written: &str| -> Result<Sel, Diagnostics> {
        // As in the pattern: unquoted, case-insensitive; double-quoted, as written.
        let name = match written.strip_prefix('"').and_then(|w| w.strip_suffix('"')) {
            Some(quoted) if !quoted.is_empty() => quoted.replace("\"\"", "\""),
            _ => syntax::unquoted(written),
        };
        if let Some((_, members)) = subsets.iter().find(|(n, _)| *n == name) {
            return Ok(Sel::Union(*members));
        }
        vars.iter()
            .position(|v| *v == name)
            .map(Sel::One)
            .ok_or_else(|| {
                p.error(
                    "after_match",
                    format!(
                        "`{name}` is not a variable of the pattern, which has {}",
                        vars.join(", ")
                    ),
                )
                .into()
            })
    };
    match lower.as_slice() {
        ["skip", "past", "last", "row"] => Ok(Skip::PastLastRow),
        ["skip", "to", "next", "row"] => Ok(Skip::ToNextRow),
        ["skip", "to", "first", _] => Ok(Skip::ToFirst(var(words[3])?)),
        ["skip", "to", "last", _] => Ok(Skip::ToLast(var(words[3])?)),
        ["skip", "to", _] => Ok(Skip::ToLast(var(words[2])?)),
        _ => Err(p
            .error(
                "after_match",
                format!("expected \"skip past last row\", \"skip to next row\", \"skip to first V\" or \"skip to last V\", found \"{text}\""),
            )
            .into()),
    }
}

/// `subset`: `U = (A, B), V = (C, D)`, each a union variable (named as a pattern variable:
/// unquoted, case-insensitive) and a mask of its members among `vars`.
fn subsets(text: &str, vars: &[String]) -> Result<Vec<(String, u64)>, String> {
    fn name(word: &str) -> Result<String, String> {
        let w = word.trim();
        match w.strip_prefix('"').and_then(|q| q.strip_suffix('"')) {
            Some(q) if !q.is_empty() => Ok(q.replace("\"\"", "\"")),
            _ if !w.is_empty() && w.chars().all(|c| c.is_alphanumeric() || c == '_') => {
                Ok(syntax::unquoted(w))
            }
            _ => Err(format!("`{w}` is not a variable name")),
        }
    }
    let mut out: Vec<(String, u64)> = Vec::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        let (head, tail) = rest
            .split_once('=')
            .ok_or_else(|| format!("expected `U = (A, B)`, found \"{rest}\""))?;
        let union = name(head)?;
        let tail = tail.trim_start();
        let (inside, after) = tail
            .strip_prefix('(')
            .and_then(|t| t.split_once(')'))
            .ok_or_else(|| {
                format!("expected the variables of `{union}` in parentheses: `{union} = (A, B)`")
            })?;
        if vars.contains(&union) {
            return Err(format!(
                "`{union}` is a variable of the pattern: name the SUBSET otherwise"
            ));
        }
        if out.iter().any(|(n, _)| *n == union) {
            return Err(format!("`{union}` is defined twice"));
        }
        if inside.trim().is_empty() {
            return Err(format!(
                "`{union} = ()` names no variable: list the pattern's variables it stands for, such as `{union} = (A, B)` (the pattern has {})",
                vars.join(", ")
            ));
        }
        let mut mask = 0u64;
        for member in inside.split(',') {
            let m = name(member)?;
            let v = vars.iter().position(|v| *v == m).ok_or_else(|| {
                format!(
                    "`{m}` in SUBSET `{union}` is not a variable of the pattern, which has {}",
                    vars.join(", ")
                )
            })?;
            if v >= 64 {
                return Err(format!("`{m}` is the pattern's variable number {}: a SUBSET may hold only the first 64", v + 1));
            }
            mask |= 1 << v;
        }
        out.push((union, mask));
        rest = after.trim_start();
        rest = rest.strip_prefix(',').unwrap_or(rest).trim_start();
    }
    Ok(out)
}

/// Why a pattern does not compile, naming what made it too big: bounded repetitions
/// (`{n}`, `{n,m}`, `?` inside them) are copied, `PERMUTE` is the alternation of every order
/// of its parts, each copy with its own quantifiers.
fn too_big(e: program::TooBig, text: &str) -> String {
    let permute = text.to_ascii_uppercase().contains("PERMUTE");
    let how = if permute {
        "PERMUTE is expanded into every order of its parts (n parts: n! orders) and each `{n}` / `{n,m}` copies its part n to m times, every copy with its own quantifiers"
    } else {
        "each `{n}` / `{n,m}` copies its part n to m times, every copy with its own quantifiers"
    };
    match e {
        program::TooBig::Steps => format!(
            "the pattern is too big: {how}, and it comes to more than {} steps, the limit: use smaller bounds{}",
            program::MAX_PROGRAM,
            if permute { " or fewer parts in PERMUTE" } else { "" }
        ),
        program::TooBig::Loops(n) => format!(
            "the pattern is too big: {how}, and it comes to {n} unbounded quantifiers (`*`, `+`, `{{n,}}`), more than the limit of {}: put the unbounded quantifiers outside {}",
            program::MAX_LOOPS,
            if permute { "PERMUTE and the repeated groups, or use fewer parts" } else { "the repeated group (`(A*){n}` matches what `A*` does)" }
        ),
    }
}

/// The largest PREV offset in `e`.
fn deepest_prev(e: &E) -> usize {
    let mut deepest = 0;
    e.walk(&mut |e| {
        if let E::Col(r, _) | E::Classifier(r) | E::Next { r, .. } = e {
            deepest = deepest.max(r.back);
        }
    });
    deepest
}

/// Marks the columns `e` reads in `kept`.
fn read_columns(e: &E, kept: &mut [bool]) {
    e.walk(&mut |e| {
        if let E::Col(_, c) | E::Next { col: Some(c), .. } = e {
            if let Some(k) = kept.get_mut(*c) {
                *k = true;
            }
        }
    });
}

#[cfg(test)]
mod too_big_tests {
    use super::{program, syntax, too_big};

    fn refusal(pattern: &str) -> String {
        let parsed = syntax::parse(pattern).expect("parses");
        let e = program::compile_marked(&parsed.pat).expect_err("too big");
        too_big(e, pattern)
    }

    #[test]
    fn a_prev_offset_beyond_the_limit_is_refused_naming_it() {
        // Issue 18 (M4): PREV(v, 1000000000000) kept every row of the partition.
        let op = |define: &str| {
            let src = format!("operator name = \"p\", type = \"pattern\" {{\n  input name = \"s\"\n  param order_by = \"ts\"\n  param pattern = \"A\"\n  param define = \"{define}\"\n  output name = \"m\"\n}}\n");
            let spec = anduin_spec::parse_flow(&src).expect("parses");
            spec.operators.into_iter().next().expect("one operator")
        };
        let schema = std::sync::Arc::new(arrow::datatypes::Schema::new(vec![
            arrow::datatypes::Field::new("ts", arrow::datatypes::DataType::Int64, true),
            arrow::datatypes::Field::new("v", arrow::datatypes::DataType::Int64, true),
        ]));
        let far = super::compile(
            &op("A AS coalesce(PREV(v, 1000000000000), -1) > 100"),
            &[("s", std::sync::Arc::clone(&schema))],
        )
        .expect_err("refused");
        let e = format!("{far:?}");
        assert!(
            e.contains("PREV goes back 1000000000000 rows, more than the limit of 100000"),
            "{e}"
        );
        let near = super::compile(&op("A AS PREV(v, 100000) > 1"), &[("s", schema)]);
        assert!(near.is_ok(), "{near:?}");
    }

    #[test]
    fn a_pattern_too_big_to_compile_names_permute_or_the_repetition_and_the_limit() {
        // Issue 18 (M1, M2): these said "{n,m} unrolled" whatever made them big.
        let e = refusal("PERMUTE(A+, B+, C+, D)");
        assert!(e.contains("PERMUTE is expanded into every order"), "{e}");
        assert!(
            e.contains("72 unbounded quantifiers") && e.contains("limit of 64"),
            "{e}"
        );
        let e = refusal("(A*){200} B");
        assert!(!e.contains("PERMUTE"), "{e}");
        assert!(
            e.contains("200 unbounded quantifiers") && e.contains("limit of 64"),
            "{e}"
        );
        let e = refusal("((A{1000}){1000}){1000}");
        assert!(e.contains("more than 100000 steps, the limit"), "{e}");
    }
}
