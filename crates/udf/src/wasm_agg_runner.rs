//! One instance of a module serving one aggregate, and one job on it: the states of the
//! job's groups written into room the module's allocator gives, the aggregate's exports
//! called row by row (each call with its own fuel), the states read back, the room given
//! back.

use wasmtime::{Func, TypedFunc, Val};

use crate::aggregate::{Answer, Job};
use crate::call::classify;
use crate::columns::{Builder, Column};
use crate::wasm_state::StateStore;
use crate::{Declaration, Limits, SqlType, UdfError, WasmModule};

/// An instance of a module with its own store, ready to step one aggregate's states.
pub(crate) struct AggRunner {
    core: StateStore,
    init: TypedFunc<i32, ()>,
    accumulate: Func,
    retract: Option<Func>,
    merge: Option<TypedFunc<(i32, i32), ()>>,
    finish: Func,
    params: Vec<Val>,
    results: [Val; 1],
}

impl AggRunner {
    /// Instantiates `module` for aggregate `declaration` (already checked against the
    /// module's exports).
    pub(crate) fn new(
        module: &WasmModule,
        declaration: &Declaration,
        limits: Limits,
    ) -> Result<AggRunner, UdfError> {
        let name = &declaration.name;
        let missing = |what: &str| UdfError::WasmAggregate {
            function: name.clone(),
            module: module.label.to_string(),
            message: format!("it exports no {what} of the aggregate ABI's type"),
        };
        let (mut core, instance) = StateStore::new(module, name, limits, &missing)?;
        let store = &mut core.store;
        let init = instance
            .get_typed_func(&mut *store, &format!("{name}_init"))
            .map_err(|_| missing(&format!("`{name}_init`")))?;
        let merge = instance
            .get_typed_func(&mut *store, &format!("{name}_merge"))
            .ok();
        let mut func = |what: String| {
            instance
                .get_func(&mut *store, &what)
                .ok_or_else(|| missing(&format!("`{what}`")))
        };
        let accumulate = func(format!("{name}_accumulate"))?;
        let finish = func(format!("{name}_finish"))?;
        let retract = instance.get_func(&mut *store, &format!("{name}_retract"));
        Ok(AggRunner {
            core,
            init,
            accumulate,
            retract,
            merge,
            finish,
            params: Vec::new(),
            results: [Val::I32(0)],
        })
    }

    /// `name_state_size()`.
    pub(crate) fn state_size(&mut self, name: &str, limits: Limits) -> Result<i32, UdfError> {
        self.core.state_size(name, limits)
    }

    /// Sets the bytes of a state.
    pub(crate) fn set_size(&mut self, size: usize) {
        self.core.set_size(size);
    }

    /// Writes state `state` (or a fresh one, for none) at `at`.
    fn put(
        &mut self,
        name: &str,
        limits: Limits,
        at: i32,
        state: Option<&[u8]>,
    ) -> Result<(), UdfError> {
        let size = self.core.size();
        match state {
            Some(bytes) if bytes.len() == size => self.core.write(at, bytes),
            Some(bytes) => Err(UdfError::AggregateState {
                function: name.to_string(),
                message: format!(
                    "a state it was given has {} bytes, but `{name}_state_size()` says {size} (a checkpoint written by another version of module `{}`?)",
                    bytes.len(),
                    self.core.module
                ),
            }),
            None => {
                self.core.ready(name, limits)?;
                self.init
                    .call(&mut self.core.store, at)
                    .map_err(|e| classify(name, limits, &e))
            }
        }
    }

    /// Does `job` for aggregate `d`.
    pub(crate) fn run(
        &mut self,
        d: &Declaration,
        limits: Limits,
        job: &Job,
    ) -> Result<Answer, UdfError> {
        let name = &d.name;
        match job {
            Job::Rows {
                states,
                args,
                steps,
                retract,
            } => {
                let f = match (retract, &self.retract) {
                    (true, Some(r)) => *r,
                    _ => self.accumulate,
                };
                let cols = args
                    .iter()
                    .zip(&d.args)
                    .map(|(a, t)| Column::of(a, *t, name))
                    .collect::<Result<Vec<_>, _>>()?;
                let room = self.core.room(name, limits, states.len())?;
                for (slot, s) in states.iter().enumerate() {
                    let at = self.core.at(room.0, slot);
                    self.put(name, limits, at, s.as_deref())?;
                }
                for (row, slot) in steps {
                    self.params.clear();
                    self.params.push(Val::I32(self.core.at(room.0, *slot)));
                    for c in &cols {
                        self.params.push(match c.get(*row) {
                            Some(crate::call::Arg::I64(v)) => Val::I64(v),
                            Some(crate::call::Arg::F64(v)) => Val::F64(v.to_bits()),
                            Some(crate::call::Arg::Bool(v)) => Val::I32(i32::from(v)),
                            _ => {
                                return Err(UdfError::Abi {
                                    function: name.clone(),
                                    message: "an argument an aggregate does not take".into(),
                                })
                            }
                        });
                    }
                    self.core.ready(name, limits)?;
                    f.call(&mut self.core.store, &self.params, &mut [])
                        .map_err(|e| classify(name, limits, &e))?;
                }
                let out = (0..states.len())
                    .map(|slot| self.core.get(self.core.at(room.0, slot)))
                    .collect::<Result<Vec<_>, _>>()?;
                self.core.give_back(name, limits, room)?;
                Ok(Answer::States(out))
            }
            Job::Merge { states, steps } => {
                let Some(merge) = self.merge.clone() else {
                    return Err(UdfError::NoMerge {
                        function: name.clone(),
                        needed: "combining two states".into(),
                    });
                };
                // The states, then room for the incoming one.
                let room = self.core.room(name, limits, states.len() + 1)?;
                for (slot, s) in states.iter().enumerate() {
                    let at = self.core.at(room.0, slot);
                    self.put(name, limits, at, s.as_deref())?;
                }
                let scratch = self.core.at(room.0, states.len());
                for (slot, incoming) in steps {
                    self.put(name, limits, scratch, Some(incoming))?;
                    let into = self.core.at(room.0, *slot);
                    self.core.ready(name, limits)?;
                    merge
                        .call(&mut self.core.store, (into, scratch))
                        .map_err(|e| classify(name, limits, &e))?;
                }
                let out = (0..states.len())
                    .map(|slot| self.core.get(self.core.at(room.0, slot)))
                    .collect::<Result<Vec<_>, _>>()?;
                self.core.give_back(name, limits, room)?;
                Ok(Answer::States(out))
            }
            Job::Finish { states } => {
                let room = self.core.room(name, limits, 1)?;
                let mut out = Builder::new(d.result, states.len());
                for s in states {
                    self.put(name, limits, room.0, s.as_deref())?;
                    self.core.ready(name, limits)?;
                    self.finish
                        .call(&mut self.core.store, &[Val::I32(room.0)], &mut self.results)
                        .map_err(|e| classify(name, limits, &e))?;
                    match (d.result, &self.results[0]) {
                        (SqlType::Bigint, Val::I64(v)) => out.append(crate::call::Out::I64(*v)),
                        (SqlType::Double, Val::F64(bits)) => {
                            out.append(crate::call::Out::F64(f64::from_bits(*bits)))
                        }
                        (SqlType::Boolean, Val::I32(v)) => {
                            out.append(crate::call::Out::Bool(*v != 0))
                        }
                        (_, other) => {
                            return Err(UdfError::Abi {
                                function: name.clone(),
                                message: format!("its `{name}_finish` returned {other:?}"),
                            })
                        }
                    }
                }
                self.core.give_back(name, limits, room)?;
                Ok(Answer::Values(out.finish()))
            }
        }
    }
}
