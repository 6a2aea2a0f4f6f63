//! WebAssembly operators: `CREATE FUNCTION name(a BIGINT, …) RETURNS TABLE (x BIGINT, …)
//! LANGUAGE wasm AS 'module.wasm'`, or a module's own `anduin:operators` section.
//!
//! # ABI
//! A key's state is a fixed number of bytes in the module's memory (a C struct), kept by
//! anduin between batches and in checkpoints as those bytes; a state whose bytes are all
//! zero is no state (the key is dropped, and its next row starts afresh). For operator
//! `name` the module exports:
//!
//! | export | type | required | does |
//! |---|---|---|---|
//! | `name_state_size` | `() -> i32` | yes | the size of a state in bytes (called once) |
//! | `name_init` | `(state: i32)` | no | writes a fresh state at `state` (without it: zeros) |
//! | `name_process` | `(state: i32, args…) -> i64` | yes | one row of the key; returns the rows it emits |
//! | `name_timer` | `(state: i32) -> i64` | no | the event time (ms) at which `on_timer` is due; `i64::MIN`: none |
//! | `name_on_timer` | `(state: i32, watermark: i64) -> i64` | with `timer` | the watermark reached the timer; returns the rows it emits |
//!
//! and `memory`, `alloc(len: i32) -> i32`, `dealloc(ptr: i32, len: i32)`, where anduin puts the
//! states of a job. Emitted rows are returned as `pointer << 32 | count`: `count` rows at
//! `pointer` in the module's memory (its own room: anduin reads them before its next call),
//! each one 8-byte little-endian slot per output column — `BIGINT` an `i64`, `DOUBLE` an
//! `f64`, `BOOLEAN` an `i64` (non-zero is true). Arguments travel as for a function (`BIGINT`
//! `i64`, `DOUBLE` `f64`, `BOOLEAN` `i32`); `VARCHAR` is not supported in a WebAssembly
//! operator, and it emits no NULL. The watermark at the end of the input is `i64::MAX`.

use wasmtime::ValType;

use crate::idle::Idle;
use crate::operator::{user_operator, OpAnswer, OpFailure, OpJob, OperatorDeclaration};
use crate::wasm_op_runner::OpRunner;
use crate::wasm_stateful::{check_exports, check_memory_abi, state_size, Wanted};
use crate::{Limits, SqlType, UdfError, WasmModule};

/// The custom section in which a module declares its operators, one a line
/// (`name(col TYPE, …) -> TABLE(col TYPE, …)`: [`OperatorDeclaration::parse`]).
pub const OPERATORS_SECTION: &str = "anduin:operators";

/// An operator of a module, checked against its declaration, ready to call from any thread:
/// each caller at a time gets an instance of its own, kept for later calls; an instance
/// whose call failed is dropped.
pub struct WasmOperator {
    module: WasmModule,
    declaration: OperatorDeclaration,
    limits: Limits,
    timers: bool,
    /// The bytes of a state.
    size: usize,
    idle: Idle<OpRunner>,
}

impl std::fmt::Debug for WasmOperator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WasmOperator")
            .field("module", &self.module.label)
            .field("declaration", &self.declaration.to_string())
            .field("size", &self.size)
            .finish_non_exhaustive()
    }
}

/// The exports of operator `d`: each name, its WebAssembly type, and whether it is required.
pub(crate) fn wanted(d: &OperatorDeclaration) -> Vec<Wanted> {
    let name = &d.name;
    let mut row = vec![ValType::I32];
    row.extend(d.args.iter().flat_map(|(_, t)| t.params().iter().cloned()));
    vec![
        (
            format!("{name}_state_size"),
            vec![],
            vec![ValType::I32],
            true,
        ),
        (format!("{name}_init"), vec![ValType::I32], vec![], false),
        (format!("{name}_process"), row, vec![ValType::I64], true),
        (
            format!("{name}_timer"),
            vec![ValType::I32],
            vec![ValType::I64],
            false,
        ),
        (
            format!("{name}_on_timer"),
            vec![ValType::I32, ValType::I64],
            vec![ValType::I64],
            false,
        ),
    ]
}

impl WasmModule {
    /// The operator `declaration` declares, checked against the module's exports (see the
    /// ABI in `wasm_operator.rs` and the SQL reference), instantiated once, its state size
    /// asked.
    pub fn operator(
        &self,
        declaration: OperatorDeclaration,
        limits: Limits,
    ) -> Result<WasmOperator, UdfError> {
        let wrong = |message: String| UdfError::WasmOperator {
            function: declaration.name.clone(),
            module: self.label.to_string(),
            message,
        };
        if let Some((column, t)) = declaration
            .args
            .iter()
            .chain(&declaration.output)
            .find(|(_, t)| *t == SqlType::Varchar)
        {
            return Err(wrong(format!(
                "column `{column}` is {t}, which is not supported yet in a WebAssembly operator (BIGINT, DOUBLE and BOOLEAN are)"
            )));
        }
        let found = check_exports(self, wanted(&declaration), "operator", &declaration, &wrong)?;
        let has = |suffix: &str| {
            found
                .iter()
                .any(|e| e == &format!("{}_{suffix}", declaration.name))
        };
        let timers = has("timer");
        if timers != has("on_timer") {
            let name = &declaration.name;
            return Err(wrong(format!(
                "it exports `{name}_timer` or `{name}_on_timer` without the other: a timer is `{name}_timer(state)`, the event time at which `{name}_on_timer(state, watermark)` is called; export both or neither"
            )));
        }
        check_memory_abi(self, &wrong)?;
        let mut first = OpRunner::new(self, &declaration, limits)?;
        let said = first.state_size(&declaration.name, limits)?;
        let size = state_size(said, &declaration.name, &wrong)?;
        first.set_size(size);
        Ok(WasmOperator {
            module: self.clone(),
            declaration,
            limits,
            timers,
            size,
            idle: Idle::new(first),
        })
    }

    /// Every operator the module declares in its [`OPERATORS_SECTION`], checked against its
    /// exports (none without the section).
    pub fn declared_operators(&self, limits: Limits) -> Result<Vec<WasmOperator>, UdfError> {
        self.declared_operators
            .iter()
            .map(|d| self.operator(d.clone(), limits))
            .collect()
    }
}

impl WasmOperator {
    /// Its declaration.
    pub fn declaration(&self) -> &OperatorDeclaration {
        &self.declaration
    }

    /// Whether the module exports its `_timer` and `_on_timer`.
    pub fn has_timers(&self) -> bool {
        self.timers
    }

    /// The bytes of one state.
    pub fn state_size(&self) -> usize {
        self.size
    }

    /// Does `job` on an instance of its own.
    fn run(&self, job: OpJob) -> Result<OpAnswer, OpFailure> {
        self.idle.run(
            || {
                let mut r = OpRunner::new(&self.module, &self.declaration, self.limits)?;
                r.set_size(self.size);
                Ok(r)
            },
            |runner| runner.run(&self.declaration, self.limits, &job),
        )
    }
}

user_operator!(WasmOperator);
