//! What a stateful WebAssembly export — an aggregate (`wasm_aggregate.rs`) or an operator
//! (`wasm_operator.rs`) — has in common when it is loaded and called: its exports checked
//! against the ABI's list, the `memory` / `alloc` / `dealloc` it needs, the size of a state
//! it declares checked (its pool of idle instances is `crate::idle`'s).
//!
//! What it is not: the ABIs themselves (the lists of exports stay with each kind), nor the
//! calls on an instance (`wasm_state.rs` and the runners).

use std::fmt::Display;

use wasmtime::ValType;

use crate::abi::{same, show_wasm};
use crate::{UdfError, WasmModule};

/// The largest state a WebAssembly aggregate or operator may declare: 1 MiB.
const MAX_STATE: usize = 1 << 20;

/// An export an ABI asks for: its name, its WebAssembly parameters and results, and
/// whether it is required.
pub(crate) type Wanted = (String, Vec<ValType>, Vec<ValType>, bool);

/// Checks `module`'s exports against `wanted` (of the `abi` ABI, for `declaration`) and
/// that it exports `memory`, `alloc` and `dealloc`; the exports it has (of the right
/// type). Each problem is reported by `wrong`.
pub(crate) fn check_exports(
    module: &WasmModule,
    wanted: Vec<Wanted>,
    abi: &str,
    declaration: &dyn Display,
    wrong: &dyn Fn(String) -> UdfError,
) -> Result<Vec<String>, UdfError> {
    let mut found = Vec::new();
    for (export, params, results, required) in wanted {
        match module.func_type(&export) {
            None if required => {
                return Err(wrong(format!(
                    "it exports no `{export}`, which the {abi} ABI needs: `{export}{}`",
                    show_wasm(&params, &results)
                )))
            }
            None => {}
            Some((p, r)) if same(&p, &params) && same(&r, &results) => found.push(export),
            Some((p, r)) => {
                return Err(wrong(format!(
                    "it exports `{export}` as {}, but the {abi} ABI asks {} for {declaration}",
                    show_wasm(&p, &r),
                    show_wasm(&params, &results)
                )))
            }
        }
    }
    Ok(found)
}

/// Checks that `module` exports `memory`, `alloc` and `dealloc`, where anduin keeps the
/// states of a batch.
pub(crate) fn check_memory_abi(
    module: &WasmModule,
    wrong: &dyn Fn(String) -> UdfError,
) -> Result<(), UdfError> {
    let missing = module.missing_memory_abi();
    if missing.is_empty() {
        return Ok(());
    }
    Err(wrong(format!(
        "it must export {}, where anduin keeps the states of a batch",
        missing.join(" and ")
    )))
}

/// The bytes of a state, as `name_state_size()` said them: 1 to [`MAX_STATE`].
pub(crate) fn state_size(
    said: i32,
    name: &str,
    wrong: &dyn Fn(String) -> UdfError,
) -> Result<usize, UdfError> {
    usize::try_from(said)
        .ok()
        .filter(|s| (1..=MAX_STATE).contains(s))
        .ok_or_else(|| {
            wrong(format!(
                "`{name}_state_size()` says {said} bytes: a state has 1 to {MAX_STATE} bytes"
            ))
        })
}
