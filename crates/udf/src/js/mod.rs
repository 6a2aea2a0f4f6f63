//! Inline JavaScript scalar functions: `CREATE FUNCTION bucket(x BIGINT) RETURNS BIGINT
//! LANGUAGE javascript AS $$ return x >> 10 $$`, run by QuickJS (the `rquickjs` crate, which
//! builds QuickJS from the C sources it ships: no download, no toolchain).
//!
//! The sandbox: a context of the language's own objects only (no `require`, no file system,
//! no network, no timers: QuickJS's `std` and `os` modules are not loaded), a memory limit
//! for the whole engine (counted by its allocator, [`meter`]), and a time limit per call
//! counted, like fuel, by QuickJS's interrupt checks (one per 10 000 steps: loop iterations,
//! calls, steps of a regular expression), from the call's start whatever ran before it
//! ([`engine`]): deterministic, no wall clock. A call over it is [`UdfError::OutOfFuel`],
//! which stops the query. What the checks do not reach — a built-in call that works on
//! megabytes or never returns — the wall-clock backstop stops ([`worker`]).
//!
//! Types: a `BIGINT` argument is a JavaScript number (exact up to 2^53: a larger one is an
//! error on its row rather than a rounded value), `DOUBLE` a number, `BOOLEAN` a boolean,
//! `VARCHAR` a string. The result must be of the declared type — a number that is an
//! integer within `BIGINT`'s range, a number, a boolean, a string — or `null`/`undefined`
//! for NULL; anything else is an error on its row naming the function and what it returned.

mod aggregate;
mod aggregate_engine;
mod aggregate_states;
mod engine;
mod meter;
mod module_body;
mod operator;
mod operator_engine;
mod sandbox;
mod values;
mod worker;

use std::sync::{Arc, Mutex, PoisonError};

use arrow::array::ArrayRef;

use crate::columns::each_row;
use crate::{Declaration, Limits, UdfError};
pub use aggregate::JsAggregate;
use engine::{Engine, Source};
pub use operator::JsOperator;

/// A scalar function's engine on its thread: given a batch's argument columns and its
/// number of rows, it answers the result column.
type Worker = worker::Worker<(Vec<ArrayRef>, usize), ArrayRef>;

/// `engine` on a thread of its own, calling `declaration` on the rows of each batch.
fn start(
    engine: Engine,
    declaration: &Arc<Declaration>,
    limits: Limits,
) -> Result<Worker, UdfError> {
    let meter = Arc::clone(engine.meter());
    let d = Arc::clone(declaration);
    Worker::start(
        &declaration.name,
        meter,
        limits,
        move || Ok(engine),
        move |engine, (args, rows): (Vec<ArrayRef>, usize)| {
            each_row(&d, &args, rows, |row| engine.call(&d, limits, row))
        },
    )
}

/// A JavaScript function, compiled and checked when declared, callable from any thread:
/// each caller at a time gets an engine of its own (on a thread of its own), kept for later
/// calls; an engine whose call failed is dropped.
pub struct JsFunction {
    declaration: Arc<Declaration>,
    source: Source,
    limits: Limits,
    idle: Mutex<Vec<Worker>>,
}

impl std::fmt::Debug for JsFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsFunction")
            .field("declaration", &self.declaration.to_string())
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl JsFunction {
    /// `declaration` with argument names `arg_names` and body `body` (the text between
    /// `$$`s), compiled once now: a body that does not compile, or whose top level runs
    /// away or throws, is an error here, naming the function.
    pub fn new(
        declaration: Declaration,
        arg_names: &[String],
        body: &str,
        limits: Limits,
    ) -> Result<JsFunction, UdfError> {
        if arg_names.len() != declaration.args.len() {
            return Err(UdfError::Declaration {
                text: declaration.to_string(),
                message: format!(
                    "{} argument names for {} arguments",
                    arg_names.len(),
                    declaration.args.len()
                ),
            });
        }
        let source = Source {
            params: arg_names.join(", "),
            body: body.to_string(),
        };
        let declaration = Arc::new(declaration);
        let first = Engine::new(&declaration.name, &source, limits)?;
        let first = start(first, &declaration, limits)?;
        Ok(JsFunction {
            declaration,
            source,
            limits,
            idle: Mutex::new(vec![first]),
        })
    }

    /// Its declaration.
    pub fn declaration(&self) -> &Declaration {
        &self.declaration
    }

    /// The function on `rows` rows whose arguments are the columns `args`, as
    /// [`crate::WasmFunction::call`]. Each row's call gets the function's fuel, counted from
    /// its start: whether it runs out does not depend on the rows before it or on how the
    /// rows are cut into batches.
    pub fn call(&self, args: &[ArrayRef], rows: usize) -> Result<ArrayRef, UdfError> {
        let idle = self
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let worker = match idle {
            Some(w) => w,
            None => start(
                Engine::new(&self.declaration.name, &self.source, self.limits)?,
                &self.declaration,
                self.limits,
            )?,
        };
        // On an error the worker is dropped (and abandoned if its call is still running).
        let out = worker.call((args.to_vec(), rows))?;
        self.idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(worker);
        Ok(out)
    }
}
