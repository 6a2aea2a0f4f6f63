//! Inline JavaScript scalar functions: `CREATE FUNCTION bucket(x BIGINT) RETURNS BIGINT
//! LANGUAGE javascript AS $$ return x >> 10 $$`, run by QuickJS (the `rquickjs` crate, which
//! builds QuickJS from the C sources it ships: no download, no toolchain).
//!
//! The sandbox: a context of the language's own objects only (no `require`, no file system,
//! no network, no timers: QuickJS's `std` and `os` modules are not loaded), a memory limit
//! for the whole engine, and a time limit per call counted, like fuel, by QuickJS's
//! interrupt checks (one per about 10 000 loop iterations and calls): deterministic, no wall
//! clock. A call over it is [`UdfError::OutOfFuel`], which stops the query.
//!
//! Types: a `BIGINT` argument is a JavaScript number (exact up to 2^53: a larger one is an
//! error on its row rather than a rounded value), `DOUBLE` a number, `BOOLEAN` a boolean,
//! `VARCHAR` a string. The result must be of the declared type — a number that is an
//! integer within `BIGINT`'s range, a number, a boolean, a string — or `null`/`undefined`
//! for NULL; anything else is an error on its row naming the function and what it returned.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use arrow::array::ArrayRef;
use rquickjs::function::Args;
use rquickjs::{CatchResultExt, CaughtError, Context, Ctx, Function, Runtime, Value};

use crate::call::{Arg, Out};
use crate::columns::each_row;
use crate::{Declaration, Limits, SqlType, UdfError};

/// QuickJS's steps between two interrupt checks (`JS_INTERRUPT_COUNTER_INIT`).
const STEPS_PER_CHECK: u64 = 10_000;

/// The global under which an engine keeps its compiled function (a value cannot be held
/// outside its engine and still be sent between threads).
const FUNCTION: &str = "\u{0}anduin function";

/// The largest integer a JavaScript number holds exactly and alone (`Number.MAX_SAFE_INTEGER`:
/// 2^53 itself is also what 2^53 + 1 rounds to).
const EXACT: i64 = (1 << 53) - 1;

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

/// A JavaScript function, compiled and checked when declared, callable from any thread:
/// each caller at a time gets an engine of its own, kept for later calls; an engine whose
/// call failed is dropped.
pub struct JsFunction {
    declaration: Declaration,
    source: Source,
    limits: Limits,
    idle: Mutex<Vec<Engine>>,
}

impl std::fmt::Debug for JsFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsFunction")
            .field("declaration", &self.declaration.to_string())
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

/// A function's parameters (`x, y`) and body, compiled as `new Function(params, body)`
/// would: the body is a function's body, and nothing in it (a `})`) can reach the top level.
#[derive(Debug, Clone)]
struct Source {
    params: String,
    body: String,
}

/// One QuickJS engine holding the compiled function.
struct Engine {
    /// Kept alive with the context.
    _runtime: Runtime,
    /// Holds the compiled function as a global named [`FUNCTION`].
    context: Context,
    meter: Arc<Meter>,
}

/// The wall-clock backstop of one call: fuel is the limit, deterministic; this stops a call
/// whose steps are long (a loop around a built-in working on megabytes), as for WebAssembly.
const BACKSTOP: std::time::Duration = std::time::Duration::from_secs(10);

/// The current call's time: interrupt checks left, when it began, and whether it was
/// interrupted (and by the backstop).
#[derive(Debug)]
struct Meter {
    left: AtomicU64,
    began: Mutex<std::time::Instant>,
    interrupted: AtomicBool,
    timed_out: AtomicBool,
}

impl Default for Meter {
    fn default() -> Self {
        Meter {
            left: AtomicU64::new(0),
            began: Mutex::new(std::time::Instant::now()),
            interrupted: AtomicBool::new(false),
            timed_out: AtomicBool::new(false),
        }
    }
}

impl Meter {
    fn reset(&self, limits: Limits) {
        self.left.store(checks(limits), Ordering::Relaxed);
        *self.began.lock().unwrap_or_else(PoisonError::into_inner) = std::time::Instant::now();
        self.interrupted.store(false, Ordering::Relaxed);
        self.timed_out.store(false, Ordering::Relaxed);
    }

    /// One interrupt check: whether to interrupt the call.
    fn check(&self) -> bool {
        let out = self
            .left
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .is_err();
        let late = self
            .began
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .elapsed()
            > BACKSTOP;
        if late {
            self.timed_out.store(true, Ordering::Relaxed);
        }
        if out || late {
            self.interrupted.store(true, Ordering::Relaxed);
        }
        out || late
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
        let first = Engine::new(&declaration.name, &source, limits)?;
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
    /// [`crate::WasmFunction::call`].
    pub fn call(&self, args: &[ArrayRef], rows: usize) -> Result<ArrayRef, UdfError> {
        let idle = self
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let mut engine = match idle {
            Some(e) => e,
            None => Engine::new(&self.declaration.name, &self.source, self.limits)?,
        };
        let out = each_row(&self.declaration, args, rows, |row| {
            engine.call(&self.declaration, self.limits, row)
        })?;
        self.idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(engine);
        Ok(out)
    }
}

impl Engine {
    fn new(name: &str, source: &Source, limits: Limits) -> Result<Engine, UdfError> {
        let engine_error = |e: rquickjs::Error| UdfError::Engine(e.to_string());
        let runtime = Runtime::new().map_err(engine_error)?;
        runtime.set_memory_limit(limits.memory_bytes);
        runtime.set_max_stack_size(1 << 20);
        let meter = Arc::new(Meter::default());
        meter.reset(limits);
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
                Err(e) => Err(failure(name, limits, &meter, e).unwrap_or_else(|message| {
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

    /// The function on one row's `args`.
    fn call(
        &mut self,
        declaration: &Declaration,
        limits: Limits,
        args: &[Arg<'_>],
    ) -> Result<Option<Out>, UdfError> {
        let name = &declaration.name;
        self.meter.reset(limits);
        self.context.with(|ctx| {
            let f: Function = ctx
                .globals()
                .get(FUNCTION)
                .map_err(|e| UdfError::Engine(e.to_string()))?;
            let mut call_args = Args::new(ctx.clone(), args.len());
            for a in args {
                let v = to_js(&ctx, name, a)?;
                call_args
                    .push_arg(v)
                    .map_err(|e| UdfError::Engine(e.to_string()))?;
            }
            let result: Result<Value, _> = f.call_arg(call_args).catch(&ctx);
            match result {
                Ok(v) => from_js(name, declaration.result, &v),
                Err(e) => Err(
                    failure(name, limits, &self.meter, e).unwrap_or_else(|message| {
                        UdfError::JsThrew {
                            function: name.clone(),
                            message,
                        }
                    }),
                ),
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

/// The interrupt checks a call gets: its fuel in QuickJS's steps.
fn checks(limits: Limits) -> u64 {
    (limits.fuel / STEPS_PER_CHECK).max(1)
}

/// What a caught error was: running out of time or memory (`Ok`), or else what was thrown
/// (`Err`, its message).
fn failure(
    name: &str,
    limits: Limits,
    meter: &Meter,
    e: CaughtError<'_>,
) -> Result<UdfError, String> {
    if meter.timed_out.load(Ordering::Relaxed) {
        return Ok(UdfError::OutOfTime {
            function: name.to_string(),
            seconds: BACKSTOP.as_secs(),
        });
    }
    if meter.interrupted.load(Ordering::Relaxed) {
        return Ok(UdfError::OutOfFuel {
            function: name.to_string(),
            fuel: limits.fuel,
        });
    }
    let message = match &e {
        CaughtError::Exception(x) => {
            let kind = x
                .get::<_, String>("name")
                .unwrap_or_else(|_| "Error".to_string());
            format!("{kind}: {}", x.message().unwrap_or_default())
        }
        // Not an Error: what it is, without engine internals (an object's address).
        CaughtError::Value(v) => show(v),
        CaughtError::Error(e) => e.to_string(),
    };
    if message.contains("out of memory") {
        return Ok(UdfError::JsMemory {
            function: name.to_string(),
            limit: limits.memory_bytes,
        });
    }
    Err(message)
}

fn to_js<'js>(ctx: &Ctx<'js>, name: &str, a: &Arg<'_>) -> Result<Value<'js>, UdfError> {
    let engine = |e: rquickjs::Error| UdfError::Engine(e.to_string());
    Ok(match *a {
        Arg::I64(v) => {
            if !(-EXACT..=EXACT).contains(&v) {
                return Err(UdfError::JsValue {
                    function: name.to_string(),
                    message: format!("its BIGINT argument {v} is beyond ±(2^53 − 1), which a JavaScript number cannot hold exactly"),
                });
            }
            Value::new_number(ctx.clone(), v as f64)
        }
        // A float, always: a number equal to an integer would become one, and -0.0 would be 0.
        Arg::F64(v) => Value::new_float(ctx.clone(), v),
        Arg::Bool(v) => Value::new_bool(ctx.clone(), v),
        Arg::Str(s) => rquickjs::String::from_str(ctx.clone(), s)
            .map_err(engine)?
            .into_value(),
    })
}

fn from_js(name: &str, declared: SqlType, v: &Value<'_>) -> Result<Option<Out>, UdfError> {
    if v.is_null() || v.is_undefined() {
        return Ok(None);
    }
    let wrong = |found: String| UdfError::JsValue {
        function: name.to_string(),
        message: format!("it returned {found} where {declared} was declared"),
    };
    match declared {
        SqlType::Bigint => {
            let n = v.as_number().ok_or_else(|| wrong(show(v)))?;
            if n.fract() != 0.0 || !(-(EXACT as f64)..=EXACT as f64).contains(&n) {
                return Err(wrong(format!(
                    "the number {n}, not an integer within ±(2^53 − 1) (a larger one may be a rounded value),"
                )));
            }
            Ok(Some(Out::I64(n as i64)))
        }
        SqlType::Double => v
            .as_number()
            .map(|n| Some(Out::F64(n)))
            .ok_or_else(|| wrong(show(v))),
        SqlType::Boolean => v
            .as_bool()
            .map(|b| Some(Out::Bool(b)))
            .ok_or_else(|| wrong(show(v))),
        SqlType::Varchar => match v.as_string() {
            Some(s) => s
                .to_string()
                .map(|s| Some(Out::Str(s)))
                .map_err(|e| UdfError::Engine(e.to_string())),
            None => Err(wrong(show(v))),
        },
    }
}

/// A JavaScript value in an error: its type and, for a scalar, its value.
fn show(v: &Value<'_>) -> String {
    if let Some(n) = v.as_number() {
        format!("the number {n}")
    } else if let Some(b) = v.as_bool() {
        format!("the boolean {b}")
    } else if let Some(s) = v.as_string().and_then(|s| s.to_string().ok()) {
        format!("the string {s:?}")
    } else {
        format!("a value of type {}", v.type_name())
    }
}
