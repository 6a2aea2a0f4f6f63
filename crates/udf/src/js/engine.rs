//! One QuickJS engine holding one compiled function, and one call of it: the fuel counted
//! from the call's start, and a failure classified by what the engine saw happen.

use std::sync::Arc;

use rquickjs::function::Args;
use rquickjs::{CatchResultExt, CaughtError, Context, Ctx, Function, Runtime, Value};

use super::meter::{Halt, Meter, Metered};
use super::values::{from_js, show, to_js};
use crate::call::{Arg, Out};
use crate::{Declaration, Limits, UdfError};

/// QuickJS's steps between two interrupt checks (`JS_INTERRUPT_COUNTER_INIT`).
const STEPS_PER_CHECK: u64 = 10_000;

/// The global under which an engine keeps its compiled function (a value cannot be held
/// outside its engine and still be sent between threads).
const FUNCTION: &str = "\u{0}anduin function";

/// Run once in every engine after the function is compiled: what would make a call depend on
/// anything but its arguments is taken away — the clock (`Date.now()`, `new Date()` without
/// arguments, `performance`) and `Math.random()` throw, saying why — and the language's own
/// objects and the global object are frozen, so that no call leaves anything behind for the
/// next (a replayed row must be computed again the same). The body runs in strict mode, where
/// writing to a frozen object throws rather than doing nothing.
const LOCKDOWN: &str = r#"(() => {
  const deny = (what) => function () {
    throw new Error(what + " is not available in a user-defined function: it must give the same result for the same arguments");
  };
  Math.random = deny("Math.random()");
  const RealDate = Date;
  const SafeDate = function Date(...args) {
    if (new.target === undefined || args.length === 0) {
      deny("the current time (Date() or new Date() without arguments)")();
    }
    return new RealDate(...args);
  };
  SafeDate.prototype = RealDate.prototype;
  SafeDate.UTC = RealDate.UTC;
  SafeDate.parse = RealDate.parse;
  SafeDate.now = deny("Date.now()");
  Object.defineProperty(RealDate.prototype, "constructor", { value: SafeDate });
  globalThis.Date = SafeDate;
  delete globalThis.performance;
  for (const k of Reflect.ownKeys(globalThis)) {
    const v = globalThis[k];
    if (v !== null && (typeof v === "object" || typeof v === "function")) {
      Object.freeze(v);
      if (v.prototype) Object.freeze(v.prototype);
    }
  }
  Object.freeze(Object.getPrototypeOf(function* () {}));
  Object.freeze(Object.getPrototypeOf(async function () {}));
  Object.freeze(globalThis);
})();"#;

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
    /// Kept alive with the context.
    _runtime: Runtime,
    /// Holds the compiled function as a global named [`FUNCTION`].
    context: Context,
    meter: Arc<Meter>,
}

/// How a call (or the compilation) failed, as the engine saw it.
enum Failure {
    /// The interrupt handler stopped it: its fuel was spent.
    Fuel,
    /// The allocator refused it memory beyond the limit.
    Memory,
    /// The watchdog stopped it.
    Halted(Halt),
    /// It threw this (`TypeError: x.foo is not a function`).
    Threw(String),
    /// Anything else, already named.
    Udf(UdfError),
}

impl Failure {
    /// A caught exception, classified by the engine's flags first: what ran out is never
    /// read from the exception's text.
    fn of(meter: &Meter, e: &CaughtError<'_>) -> Failure {
        if let Some(halt) = meter.halted() {
            return Failure::Halted(halt);
        }
        if meter.out_of_fuel() {
            return Failure::Fuel;
        }
        if meter.out_of_memory() {
            return Failure::Memory;
        }
        Failure::Threw(match e {
            CaughtError::Exception(x) => {
                let kind = x
                    .get::<_, String>("name")
                    .unwrap_or_else(|_| "Error".to_string());
                format!("{kind}: {}", x.message().unwrap_or_default())
            }
            // Not an Error: what it is, without engine internals (an object's address).
            CaughtError::Value(v) => show(v),
            CaughtError::Error(e) => e.to_string(),
        })
    }

    /// An error of rquickjs outside a call (a value that cannot be made), classified as
    /// [`Failure::of`] does.
    fn engine(meter: &Meter, e: &rquickjs::Error) -> Failure {
        match meter.halted() {
            Some(halt) => Failure::Halted(halt),
            None if meter.out_of_memory() => Failure::Memory,
            None => Failure::Udf(UdfError::Engine(e.to_string())),
        }
    }

    /// The error naming function `name`; what it threw is `threw(message)`.
    fn named(self, name: &str, limits: Limits, threw: impl FnOnce(String) -> UdfError) -> UdfError {
        let function = name.to_string();
        match self {
            Failure::Fuel => UdfError::OutOfFuel {
                function,
                fuel: limits.fuel,
            },
            Failure::Memory => UdfError::JsMemory {
                function,
                limit: limits.memory_bytes,
            },
            Failure::Halted(Halt::Time) => UdfError::OutOfTime {
                function,
                limit: limits.backstop,
            },
            Failure::Halted(Halt::Stopping) => UdfError::Stopped {
                function,
                grace: crate::stop::GRACE,
            },
            Failure::Threw(message) => threw(message),
            Failure::Udf(e) => e,
        }
    }
}

impl Engine {
    /// An engine with `source` compiled as function `name`: a body that does not compile,
    /// or whose top level runs away or throws, is an error here.
    pub(super) fn new(name: &str, source: &Source, limits: Limits) -> Result<Engine, UdfError> {
        let meter = Meter::new(limits.memory_bytes);
        meter.begin(checks(limits));
        let engine_error = |e: rquickjs::Error| UdfError::Engine(e.to_string());
        let runtime = Runtime::new_with_alloc(Metered {
            meter: Arc::clone(&meter),
        })
        .map_err(engine_error)?;
        runtime.set_max_stack_size(1 << 20);
        let check = Arc::clone(&meter);
        runtime.set_interrupt_handler(Some(Box::new(move || check.check())));
        let context = Context::full(&runtime).map_err(engine_error)?;
        context.with(|ctx| {
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
                    ctx.eval::<(), _>(LOCKDOWN)
                        .map_err(|e| UdfError::Engine(e.to_string()))
                }
                Err(e) => Err(Failure::of(&meter, &e).named(name, limits, |message| {
                    UdfError::JsCompile {
                        function: name.to_string(),
                        message,
                    }
                })),
            }
        })?;
        Ok(Engine {
            _runtime: runtime,
            context,
            meter,
        })
    }

    /// What bounds its calls: shared with the watchdog of the thread waiting for them.
    pub(super) fn meter(&self) -> &Arc<Meter> {
        &self.meter
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
                self.align();
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
        self.meter.begin(checks(limits));
        self.context.with(|ctx| {
            let engine = |e: rquickjs::Error| Failure::engine(&self.meter, &e);
            let f: Function = ctx.globals().get(FUNCTION).map_err(engine)?;
            let mut call_args = Args::new(ctx.clone(), args.len());
            for a in args {
                let v = to_js(&ctx, name, a).map_err(Failure::Udf)?;
                call_args.push_arg(v).map_err(engine)?;
            }
            let result: Result<Value, _> = f.call_arg(call_args).catch(&ctx);
            match result {
                Ok(v) => from_js(name, declaration.result, &v).map_err(|e| match e {
                    UdfError::Engine(_) if self.meter.out_of_memory() => Failure::Memory,
                    e => Failure::Udf(e),
                }),
                Err(e) => Err(Failure::of(&self.meter, &e)),
            }
        })
    }

    /// Runs QuickJS's count of steps on to its next interrupt check, after which it holds a
    /// full [`STEPS_PER_CHECK`]: a loop that the first check stops.
    fn align(&self) {
        self.meter.begin(0);
        self.context.with(|ctx| {
            let _ = ctx.eval::<(), _>("for (;;) {}").catch(&ctx);
        });
    }
}

/// `source` as a function, through JavaScript's own `Function` constructor.
fn compile<'js>(ctx: &Ctx<'js>, source: &Source) -> rquickjs::Result<Function<'js>> {
    let constructor: rquickjs::function::Constructor = ctx.globals().get("Function")?;
    // On the body's first line: QuickJS's line numbers stay the body's.
    let body = format!("\"use strict\"; {}", source.body);
    constructor.construct((source.params.as_str(), body.as_str()))
}

/// The interrupt checks a call gets: its fuel in QuickJS's steps.
fn checks(limits: Limits) -> u64 {
    (limits.fuel / STEPS_PER_CHECK).max(1)
}
