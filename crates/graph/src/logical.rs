//! The checked logical graph.

use anduin_spec::OperatorDef;

use crate::control_input::ControlInput;
use arrow::datatypes::SchemaRef;

/// Index of a node in [`LogicalGraph::nodes`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(pub usize);

/// Index of a stream in [`LogicalGraph::streams`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamId(pub usize);

/// An operator of the graph, bound to its inputs.
#[derive(Debug)]
pub struct Node<B> {
    /// The operator as written.
    pub def: OperatorDef,
    /// The streams it consumes, in input order: the data inputs, then its control stream if it
    /// has one (at [`ControlInput::port`]).
    pub inputs: Vec<StreamId>,
    /// The streams it produces, in output order.
    pub outputs: Vec<StreamId>,
    /// What the catalog made of it.
    pub bound: B,
    /// Per input, the columns its parallel instances split that input by (see
    /// [`crate::Binding::partition_by`]).
    pub partition_by: Vec<Option<Vec<usize>>>,
    /// The parallelism the query asks of it (`param parallelism`), if any.
    pub parallelism: Option<usize>,
    /// Whether its type can run in parallel (its signature takes `parallelism`).
    pub parallelizable: bool,
    /// Whether its type keeps state across batches (its signature says so; an unknown type
    /// counts as stateful).
    pub stateful: bool,
    /// Whether it goes on when one of its inputs is lost (a stream selector over replicas:
    /// see [`crate::Catalog::survives_input_loss`]); the runtime then keeps the query running
    /// when a task feeding it fails.
    pub survives_input_loss: bool,
    /// Its control input (`control name = …`), if it has one.
    pub control: Option<ControlInput>,
    /// The first function its expressions call whose value changes from call to call
    /// (`random()`), if the catalog finds one ([`crate::Catalog::volatile_call`]).
    pub volatile: Option<VolatileCall>,
}

/// A call, in an operator's params, of a function whose value changes from call to call
/// (`random()`, `uuid()`, `PROCTIME()`): a run started again computes other values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VolatileCall {
    /// The function, as the expression names it (lowercase).
    pub function: String,
    /// Where, in the query file: the expression that calls it.
    pub pos: anduin_types::Pos,
}

impl<B> Node<B> {
    /// The operator's name.
    pub fn name(&self) -> &str {
        self.def.name.as_str()
    }

    /// The operator's type.
    pub fn kind(&self) -> &str {
        self.def.kind.as_str()
    }

    /// The streams it consumes as data: its inputs without the control stream.
    pub fn data_inputs(&self) -> &[StreamId] {
        match &self.control {
            Some(c) => self.inputs.get(..c.port).unwrap_or(&self.inputs),
            None => &self.inputs,
        }
    }
}

/// A typed stream: produced by one output of one node, consumed by any number of inputs.
#[derive(Clone, Debug)]
pub struct Stream {
    /// The stream's name.
    pub name: String,
    /// The declared type's name, if the output declared one.
    pub type_name: Option<String>,
    /// Its schema.
    pub schema: SchemaRef,
    /// The node and output port that produce it.
    pub producer: (NodeId, usize),
    /// The nodes and input ports that consume it.
    pub consumers: Vec<(NodeId, usize)>,
    /// `None` for an append-only stream; for an updating one (its schema ends with the
    /// change-kind column, see [`anduin_types::change`]), the operator that makes it
    /// updating: the first on its way from the sources whose output carries changes.
    pub updating_from: Option<NodeId>,
}

/// A checked dataflow graph: acyclic, every stream produced once, every node bound.
#[derive(Debug)]
pub struct LogicalGraph<B> {
    /// Nodes in file order.
    pub nodes: Vec<Node<B>>,
    /// Streams in order of declaration.
    pub streams: Vec<Stream>,
    /// Node ids in a topological order (producers before consumers, file order otherwise).
    pub topo: Vec<NodeId>,
}

impl<B> LogicalGraph<B> {
    /// The node with this id.
    pub fn node(&self, id: NodeId) -> &Node<B> {
        self.nodes.get(id.0).expect("node ids come from this graph")
    }

    /// The stream with this id.
    pub fn stream(&self, id: StreamId) -> &Stream {
        self.streams
            .get(id.0)
            .expect("stream ids come from this graph")
    }

    /// Takes the bound operators out, leaving the structure.
    pub fn map_bound<C>(self, mut f: impl FnMut(B) -> C) -> LogicalGraph<C> {
        LogicalGraph {
            nodes: self
                .nodes
                .into_iter()
                .map(|n| Node {
                    def: n.def,
                    inputs: n.inputs,
                    outputs: n.outputs,
                    bound: f(n.bound),
                    partition_by: n.partition_by,
                    parallelism: n.parallelism,
                    parallelizable: n.parallelizable,
                    stateful: n.stateful,
                    survives_input_loss: n.survives_input_loss,
                    control: n.control,
                    volatile: n.volatile,
                })
                .collect(),
            streams: self.streams,
            topo: self.topo,
        }
    }
}
