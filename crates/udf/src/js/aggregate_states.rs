//! The states of one job of an aggregate as its functions see them: read from their JSON
//! text (or made by `create_state()`), stepped by calls that each get their own fuel, and
//! written back as JSON, checked to be plain data by anduin's helpers (made before the
//! lockdown, so that nothing of the user's can change them).

use std::collections::BTreeSet;

use rquickjs::function::Args;
use rquickjs::{CatchResultExt, Ctx, Function, Value};

use super::sandbox::{align, checks, Failure, Sandbox};
use super::values::show;
use crate::{Limits, UdfError};

/// anduin's helpers, made before the lockdown: `[parse, save]`. `save(state)` is the state as
/// JSON text, or `[what]` where `what` says what in it JSON would not give back the same
/// (`NaN`, `undefined`, `a Map`, a function…), so that a checkpointed state is the state.
pub(super) const HELPERS: &str = r#"(() => {
  "use strict";
  const stringify = JSON.stringify;
  const getPrototypeOf = Object.getPrototypeOf;
  const ownNames = Object.getOwnPropertyNames;
  const ownSymbols = Object.getOwnPropertySymbols;
  const keys = Object.keys;
  const isFinite = Number.isFinite;
  const plainObject = Object.prototype;
  const plainArray = Array.prototype;
  const kind = (v) => {
    switch (typeof v) {
      case "string":
      case "boolean":
        return null;
      case "number":
        return isFinite(v) ? null : String(v);
      case "undefined":
        return "undefined";
      case "object": {
        if (v === null) return null;
        const p = getPrototypeOf(v);
        if (p === plainObject || p === plainArray || p === null) {
          // What JSON would write otherwise than the object is: a `toJSON` method writes
          // what it returns, and hidden or symbol-keyed properties are left out.
          if ("toJSON" in v) return "a toJSON method";
          const hidden = ownNames(v).length - keys(v).length - (p === plainArray ? 1 : 0);
          if (hidden > 0) return "a property that is not enumerable";
          if (ownSymbols(v).length > 0) return "a property keyed by a symbol";
          return null;
        }
        const c = p.constructor;
        return "a " + (typeof c === "function" && c.name ? c.name : "object of a class");
      }
      default:
        return "a " + typeof v;
    }
  };
  let bad = null;
  function replacer(key, value) {
    if (bad !== null) return undefined;
    const k = kind(this[key]);
    if (k !== null) {
      bad = k;
      return undefined;
    }
    return value;
  }
  const save = (state) => {
    bad = null;
    let text;
    try {
      text = stringify(state, replacer);
    } catch (e) {
      return [e instanceof Error ? e.message : "a value JSON cannot write"];
    }
    return bad !== null ? [bad] : text;
  };
  return [JSON.parse, save];
})()"#;

/// Where a job stopped: its call number (counted from the job's start), how, and in which
/// step.
pub(super) struct Stop {
    pub(super) call: usize,
    pub(super) failure: Failure,
    pub(super) step: &'static str,
}

impl Stop {
    /// A failure that is no call's running out of fuel (it is not tried again).
    pub(super) fn udf(e: UdfError) -> Stop {
        Stop {
            call: usize::MAX,
            failure: Failure::Udf(Box::new(e)),
            step: "",
        }
    }
}

/// Numbers the calls of a job and gives each its fuel: a call that ran out of fuel in an
/// earlier attempt of the job (`aligned`) begins on a full count of QuickJS's steps, as a
/// scalar function's call tried again does.
pub(super) struct Calls<'a> {
    pub(super) sandbox: &'a Sandbox,
    pub(super) limits: Limits,
    pub(super) aligned: &'a BTreeSet<usize>,
    pub(super) next: usize,
}

impl Calls<'_> {
    pub(super) fn call<'js>(
        &mut self,
        ctx: &Ctx<'js>,
        f: &Function<'js>,
        args: Args<'js>,
        step: &'static str,
    ) -> Result<Value<'js>, Stop> {
        let call = self.next;
        self.next += 1;
        let meter = &self.sandbox.meter;
        if self.aligned.contains(&call) {
            align(meter, ctx);
        }
        meter.begin(checks(self.limits));
        f.call_arg::<Value>(args).catch(ctx).map_err(|e| Stop {
            call,
            failure: Failure::of(meter, &e),
            step,
        })
    }
}

/// The states of one job as the functions see them, and the calls that read, make and
/// write them.
pub(super) struct Live<'js, 'a> {
    pub(super) ctx: Ctx<'js>,
    pub(super) calls: Calls<'a>,
    pub(super) create_state: Function<'js>,
    pub(super) parse: Function<'js>,
    pub(super) save: Function<'js>,
    pub(super) name: &'a str,
    /// Whether the states are an operator's (its errors say so) rather than an aggregate's.
    pub(super) operator: bool,
}

impl<'js> Live<'js, '_> {
    /// An error about a state, naming the aggregate or the operator.
    pub(super) fn state_error(&self, message: String) -> UdfError {
        let function = self.name.to_string();
        if self.operator {
            UdfError::Operator { function, message }
        } else {
            UdfError::AggregateState { function, message }
        }
    }

    fn engine(&self, e: rquickjs::Error) -> Stop {
        Stop {
            call: usize::MAX,
            failure: Failure::engine(&self.calls.sandbox.meter, &e),
            step: "",
        }
    }

    /// A state read from its JSON text, or made by `create_state()` for none.
    pub(super) fn open(&mut self, state: Option<&[u8]>) -> Result<Value<'js>, Stop> {
        let ctx = self.ctx.clone();
        match state {
            Some(bytes) => {
                let text = std::str::from_utf8(bytes).map_err(|_| {
                    Stop::udf(self.state_error(
                        "a state it was given is not JSON text (a corrupt checkpoint?)".into(),
                    ))
                })?;
                let text =
                    rquickjs::String::from_str(ctx.clone(), text).map_err(|e| self.engine(e))?;
                let mut a = Args::new(ctx.clone(), 1);
                a.push_arg(text).map_err(|e| self.engine(e))?;
                self.calls.call(&ctx, &self.parse, a, "reading its state")
            }
            None => {
                let v = self.calls.call(
                    &ctx,
                    &self.create_state,
                    Args::new(ctx.clone(), 0),
                    "create_state()",
                )?;
                if self.operator && v.is_undefined() {
                    return Err(Stop::udf(self.state_error(
                        "create_state() returned undefined: it must return a fresh state (null: the key holds none)".into(),
                    )));
                }
                given_state(self.name, &v, "create_state()")?;
                Ok(v)
            }
        }
    }

    pub(super) fn open_all(&mut self, states: &[Option<Vec<u8>>]) -> Result<Vec<Value<'js>>, Stop> {
        states.iter().map(|s| self.open(s.as_deref())).collect()
    }

    /// A state written as JSON text, or an error saying what in it JSON would not give back.
    pub(super) fn close(&mut self, state: Value<'js>) -> Result<Vec<u8>, Stop> {
        let ctx = self.ctx.clone();
        let mut a = Args::new(ctx.clone(), 1);
        a.push_arg(state).map_err(|e| self.engine(e))?;
        let saved = self.calls.call(&ctx, &self.save, a, "writing its state")?;
        if let Some(s) = saved.as_string() {
            return s
                .to_string()
                .map(String::into_bytes)
                .map_err(|e| self.engine(e));
        }
        if self.calls.sandbox.meter.out_of_memory() {
            return Err(Stop {
                call: usize::MAX,
                failure: Failure::Memory,
                step: "",
            });
        }
        let what: String = saved
            .as_array()
            .and_then(|a| a.get::<String>(0).ok())
            .unwrap_or_else(|| show(&saved));
        Err(Stop::udf(self.state_error(format!("a state it returned holds {what}: a state must be plain JSON data (objects, arrays, strings, finite numbers, booleans, null), since it is written to checkpoints as JSON and must read back the same"))))
    }

    pub(super) fn close_all(&mut self, states: Vec<Value<'js>>) -> Result<Vec<Vec<u8>>, Stop> {
        states.into_iter().map(|v| self.close(v)).collect()
    }
}

/// The state in `slot`.
pub(super) fn state_of<'js>(
    states: &[Value<'js>],
    slot: usize,
    name: &str,
) -> Result<Value<'js>, Stop> {
    states
        .get(slot)
        .cloned()
        .ok_or_else(|| Stop::udf(slot_error(name)))
}

/// An error unless `v`, what `step` returned, is a state: anything but `undefined` (`null` is
/// a state).
pub(super) fn given_state(name: &str, v: &Value<'_>, step: &'static str) -> Result<(), Stop> {
    if v.is_undefined() {
        let f = step.split('(').next().unwrap_or(step);
        return Err(Stop::udf(UdfError::AggregateState {
            function: name.to_string(),
            message: format!(
                "{step} returned undefined: it must return the state (`return state;` at the end of `{f}`; null is a state too)"
            ),
        }));
    }
    Ok(())
}

fn slot_error(name: &str) -> UdfError {
    UdfError::Engine(format!(
        "a step of aggregate `{name}` names a state its job does not hold (a bug in anduin)"
    ))
}
