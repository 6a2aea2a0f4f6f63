//! A pool of idle engines — WebAssembly instances (`wasm_aggregate.rs`,
//! `wasm_operator.rs`) or JavaScript workers (`js/aggregate.rs`, `js/operator.rs`) — kept
//! between calls, so that each caller at a time has one of its own and an engine whose
//! call failed is never used again.

use std::sync::{Mutex, PoisonError};

use crate::UdfError;

/// Engines kept between calls: each caller at a time takes one of its own (or a new one),
/// and gives it back only if its job succeeded.
pub(crate) struct Idle<R>(Mutex<Vec<R>>);

impl<R> Idle<R> {
    /// A pool holding `first`.
    pub(crate) fn new(first: R) -> Idle<R> {
        Idle(Mutex::new(vec![first]))
    }

    /// Does `job` on an idle runner, or on one `make` makes. On an error the engine is
    /// dropped: it may be half-way through (a worker whose call still runs is abandoned).
    pub(crate) fn run<T, E: From<UdfError>>(
        &self,
        make: impl FnOnce() -> Result<R, UdfError>,
        job: impl FnOnce(&mut R) -> Result<T, E>,
    ) -> Result<T, E> {
        let idle = self.0.lock().unwrap_or_else(PoisonError::into_inner).pop();
        let mut runner = match idle {
            Some(r) => r,
            None => make()?,
        };
        let out = job(&mut runner)?;
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(runner);
        Ok(out)
    }
}
