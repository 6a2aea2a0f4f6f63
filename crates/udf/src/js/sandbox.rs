//! What every engine of a JavaScript function shares: a QuickJS runtime and context bounded
//! by a [`Meter`] (fuel through the interrupt handler, memory through the allocator), the
//! lockdown that makes a call depend on its arguments alone, and the classification of a
//! failed call by what the engine saw happen.

use std::sync::Arc;

use rquickjs::{CatchResultExt, CaughtError, Context, Ctx, Runtime};

use super::meter::{Halt, Meter, Metered};
use super::values::show;
use crate::{Limits, UdfError};

/// QuickJS's steps between two interrupt checks (`JS_INTERRUPT_COUNTER_INIT`).
const STEPS_PER_CHECK: u64 = 10_000;

/// Run once in every engine before anything of the user's runs (or, for a scalar function,
/// after its body is compiled, which runs nothing): what would make a call depend on
/// anything but its arguments is taken away — the clock (`Date.now()`, `new Date()` without
/// arguments, `performance`) and `Math.random()` throw, saying why — and the language's own
/// objects and the global object are frozen, so that no call leaves anything behind for the
/// next (a replayed row must be computed again the same). Code runs in strict mode, where
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

/// A QuickJS runtime and context whose work the [`Meter`] bounds.
pub(super) struct Sandbox {
    /// Holds everything; dropped before the runtime.
    pub(super) context: Context,
    /// Kept alive with the context.
    _runtime: Runtime,
    pub(super) meter: Arc<Meter>,
}

/// How a call (or the compilation) failed, as the engine saw it.
pub(super) enum Failure {
    /// The interrupt handler stopped it: its fuel was spent.
    Fuel,
    /// The allocator refused it memory beyond the limit.
    Memory,
    /// The watchdog stopped it.
    Halted(Halt),
    /// It threw this (`TypeError: x.foo is not a function`).
    Threw(String),
    /// Anything else, already named (boxed: a failure travels in every call's result).
    Udf(Box<UdfError>),
}

impl Failure {
    /// A caught exception, classified by the engine's flags first: what ran out is never
    /// read from the exception's text.
    pub(super) fn of(meter: &Meter, e: &CaughtError<'_>) -> Failure {
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
    pub(super) fn engine(meter: &Meter, e: &rquickjs::Error) -> Failure {
        match meter.halted() {
            Some(halt) => Failure::Halted(halt),
            None if meter.out_of_memory() => Failure::Memory,
            None => Failure::Udf(Box::new(UdfError::Engine(e.to_string()))),
        }
    }

    /// A failure found in a value the engine gave back (one that is not of the declared
    /// type), unless the engine ran out of memory making it.
    pub(super) fn value(meter: &Meter, e: UdfError) -> Failure {
        match e {
            UdfError::Engine(_) if meter.out_of_memory() => Failure::Memory,
            e => Failure::Udf(Box::new(e)),
        }
    }

    /// The error naming function `name`; what it threw is `threw(message)`.
    pub(super) fn named(
        self,
        name: &str,
        limits: Limits,
        threw: impl FnOnce(String) -> UdfError,
    ) -> UdfError {
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
            Failure::Udf(e) => *e,
        }
    }
}

impl Sandbox {
    /// A runtime and a full context (the language's own objects only: no `std`, no `os`, no
    /// module loader), bounded by `limits`; the meter starts with one call's fuel, for what
    /// runs first.
    pub(super) fn new(limits: Limits) -> Result<Sandbox, UdfError> {
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
        Ok(Sandbox {
            context,
            _runtime: runtime,
            meter,
        })
    }

    /// Takes away the clock and randomness and freezes the global objects ([`LOCKDOWN`]).
    pub(super) fn lock_down(&self) -> Result<(), UdfError> {
        self.context.with(|ctx| {
            ctx.eval::<(), _>(LOCKDOWN)
                .map_err(|e| UdfError::Engine(e.to_string()))
        })
    }

    /// Runs QuickJS's count of steps on to its next interrupt check, after which it holds a
    /// full [`STEPS_PER_CHECK`]: a loop that the first check stops.
    pub(super) fn align(&self) {
        self.context.with(|ctx| align(&self.meter, &ctx));
    }
}

/// [`Sandbox::align`] from within the context.
pub(super) fn align(meter: &Meter, ctx: &Ctx<'_>) {
    meter.begin(0);
    let _ = ctx.eval::<(), _>("for (;;) {}").catch(ctx);
}

/// The interrupt checks a call gets: its fuel in QuickJS's steps.
pub(super) fn checks(limits: Limits) -> u64 {
    (limits.fuel / STEPS_PER_CHECK).max(1)
}
