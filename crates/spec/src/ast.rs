//! The intermediate representation: what a `.flow` file or its JSON form declares.

use anduin_types::Pos;

use crate::Text;

/// A whole query specification: stream types and operators, in file order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Spec {
    /// `type name = "…" { column … }` blocks.
    pub types: Vec<TypeDef>,
    /// `operator name = "…", type = "…" { … }` blocks.
    pub operators: Vec<OperatorDef>,
    /// User-defined functions (`CREATE FUNCTION` and `CREATE AGGREGATE` in SQL), in file
    /// order.
    pub functions: Vec<FunctionDef>,
    /// `udf path = "…"` blocks of `.flow`: WebAssembly modules whose declared functions the
    /// query calls (as `--udf` loads them), in file order.
    pub modules: Vec<ModuleDef>,
}

/// A `udf path = "udfs/m.wasm"` block: a WebAssembly module (or its `.wat` text) that
/// declares its functions in its custom sections, its path relative to the query file's
/// folder.
#[derive(Clone, Debug, PartialEq)]
pub struct ModuleDef {
    /// The module's path, as written.
    pub path: Text,
    /// Where the block starts.
    pub pos: Pos,
}

/// A user-defined scalar function: `CREATE FUNCTION name(a BIGINT) RETURNS BIGINT
/// LANGUAGE wasm AS 'module.wasm'`, the export `name` of a WebAssembly module, or
/// `… LANGUAGE javascript AS $$ return a + 1 $$`, a function body in JavaScript; a
/// user-defined aggregate: `CREATE AGGREGATE name(a BIGINT) RETURNS BIGINT LANGUAGE
/// javascript AS $$ export function create_state() … $$`; or an operator with keyed state:
/// `CREATE FUNCTION name(a BIGINT) RETURNS TABLE (x BIGINT) LANGUAGE javascript AS $$ export
/// function process(state, a) … $$`.
#[derive(Clone, Debug, PartialEq)]
pub struct FunctionDef {
    /// The function's name, and that of the module's export.
    pub name: Text,
    /// Its arguments' types, each `BIGINT`, `DOUBLE`, `BOOLEAN` or `VARCHAR`, placed at
    /// the argument.
    pub args: Vec<Text>,
    /// Its arguments' names, where written (JavaScript needs them: the body uses them).
    pub arg_names: Vec<Option<Text>>,
    /// Its result's type, as the arguments'.
    pub returns: Text,
    /// The language: `wasm` or `javascript`.
    pub language: Text,
    /// What follows `AS`: for `wasm` the module's path as written (relative to the query
    /// file's folder), for `javascript` the function's body (an aggregate's: a module
    /// exporting its functions).
    pub body: Text,
    /// Whether it is an aggregate (`CREATE AGGREGATE`): its body exports `create_state`,
    /// `accumulate` and the rest, as RisingWave's.
    pub aggregate: bool,
    /// The columns of the rows it emits, each name with its type, for an operator with
    /// keyed state (`RETURNS TABLE (name TYPE, …)`, called in FROM as Flink's process table
    /// functions: its arguments are the columns of its input row it takes); empty for a
    /// scalar function or an aggregate.
    pub table: Vec<(Text, Text)>,
    /// Where the statement starts.
    pub pos: Pos,
}

/// A stream type: an ordered list of typed columns.
#[derive(Clone, Debug, PartialEq)]
pub struct TypeDef {
    /// The type's name, referenced by outputs.
    pub name: Text,
    /// Its columns, in order.
    pub columns: Vec<ColumnDef>,
    /// Where the block starts.
    pub pos: Pos,
}

/// One column of a stream type.
#[derive(Clone, Debug, PartialEq)]
pub struct ColumnDef {
    /// Column name.
    pub name: Text,
    /// Column type name as written (`int`, `timestamp`, …), checked later.
    pub ty: Text,
}

/// An operator: a node of the dataflow graph.
#[derive(Clone, Debug, PartialEq)]
pub struct OperatorDef {
    /// The operator's name, unique in the query.
    pub name: Text,
    /// The operator type (`reader`, `filter`, …).
    pub kind: Text,
    /// Type-specific parameters, in file order.
    pub params: Vec<Param>,
    /// Names of the streams this operator consumes, in order.
    pub inputs: Vec<Text>,
    /// The streams this operator produces, in order.
    pub outputs: Vec<OutputDef>,
    /// The stream of changes to its params it takes as a control input, if any.
    pub control: Option<ControlDef>,
    /// Where the block starts.
    pub pos: Pos,
}

impl OperatorDef {
    /// The param named `name`, if present (the first one, if repeated).
    pub fn param(&self, name: &str) -> Option<&Param> {
        self.params.iter().find(|p| p.name.as_str() == name)
    }

    /// Whether it asks for hot standby (`param fault_tolerance = "hot-standby"`; the copies the
    /// rewriting makes keep the request).
    pub fn asks_hot_standby(&self) -> bool {
        self.param("fault_tolerance")
            .is_some_and(|p| p.value.as_text().as_str() == "hot-standby")
    }

    /// How many copies spread its partial matches over (`param overflow_instances` of 2 or
    /// more on a `pattern`, paper §4.4; the copies the rewriting makes keep it); `None`: it
    /// does not spread them.
    pub fn spread_copies(&self) -> Option<usize> {
        if self.kind.as_str() != "pattern" {
            return None;
        }
        self.param("overflow_instances")
            .and_then(|p| p.value.as_text().as_str().trim().parse::<usize>().ok())
            .filter(|n| *n >= 2)
    }

    /// Whether it numbers the rows it reads in their order of arrival, and that order must be
    /// the same when a run is started again: a `nats` sink with exactly-once delivery (its
    /// default; `param delivery = "at-least-once"` lifts it), whose message ids count rows
    /// (`anduin_connectors::nats`). The planner then refuses an input whose interleaving
    /// changes from run to run.
    pub fn needs_one_ordered_input(&self) -> bool {
        self.kind.as_str() == "nats"
            && !self.inputs.is_empty()
            && self
                .param("delivery")
                .is_none_or(|p| p.value.as_text().as_str() != "at-least-once")
    }

    /// Every param named `name`, in file order (for params that may be repeated).
    pub fn params_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Param> + 'a {
        self.params.iter().filter(move |p| p.name.as_str() == name)
    }

    /// This operator with every param named `name` (a repeated one too) replaced by one
    /// param of value `value`, after the others: a param changed while the query runs.
    pub fn with_param(&self, name: &str, value: Text) -> OperatorDef {
        let mut def = self.clone();
        def.params.retain(|p| p.name.as_str() != name);
        def.params.push(Param {
            name: Text::unplaced(name),
            value: Value::String(value),
        });
        def
    }

    /// This operator with every position forgotten: what a check of it reports names no
    /// place in the query file. A changed param is checked so, with only its new value
    /// placed (at line 1, column 1 of the value), so that every position in an error is one
    /// inside the value.
    pub fn unplaced(&self) -> OperatorDef {
        let text = |t: &Text| Text::unplaced(t.as_str());
        OperatorDef {
            name: text(&self.name),
            kind: text(&self.kind),
            params: self
                .params
                .iter()
                .map(|p| Param {
                    name: text(&p.name),
                    value: match &p.value {
                        Value::String(t) => Value::String(text(t)),
                        Value::Int(v, _) => Value::Int(*v, Pos::default()),
                        Value::Float(v, _) => Value::Float(*v, Pos::default()),
                        Value::Bool(v, _) => Value::Bool(*v, Pos::default()),
                    },
                })
                .collect(),
            inputs: self.inputs.iter().map(text).collect(),
            outputs: self
                .outputs
                .iter()
                .map(|o| OutputDef {
                    name: text(&o.name),
                    ty: o.ty.as_ref().map(text),
                })
                .collect(),
            control: self.control.as_ref().map(|c| ControlDef {
                stream: text(&c.stream),
                time: c.time.as_ref().map(text),
                pos: Pos::default(),
            }),
            pos: Pos::default(),
        }
    }
}

/// `control name = "…", time = "…"`: a stream of `<operator, param, value>` rows that change
/// the operator's params while it runs (the paper's meta query over a control stream).
#[derive(Clone, Debug, PartialEq)]
pub struct ControlDef {
    /// The control stream's name.
    pub stream: Text,
    /// The event-time column, present both in the operator's input and in the control stream:
    /// a change at time t applies to the rows with event time ≥ t. Without it, a change
    /// applies from its arrival on.
    pub time: Option<Text>,
    /// Where the `control` line starts.
    pub pos: Pos,
}

/// `param NAME = VALUE`.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    /// The parameter name.
    pub name: Text,
    /// Its value.
    pub value: Value,
}

/// A parameter value. Strings keep their positions; numbers and booleans their start.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// A quoted string.
    String(Text),
    /// An integer literal.
    Int(i64, Pos),
    /// A floating-point literal.
    Float(f64, Pos),
    /// `true` or `false`.
    Bool(bool, Pos),
}

impl Value {
    /// Where the value starts.
    pub fn pos(&self) -> Pos {
        match self {
            Value::String(t) => t.pos(),
            Value::Int(_, p) | Value::Float(_, p) | Value::Bool(_, p) => *p,
        }
    }

    /// The value as text: strings as they are, numbers and booleans as written.
    pub fn as_text(&self) -> Text {
        match self {
            Value::String(t) => t.clone(),
            Value::Int(v, p) => Text::at(v.to_string(), *p),
            Value::Float(v, p) => Text::at(v.to_string(), *p),
            Value::Bool(v, p) => Text::at(v.to_string(), *p),
        }
    }

    /// A short name of the value's kind, for messages.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Value::String(_) => "a string",
            Value::Int(..) => "an integer",
            Value::Float(..) => "a number",
            Value::Bool(..) => "a boolean",
        }
    }
}

/// `output name = "…", type = "…"`; the type may be left out and is then inferred.
#[derive(Clone, Debug, PartialEq)]
pub struct OutputDef {
    /// Stream name, unique in the query.
    pub name: Text,
    /// The declared stream type, if any.
    pub ty: Option<Text>,
}
