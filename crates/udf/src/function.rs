//! One declared function of a module, evaluated on whole columns, one call per row.

use std::sync::{Mutex, PoisonError};

use arrow::array::ArrayRef;

use crate::call::Runner;
use crate::columns::each_row;
use crate::{Declaration, Limits, UdfError, WasmModule};

/// A function of a module, checked against its declaration, ready to call from any thread.
/// Each caller at a time gets an instance of its own, kept for later calls; an instance
/// whose call failed is dropped.
pub struct WasmFunction {
    module: WasmModule,
    declaration: Declaration,
    limits: Limits,
    idle: Mutex<Vec<Runner>>,
}

impl std::fmt::Debug for WasmFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WasmFunction")
            .field("module", &self.module.label)
            .field("declaration", &self.declaration.to_string())
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl WasmFunction {
    /// The function, with a first instance of its module: a module that cannot be
    /// instantiated (its start function traps or runs away, its memory starts over the
    /// limit) is refused here, when the function is declared, rather than on every row.
    pub(crate) fn new(
        module: WasmModule,
        declaration: Declaration,
        limits: Limits,
    ) -> Result<Self, UdfError> {
        let first = Runner::new(&module, &declaration, limits)?;
        Ok(Self {
            module,
            declaration,
            limits,
            idle: Mutex::new(vec![first]),
        })
    }

    /// Its declaration.
    pub fn declaration(&self) -> &Declaration {
        &self.declaration
    }

    /// The module it comes from.
    pub fn module(&self) -> &WasmModule {
        &self.module
    }

    /// Its limits.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// The function on `rows` rows whose arguments are the columns `args` (of the declared
    /// types, in order): one call per row, NULL where an argument is NULL. The first call
    /// that fails fails the whole evaluation.
    pub fn call(&self, args: &[ArrayRef], rows: usize) -> Result<ArrayRef, UdfError> {
        let name = &self.declaration.name;
        let mut runner = self.take()?;
        // On an error the runner is dropped: its instance may be half-way through.
        let out = each_row(&self.declaration, args, rows, |row| {
            runner.call(name, self.limits, row).map(Some)
        })?;
        self.idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(runner);
        Ok(out)
    }

    fn take(&self) -> Result<Runner, UdfError> {
        let idle = self
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        match idle {
            Some(r) => Ok(r),
            None => Runner::new(&self.module, &self.declaration, self.limits),
        }
    }
}
