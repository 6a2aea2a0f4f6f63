//! One QuickJS engine holding one aggregate's module, and one job of it: the states it
//! touches read from JSON, the rows or states stepped into them one call at a time (each
//! call with its own fuel), and the states written back as JSON, checked.
//!
//! Order of making: anduin's helpers are made first (JSON's own `parse`, and `save`, which
//! writes a state as JSON or says what in it is not plain data), then the lockdown freezes
//! the global objects and takes the clock away, and only then does the user's module run:
//! its top level cannot keep a real clock, or change a built-in, for its functions to use.

use std::collections::BTreeSet;
use std::sync::Arc;

use rquickjs::function::Args;
use rquickjs::{Ctx, Function, Persistent, Value};

use super::aggregate_states::{given_state, state_of, Calls, Live, Stop};
use super::module_body::{run_body, state_helpers};
use super::sandbox::{Failure, Sandbox};
use super::values::{from_js, to_js};
use crate::aggregate::{Answer, Exports, Job};
use crate::columns::{Builder, Column};
use crate::{Declaration, Limits, UdfError};

/// The module's functions, and the helpers, kept across calls of the context.
struct Fns {
    create_state: Persistent<Function<'static>>,
    accumulate: Persistent<Function<'static>>,
    retract: Option<Persistent<Function<'static>>>,
    merge: Option<Persistent<Function<'static>>>,
    finish: Option<Persistent<Function<'static>>>,
    parse: Persistent<Function<'static>>,
    save: Persistent<Function<'static>>,
}

/// An engine holding an aggregate's module. Made on, and kept by, its worker's thread.
pub(super) struct AggEngine {
    /// Dropped within the context, before the sandbox ([`Drop`]).
    fns: Option<Fns>,
    sandbox: Sandbox,
    declaration: Arc<Declaration>,
    limits: Limits,
    exports: Exports,
}

impl AggEngine {
    /// `body` compiled and run as the module of aggregate `declaration`, in `sandbox`.
    pub(super) fn new(
        sandbox: Sandbox,
        declaration: Arc<Declaration>,
        body: &str,
        limits: Limits,
    ) -> Result<AggEngine, UdfError> {
        let name = declaration.name.clone();
        let (parse, save) = state_helpers(&sandbox)?;
        let body_error = |message: String| UdfError::AggregateBody {
            function: name.clone(),
            message,
        };
        let (fns, exports) = run_body(
            &sandbox,
            &name,
            body,
            limits,
            &body_error,
            |ctx, module| {
                let export = |key: &str, usage: &str| module.get(key, usage);
                let required = |key: &str, usage: &str, what: &str| {
                    export(key, usage)?.ok_or_else(|| {
                    body_error(format!(
                        "its body exports no `{key}`, which {what}: write `export function {usage} {{ … }}` (the body is a module, as RisingWave's)"
                    ))
                })
                };
                let create_state = required(
                    "create_state",
                    "create_state()",
                    "makes a group's first state",
                )?;
                let accumulate = required(
                    "accumulate",
                    "accumulate(state, …)",
                    "adds a row to a state",
                )?;
                let retract = export("retract", "retract(state, …)")?;
                let merge = export("merge", "merge(state1, state2)")?;
                let finish = export("finish", "finish(state)")?;
                let exports = Exports {
                    retract: retract.is_some(),
                    merge: merge.is_some(),
                };
                Ok((
                    Fns {
                        create_state: Persistent::save(ctx, create_state),
                        accumulate: Persistent::save(ctx, accumulate),
                        retract: retract.map(|f| Persistent::save(ctx, f)),
                        merge: merge.map(|f| Persistent::save(ctx, f)),
                        finish: finish.map(|f| Persistent::save(ctx, f)),
                        parse,
                        save,
                    },
                    exports,
                ))
            },
        )?;
        Ok(AggEngine {
            fns: Some(fns),
            sandbox,
            declaration,
            limits,
            exports,
        })
    }

    /// Which of the optional functions the body exports.
    pub(super) fn exports(&self) -> Exports {
        self.exports
    }

    /// Does `job`. A call that ran out of fuel is tried again, with the whole job, from a
    /// full count of QuickJS's steps (see [`Calls`]): whether a call runs out does not depend
    /// on what ran before it. The functions are pure and the job starts from its JSON
    /// states, so the job done again is the same job.
    pub(super) fn run(&mut self, job: Job) -> Result<Answer, UdfError> {
        let name = &self.declaration.name;
        let mut aligned = BTreeSet::new();
        loop {
            match self.attempt(&job, &aligned) {
                Ok(answer) => return Ok(answer),
                Err(Stop {
                    call,
                    failure: Failure::Fuel,
                    ..
                }) if aligned.insert(call) => {}
                Err(Stop { failure, step, .. }) => {
                    return Err(
                        failure.named(name, self.limits, |message| UdfError::JsThrew {
                            function: name.clone(),
                            message: format!("{message} (in {step})"),
                        }),
                    )
                }
            }
        }
    }

    fn attempt(&self, job: &Job, aligned: &BTreeSet<usize>) -> Result<Answer, Stop> {
        self.sandbox
            .context
            .with(|ctx| self.attempt_in(ctx, job, aligned))
    }

    fn attempt_in<'js>(
        &self,
        ctx: Ctx<'js>,
        job: &Job,
        aligned: &BTreeSet<usize>,
    ) -> Result<Answer, Stop> {
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
            operator: false,
        };
        match job {
            Job::Rows {
                states,
                args,
                steps,
                retract,
            } => {
                let (f, step) = match (retract, &fns.retract) {
                    (true, Some(r)) => (restore(r)?, "retract(state, …)"),
                    _ => (restore(&fns.accumulate)?, "accumulate(state, …)"),
                };
                if args.len() != d.args.len() {
                    return Err(Stop::udf(UdfError::Abi {
                        function: name.clone(),
                        message: format!(
                            "called with {} arguments, declared with {}",
                            args.len(),
                            d.args.len()
                        ),
                    }));
                }
                let cols = args
                    .iter()
                    .zip(&d.args)
                    .map(|(a, t)| Column::of(a, *t, name))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(Stop::udf)?;
                let mut states = live.open_all(states)?;
                for (row, slot) in steps {
                    let mut a = Args::new(ctx.clone(), 1 + cols.len());
                    a.push_arg(state_of(&states, *slot, name)?)
                        .map_err(engine)?;
                    for c in &cols {
                        let v = match c.get(*row) {
                            Some(arg) => to_js(&ctx, name, &arg).map_err(Stop::udf)?,
                            None => Value::new_null(ctx.clone()),
                        };
                        a.push_arg(v).map_err(engine)?;
                    }
                    let v = live.calls.call(&ctx, &f, a, step)?;
                    given_state(name, &v, step)?;
                    if let Some(s) = states.get_mut(*slot) {
                        *s = v;
                    }
                }
                Ok(Answer::States(live.close_all(states)?))
            }
            Job::Merge { states, steps } => {
                let merge = match &fns.merge {
                    Some(m) => restore(m)?,
                    None => {
                        return Err(Stop::udf(UdfError::NoMerge {
                            function: name.clone(),
                            needed: "combining two states".into(),
                        }))
                    }
                };
                let mut states = live.open_all(states)?;
                for (slot, incoming) in steps {
                    let other = live.open(Some(incoming.as_slice()))?;
                    let mut a = Args::new(ctx.clone(), 2);
                    a.push_arg(state_of(&states, *slot, name)?)
                        .map_err(engine)?;
                    a.push_arg(other).map_err(engine)?;
                    let v = live.calls.call(&ctx, &merge, a, "merge(state1, state2)")?;
                    given_state(name, &v, "merge(state1, state2)")?;
                    if let Some(s) = states.get_mut(*slot) {
                        *s = v;
                    }
                }
                Ok(Answer::States(live.close_all(states)?))
            }
            Job::Finish { states } => {
                let finish = fns.finish.as_ref().map(restore).transpose()?;
                let mut out = Builder::new(d.result, states.len());
                for s in states {
                    let state = live.open(s.as_deref())?;
                    let v = match &finish {
                        Some(f) => {
                            let mut a = Args::new(ctx.clone(), 1);
                            a.push_arg(state).map_err(engine)?;
                            live.calls.call(&ctx, f, a, "finish(state)")?
                        }
                        None => state,
                    };
                    let value = from_js(name, d.result, &v).map_err(|e| Stop {
                        call: usize::MAX,
                        failure: Failure::value(meter, e),
                        step: "",
                    })?;
                    match value {
                        Some(value) => out.append(value),
                        None => out.append_null(),
                    }
                }
                Ok(Answer::Values(out.finish()))
            }
        }
    }
}

impl Drop for AggEngine {
    fn drop(&mut self) {
        // A value kept outside the context must go before its runtime does.
        if let Some(fns) = self.fns.take() {
            self.sandbox.context.with(|ctx| {
                let all = [fns.create_state, fns.accumulate, fns.parse, fns.save]
                    .into_iter()
                    .chain(fns.retract)
                    .chain(fns.merge)
                    .chain(fns.finish);
                for f in all {
                    drop(f.restore(&ctx));
                }
            });
        }
    }
}
