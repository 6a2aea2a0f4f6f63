//! Sandboxed WebAssembly user-defined functions: a module compiled from any language that
//! targets WebAssembly, loaded once, its exported functions called by anduin on the rows of
//! a batch, each call limited in memory and in time.
//!
//! What it is: the loader ([`WasmModule`]), the calling convention (the ABI, below), the
//! sandbox ([`Limits`]), and [`WasmFunction`], one declared function of a module that
//! evaluates whole Arrow columns, with its DataFusion face ([`WasmFunction::into_scalar_udf`])
//! so that an expression can call it by name like a built-in function.
//!
//! Beside it, [`JsFunction`]: a function written inline in JavaScript (`LANGUAGE
//! javascript AS $$ … $$`), run by an embedded QuickJS with the same limits (fuel, counted by
//! QuickJS's interrupt checks, and memory), its values checked against the declared types.
//!
//! Aggregates ([`JsAggregate`], [`WasmAggregate`]; `CREATE AGGREGATE`): RisingWave's
//! `create_state` / `accumulate` / `retract` / `merge` / `finish` in an inline JavaScript
//! module, or a module's `name_state_size` / `_init` / `_accumulate` / … over fixed-size
//! states in its memory; the states of their groups are kept by anduin as bytes
//! ([`GroupStates`]), so that a window checkpoints and restores them as it does a built-in
//! aggregate's (their DataFusion face: `into_aggregate_udf`).
//!
//! Operators with keyed state ([`JsOperator`], [`WasmOperator`]; `CREATE FUNCTION … RETURNS
//! TABLE (…)`, Flink's process table functions): per key a state of the user's own, kept by
//! anduin as bytes as an aggregate's, `process(state, row…)` called per row, emitting rows
//! of the declared columns, and a timer per key (`timer(state)`) after which
//! `on_timer(state, watermark)` runs; their face for `anduin-relational`'s `user_operator`
//! is `anduin_expr::UserOperator` (`operator.rs`).
//!
//! What it is not: a template project in other languages than C (`anduin udf new`). It does
//! not parse SQL: `CREATE FUNCTION` and `CREATE AGGREGATE` are read by `anduin-spec`, and
//! the CLI hands the declarations here. It knows nothing of operators or
//! dead letters: a call that fails is an error, and the operator evaluating the expression
//! decides what the row does (`on_error`).
//!
//! # Runtime
//! [wasmtime](https://wasmtime.dev), with its Cranelift compiler only (no component model,
//! no async, no on-disk cache): the Bytecode Alliance's runtime, the most widely used one
//! outside browsers, with a security process (fuzzing, advisories, LTS releases), fuel for
//! deterministic time limits, and a `ResourceLimiter` for memory. A module is granted **no
//! imports at all**: no WASI, so no file system, no network, no clock, no randomness; a
//! module that imports anything is refused when it is loaded.
//!
//! # ABI (row at a time)
//! A function is called once per row; the batching is anduin's. SQL types map to WebAssembly
//! values so:
//!
//! | SQL | parameter | result |
//! |---|---|---|
//! | `BIGINT` | `i64` | `i64` |
//! | `DOUBLE` | `f64` | `f64` |
//! | `BOOLEAN` | `i32` (0 false, 1 true) | `i32` (non-zero is true) |
//! | `VARCHAR` | two `i32`: pointer and length of UTF-8 bytes in the module's memory | one `i64`: `pointer << 32 \| length` |
//!
//! A module with a `VARCHAR` function exports its `memory`, `alloc(len: i32) -> i32` and
//! `dealloc(ptr: i32, len: i32)`. For each string argument anduin calls `alloc`, then
//! writes the bytes there and passes `(ptr, len)`; after the call it reads the result's
//! bytes, then calls `dealloc` on the result and on each argument, in the reverse order of
//! their allocation (so a stack allocator will do); a result that lies within an argument's
//! room (an identity, a substring) is given back once, as that argument. Room outside the module's memory, room
//! overlapping another argument's, and a trap in `alloc` or `dealloc` are
//! [`UdfError::Allocator`]: the module's fault, never a garbled argument.
//!
//! Functions are strict: a NULL argument gives a NULL result without a call. A function
//! must be pure (its result depends on its arguments only): anduin may call it on a row more
//! than once (when a batch is evaluated again to find a failing row), in any order, and on
//! several instances of the module at once.
//!
//! Why row at a time rather than over whole buffers: it is what every language can export
//! without a library (a C, Rust or AssemblyScript function of scalars), and it needs no
//! agreement on buffer layouts or null bitmaps. It costs one call into the sandbox per row
//! (see docs/benchmarks.md); a batch ABI can be added beside it later.
//!
//! # Declaring the functions of a module
//! `CREATE FUNCTION name(a BIGINT) RETURNS BIGINT LANGUAGE wasm AS 'module.wasm'` declares
//! one export. A module loaded whole (`anduin run --udf module.wasm`) declares its
//! functions itself, in a custom section named `anduin:functions` holding one declaration
//! per line: `name(BIGINT, VARCHAR) -> VARCHAR` ([`Declaration`]).
//!
//! # Sandbox
//! Each call gets [`Limits::fuel`] units of fuel (about one per instruction): a call that
//! runs out fails with [`UdfError::OutOfFuel`], naming the function, instead of hanging the
//! query; its DataFusion face reports it as `ResourcesExhausted`, which
//! `anduin_expr::ExprErrorKind::Exhausted` makes stop the query rather than send the row to
//! the dead letters (a runaway is no row's fault). An instance's memory may not grow past [`Limits::memory_bytes`]
//! ([`UdfError::Memory`]). A trap (`unreachable`, a division by zero, an access out of
//! bounds, a stack overflow) is [`UdfError::Trap`]. After any failed call the instance is
//! dropped and the next call gets a fresh one. A call still running after
//! [`Limits::backstop`] of wall-clock time is [`UdfError::OutOfTime`]; for JavaScript, also
//! one still running a second after the run was asked to stop ([`stop_calls_when`]).
//!
//! A function's module is instantiated once when the function is declared
//! ([`WasmModule::function`]), its start function given one call's fuel: a module that can
//! never be instantiated (a start function that traps or runs away, a memory or table that
//! starts over the limits) is [`UdfError::Instantiate`] there, not an error on every row.
//!
//! # Examples
//! ```
//! use anduin_udf::{Declaration, Limits, WasmModule};
//! let wasm = wat::parse_str(
//!     r#"(module (func (export "add_one") (param i64) (result i64)
//!            local.get 0 i64.const 1 i64.add))"#,
//! ).expect("valid text");
//! let module = WasmModule::from_binary("inline", &wasm).expect("valid module");
//! let f = module
//!     .function(Declaration::parse("add_one(BIGINT) -> BIGINT").expect("declaration"), Limits::default())
//!     .expect("the export matches");
//! let out = f.call(&[std::sync::Arc::new(arrow::array::Int64Array::from(vec![Some(1), None]))], 2)
//!     .expect("no trap");
//! assert_eq!(out.as_ref(), &arrow::array::Int64Array::from(vec![Some(2), None]) as &dyn arrow::array::Array);
//! ```

#![deny(missing_docs)]

mod abi;
mod aggregate;
mod call;
mod coerce;
mod columns;
mod declare;
mod error;
mod function;
mod idle;
mod js;
mod limits;
mod module;
mod operator;
mod scalar;
mod stop;
mod strings;
mod udaf;
mod wasm_agg_runner;
mod wasm_aggregate;
mod wasm_op_runner;
mod wasm_operator;
mod wasm_state;
mod wasm_stateful;

pub use abi::SqlType;
pub use aggregate::GroupStates;
pub use declare::Declaration;
pub use error::UdfError;
pub use function::WasmFunction;
pub use js::{JsAggregate, JsFunction, JsOperator};
pub use limits::Limits;
pub use module::{WasmModule, DECLARATIONS_SECTION};
pub use operator::OperatorDeclaration;
pub use stop::stop_calls_when;
pub use wasm_aggregate::{WasmAggregate, AGGREGATES_SECTION};
pub use wasm_operator::{WasmOperator, OPERATORS_SECTION};
