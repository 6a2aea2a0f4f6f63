//! The sandbox's limits on one call: fuel (time), memory, and the wall-clock backstop.

use std::time::Duration;

use crate::UdfError;

/// How much one instance of a module may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Limits {
    /// Fuel each call gets: about one unit per WebAssembly instruction. Deterministic,
    /// unlike a wall-clock limit: a row that runs out does so on every machine.
    pub fuel: u64,
    /// The most linear memory an instance may have, in bytes (its initial size included);
    /// for JavaScript, the most its engine may allocate.
    pub memory_bytes: usize,
    /// The wall-clock backstop of one call: a call still running after it is stopped
    /// ([`UdfError::OutOfTime`]). Fuel is the limit, deterministic; this stops what fuel
    /// does not count (a WebAssembly bulk memory instruction, a JavaScript built-in that
    /// works on megabytes or never returns). WebAssembly measures it in ticks of 100 ms.
    pub backstop: Duration,
}

impl Limits {
    /// The default fuel per call: ten million instructions, some milliseconds of work.
    pub const DEFAULT_FUEL: u64 = 10_000_000;
    /// The default memory of an instance: 64 MiB.
    pub const DEFAULT_MEMORY_BYTES: usize = 64 << 20;
    /// The default wall-clock backstop of a call: 10 s.
    pub const DEFAULT_BACKSTOP: Duration = Duration::from_secs(10);
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            fuel: Self::DEFAULT_FUEL,
            memory_bytes: Self::DEFAULT_MEMORY_BYTES,
            backstop: Self::DEFAULT_BACKSTOP,
        }
    }
}

/// The most elements a table of an instance may have. Tables hold function references; a
/// UDF needs few.
pub(crate) const TABLE_ELEMENTS: usize = 100_000;

/// The `ResourceLimiter` of one instance's store.
#[derive(Debug)]
pub(crate) struct Limiter {
    pub function: String,
    pub memory_bytes: usize,
    /// Whether the instance is being created: its memories and tables get their initial
    /// sizes, and a size over the limit means the module can never run.
    pub instantiating: bool,
}

/// An initial size over the limit, found while a module was instantiated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum InitialSize {
    /// The memory's minimum size.
    #[error("its memory's initial size of {desired} bytes is beyond the limit of {limit} bytes")]
    Memory { desired: usize, limit: usize },
    /// A table's minimum size.
    #[error("its table's initial size of {desired} elements is beyond the limit of {limit}")]
    Table { desired: usize, limit: usize },
}

impl wasmtime::ResourceLimiter for Limiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired <= self.memory_bytes {
            return Ok(true);
        }
        let limit = self.memory_bytes;
        if self.instantiating {
            return Err(wasmtime::Error::new(InitialSize::Memory { desired, limit }));
        }
        Err(wasmtime::Error::new(UdfError::Memory {
            function: self.function.clone(),
            desired,
            limit,
        }))
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired <= TABLE_ELEMENTS {
            return Ok(true);
        }
        if self.instantiating {
            return Err(wasmtime::Error::new(InitialSize::Table {
                desired,
                limit: TABLE_ELEMENTS,
            }));
        }
        // `table.grow` fails (returns -1), as the specification allows.
        Ok(false)
    }
}
