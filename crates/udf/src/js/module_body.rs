//! The making of a stateful JavaScript engine, an aggregate's (`aggregate_engine.rs`) or an
//! operator's (`operator_engine.rs`): anduin's state helpers (JSON's `parse`, and `save`)
//! made before the lockdown, then the lockdown, then the user's body run as a module and its
//! exports looked up.
//!
//! What it is not: which exports a kind needs, nor its calls (those stay with each engine).

use rquickjs::module::Evaluated;
use rquickjs::{CatchResultExt, Ctx, Function, Module, Persistent, Value};

use super::aggregate_states::HELPERS;
use super::sandbox::{checks, Failure, Sandbox};
use crate::{Limits, UdfError};

/// A function kept across calls of the context.
pub(super) type Kept = Persistent<Function<'static>>;

/// An error of the engine itself.
pub(super) fn engine(e: rquickjs::Error) -> UdfError {
    UdfError::Engine(e.to_string())
}

/// anduin's state helpers, `(parse, save)`: made before the lockdown (see [`HELPERS`]).
pub(super) fn state_helpers(sandbox: &Sandbox) -> Result<(Kept, Kept), UdfError> {
    sandbox.context.with(|ctx| {
        let helpers: rquickjs::Array = ctx.eval(HELPERS).map_err(engine)?;
        let parse: Function = helpers.get(0).map_err(engine)?;
        let save: Function = helpers.get(1).map_err(engine)?;
        Ok((Persistent::save(&ctx, parse), Persistent::save(&ctx, save)))
    })
}

/// A module that ran, and how to say what is wrong with its body.
pub(super) struct Exported<'js, 'a> {
    module: Module<'js, Evaluated>,
    body_error: &'a dyn Fn(String) -> UdfError,
}

impl<'js> Exported<'js, '_> {
    /// The function the module exports as `key` (`None`: it exports nothing so named); one
    /// exported as something else is an error, showing `usage`.
    pub(super) fn get(&self, key: &str, usage: &str) -> Result<Option<Function<'js>>, UdfError> {
        let v: Value = self.module.get(key).map_err(engine)?;
        if v.is_undefined() {
            return Ok(None);
        }
        v.into_function().map(Some).ok_or_else(|| {
            (self.body_error)(format!(
                "it exports `{key}` as something other than a function: write `export function {usage} {{ … }}`"
            ))
        })
    }
}

/// Locks `sandbox` down, runs `body` as module `name` (its top level metered by `limits`),
/// and hands its exports to `take`. A body that does not compile or throws is
/// [`UdfError::JsCompile`]; one whose top level waits forever, `body_error`'s.
pub(super) fn run_body<T>(
    sandbox: &Sandbox,
    name: &str,
    body: &str,
    limits: Limits,
    body_error: &dyn Fn(String) -> UdfError,
    take: impl for<'js> FnOnce(&Ctx<'js>, &Exported<'js, '_>) -> Result<T, UdfError>,
) -> Result<T, UdfError> {
    sandbox.lock_down()?;
    sandbox.meter.begin(checks(limits));
    let meter = &sandbox.meter;
    let named = |f: Failure| {
        f.named(name, limits, |message| UdfError::JsCompile {
            function: name.to_string(),
            message,
        })
    };
    sandbox.context.with(|ctx| {
        let declared = Module::declare(ctx.clone(), name, body)
            .catch(&ctx)
            .map_err(|e| named(Failure::of(meter, &e)))?;
        let (module, done) = declared
            .eval()
            .catch(&ctx)
            .map_err(|e| named(Failure::of(meter, &e)))?;
        match done.finish::<Value>() {
            Err(rquickjs::Error::WouldBlock) => {
                return Err(body_error(
                    "its top level waits (`await`) for something that never comes".into(),
                ))
            }
            other => {
                other
                    .catch(&ctx)
                    .map_err(|e| named(Failure::of(meter, &e)))?;
            }
        }
        take(&ctx, &Exported { module, body_error })
    })
}
