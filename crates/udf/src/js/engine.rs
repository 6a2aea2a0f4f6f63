//! One QuickJS engine holding one compiled scalar function, and one call of it: the fuel
//! counted from the call's start, and a failure classified by what the engine saw happen.

use std::sync::Arc;

use rquickjs::function::Args;
use rquickjs::{CatchResultExt, Ctx, Function, Value};

use super::meter::Meter;
use super::sandbox::{checks, Failure, Sandbox};
use super::values::{from_js, to_js};
use crate::call::{Arg, Out};
use crate::{Declaration, Limits, UdfError};

/// The global under which an engine keeps its compiled function (a value cannot be held
/// outside its engine and still be sent between threads).
const FUNCTION: &str = "\u{0}anduin function";

/// A function's parameters (`x, y`) and body, compiled as `new Function(params, body)`
/// would: the body is a function's body, and nothing in it (a `})`) can reach the top level.
#[derive(Debug, Clone)]
pub(super) struct Source {
    pub(super) params: String,
    pub(super) body: String,
}

/// One QuickJS engine holding the compiled function. `Send` (rquickjs's `parallel`), used
/// by one thread at a time.
pub(super) struct Engine {
    sandbox: Sandbox,
}

impl Engine {
    /// An engine with `source` compiled as function `name`: a body that does not compile,
    /// or whose top level runs away or throws, is an error here. The lockdown runs after
    /// the body is compiled (which runs none of it).
    pub(super) fn new(name: &str, source: &Source, limits: Limits) -> Result<Engine, UdfError> {
        let sandbox = Sandbox::new(limits)?;
        let meter = &sandbox.meter;
        sandbox.context.with(|ctx| {
            let compiled: Result<Function, _> = compile(&ctx, source).catch(&ctx);
            match compiled {
                Ok(f) => {
                    let escaped = || UdfError::JsCompile {
                        function: name.to_string(),
                        message: "its body closes the function it is the body of (a `})` in it): write a function body".into(),
                    };
                    // The Function constructor pastes the body into a function's source: a
                    // body that closes it reaches the top level. Its source must be exactly
                    // the function around the body.
                    let text: String = f
                        .get::<_, Function>("toString")
                        .and_then(|t| t.call((rquickjs::function::This(f.clone()),)))
                        .map_err(|_| escaped())?;
                    if !text.starts_with("function anonymous(") || !text.ends_with(&format!("{}\n}}", source.body)) {
                        return Err(escaped());
                    }
                    // Neither reassigned nor removed by a call.
                    let define: Function = ctx
                        .eval("(g, k, f) => Object.defineProperty(g, k, { value: f, writable: false, configurable: false, enumerable: false })")
                        .map_err(|e| UdfError::Engine(e.to_string()))?;
                    define
                        .call::<_, Value>((ctx.globals(), FUNCTION, f))
                        .map_err(|e| UdfError::Engine(e.to_string()))?;
                    Ok(())
                }
                Err(e) => Err(Failure::of(meter, &e).named(name, limits, |message| {
                    UdfError::JsCompile {
                        function: name.to_string(),
                        message,
                    }
                })),
            }
        })?;
        sandbox.lock_down()?;
        Ok(Engine { sandbox })
    }

    /// What bounds its calls: shared with the watchdog of the thread waiting for them.
    pub(super) fn meter(&self) -> &Arc<Meter> {
        &self.sandbox.meter
    }

    /// The function on one row's `args`, with `limits.fuel` counted from the call's start.
    pub(super) fn call(
        &mut self,
        declaration: &Declaration,
        limits: Limits,
        args: &[Arg<'_>],
    ) -> Result<Option<Out>, UdfError> {
        let name = &declaration.name;
        let threw = |message| UdfError::JsThrew {
            function: name.clone(),
            message,
        };
        match self.invoke(declaration, limits, args) {
            // QuickJS counts steps to its next interrupt check across calls: this call's
            // first check came after 1 to 10 000 of its own steps, as the calls before it
            // left the count, so it may have had one check more than a call that begins on
            // a full count. One that did not run out would not have from a full count either;
            // one that did is run again from a full count, to fail or not as it would
            // whatever ran before it (functions are pure: running a row twice is allowed).
            Err(Failure::Fuel) => {
                self.sandbox.align();
                self.invoke(declaration, limits, args)
                    .map_err(|f| f.named(name, limits, threw))
            }
            other => other.map_err(|f| f.named(name, limits, threw)),
        }
    }

    fn invoke(
        &self,
        declaration: &Declaration,
        limits: Limits,
        args: &[Arg<'_>],
    ) -> Result<Option<Out>, Failure> {
        let name = &declaration.name;
        let meter = &self.sandbox.meter;
        meter.begin(checks(limits));
        self.sandbox.context.with(|ctx| {
            let engine = |e: rquickjs::Error| Failure::engine(meter, &e);
            let f: Function = ctx.globals().get(FUNCTION).map_err(engine)?;
            let mut call_args = Args::new(ctx.clone(), args.len());
            for a in args {
                let v = to_js(&ctx, name, a).map_err(|e| Failure::Udf(Box::new(e)))?;
                call_args.push_arg(v).map_err(engine)?;
            }
            let result: Result<Value, _> = f.call_arg(call_args).catch(&ctx);
            match result {
                Ok(v) => {
                    from_js(name, declaration.result, &v).map_err(|e| Failure::value(meter, e))
                }
                Err(e) => Err(Failure::of(meter, &e)),
            }
        })
    }
}

/// `source` as a function, through JavaScript's own `Function` constructor.
fn compile<'js>(ctx: &Ctx<'js>, source: &Source) -> rquickjs::Result<Function<'js>> {
    let constructor: rquickjs::function::Constructor = ctx.globals().get("Function")?;
    // On the body's first line: QuickJS's line numbers stay the body's.
    let body = format!("\"use strict\"; {}", source.body);
    constructor.construct((source.params.as_str(), body.as_str()))
}
