//! One QuickJS engine holding one operator's module, and one job of it: the states it
//! touches read from JSON (or made by `create_state()`), `process` or `on_timer` called one
//! call at a time (each with its own fuel), the rows each call `emit`s taken after it, each
//! state's `timer(state)` asked, and the states written back as JSON, checked (`null`: the
//! key keeps no state).
//!
//! Order of making, as for an aggregate: anduin's helpers first (JSON's `parse`, `save`, and
//! the global `emit` with the `take` that empties what it collected), then the lockdown,
//! then the user's module.

use std::collections::BTreeSet;
use std::sync::Arc;

use rquickjs::function::Args;
use rquickjs::{Ctx, Function, Persistent, Value};

use super::aggregate_states::{state_of, Calls, Live, Stop};
use super::module_body::{engine, run_body, state_helpers};
use super::sandbox::{Failure, Sandbox};
use super::values::{from_js_as, show, to_js};
use crate::call::Out;
use crate::columns::Column;
use crate::operator::{OpAnswer, OpFailure, OpJob, OperatorDeclaration};
use crate::{Limits, UdfError};

/// anduin's helpers of an operator, made before the lockdown: the global `emit(…)`, which
/// collects the rows a call emits, and `[take, fresh]`: `take()` gives the rows collected
/// since it was last called, `fresh()` the state of a key of an operator without
/// `create_state` (`null`).
const OPERATOR_HELPERS: &str = r#"(() => {
  "use strict";
  let out = [];
  const emit = function emit(...values) { out.push(values); };
  Object.defineProperty(globalThis, "emit", { value: emit, writable: false, enumerable: false, configurable: false });
  const take = () => { const rows = out; out = []; return rows; };
  return [take, () => null];
})()"#;

/// The largest integer a JavaScript number holds exactly and alone.
const EXACT: f64 = ((1_i64 << 53) - 1) as f64;

/// The module's functions, and the helpers, kept across calls of the context.
struct Fns {
    create_state: Persistent<Function<'static>>,
    process: Persistent<Function<'static>>,
    timer: Option<Persistent<Function<'static>>>,
    on_timer: Option<Persistent<Function<'static>>>,
    parse: Persistent<Function<'static>>,
    save: Persistent<Function<'static>>,
    take: Persistent<Function<'static>>,
}

/// An engine holding an operator's module. Made on, and kept by, its worker's thread.
pub(super) struct OpEngine {
    /// Dropped within the context, before the sandbox ([`Drop`]).
    fns: Option<Fns>,
    sandbox: Sandbox,
    declaration: Arc<OperatorDeclaration>,
    limits: Limits,
}

/// Where a job stopped: how, and at which row and slot.
struct At {
    stop: Stop,
    row: Option<usize>,
    slot: Option<usize>,
}

impl From<Stop> for At {
    fn from(stop: Stop) -> Self {
        At {
            stop,
            row: None,
            slot: None,
        }
    }
}

impl OpEngine {
    /// `body` compiled and run as the module of operator `declaration`, in `sandbox`.
    pub(super) fn new(
        sandbox: Sandbox,
        declaration: Arc<OperatorDeclaration>,
        body: &str,
        limits: Limits,
    ) -> Result<OpEngine, UdfError> {
        let name = declaration.name.clone();
        let (parse, save) = state_helpers(&sandbox)?;
        let (take, fresh) = sandbox.context.with(|ctx| {
            let mine: rquickjs::Array = ctx.eval(OPERATOR_HELPERS).map_err(engine)?;
            let take: Function = mine.get(0).map_err(engine)?;
            let fresh: Function = mine.get(1).map_err(engine)?;
            Ok::<_, UdfError>((Persistent::save(&ctx, take), Persistent::save(&ctx, fresh)))
        })?;
        let body_error = |message: String| UdfError::Operator {
            function: name.clone(),
            message,
        };
        let fns = run_body(&sandbox, &name, body, limits, &body_error, |ctx, module| {
            let export = |key: &str, usage: &str| module.get(key, usage);
            let process = export("process", "process(state, …)")?.ok_or_else(|| {
                body_error("its body exports no `process`, which is called for each row: write `export function process(state, …) { … }` (the body is a module)".into())
            })?;
            let create_state = export("create_state", "create_state()")?;
            let timer = export("timer", "timer(state)")?;
            let on_timer = export("on_timer", "on_timer(state, watermark)")?;
            if timer.is_some() != on_timer.is_some() {
                let (has, lacks) = if timer.is_some() {
                    ("timer(state)", "on_timer(state, watermark)")
                } else {
                    ("on_timer(state, watermark)", "timer(state)")
                };
                return Err(body_error(format!(
                    "it exports `{has}` without `{lacks}`: a timer is `timer(state)`, the event time at which `on_timer(state, watermark)` is called; export both or neither"
                )));
            }
            let create_state = match create_state {
                Some(f) => Persistent::save(ctx, f),
                None => fresh,
            };
            Ok(Fns {
                create_state,
                process: Persistent::save(ctx, process),
                timer: timer.map(|f| Persistent::save(ctx, f)),
                on_timer: on_timer.map(|f| Persistent::save(ctx, f)),
                parse,
                save,
                take,
            })
        })?;
        Ok(OpEngine {
            fns: Some(fns),
            sandbox,
            declaration,
            limits,
        })
    }

    /// Whether the body exports `timer` and `on_timer`.
    pub(super) fn has_timers(&self) -> bool {
        self.fns.as_ref().is_some_and(|f| f.timer.is_some())
    }

    /// Does `job`. A call that ran out of fuel is tried again, with the whole job, from a
    /// full count of QuickJS's steps, as an aggregate's job is: whether a call runs out does
    /// not depend on what ran before it. The job starts from its JSON states and collects
    /// its rows afresh, so the job done again is the same job.
    pub(super) fn run(&mut self, job: &OpJob) -> Result<OpAnswer, OpFailure> {
        let name = &self.declaration.name;
        let mut aligned = BTreeSet::new();
        loop {
            match self.attempt(job, &aligned) {
                Ok(answer) => return Ok(answer),
                Err(At {
                    stop:
                        Stop {
                            call,
                            failure: Failure::Fuel,
                            ..
                        },
                    ..
                }) if aligned.insert(call) => {}
                Err(At { stop, row, slot }) => {
                    let Stop { failure, step, .. } = stop;
                    let error = failure.named(name, self.limits, |message| UdfError::JsThrew {
                        function: name.clone(),
                        message: format!("{message} (in {step})"),
                    });
                    return Err(OpFailure {
                        error: Box::new(error),
                        row,
                        slot,
                    });
                }
            }
        }
    }

    fn attempt(&self, job: &OpJob, aligned: &BTreeSet<usize>) -> Result<OpAnswer, At> {
        self.sandbox
            .context
            .with(|ctx| self.attempt_in(ctx, job, aligned))
    }

    fn attempt_in<'js>(
        &self,
        ctx: Ctx<'js>,
        job: &OpJob,
        aligned: &BTreeSet<usize>,
    ) -> Result<OpAnswer, At> {
        let fns = self
            .fns
            .as_ref()
            .expect("made with the engine, taken only when dropped");
        let d = &self.declaration;
        let name = &d.name;
        let meter = &self.sandbox.meter;
        let restore = |p: &Persistent<Function<'static>>| -> Result<Function<'js>, Stop> {
            p.clone()
                .restore(&ctx)
                .map_err(|e| Stop::udf(UdfError::Engine(e.to_string())))
        };
        let engine = |e: rquickjs::Error| Stop {
            call: usize::MAX,
            failure: Failure::engine(meter, &e),
            step: "",
        };
        let mut live = Live {
            ctx: ctx.clone(),
            calls: Calls {
                sandbox: &self.sandbox,
                limits: self.limits,
                aligned,
                next: 0,
            },
            create_state: restore(&fns.create_state)?,
            parse: restore(&fns.parse)?,
            save: restore(&fns.save)?,
            name,
            operator: true,
        };
        let take = restore(&fns.take)?;
        let timer = fns.timer.as_ref().map(restore).transpose()?;
        let mut answer = OpAnswer::default();
        let states = match job {
            OpJob::Rows {
                states,
                args,
                steps,
            } => {
                let process = restore(&fns.process)?;
                if args.len() != d.args.len() {
                    return Err(Stop::udf(UdfError::Abi {
                        function: name.clone(),
                        message: format!(
                            "called with {} columns, declared with {}",
                            args.len(),
                            d.args.len()
                        ),
                    })
                    .into());
                }
                let cols = args
                    .iter()
                    .zip(&d.args)
                    .map(|(a, (_, t))| Column::of(a, *t, name))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(Stop::udf)?;
                let mut states = live.open_all(states)?;
                self.none_emitted(&mut live, &take, "create_state()")?;
                const STEP: &str = "process(state, …)";
                for (row, slot) in steps {
                    let at = |stop: Stop| At {
                        stop,
                        row: Some(*row),
                        slot: Some(*slot),
                    };
                    let mut a = Args::new(ctx.clone(), 1 + cols.len());
                    a.push_arg(state_of(&states, *slot, name).map_err(at)?)
                        .map_err(|e| at(engine(e)))?;
                    for c in &cols {
                        let v = match c.get(*row) {
                            Some(arg) => to_js(&ctx, name, &arg).map_err(|e| at(Stop::udf(e)))?,
                            None => Value::new_null(ctx.clone()),
                        };
                        a.push_arg(v).map_err(|e| at(engine(e)))?;
                    }
                    let v = live.calls.call(&ctx, &process, a, STEP).map_err(at)?;
                    self.returned_state(&v, STEP).map_err(at)?;
                    if let Some(s) = states.get_mut(*slot) {
                        *s = v;
                    }
                    self.collect(&mut live, &take, *slot, STEP, &mut answer)
                        .map_err(at)?;
                }
                states
            }
            OpJob::Timers { states, watermark } => {
                let Some(on_timer) = fns.on_timer.as_ref().map(restore).transpose()? else {
                    return Err(Stop::udf(UdfError::Engine(format!(
                        "operator `{name}` has no `on_timer` but a timer fired (a bug in anduin)"
                    )))
                    .into());
                };
                let mut states = live.open_all(states)?;
                self.none_emitted(&mut live, &take, "create_state()")?;
                const STEP: &str = "on_timer(state, watermark)";
                let w = if *watermark == i64::MAX {
                    f64::INFINITY
                } else {
                    *watermark as f64
                };
                for slot in 0..states.len() {
                    let at = |stop: Stop| At {
                        stop,
                        row: None,
                        slot: Some(slot),
                    };
                    let mut a = Args::new(ctx.clone(), 2);
                    a.push_arg(state_of(&states, slot, name).map_err(at)?)
                        .map_err(|e| at(engine(e)))?;
                    a.push_arg(Value::new_float(ctx.clone(), w))
                        .map_err(|e| at(engine(e)))?;
                    let v = live.calls.call(&ctx, &on_timer, a, STEP).map_err(at)?;
                    self.returned_state(&v, STEP).map_err(at)?;
                    if let Some(s) = states.get_mut(slot) {
                        *s = v;
                    }
                    self.collect(&mut live, &take, slot, STEP, &mut answer)
                        .map_err(at)?;
                }
                states
            }
        };
        for (slot, state) in states.into_iter().enumerate() {
            let at = |stop: Stop| At {
                stop,
                row: None,
                slot: Some(slot),
            };
            if state.is_null() {
                answer.states.push(None);
                answer.timers.push(None);
                continue;
            }
            let due = match &timer {
                Some(t) => {
                    const STEP: &str = "timer(state)";
                    let mut a = Args::new(ctx.clone(), 1);
                    a.push_arg(state.clone()).map_err(|e| at(engine(e)))?;
                    let v = live.calls.call(&ctx, t, a, STEP).map_err(at)?;
                    self.none_emitted(&mut live, &take, STEP).map_err(at)?;
                    self.timer_of(&v).map_err(at)?
                }
                None => None,
            };
            answer.timers.push(due);
            answer.states.push(Some(live.close(state).map_err(at)?));
        }
        Ok(answer)
    }

    fn error(&self, message: String) -> Stop {
        Stop::udf(UdfError::Operator {
            function: self.declaration.name.clone(),
            message,
        })
    }

    /// An error unless `v`, what `step` returned, is a state (`null` too).
    fn returned_state(&self, v: &Value<'_>, step: &'static str) -> Result<(), Stop> {
        if v.is_undefined() {
            let f = step.split('(').next().unwrap_or(step);
            return Err(self.error(format!(
                "{step} returned undefined: it must return the key's state (`return state;` at the end of `{f}`; null: the key keeps no state)"
            )));
        }
        Ok(())
    }

    /// The event time a `timer(state)` result asks for: `null` for none, else an integer
    /// number of milliseconds. `undefined` (a forgotten `return`) is an error, as for the
    /// state.
    fn timer_of(&self, v: &Value<'_>) -> Result<Option<i64>, Stop> {
        if v.is_null() {
            return Ok(None);
        }
        if v.is_undefined() {
            return Err(self.error(
                "timer(state) returned undefined: it must return an event time in milliseconds, an integer number, or null for no timer (`return null;`)".to_string(),
            ));
        }
        match v.as_number() {
            Some(n) if n.fract() == 0.0 && n.abs() <= EXACT => Ok(Some(n as i64)),
            _ => Err(self.error(format!(
                "timer(state) returned {}: it must return an event time in milliseconds, an integer number (or null: no timer)",
                show(v)
            ))),
        }
    }

    /// The rows emitted since the last take, which must be none: `step` may not emit.
    fn none_emitted<'js>(
        &self,
        live: &mut Live<'js, '_>,
        take: &Function<'js>,
        step: &'static str,
    ) -> Result<(), Stop> {
        let ctx = live.ctx.clone();
        let rows = live
            .calls
            .call(&ctx, take, Args::new(ctx.clone(), 0), "emit(…)")?;
        if rows.as_array().is_some_and(|a| !a.is_empty()) {
            return Err(self.error(format!(
                "{step} called emit(…): only process(state, …) and on_timer(state, watermark) emit rows"
            )));
        }
        Ok(())
    }

    /// The rows the last call emitted, into `answer` as rows of `slot`.
    fn collect<'js>(
        &self,
        live: &mut Live<'js, '_>,
        take: &Function<'js>,
        slot: usize,
        step: &'static str,
        answer: &mut OpAnswer,
    ) -> Result<(), Stop> {
        let ctx = live.ctx.clone();
        let d = &self.declaration;
        let meter = &self.sandbox.meter;
        let rows = live
            .calls
            .call(&ctx, take, Args::new(ctx.clone(), 0), "emit(…)")?;
        let Some(rows) = rows.as_array() else {
            return Ok(());
        };
        for row in rows.iter::<rquickjs::Array>() {
            let row = row.map_err(|e| Stop {
                call: usize::MAX,
                failure: Failure::engine(meter, &e),
                step: "",
            })?;
            if row.len() != d.output.len() {
                return Err(self.error(format!(
                    "{step} called emit(…) with {} values, but it returns {} columns ({}): emit one value per column, in order",
                    row.len(),
                    d.output.len(),
                    d.output_text()
                )));
            }
            let mut values: Vec<Option<Out>> = Vec::with_capacity(row.len());
            for (i, (column, ty)) in d.output.iter().enumerate() {
                let v: Value = row.get(i).map_err(|e| Stop {
                    call: usize::MAX,
                    failure: Failure::engine(meter, &e),
                    step: "",
                })?;
                let said = format!("{step} emitted, as column `{column}`,");
                let value = from_js_as(&d.name, *ty, &v, &said).map_err(|e| Stop {
                    call: usize::MAX,
                    failure: Failure::value(meter, e),
                    step: "",
                })?;
                values.push(value);
            }
            answer.rows.push((slot, values));
        }
        Ok(())
    }
}

impl Drop for OpEngine {
    fn drop(&mut self) {
        // A value kept outside the context must go before its runtime does.
        if let Some(fns) = self.fns.take() {
            self.sandbox.context.with(|ctx| {
                let all = [fns.create_state, fns.process, fns.parse, fns.save, fns.take]
                    .into_iter()
                    .chain(fns.timer)
                    .chain(fns.on_timer);
                for f in all {
                    drop(f.restore(&ctx));
                }
            });
        }
    }
}
