//! What the graph needs to know of operators: their signatures, and a way to bind an operator
//! to the schemas of its inputs.

use anduin_spec::OperatorDef;
use anduin_types::Diagnostics;
use arrow::datatypes::SchemaRef;

/// How many inputs or outputs an operator type takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arity {
    /// Exactly this many.
    Exactly(usize),
    /// This many or more.
    AtLeast(usize),
    /// This many or fewer (a connector that is a source without inputs and a sink with one).
    AtMost(usize),
}

impl Arity {
    /// Whether `n` is allowed.
    pub fn allows(self, n: usize) -> bool {
        match self {
            Arity::Exactly(k) => n == k,
            Arity::AtLeast(k) => n >= k,
            Arity::AtMost(k) => n <= k,
        }
    }

    /// "exactly 1", "at least 2", "no".
    pub fn describe(self) -> String {
        match self {
            Arity::Exactly(0) => "no".into(),
            Arity::Exactly(k) => format!("exactly {k}"),
            Arity::AtLeast(k) => format!("at least {k}"),
            Arity::AtMost(k) => format!("at most {k}"),
        }
    }
}

/// The kind of value a param takes, for checking and for the language reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamKind {
    /// Free text (a path, a format name, an expression).
    Text,
    /// Text that may be given several times, one item each (a pattern's `define`).
    Repeated,
    /// A whole number (written bare or quoted).
    Int,
    /// A number.
    Number,
    /// `true` or `false`.
    Bool,
    /// A duration such as `"2s"` or `"250ms"`.
    Duration,
    /// One of the listed words.
    OneOf(&'static [&'static str]),
}

/// One parameter an operator type accepts.
#[derive(Clone, Copy, Debug)]
pub struct ParamSpec {
    /// Its name, as in `param NAME = …`.
    pub name: &'static str,
    /// Whether it must be given.
    pub required: bool,
    /// What kind of value it takes.
    pub kind: ParamKind,
    /// The default, as text, when not required.
    pub default: Option<&'static str>,
    /// One line for the reference and for `explain`.
    pub doc: &'static str,
}

/// The shape of an operator type: what it is called, what it connects to, what it accepts.
#[derive(Clone, Debug)]
pub struct OperatorSignature {
    /// The operator type, as in `type = "filter"`.
    pub kind: &'static str,
    /// One line: what the operator does.
    pub doc: &'static str,
    /// How many input streams it consumes.
    pub inputs: Arity,
    /// How many output streams it produces.
    pub outputs: Arity,
    /// Whether it keeps state in checkpoints (a source's position, a sink's pending output,
    /// keyed state): such an operator cannot change between a checkpoint and its restore.
    pub stateful: bool,
    /// The params it accepts.
    pub params: &'static [ParamSpec],
}

impl OperatorSignature {
    /// The spec of param `name`, if this operator type has one. A spec whose name ends in
    /// `.*` stands for every param under that prefix (`properties.*`: a Kafka client's
    /// settings, handed on as they are).
    ///
    /// # Examples
    /// ```
    /// use anduin_graph::{Arity, OperatorSignature, ParamKind, ParamSpec};
    /// const ANY: ParamSpec = ParamSpec { name: "properties.*", required: false,
    ///     kind: ParamKind::Text, default: None, doc: "client settings" };
    /// let sig = OperatorSignature { kind: "k", doc: "", inputs: Arity::Exactly(0),
    ///     outputs: Arity::Exactly(1), stateful: false, params: &[ANY] };
    /// assert!(sig.param("properties.acks").is_some());
    /// assert!(sig.param("properties.").is_none());
    /// assert!(sig.param("acks").is_none());
    /// ```
    pub fn param(&self, name: &str) -> Option<&ParamSpec> {
        self.params.iter().find(|p| match p.name.strip_suffix('*') {
            Some(prefix) => name.len() > prefix.len() && name.starts_with(prefix),
            None => p.name == name,
        })
    }
}

/// What binding an operator produced: something the runtime can build it from, and the
/// schema of each of its outputs.
#[derive(Debug)]
pub struct Binding<B> {
    /// The catalog's bound form of the operator (for the operators crate: a factory).
    pub bound: B,
    /// One schema per output, in declaration order.
    pub outputs: Vec<SchemaRef>,
    /// Warnings that do not stop the query.
    pub warnings: Diagnostics,
    /// Per input, the columns by which parallel instances of the operator split that input
    /// (rows with equal values go to the same instance); empty when the operator does not run
    /// in parallel.
    pub partition_by: Vec<Option<Vec<usize>>>,
}

/// Where a sink writes what a source of its own query reads ([`Catalog::feeds_back`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FeedbackLoop {
    /// What they share, as a phrase: "subject `events.out` of stream `EVENTS` on
    /// nats://127.0.0.1:4222", "topic `events` of the Kafka cluster at 127.0.0.1:9092".
    pub shared: String,
    /// What the user can do instead, as a sentence without its full stop: "Write to another
    /// topic, …".
    pub fix: String,
}

/// The operator types a query may use. Implemented by the operators crate; tests of this
/// crate implement a small one.
pub trait Catalog {
    /// The bound form of an operator (what [`Catalog::bind`] returns).
    type Bound;

    /// The signature of operator type `kind`, or `None` if there is no such type.
    fn signature(&self, kind: &str) -> Option<&OperatorSignature>;

    /// Every operator type, for suggestions and the reference.
    fn kinds(&self) -> Vec<&'static str>;

    /// The params of operator type `kind` that can change while it runs (a meta query,
    /// paper §4.5), checked by [`crate::check_change`]. The default: none.
    fn adjustable(&self, _kind: &str) -> Vec<&'static str> {
        Vec::new()
    }

    /// Wraps `bound`, the binding of `op` (a type that [`Catalog::adjustable`] names params of)
    /// whose data input has schema `_data`, so that it follows the control stream `control`
    /// (see [`crate::ControlInput`]). The default refuses: the catalog has no such operators.
    fn with_control(
        &self,
        op: &OperatorDef,
        _bound: Self::Bound,
        _data: &SchemaRef,
        control: &crate::ControlInput,
    ) -> Result<Self::Bound, Diagnostics> {
        Err(anduin_types::Diagnostic::error(
            op.pos,
            format!(
                "operator \"{}\" cannot follow control stream \"{}\": this catalog has no operators that take a control input",
                op.name, control.stream
            ),
        )
        .into())
    }

    /// Whether `op` may consume an updating stream (one whose rows carry a change kind, see
    /// [`anduin_types::change`]): `Ok` if it handles changes, otherwise what it would take, as
    /// a sentence ("set `mode = \"changelog\"`"). Asked before [`Catalog::bind`] for every
    /// operator with an updating input. The default: no operator consumes updates.
    fn consumes_updates(&self, _op: &OperatorDef) -> Result<(), String> {
        Err("it consumes append-only streams only (not supported yet for updating ones)".into())
    }

    /// Whether an operator of type `kind` goes on when one of its inputs is lost (the task
    /// feeding it failed): a stream selector over replicas does. The default: none.
    fn survives_input_loss(&self, _kind: &str) -> bool {
        false
    }

    /// Whether `op` may make an updating stream of append-only inputs (a `GROUP BY` without a
    /// window does): any other operator whose output has a column named as the change kind
    /// is refused, since that name is reserved. The default: none.
    fn makes_updates(&self, _op: &OperatorDef) -> bool {
        false
    }

    /// Whether source `op` (an operator without inputs) ends by itself once it has read its
    /// input (a file, a generator with a count) rather than running until it is stopped.
    /// The default: every source does.
    fn source_ends(&self, _op: &OperatorDef) -> bool {
        true
    }

    /// The input of `op` that must end, read to its end before its other inputs are used (a
    /// lookup join's side table), with what `op` does with it, as a phrase ("reads its side
    /// table … to its end"); the checker refuses a query where a source that never ends
    /// ([`Catalog::source_ends`]) feeds that input. The default: none.
    fn input_that_must_end(&self, _op: &OperatorDef) -> Option<(usize, &'static str)> {
        None
    }

    /// The first call in `op`'s expressions (over inputs of the schemas `inputs`) of a
    /// function whose value changes from call to call (`random()`), if any: asked of every
    /// operator that binds; the planner refuses one upstream of a sink that must get the same
    /// rows on every run (an exactly-once NATS sink). The default: none.
    fn volatile_call(
        &self,
        _op: &OperatorDef,
        _inputs: &[(&str, SchemaRef)],
    ) -> Option<crate::VolatileCall> {
        None
    }

    /// Whether sink `sink` (an operator without outputs) writes where source `source` (an
    /// operator without inputs) reads, so that the query would read its own output again:
    /// what they share and what would not, or `None`. Asked of every source and sink of a
    /// query ([`crate::check`] refuses such a feedback loop). The default: never.
    fn feeds_back(&self, _source: &OperatorDef, _sink: &OperatorDef) -> Option<FeedbackLoop> {
        None
    }

    /// Checks `op`'s params against the schemas of its inputs and the declared types of its
    /// outputs (`None` where the output's type is to be inferred), and returns the bound
    /// operator with the schema of each output. Errors point into `op`.
    fn bind(
        &self,
        op: &OperatorDef,
        inputs: &[(&str, SchemaRef)],
        declared_outputs: &[Option<SchemaRef>],
    ) -> Result<Binding<Self::Bound>, Diagnostics>;
}
