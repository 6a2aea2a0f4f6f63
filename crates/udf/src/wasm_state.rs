//! The states of a job in a WebAssembly instance, shared by the aggregate runner
//! (`wasm_agg_runner.rs`) and the operator runner (`wasm_op_runner.rs`): the instance's store
//! and `memory`, the module's `alloc` / `dealloc` and `name_state_size`, each call made
//! ready with its own fuel and wall-clock backstop, room for a job's states asked of the
//! module's allocator (and checked to lie in its memory), states written and read back as
//! bytes, the room given back.
//!
//! What it is not: the calls of an aggregate or an operator (`init`, `accumulate`,
//! `process`, …); those stay with their runner.

use std::sync::Arc;

use wasmtime::{Instance, Memory, Store, TypedFunc};

use crate::call::{classify, instantiate};
use crate::limits::Limiter;
use crate::{Limits, UdfError, WasmModule};

/// An instance's store with what it needs to keep fixed-size states in the module's memory.
pub(crate) struct StateStore {
    /// The instance's store, for the runner's own calls.
    pub(crate) store: Store<Limiter>,
    /// The module's `memory`.
    pub(crate) memory: Memory,
    alloc: TypedFunc<i32, i32>,
    dealloc: TypedFunc<(i32, i32), ()>,
    state_size: TypedFunc<(), i32>,
    /// The bytes of a state (0 until asked).
    size: usize,
    /// The module's label, for errors.
    pub(crate) module: Arc<str>,
}

impl StateStore {
    /// Instantiates `module` for `name` and finds its `memory`, `alloc`, `dealloc` and
    /// `name_state_size`, each one it lacks reported by `missing` (given the export, quoted).
    pub(crate) fn new(
        module: &WasmModule,
        name: &str,
        limits: Limits,
        missing: &dyn Fn(&str) -> UdfError,
    ) -> Result<(StateStore, Instance), UdfError> {
        let (mut store, instance) = instantiate(module, name, limits)?;
        let memory = instance
            .get_memory(&mut store, "memory")
            .ok_or_else(|| missing("`memory`"))?;
        let alloc = instance
            .get_typed_func(&mut store, "alloc")
            .map_err(|_| missing("`alloc`"))?;
        let dealloc = instance
            .get_typed_func(&mut store, "dealloc")
            .map_err(|_| missing("`dealloc`"))?;
        let state_size = instance
            .get_typed_func(&mut store, &format!("{name}_state_size"))
            .map_err(|_| missing(&format!("`{name}_state_size`")))?;
        let states = StateStore {
            store,
            memory,
            alloc,
            dealloc,
            state_size,
            size: 0,
            module: Arc::clone(&module.label),
        };
        Ok((states, instance))
    }

    /// Gives the next call its fuel and its wall-clock backstop.
    pub(crate) fn ready(&mut self, name: &str, limits: Limits) -> Result<(), UdfError> {
        self.store
            .set_fuel(limits.fuel)
            .map_err(|e| classify(name, limits, &e))?;
        self.store
            .set_epoch_deadline(crate::module::backstop_ticks(limits));
        Ok(())
    }

    /// `name_state_size()`.
    pub(crate) fn state_size(&mut self, name: &str, limits: Limits) -> Result<i32, UdfError> {
        self.ready(name, limits)?;
        self.state_size
            .call(&mut self.store, ())
            .map_err(|e| classify(name, limits, &e))
    }

    /// Sets the bytes of a state (checked by the caller against `name_state_size()`).
    pub(crate) fn set_size(&mut self, size: usize) {
        self.size = size;
    }

    /// The bytes of a state.
    pub(crate) fn size(&self) -> usize {
        self.size
    }

    fn broken_allocator(&self, name: &str, call: String, problem: String) -> UdfError {
        UdfError::Allocator {
            function: name.to_string(),
            module: self.module.to_string(),
            call,
            problem,
        }
    }

    /// Room for `states` states from the module's allocator, checked to lie in its memory:
    /// `(pointer, length)`.
    pub(crate) fn room(
        &mut self,
        name: &str,
        limits: Limits,
        states: usize,
    ) -> Result<(i32, i32), UdfError> {
        let len = states
            .checked_mul(self.size)
            .and_then(|n| i32::try_from(n).ok())
            .ok_or_else(|| UdfError::Memory {
                function: name.to_string(),
                desired: states.saturating_mul(self.size),
                limit: limits.memory_bytes,
            })?;
        self.ready(name, limits)?;
        let call = format!("alloc({len})");
        let ptr = self.alloc.call(&mut self.store, len).map_err(|e| {
            match classify(name, limits, &e) {
                UdfError::Trap { trap, .. } => {
                    self.broken_allocator(name, call.clone(), format!("trapped: {trap}"))
                }
                other => other,
            }
        })?;
        let end = u64::from(ptr as u32) + u64::from(len as u32);
        if end > self.memory.data_size(&self.store) as u64 {
            return Err(self.broken_allocator(
                name,
                call,
                format!("returned {ptr}: its {len} bytes lie outside the module's memory"),
            ));
        }
        Ok((ptr, len))
    }

    /// Gives room `room` back to the module's allocator.
    pub(crate) fn give_back(
        &mut self,
        name: &str,
        limits: Limits,
        (ptr, len): (i32, i32),
    ) -> Result<(), UdfError> {
        self.ready(name, limits)?;
        self.dealloc.call(&mut self.store, (ptr, len)).map_err(|e| {
            match classify(name, limits, &e) {
                UdfError::Trap { trap, .. } => self.broken_allocator(
                    name,
                    format!("dealloc({ptr}, {len})"),
                    format!("trapped: {trap}"),
                ),
                other => other,
            }
        })
    }

    /// Writes `bytes` at `at` in the module's memory.
    pub(crate) fn write(&mut self, at: i32, bytes: &[u8]) -> Result<(), UdfError> {
        self.memory
            .write(&mut self.store, at as u32 as usize, bytes)
            .map_err(|e| UdfError::Engine(e.to_string()))
    }

    /// The state at `at`.
    pub(crate) fn get(&self, at: i32) -> Result<Vec<u8>, UdfError> {
        let mut out = vec![0; self.size];
        self.memory
            .read(&self.store, at as u32 as usize, &mut out)
            .map_err(|e| UdfError::Engine(e.to_string()))?;
        Ok(out)
    }

    /// Where slot `slot`'s state lies in room starting at `base`.
    pub(crate) fn at(&self, base: i32, slot: usize) -> i32 {
        base.wrapping_add((slot * self.size) as i32)
    }
}
