//! A rewritten graph (paper §4.2) as a query to run: the operators of the graph that rules made
//! of a query's [`Spec`] become the operators of a new `Spec`, checked like a user's.
//!
//! What each operator of the rewritten graph becomes:
//! - an operator of the query (same name): itself, with the params the rules set and the inputs
//!   the rules gave it;
//! - a copy `NAME_replica_K` of an operator of the query: the operator again under that name,
//!   its one output named `STREAM__replica_K`;
//! - `multicast`, `failover`, and a `reader` or `writer` with one input and no params (the two
//!   ends of a channel between workers): left out, its consumers read its input — the runtime
//!   does these itself (a stream read by several tasks goes to each; a selector switches);
//! - `stream-selector`: a stream selector over its inputs; when they are the copies of one
//!   operator it emits that operator's stream, and copy 0 (the operator itself) emits
//!   `STREAM__replica_0`, so that the operator's consumers are unchanged. What a selector
//!   reads is a hot standby: it gets `fault_tolerance = "hot-standby"`, so that the checks of
//!   one apply (no volatile function, one instance per copy, no change of a copy alone);
//! - `merge` whose inputs are the copies 0, 1, … n−1 of one operator, each reading its inputs
//!   through `splitter{by = "key-group"}`s of the same producers (what the partitioning rules
//!   make): that operator with `parallelism = n` — the runtime's keyed exchange is the splitter
//!   and the merge. A stateless operator's splitters may be by `round-robin` (the runtime's
//!   round-robin exchange) or by `range` (the operator gets the splitter's `ranges`). A merge of
//!   one input is left out; of anything else, a `union`;
//! - an operator of another type the rules made: an operator of that type with the rule's
//!   params, named as the rule named it, its output stream `NAME_out`.
//!
//! An operator the rules placed at a named slot (`@{g.p1}`) gets `placement = "g.p1"`: on a
//! cluster, operators of one group with distinct slots run on distinct workers (the copies
//! behind a selector are kept apart as a hot standby without it).
//!
//! Refused, naming the operator: a `splitter` anywhere else, by round robin or range before a
//! keyed operator, by anything else but key group, copies
//! of an operator with other than one output, a type anduin has no operator for, and names the
//! conversion needs that the query uses already.

use std::collections::{BTreeMap, BTreeSet};

use anduin_rewrite::{Graph, OpId, Operator, Placement};
use anduin_spec::{OperatorDef, OutputDef, Param, Spec, Text, Value};

use crate::catalog::{Arity, Catalog};

/// Why a rewritten graph cannot be run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunSpecError {
    /// The graph refers to an operator it does not hold (a bug of the rewriter).
    #[error("the rewritten graph is malformed: {0}")]
    Graph(#[from] anduin_rewrite::GraphError),
    /// An operator of the rewritten graph that the runtime cannot run.
    #[error("operator \"{op}\" of the rewritten query cannot run: {why}")]
    Unsupported {
        /// The operator, as the rewritten graph names it.
        op: String,
        /// Why, and what to do.
        why: String,
    },
}

/// The system operators left out of a run: their consumers read their input.
fn passes_through(op: &Operator, own: bool) -> bool {
    if own {
        return false;
    }
    match op.kind.as_str() {
        "multicast" | "failover" => op.inputs.len() == 1,
        "reader" | "writer" => op.inputs.len() == 1 && op.params.is_empty(),
        _ => false,
    }
}

/// Copies behind a stream selector are a hot standby: `fault_tolerance = "hot-standby"`, so
/// that what the query's checks refuse of one (a volatile function, instances of their own,
/// a change of one copy while it runs) is refused of them too.
fn hot_standby(params: &mut Vec<Param>) {
    params.retain(|p| p.name.as_str() != "fault_tolerance");
    params.push(Param {
        name: Text::unplaced("fault_tolerance"),
        value: Value::String(Text::unplaced("hot-standby")),
    });
}

/// What an operator of the rewritten graph is to the query that runs it.
#[derive(Clone, Copy)]
enum Role<'a> {
    /// Left out; its consumers read its input (a multicast, a channel end, a key-group
    /// splitter of a parallel operator, a merge of one input).
    Through,
    /// Left out, and read by nobody that is kept (copy k ≥ 1 of a parallel operator).
    Gone,
    /// The query's own operator (copy 0 when it has copies).
    Own(&'a OperatorDef),
    /// Copy `k` ≥ 1 of an operator of the query.
    Copy(&'a OperatorDef, usize),
    /// A stream selector over the copies of this operator of the query (or over anything).
    Selector(Option<&'a OperatorDef>),
    /// A merge of the copies of this operator: the operator itself, in parallel.
    Parallel(OpId),
    /// A merge of several streams.
    Union,
    /// An operator a rule made.
    New,
}

struct Converter<'a, C> {
    original: &'a Spec,
    g: &'a Graph,
    catalog: &'a C,
    roles: BTreeMap<OpId, Role<'a>>,
    /// Copy 0 of these (the query's operator itself) emits `STREAM__replica_0`.
    selected: BTreeSet<String>,
    /// The instances of the query's operators that a merge made parallel.
    parallel: BTreeMap<String, usize>,
    /// The `ranges` a splitter by range gave the query's operators it made parallel.
    ranged: BTreeMap<String, String>,
    /// The operators a stream selector reads: copies in hot standby.
    behind_selector: BTreeSet<OpId>,
}

/// `rewritten` (made by rules from `original`) as a query to run; see the module's text.
pub fn to_spec<C: Catalog>(
    original: &Spec,
    rewritten: &Graph,
    catalog: &C,
) -> Result<Spec, RunSpecError> {
    let mut c = Converter {
        original,
        g: rewritten,
        catalog,
        roles: BTreeMap::new(),
        selected: BTreeSet::new(),
        parallel: BTreeMap::new(),
        ranged: BTreeMap::new(),
        behind_selector: BTreeSet::new(),
    };
    c.assign_roles()?;
    c.emit()
}

impl<'a, C: Catalog> Converter<'a, C> {
    fn own(&self, name: &str) -> Option<&'a OperatorDef> {
        self.original
            .operators
            .iter()
            .find(|o| o.name.as_str() == name)
    }

    /// `(X, k)` when `name` is copy `k` ≥ 1 of the query's operator X.
    fn copy_of(&self, name: &str) -> Option<(&'a OperatorDef, usize)> {
        if self.own(name).is_some() {
            return None;
        }
        let (of, k) = name.rsplit_once("_replica_")?;
        let k = k.parse::<usize>().ok().filter(|k| *k >= 1)?;
        Some((self.own(of)?, k))
    }

    /// `(X, k)` when the operator `id` is copy `k` of X (0: X itself).
    fn copy_number(&self, id: OpId) -> Option<(&'a OperatorDef, usize)> {
        let op = self.g.get(id)?;
        self.copy_of(&op.name)
            .or_else(|| self.own(&op.name).map(|d| (d, 0)))
    }

    /// Follows operators that pass their input through.
    fn collapse(&self, mut id: OpId) -> Result<OpId, RunSpecError> {
        loop {
            let op = self.g.op(id)?;
            let own = self.own(&op.name).is_some();
            match op.inputs.first() {
                Some(input) if passes_through(op, own) => id = *input,
                _ => return Ok(id),
            }
        }
    }

    fn unsupported(op: &Operator, why: impl Into<String>) -> RunSpecError {
        RunSpecError::Unsupported {
            op: op.name.clone(),
            why: why.into(),
        }
    }

    fn assign_roles(&mut self) -> Result<(), RunSpecError> {
        // Merges of an operator's copies over key-group splitters first: they decide the
        // roles of the copies and splitters under them.
        for (id, op) in self.g.iter() {
            if op.kind == "merge" && self.own(&op.name).is_none() {
                if let Some(of) = self.parallel_merge(op)? {
                    self.roles.insert(id, Role::Parallel(of));
                }
            }
        }
        for (id, op) in self.g.iter() {
            if self.roles.contains_key(&id) {
                continue;
            }
            let own = self.own(&op.name);
            let role = if passes_through(op, own.is_some()) {
                Role::Through
            } else if let Some(def) = own {
                Role::Own(def)
            } else if let Some((def, k)) = self.copy_of(&op.name) {
                if def.outputs.len() != 1 {
                    return Err(Self::unsupported(
                        op,
                        format!(
                            "it copies operator \"{}\", which has {} outputs: only an operator with one output can be copied",
                            def.name,
                            def.outputs.len()
                        ),
                    ));
                }
                Role::Copy(def, k)
            } else {
                match op.kind.as_str() {
                    "stream-selector" => {
                        for input in &op.inputs {
                            let id = self.collapse(*input)?;
                            self.behind_selector.insert(id);
                        }
                        let of = self.selected_copies(op)?;
                        if let Some(def) = of {
                            self.selected.insert(def.name.to_string());
                        }
                        Role::Selector(of)
                    }
                    "merge" if op.inputs.len() == 1 => Role::Through,
                    "merge" => Role::Union,
                    "splitter" => {
                        let feeds: Vec<String> = self
                            .g
                            .consumers(id)
                            .into_iter()
                            .filter_map(|c| self.g.get(c).map(|o| format!("\"{}\"", o.name)))
                            .collect();
                        return Err(Self::unsupported(
                            op,
                            format!(
                                "a splitter runs only as the partitioning of an operator: it must feed the copies 0, 1, … of one operator of the query (named NAME, NAME_replica_1, …; every input of each through a splitter of the same producer), whose outputs one `merge` unites; this one feeds {} (or ask for instances with `param parallelism`)",
                                if feeds.is_empty() { "nothing".to_string() } else { feeds.join(", ") }
                            ),
                        ));
                    }
                    kind if self.catalog.signature(kind).is_none() => {
                        return Err(Self::unsupported(
                            op,
                            format!("anduin has no operator of type `{kind}` (`anduin operators` lists them)"),
                        ))
                    }
                    _ => Role::New,
                }
            };
            self.roles.insert(id, role);
        }
        Ok(())
    }

    /// The operator whose copies (0, 1, … n−1, in order) the merge `op` unites, each reading
    /// its inputs through key-group splitters of the same producers; marks the copies ≥ 1
    /// [`Role::Gone`] and the splitters [`Role::Through`]. `None` when `op` is not such a merge.
    fn parallel_merge(&mut self, op: &Operator) -> Result<Option<OpId>, RunSpecError> {
        let mut copies = Vec::new();
        for (k, input) in op.inputs.iter().enumerate() {
            let id = self.collapse(*input)?;
            match self.copy_number(id) {
                Some((def, n)) if n == k => copies.push((id, def)),
                _ => return Ok(None),
            }
        }
        let Some((first, def)) = copies.first().copied() else {
            return Ok(None);
        };
        if copies.len() < 2 || copies.iter().any(|(_, d)| d.name != def.name) {
            return Ok(None);
        }
        // Instances of one operator run with one set of params.
        let params = &self.g.op(first)?.params;
        for (id, _) in &copies {
            let copy = self.g.op(*id)?;
            if copy.params != *params {
                return Err(Self::unsupported(
                    op,
                    format!(
                        "it merges instances of \"{}\" whose params differ (\"{}\" has other params than \"{}\"): the instances of one operator run with one set of params",
                        def.name, copy.name, def.name
                    ),
                ));
            }
        }
        // A stateless operator's instances take rows in turn; a stateful one's own keys.
        let stateless = self
            .catalog
            .signature(def.kind.as_str())
            .is_some_and(|s| !s.stateful);
        // Input j of every copy: a splitter of one producer.
        let splitters_of = |id: OpId| -> Result<Option<Vec<(OpId, OpId)>>, RunSpecError> {
            let copy = self.g.op(id)?;
            let mut out = Vec::new();
            for input in &copy.inputs {
                let s = self.collapse(*input)?;
                let splitter = self.g.op(s)?;
                let by = splitter.param("by").unwrap_or("key-group");
                if splitter.kind != "splitter" || splitter.inputs.len() != 1 {
                    return Ok(None);
                }
                match by {
                    "key-group" => {}
                    "round-robin" | "range" if stateless => {}
                    "range" => {
                        return Err(Self::unsupported(
                            splitter,
                            format!("a splitter by `range` would put the keys of one key group on several instances of \"{}\", which keeps its state by key group (restored and rescaled by ranges of key groups): split it by `key-group`", def.name),
                        ))
                    }
                    "round-robin" => {
                        return Err(Self::unsupported(
                            splitter,
                            format!("a splitter by `round-robin` would deal a key's rows to several instances of \"{}\", which keeps state by key: split it by `key-group`", def.name),
                        ))
                    }
                    _ => {
                        return Err(Self::unsupported(
                            splitter,
                            format!("a splitter by `{by}` is not supported: by `key-group` (a keyed operator's instances own its keys), `round-robin` (a stateless operator's take rows in turn) or `range` (a stateless operator's take a range of a column's values each)"),
                        ))
                    }
                }
                let from = self.collapse(
                    splitter
                        .inputs
                        .first()
                        .copied()
                        .ok_or(anduin_rewrite::GraphError::UnknownOp(s))?,
                )?;
                out.push((s, from));
            }
            Ok(Some(out))
        };
        let Some(first_inputs) = splitters_of(first)? else {
            return Ok(None);
        };
        let mut through = Vec::new();
        for (id, _) in &copies {
            let Some(inputs) = splitters_of(*id)? else {
                return Ok(None);
            };
            let same = inputs.len() == first_inputs.len()
                && inputs
                    .iter()
                    .zip(&first_inputs)
                    .all(|((_, a), (_, b))| a == b);
            if !same {
                return Ok(None);
            }
            through.extend(inputs.into_iter().map(|(s, _)| s));
        }
        // A splitter by range gives the operator its ranges.
        let mut ranges: Option<(&Operator, &str)> = None;
        for s in &through {
            let splitter = self.g.op(*s)?;
            if splitter.param("by") != Some("range") {
                continue;
            }
            let Some(text) = splitter.param(crate::ranges::PARAM) else {
                return Err(Self::unsupported(
                    splitter,
                    "a splitter by `range` says where to split: `splitter{by = \"range\", ranges = \"COLUMN: BOUND, …\"}`, one bound fewer than the instances".to_string(),
                ));
            };
            if ranges.is_some_and(|(_, r)| r != text) {
                return Err(Self::unsupported(
                    splitter,
                    format!("the splitters of \"{}\" split by different ranges: one operator's instances take one set of ranges", def.name),
                ));
            }
            ranges = Some((splitter, text));
        }
        if let Some((splitter, r)) = ranges {
            let parsed = crate::ranges::Ranges::parse(r)
                .map_err(|e| Self::unsupported(splitter, e.to_string()))?;
            if parsed.instances() != copies.len() {
                return Err(Self::unsupported(
                    splitter,
                    format!(
                        "its ranges \"{r}\" make {} instances of \"{}\", and {} copies of it are merged: give one bound fewer than the copies",
                        parsed.instances(),
                        def.name,
                        copies.len()
                    ),
                ));
            }
            let own = def.param(crate::ranges::PARAM);
            if let Some(own) = own.filter(|o| o.value.as_text().as_str() != r) {
                return Err(Self::unsupported(
                    splitter,
                    format!(
                        "it splits \"{}\" by ranges \"{r}\", and the query gives it `ranges = \"{}\"`: remove one of them",
                        def.name,
                        own.value.as_text().as_str()
                    ),
                ));
            }
            self.ranged.insert(def.name.to_string(), r.to_string());
        }
        for s in through {
            self.roles.insert(s, Role::Through);
        }
        for (id, _) in copies.iter().skip(1) {
            self.roles.insert(*id, Role::Gone);
        }
        self.parallel.insert(def.name.to_string(), copies.len());
        Ok(Some(first))
    }

    /// The query's operator whose copies the stream selector `op` reads (each input a copy of
    /// it), if they are.
    fn selected_copies(&self, op: &Operator) -> Result<Option<&'a OperatorDef>, RunSpecError> {
        let mut of: Option<&'a OperatorDef> = None;
        for input in &op.inputs {
            let id = self.collapse(*input)?;
            let Some((def, _)) = self.copy_number(id) else {
                return Ok(None);
            };
            if of.is_some_and(|o| o.name != def.name) {
                return Ok(None);
            }
            of = Some(def);
        }
        Ok(of)
    }

    fn first_output(def: &OperatorDef) -> String {
        def.outputs
            .first()
            .map(|o| o.name.to_string())
            .unwrap_or_default()
    }

    fn new_output(op: &Operator) -> String {
        format!("{}_out", op.name)
    }

    /// The stream a consumer reads from producer `id`; `wanted` is the stream it read in the
    /// query, if any (kept when the producer still emits it).
    fn stream(&self, id: OpId, wanted: Option<&Text>) -> Result<Text, RunSpecError> {
        let id = self.collapse(id)?;
        let op = self.g.op(id)?;
        let role = self.roles.get(&id).copied().unwrap_or(Role::New);
        let name = match role {
            Role::Through | Role::Gone => {
                // A splitter or merge left out: what it reads.
                let input = op
                    .inputs
                    .first()
                    .copied()
                    .ok_or_else(|| Self::unsupported(op, "it has no input to pass on"))?;
                return self.stream(input, wanted);
            }
            Role::Own(def) if self.selected.contains(def.name.as_str()) => {
                format!("{}__replica_0", Self::first_output(def))
            }
            Role::Own(def) => {
                let keep =
                    wanted.filter(|w| def.outputs.iter().any(|o| o.name.as_str() == w.as_str()));
                match keep {
                    Some(w) => return Ok(w.clone()),
                    None if def.outputs.len() > 1 => {
                        return Err(Self::unsupported(
                            op,
                            format!(
                                "it has {} outputs, and the rules have an operator read it that did not read it in the query: which output it reads cannot be told; rules that rewire an operator with several outputs are not supported yet",
                                def.outputs.len()
                            ),
                        ))
                    }
                    None => Self::first_output(def),
                }
            }
            Role::Copy(def, k) => format!("{}__replica_{k}", Self::first_output(def)),
            Role::Selector(Some(def)) => Self::first_output(def),
            Role::Parallel(of) => return self.stream(of, wanted),
            Role::Selector(None) | Role::Union | Role::New => Self::new_output(op),
        };
        Ok(Text::unplaced(name))
    }

    /// Params of `op` as the rules left them, over those of `def` (in `def`'s order, new
    /// ones after, by name).
    /// A param repeated in `def` (a pattern's `define`s) is one param to the rules, of its last
    /// value: unchanged, its repeats are kept as written; changed, they become one param.
    fn params(def: &OperatorDef, op: &Operator) -> Vec<Param> {
        let mut params: Vec<Param> = Vec::new();
        let mut replaced = BTreeSet::new();
        for p in &def.params {
            let name = p.name.as_str();
            let last = def
                .params
                .iter()
                .rev()
                .find(|q| q.name.as_str() == name)
                .unwrap_or(p);
            match op.param(name) {
                Some(v) if v != last.value.as_text().as_str() => {
                    if replaced.insert(name) {
                        params.push(Param {
                            name: p.name.clone(),
                            value: Value::String(Text::at(v, last.value.pos())),
                        });
                    }
                }
                _ => params.push(p.clone()),
            }
        }
        for (k, v) in &op.params {
            if def.param(k).is_none() {
                params.push(Param {
                    name: Text::at(k.as_str(), def.pos),
                    value: Value::String(Text::at(v.as_str(), def.pos)),
                });
            }
        }
        params
    }

    /// Where an operator the rules made is reported: at the first operator of the query it
    /// reads from (or the query's first operator).
    fn pos_of(&self, op: &Operator) -> anduin_types::Pos {
        let mut todo: Vec<OpId> = op.inputs.clone();
        let mut seen = BTreeSet::new();
        while let Some(id) = todo.pop() {
            if !seen.insert(id) {
                continue;
            }
            let Some(o) = self.g.get(id) else { continue };
            if let Some(def) = self.own(&o.name).or(self.copy_of(&o.name).map(|(d, _)| d)) {
                return def.pos;
            }
            todo.extend(o.inputs.iter().copied());
        }
        self.original
            .operators
            .first()
            .map(|o| o.pos)
            .unwrap_or_default()
    }

    fn emit(&self) -> Result<Spec, RunSpecError> {
        let mut operators = Vec::new();
        for (id, op) in self.g.iter() {
            let role = self.roles.get(&id).copied().unwrap_or(Role::New);
            // The data inputs of a query's operator (its control input is kept as it was).
            let inputs_of = |def: &OperatorDef| -> Result<Vec<Text>, RunSpecError> {
                op.inputs
                    .iter()
                    .take(def.inputs.len())
                    .enumerate()
                    .map(|(i, input)| self.stream(*input, def.inputs.get(i)))
                    .collect()
            };
            let all_inputs = || -> Result<Vec<Text>, RunSpecError> {
                op.inputs.iter().map(|i| self.stream(*i, None)).collect()
            };
            match role {
                Role::Through | Role::Gone | Role::Parallel(_) => {}
                Role::Own(def) => {
                    let mut params = Self::params(def, op);
                    if let Some(n) = self.parallel.get(def.name.as_str()) {
                        params.retain(|p| p.name.as_str() != "parallelism");
                        params.push(Param {
                            name: Text::unplaced("parallelism"),
                            value: Value::String(Text::unplaced(n.to_string())),
                        });
                    }
                    if let Some(r) = self.ranged.get(def.name.as_str()) {
                        params.retain(|p| p.name.as_str() != crate::ranges::PARAM);
                        params.push(Param {
                            name: Text::at(crate::ranges::PARAM, def.pos),
                            value: Value::String(Text::at(r.as_str(), def.pos)),
                        });
                    }
                    let mut outputs = def.outputs.clone();
                    if self.behind_selector.contains(&id) {
                        hot_standby(&mut params);
                    }
                    if self.selected.contains(def.name.as_str()) {
                        outputs = vec![OutputDef {
                            name: Text::unplaced(format!("{}__replica_0", Self::first_output(def))),
                            ty: def.outputs.first().and_then(|o| o.ty.clone()),
                        }];
                    }
                    operators.push(OperatorDef {
                        params,
                        inputs: inputs_of(def)?,
                        outputs,
                        ..def.clone()
                    });
                }
                Role::Copy(def, k) => operators.push(OperatorDef {
                    name: Text::unplaced(op.name.clone()),
                    params: {
                        let mut params = Self::params(def, op);
                        if self.behind_selector.contains(&id) {
                            hot_standby(&mut params);
                        }
                        params
                    },
                    inputs: inputs_of(def)?,
                    outputs: vec![OutputDef {
                        name: Text::unplaced(format!("{}__replica_{k}", Self::first_output(def))),
                        ty: def.outputs.first().and_then(|o| o.ty.clone()),
                    }],
                    ..def.clone()
                }),
                Role::Selector(Some(def)) => operators.push(OperatorDef {
                    name: Text::unplaced(op.name.clone()),
                    kind: Text::unplaced("stream-selector"),
                    params: Vec::new(),
                    inputs: all_inputs()?,
                    outputs: def.outputs.clone(),
                    control: None,
                    pos: def.pos,
                }),
                Role::Selector(None) | Role::Union | Role::New => {
                    let kind = match role {
                        Role::Union => "union",
                        _ => op.kind.as_str(),
                    };
                    let sinks = self
                        .catalog
                        .signature(kind)
                        .is_some_and(|s| s.outputs == Arity::Exactly(0));
                    let outputs = if sinks {
                        Vec::new()
                    } else {
                        vec![OutputDef {
                            name: Text::unplaced(Self::new_output(op)),
                            ty: None,
                        }]
                    };
                    let pos = self.pos_of(op);
                    let mut params: Vec<Param> = op
                        .params
                        .iter()
                        .filter(|_| !matches!(role, Role::Union))
                        .map(|(k, v)| Param {
                            name: Text::at(k.as_str(), pos),
                            value: Value::String(Text::at(v.as_str(), pos)),
                        })
                        .collect();
                    if self.behind_selector.contains(&id) && matches!(role, Role::New) {
                        hot_standby(&mut params);
                    }
                    operators.push(OperatorDef {
                        name: Text::unplaced(op.name.clone()),
                        kind: Text::unplaced(kind),
                        params,
                        inputs: all_inputs()?,
                        outputs,
                        control: None,
                        pos,
                    });
                }
            }
        }
        // The worker slots the rules named (`@{g.p1}`), but for the copies behind a selector,
        // which the runtime keeps apart as a hot standby.
        for op in &mut operators {
            let placed = self.g.find(op.name.as_str()).and_then(|id| {
                let slot = match &self.g.get(id)?.placement {
                    Placement::Slot { group, slot } if group.is_empty() => slot.clone(),
                    Placement::Slot { group, slot } => format!("{group}.{slot}"),
                    _ => return None,
                };
                (!self.behind_selector.contains(&id)).then_some(slot)
            });
            if let Some(slot) = placed {
                op.params.retain(|p| p.name.as_str() != "placement");
                op.params.push(Param {
                    name: Text::unplaced("placement"),
                    value: Value::String(Text::unplaced(slot)),
                });
            }
        }
        self.check_names(&operators)?;
        self.check_sinks(&operators)?;
        Ok(Spec {
            types: self.original.types.clone(),
            operators,
            functions: self.original.functions.clone(),
            modules: self.original.modules.clone(),
        })
    }

    /// Refuses a rewritten query with fewer sinks than the query: a rule removed what it
    /// writes (a sink replaced by another is a sink still).
    fn check_sinks(&self, operators: &[OperatorDef]) -> Result<(), RunSpecError> {
        let sinks = |ops: &[OperatorDef]| -> BTreeSet<String> {
            ops.iter()
                .filter(|o| o.outputs.is_empty())
                .map(|o| o.name.to_string())
                .collect()
        };
        let before = sinks(&self.original.operators);
        let after = sinks(operators);
        if after.len() >= before.len() {
            return Ok(());
        }
        let gone: Vec<&str> = before
            .iter()
            .filter(|s| !after.contains(*s))
            .map(String::as_str)
            .collect();
        Err(RunSpecError::Unsupported {
            op: gone.join("\", \""),
            why: format!(
                "the rules removed it: the rewritten query has {} sink(s), the query {}; a rule must keep what the query writes (a `writer` a rule makes needs its params, or it is taken for a channel's end)",
                after.len(),
                before.len()
            ),
        })
    }

    /// Refuses a stream or operator name the conversion made that is taken twice.
    fn check_names(&self, operators: &[OperatorDef]) -> Result<(), RunSpecError> {
        let mut streams = BTreeSet::new();
        let mut names = BTreeSet::new();
        for op in operators {
            if !names.insert(op.name.as_str()) {
                return Err(RunSpecError::Unsupported {
                    op: op.name.to_string(),
                    why: "its name is taken twice in the rewritten query: rename the query's operator".into(),
                });
            }
            for s in &op.outputs {
                if !streams.insert(s.name.as_str()) {
                    return Err(RunSpecError::Unsupported {
                        op: op.name.to_string(),
                        why: format!(
                            "the stream name \"{}\" it emits is taken twice in the rewritten query (the names NAME_out, STREAM__replica_K are made for rules' operators): rename the query's stream",
                            s.name
                        ),
                    });
                }
            }
        }
        Ok(())
    }
}
