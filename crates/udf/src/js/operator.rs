//! Inline JavaScript operators: `CREATE FUNCTION first_bid(price BIGINT, ts BIGINT) RETURNS
//! TABLE (price BIGINT) LANGUAGE javascript AS $$ … $$`, called in FROM with a table
//! partitioned by its keys (`FROM first_bid(input => TABLE bids PARTITION BY auction)`),
//! whose body is a module exporting the operator's functions:
//!
//! | export | required | does |
//! |---|---|---|
//! | `process(state, a, …)` | yes | called for each row of the key, with its columns; returns the key's state (`null`: none); may `emit(…)` rows |
//! | `create_state()` | no | the state of a key before its first row (without it: `null`) |
//! | `timer(state)` | no | the event time at which the key's `on_timer` is due (`null`: none) |
//! | `on_timer(state, watermark)` | with `timer` | called once the watermark reaches the key's timer; returns the state; may `emit(…)` rows |
//!
//! `emit(v1, v2, …)` (a global function) emits one row of the declared columns, in order.
//! A key's state lives in anduin as JSON text, checked as an aggregate's is, so that a
//! checkpoint holds it and a restore gives it back.

use std::sync::Arc;

use super::operator_engine::OpEngine;
use super::sandbox::Sandbox;
use super::worker;
use crate::idle::Idle;
use crate::operator::{user_operator, OpAnswer, OpFailure, OpJob, OperatorDeclaration};
use crate::{Limits, UdfError};

/// What a JavaScript operator's engine is asked.
enum Ask {
    /// Whether the body exports `timer` and `on_timer`.
    Describe,
    /// A job.
    Work(OpJob),
}

/// An engine's answer to an [`Ask`].
enum Told {
    Timers(bool),
    /// A job done, or failed at a call (the engine is not used again).
    Done(Result<OpAnswer, OpFailure>),
}

type Worker = worker::Worker<Ask, Told>;

/// A JavaScript operator, compiled and checked when declared, callable from any thread:
/// each caller at a time gets an engine of its own (on a thread of its own), kept for later
/// calls; an engine whose call failed is dropped.
pub struct JsOperator {
    declaration: Arc<OperatorDeclaration>,
    body: Arc<str>,
    limits: Limits,
    timers: bool,
    idle: Idle<Worker>,
}

impl std::fmt::Debug for JsOperator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsOperator")
            .field("declaration", &self.declaration.to_string())
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl JsOperator {
    /// `declaration` with `body`, a module exporting the operator's functions, compiled and
    /// run once now: a body that does not compile, whose top level runs away or throws, that
    /// exports no `process`, or `timer` without `on_timer` (or the reverse), is an error
    /// here, naming the operator.
    ///
    /// # Examples
    /// ```
    /// use std::sync::Arc;
    /// use anduin_expr::UserOperator;
    /// use anduin_udf::{JsOperator, Limits, OperatorDeclaration};
    /// use arrow::array::{Array, ArrayRef, Int64Array};
    /// let every_2nd = JsOperator::new(
    ///     OperatorDeclaration::parse("every_2nd(v BIGINT) -> TABLE(n BIGINT, v BIGINT)").expect("declaration"),
    ///     "export function create_state() { return 0 }
    ///      export function process(n, v) { n += 1; if (n % 2 == 0) emit(n, v); return n }",
    ///     Limits::default(),
    /// ).expect("compiles");
    /// let v: ArrayRef = Arc::new(Int64Array::from(vec![10, 20, 30]));
    /// // Rows 0 and 2 are key 0's (its state in slot 0), row 1 key 1's.
    /// let out = every_2nd.process(vec![None, Some(b"1".to_vec())], &[v], &[(0, 0), (1, 1), (2, 0)])
    ///     .expect("no throw");
    /// assert_eq!(out.states, vec![Some(b"2".to_vec()), Some(b"2".to_vec())], "states are JSON text");
    /// assert_eq!(out.slots, vec![1, 0], "key 1 emitted first");
    /// assert_eq!(out.columns[1].as_any().downcast_ref::<Int64Array>(), Some(&Int64Array::from(vec![20, 30])));
    /// ```
    pub fn new(
        declaration: OperatorDeclaration,
        body: &str,
        limits: Limits,
    ) -> Result<Self, UdfError> {
        let declaration = Arc::new(declaration);
        let body: Arc<str> = Arc::from(body);
        let first = start(&declaration, &body, limits)?;
        let timers = match first.call(Ask::Describe)? {
            Told::Timers(t) => t,
            Told::Done(_) => return Err(lost(&declaration.name)),
        };
        Ok(JsOperator {
            declaration,
            body,
            limits,
            timers,
            idle: Idle::new(first),
        })
    }

    /// Its declaration: the columns `process` takes after the state, and those it emits.
    pub fn declaration(&self) -> &OperatorDeclaration {
        &self.declaration
    }

    /// Whether it exports `timer` and `on_timer`.
    pub fn has_timers(&self) -> bool {
        self.timers
    }

    /// Does `job` on an engine of its own.
    fn run(&self, job: OpJob) -> Result<OpAnswer, OpFailure> {
        self.idle.run(
            || start(&self.declaration, &self.body, self.limits),
            |worker| match worker.call(Ask::Work(job))? {
                Told::Done(done) => done,
                Told::Timers(_) => Err(lost(&self.declaration.name).into()),
            },
        )
    }
}

user_operator!(JsOperator);

/// An engine for `declaration` with `body` on a thread of its own.
fn start(
    declaration: &Arc<OperatorDeclaration>,
    body: &Arc<str>,
    limits: Limits,
) -> Result<Worker, UdfError> {
    let sandbox = Sandbox::new(limits)?;
    let meter = Arc::clone(&sandbox.meter);
    let (d, b) = (Arc::clone(declaration), Arc::clone(body));
    Worker::start(
        &declaration.name,
        meter,
        limits,
        move || OpEngine::new(sandbox, d, &b, limits),
        |engine, ask| match ask {
            Ask::Describe => Ok(Told::Timers(engine.has_timers())),
            Ask::Work(job) => Ok(Told::Done(engine.run(&job))),
        },
    )
}

fn lost(name: &str) -> UdfError {
    UdfError::Engine(format!(
        "the JavaScript engine of operator `{name}` answered another question (a bug in anduin)"
    ))
}
