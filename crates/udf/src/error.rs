//! What can go wrong loading a module or calling one of its functions.

/// A problem with a WebAssembly module or a call into it. Every variant about a function
/// names it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UdfError {
    /// The module file cannot be read.
    #[error("cannot read WebAssembly module `{module}`: {message}")]
    Read {
        /// The module's path.
        module: String,
        /// Why.
        message: String,
    },
    /// The bytes are not a valid WebAssembly module.
    #[error("`{module}` is not a valid WebAssembly module: {message}")]
    Invalid {
        /// The module's path.
        module: String,
        /// What the validator said.
        message: String,
    },
    /// The module imports something: UDF modules are granted nothing.
    #[error("module `{module}` imports `{import}`: a UDF module is granted no imports (no WASI: no file system, no network, no clock)")]
    Import {
        /// The module's path.
        module: String,
        /// `module.name` of the import.
        import: String,
    },
    /// The runtime could not be set up (a bug, or a machine wasmtime does not support).
    #[error("cannot start the WebAssembly runtime: {0}")]
    Engine(String),
    /// A declaration (in `CREATE FUNCTION` or the module's own section) is malformed.
    #[error("declaration `{text}`: {message}")]
    Declaration {
        /// The declaration as written.
        text: String,
        /// What is wrong.
        message: String,
    },
    /// The module does not export the declared function.
    #[error("module `{module}` exports no function `{function}`{known}")]
    NoExport {
        /// The module's path.
        module: String,
        /// The declared function.
        function: String,
        /// The functions it does export, as a hint (empty or `: it exports a, b`).
        known: String,
    },
    /// The export's type is not what the declaration maps to.
    #[error("function `{function}` is declared as {declared}, which takes {expected} in WebAssembly, but module `{module}` exports it as {found}")]
    Signature {
        /// The function.
        function: String,
        /// The module's path.
        module: String,
        /// The declared SQL signature.
        declared: String,
        /// The WebAssembly type it maps to.
        expected: String,
        /// The export's WebAssembly type.
        found: String,
    },
    /// A function passes strings, and the module lacks what strings need.
    #[error("function `{function}` takes or returns VARCHAR, so module `{module}` must export {missing}")]
    MissingAbiExport {
        /// The function.
        function: String,
        /// The module's path.
        module: String,
        /// What is missing, as the ABI names it.
        missing: String,
    },
    /// The module cannot be instantiated: its start function traps or runs away, or its
    /// memory or a table starts larger than the limits allow. Found when the function is
    /// declared, since every call would fail the same way.
    #[error("module `{module}` cannot be instantiated for function `{function}`: {reason}; every call would fail, so the function is refused")]
    Instantiate {
        /// The function.
        function: String,
        /// The module's path.
        module: String,
        /// Why, in words.
        reason: String,
    },
    /// A call ran out of fuel: a runaway loop, or more work than one row may take.
    #[error("function `{function}` ran out of fuel: it did not return within {fuel} instructions (a runaway loop?)")]
    OutOfFuel {
        /// The function.
        function: String,
        /// The fuel each call gets.
        fuel: u64,
    },
    /// A call was still running after the wall-clock backstop: work that fuel does not count
    /// (a bulk `memory.fill` or `memory.copy` is one instruction whatever its size; a
    /// JavaScript built-in working on megabytes, or one that never returns).
    #[error("function `{function}` ran for more than {limit:?} of wall-clock time and was stopped (work its fuel does not count: bulk memory instructions, or built-in functions, over large data?)")]
    OutOfTime {
        /// The function.
        function: String,
        /// The backstop.
        limit: std::time::Duration,
    },
    /// A call was still running a while after the run was asked to stop (Ctrl-C, SIGTERM,
    /// `anduin ctl stop`: [`crate::stop_calls_when`]), and was abandoned.
    #[error("function `{function}` was still running {grace:?} after the run was asked to stop, and was abandoned")]
    Stopped {
        /// The function.
        function: String,
        /// How long a call may go on after the stop.
        grace: std::time::Duration,
    },
    /// A call tried to grow the instance's memory past the limit.
    #[error("function `{function}` tried to grow its memory to {desired} bytes, beyond the limit of {limit} bytes")]
    Memory {
        /// The function.
        function: String,
        /// The size it asked for.
        desired: usize,
        /// The limit.
        limit: usize,
    },
    /// A call trapped.
    #[error("function `{function}` trapped: {trap}")]
    Trap {
        /// The function.
        function: String,
        /// The trap, as wasmtime describes it.
        trap: String,
    },
    /// The module's allocator, which the string ABI calls (`alloc`, `dealloc`), failed or
    /// gave memory it may not: a trap, room outside the module's memory, room overlapping
    /// another argument's of the same call. The module's fault, caught before the
    /// function runs on garbled arguments.
    #[error("function `{function}`: the allocator of module `{module}` is broken: `{call}` {problem} (a bug in the module's `alloc` or `dealloc`)")]
    Allocator {
        /// The function.
        function: String,
        /// The module's path.
        module: String,
        /// The allocator's call, with its arguments: `alloc(5)`, `dealloc(1024, 5)`.
        call: String,
        /// What it did.
        problem: String,
    },
    /// A JavaScript function's body does not compile (or its top level throws).
    #[error("function `{function}`: its JavaScript does not compile: {message}")]
    JsCompile {
        /// The function.
        function: String,
        /// What QuickJS said.
        message: String,
    },
    /// A JavaScript function threw on a row.
    #[error("function `{function}` threw {message}")]
    JsThrew {
        /// The function.
        function: String,
        /// The exception: `TypeError: x.foo is not a function`.
        message: String,
    },
    /// A JavaScript function went past the engine's memory limit.
    #[error(
        "function `{function}` ran out of memory: its JavaScript engine may use {limit} bytes"
    )]
    JsMemory {
        /// The function.
        function: String,
        /// The limit.
        limit: usize,
    },
    /// A value that does not cross between SQL and JavaScript as declared: a result of
    /// another type, a `BIGINT` a JavaScript number cannot hold exactly.
    #[error("function `{function}`: {message}")]
    JsValue {
        /// The function.
        function: String,
        /// What was wrong.
        message: String,
    },
    /// An aggregate's body lacks a function it must export (`create_state`, `accumulate`),
    /// exports something other than a function under one of the names an aggregate's
    /// functions have, or its top level waits for something that never comes.
    #[error("aggregate `{function}`: {message}")]
    AggregateBody {
        /// The aggregate.
        function: String,
        /// What is wrong, and what to write instead.
        message: String,
    },
    /// An aggregate's function gave no state (`undefined`), or a state that cannot be
    /// written to a checkpoint and read back the same (not plain JSON data).
    #[error("aggregate `{function}`: {message}")]
    AggregateState {
        /// The aggregate.
        function: String,
        /// What it gave, and where.
        message: String,
    },
    /// A WebAssembly aggregate's module lacks an export its ABI needs, or exports it with
    /// another type, or declares a state size it may not have.
    #[error("aggregate `{function}` of module `{module}`: {message}")]
    WasmAggregate {
        /// The aggregate.
        function: String,
        /// The module's path.
        module: String,
        /// What is missing or wrong, and what the ABI asks.
        message: String,
    },
    /// A user operator's body lacks `process`, exports something other than a function
    /// under one of the names an operator's functions have; or a function of it gave no
    /// state (`undefined`), a state that is not plain JSON data, or emitted a row that is
    /// not of its declared columns.
    #[error("operator `{function}`: {message}")]
    Operator {
        /// The operator.
        function: String,
        /// What is wrong, and where.
        message: String,
    },
    /// A WebAssembly operator's module lacks an export its ABI needs, or exports it with
    /// another type, or declares a state size it may not have, or emitted rows outside its
    /// memory.
    #[error("operator `{function}` of module `{module}`: {message}")]
    WasmOperator {
        /// The operator.
        function: String,
        /// The module's path.
        module: String,
        /// What is missing or wrong, and what the ABI asks.
        message: String,
    },
    /// Two states of an aggregate must be combined into one, and it has no `merge`.
    #[error("aggregate `{function}` has no `merge`, which {needed} needs: give it one (JavaScript: `export function merge(state1, state2)`; WebAssembly: `{function}_merge`)")]
    NoMerge {
        /// The aggregate.
        function: String,
        /// What needs it: `a sliding window`, `a session window`.
        needed: String,
    },
    /// The module broke the ABI (a pointer out of its memory, a result that is not UTF-8).
    #[error("function `{function}` broke the string ABI: {message}")]
    Abi {
        /// The function.
        function: String,
        /// What it did.
        message: String,
    },
}
