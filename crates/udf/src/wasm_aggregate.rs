//! WebAssembly aggregate functions: `CREATE AGGREGATE name(x BIGINT) RETURNS DOUBLE
//! LANGUAGE wasm AS 'module.wasm'`, or a module's own `anduin:aggregates` section.
//!
//! # ABI
//! A state is a fixed number of bytes in the module's memory — a C struct, a Rust
//! `#[repr(C)]` one — which anduin keeps between batches (and in checkpoints) as those
//! bytes. For aggregate `name` the module exports:
//!
//! | export | type | required | does |
//! |---|---|---|---|
//! | `name_state_size` | `() -> i32` | yes | the size of a state in bytes (called once) |
//! | `name_init` | `(state: i32)` | yes | writes a fresh state at `state` |
//! | `name_accumulate` | `(state: i32, args…)` | yes | adds a row to the state at `state` |
//! | `name_retract` | `(state: i32, args…)` | no | takes a row out of it |
//! | `name_merge` | `(state: i32, other: i32)` | no | adds the state at `other` into the one at `state` |
//! | `name_finish` | `(state: i32) -> result` | yes | the result of the state at `state` |
//!
//! and `memory`, `alloc(len: i32) -> i32`, `dealloc(ptr: i32, len: i32)`: for each batch anduin
//! `alloc`s room for the states the batch touches, writes them there (or `init`s them),
//! calls the functions row by row, reads the states back and `dealloc`s the room. Arguments
//! and results are `BIGINT` (`i64`), `DOUBLE` (`f64`) or `BOOLEAN` (`i32`), as for a scalar
//! function; `VARCHAR` is not supported yet in an aggregate. Every call gets its own fuel.

use arrow::array::{ArrayRef, BinaryArray, BooleanArray};
use wasmtime::ValType;

use crate::aggregate::{self, Answer, Exports, GroupStates, Job, Stepper};
use crate::idle::Idle;
use crate::wasm_agg_runner::AggRunner;
use crate::wasm_stateful::{check_exports, check_memory_abi, state_size, Wanted};
use crate::{Declaration, Limits, SqlType, UdfError, WasmModule};

/// The custom section in which a module declares its aggregates, one a line
/// (`name(TYPE, …) -> TYPE`, as [`crate::DECLARATIONS_SECTION`] declares functions).
pub const AGGREGATES_SECTION: &str = "anduin:aggregates";

/// An aggregate of a module, checked against its declaration, ready to call from any
/// thread: each caller at a time gets an instance of its own, kept for later calls; an
/// instance whose call failed is dropped.
pub struct WasmAggregate {
    module: WasmModule,
    declaration: Declaration,
    limits: Limits,
    exports: Exports,
    /// The bytes of a state.
    size: usize,
    idle: Idle<AggRunner>,
}

impl std::fmt::Debug for WasmAggregate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WasmAggregate")
            .field("module", &self.module.label)
            .field("declaration", &self.declaration.to_string())
            .field("size", &self.size)
            .finish_non_exhaustive()
    }
}

/// The exports of aggregate `d`: each name, its WebAssembly type, and whether it is required.
fn wanted(d: &Declaration) -> Vec<Wanted> {
    let name = &d.name;
    let mut row = vec![ValType::I32];
    row.extend(d.args.iter().flat_map(|a| a.params().iter().cloned()));
    vec![
        (
            format!("{name}_state_size"),
            vec![],
            vec![ValType::I32],
            true,
        ),
        (format!("{name}_init"), vec![ValType::I32], vec![], true),
        (format!("{name}_accumulate"), row.clone(), vec![], true),
        (format!("{name}_retract"), row, vec![], false),
        (
            format!("{name}_merge"),
            vec![ValType::I32, ValType::I32],
            vec![],
            false,
        ),
        (
            format!("{name}_finish"),
            vec![ValType::I32],
            vec![d.result.result()],
            true,
        ),
    ]
}

impl WasmModule {
    /// The aggregate `declaration` declares, checked against the module's exports (see the
    /// ABI in `wasm_aggregate.rs` and the SQL reference), instantiated once, its state size
    /// asked.
    pub fn aggregate(
        &self,
        declaration: Declaration,
        limits: Limits,
    ) -> Result<WasmAggregate, UdfError> {
        let wrong = |message: String| UdfError::WasmAggregate {
            function: declaration.name.clone(),
            module: self.label.to_string(),
            message,
        };
        if let Some(t) = declaration
            .args
            .iter()
            .chain([&declaration.result])
            .find(|t| **t == SqlType::Varchar)
        {
            return Err(wrong(format!(
                "{t} is not supported yet in a WebAssembly aggregate (BIGINT, DOUBLE and BOOLEAN are)"
            )));
        }
        let found = check_exports(
            self,
            wanted(&declaration),
            "aggregate",
            &declaration,
            &wrong,
        )?;
        let exports = Exports {
            merge: found.iter().any(|e| e.ends_with("_merge")),
            retract: found.iter().any(|e| e.ends_with("_retract")),
        };
        check_memory_abi(self, &wrong)?;
        let mut first = AggRunner::new(self, &declaration, limits)?;
        let said = first.state_size(&declaration.name, limits)?;
        let size = state_size(said, &declaration.name, &wrong)?;
        first.set_size(size);
        Ok(WasmAggregate {
            module: self.clone(),
            declaration,
            limits,
            exports,
            size,
            idle: Idle::new(first),
        })
    }

    /// Every aggregate the module declares in its [`AGGREGATES_SECTION`], checked against
    /// its exports (none without the section).
    pub fn declared_aggregates(&self, limits: Limits) -> Result<Vec<WasmAggregate>, UdfError> {
        self.declared_aggregates
            .iter()
            .map(|d| self.aggregate(d.clone(), limits))
            .collect()
    }
}

impl WasmAggregate {
    /// Its declaration.
    pub fn declaration(&self) -> &Declaration {
        &self.declaration
    }

    /// Whether the module exports its `_merge`.
    pub fn merges(&self) -> bool {
        self.exports.merge
    }

    /// Whether the module exports its `_retract`.
    pub fn retracts(&self) -> bool {
        self.exports.retract
    }

    /// The bytes of one state.
    pub fn state_size(&self) -> usize {
        self.size
    }

    /// Adds rows to (or, with `retract`, takes them out of) the states of their groups, as
    /// [`crate::JsAggregate::accumulate`] does.
    pub fn accumulate(
        &self,
        states: &mut GroupStates,
        groups: &[usize],
        args: &[ArrayRef],
        filter: Option<&BooleanArray>,
        retract: bool,
    ) -> Result<(), UdfError> {
        aggregate::accumulate(self, states, groups, args, filter, retract)
    }

    /// Merges the states `incoming` into groups `groups[i]` of `states`, as
    /// [`crate::JsAggregate::merge`] does.
    pub fn merge(
        &self,
        states: &mut GroupStates,
        groups: &[usize],
        incoming: &BinaryArray,
        needed: &str,
    ) -> Result<(), UdfError> {
        aggregate::merge(self, states, groups, incoming, needed)
    }

    /// The result of each state (`name_finish`; for a group without a state, that of a
    /// fresh one), of the declared type.
    pub fn finish(&self, states: GroupStates) -> Result<ArrayRef, UdfError> {
        aggregate::finish(self, states)
    }
}

impl Stepper for WasmAggregate {
    fn declaration(&self) -> &Declaration {
        &self.declaration
    }

    fn exports(&self) -> Exports {
        self.exports
    }

    fn step(&self, job: Job) -> Result<Answer, UdfError> {
        self.idle.run(
            || {
                let mut r = AggRunner::new(&self.module, &self.declaration, self.limits)?;
                r.set_size(self.size);
                Ok(r)
            },
            |runner| runner.run(&self.declaration, self.limits, &job),
        )
    }
}
