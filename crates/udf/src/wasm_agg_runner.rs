//! One instance of a module serving one aggregate, and one job on it: the states of the
//! job's groups written into room the module's allocator gives, the aggregate's exports
//! called row by row (each call with its own fuel), the states read back, the room given
//! back.

use wasmtime::{Func, Memory, Store, TypedFunc, Val};

use crate::aggregate::{Answer, Job};
use crate::call::{classify, instantiate};
use crate::columns::{Builder, Column};
use crate::limits::Limiter;
use crate::{Declaration, Limits, SqlType, UdfError, WasmModule};

/// An instance of a module with its own store, ready to step one aggregate's states.
pub(crate) struct AggRunner {
    store: Store<Limiter>,
    memory: Memory,
    alloc: TypedFunc<i32, i32>,
    dealloc: TypedFunc<(i32, i32), ()>,
    state_size: TypedFunc<(), i32>,
    init: TypedFunc<i32, ()>,
    accumulate: Func,
    retract: Option<Func>,
    merge: Option<TypedFunc<(i32, i32), ()>>,
    finish: Func,
    /// The bytes of a state (0 until asked).
    size: usize,
    params: Vec<Val>,
    results: [Val; 1],
    /// The module's label, for errors.
    module: std::sync::Arc<str>,
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
        let (mut store, instance) = instantiate(module, name, limits)?;
        let missing = |what: &str| UdfError::WasmAggregate {
            function: name.clone(),
            module: module.label.to_string(),
            message: format!("it exports no {what} of the aggregate ABI's type"),
        };
        let func = |store: &mut Store<Limiter>, what: &str| {
            instance
                .get_func(&mut *store, what)
                .ok_or_else(|| missing(&format!("`{what}`")))
        };
        let memory = instance
            .get_memory(&mut store, "memory")
            .ok_or_else(|| missing("`memory`"))?;
        let alloc = instance
            .get_typed_func(&mut store, "alloc")
            .map_err(|_| missing("`alloc`"))?;
        let dealloc = instance
            .get_typed_func(&mut store, "dealloc")
            .map_err(|_| missing("`dealloc`"))?;
        let state_size = instance
            .get_typed_func(&mut store, &format!("{name}_state_size"))
            .map_err(|_| missing(&format!("`{name}_state_size`")))?;
        let init = instance
            .get_typed_func(&mut store, &format!("{name}_init"))
            .map_err(|_| missing(&format!("`{name}_init`")))?;
        let merge = instance
            .get_typed_func(&mut store, &format!("{name}_merge"))
            .ok();
        let accumulate = func(&mut store, &format!("{name}_accumulate"))?;
        let finish = func(&mut store, &format!("{name}_finish"))?;
        let retract = instance.get_func(&mut store, &format!("{name}_retract"));
        Ok(AggRunner {
            store,
            memory,
            alloc,
            dealloc,
            state_size,
            init,
            accumulate,
            retract,
            merge,
            finish,
            size: 0,
            params: Vec::new(),
            results: [Val::I32(0)],
            module: std::sync::Arc::clone(&module.label),
        })
    }

    /// Gives the next call its fuel and its wall-clock backstop.
    fn ready(&mut self, name: &str, limits: Limits) -> Result<(), UdfError> {
        self.store
            .set_fuel(limits.fuel)
            .map_err(|e| classify(name, limits, &e))?;
        self.store
            .set_epoch_deadline(crate::module::backstop_ticks(limits));
        Ok(())
    }

    /// `name_state_size()`.
    pub(crate) fn state_size(&mut self, name: &str, limits: Limits) -> Result<i32, UdfError> {
        self.ready(name, limits)?;
        self.state_size
            .call(&mut self.store, ())
            .map_err(|e| classify(name, limits, &e))
    }

    pub(crate) fn set_size(&mut self, size: usize) {
        self.size = size;
    }

    /// Room for `states` states from the module's allocator, checked to lie in its memory.
    fn room(&mut self, name: &str, limits: Limits, states: usize) -> Result<(i32, i32), UdfError> {
        let len = states
            .checked_mul(self.size)
            .and_then(|n| i32::try_from(n).ok())
            .ok_or_else(|| UdfError::Memory {
                function: name.to_string(),
                desired: states.saturating_mul(self.size),
                limit: limits.memory_bytes,
            })?;
        self.ready(name, limits)?;
        let broken = |problem: String| UdfError::Allocator {
            function: name.to_string(),
            module: self.module.to_string(),
            call: format!("alloc({len})"),
            problem,
        };
        let ptr = self.alloc.call(&mut self.store, len).map_err(|e| {
            match classify(name, limits, &e) {
                UdfError::Trap { trap, .. } => broken(format!("trapped: {trap}")),
                other => other,
            }
        })?;
        let end = u64::from(ptr as u32) + u64::from(len as u32);
        if end > self.memory.data_size(&self.store) as u64 {
            return Err(broken(format!(
                "returned {ptr}: its {len} bytes lie outside the module's memory"
            )));
        }
        Ok((ptr, len))
    }

    fn give_back(
        &mut self,
        name: &str,
        limits: Limits,
        (ptr, len): (i32, i32),
    ) -> Result<(), UdfError> {
        self.ready(name, limits)?;
        self.dealloc.call(&mut self.store, (ptr, len)).map_err(|e| {
            match classify(name, limits, &e) {
                UdfError::Trap { trap, .. } => UdfError::Allocator {
                    function: name.to_string(),
                    module: self.module.to_string(),
                    call: format!("dealloc({ptr}, {len})"),
                    problem: format!("trapped: {trap}"),
                },
                other => other,
            }
        })
    }

    /// Writes state `state` (or a fresh one, for none) at `at`.
    fn put(
        &mut self,
        name: &str,
        limits: Limits,
        at: i32,
        state: Option<&[u8]>,
    ) -> Result<(), UdfError> {
        match state {
            Some(bytes) if bytes.len() == self.size => self
                .memory
                .write(&mut self.store, at as u32 as usize, bytes)
                .map_err(|e| UdfError::Engine(e.to_string())),
            Some(bytes) => Err(UdfError::AggregateState {
                function: name.to_string(),
                message: format!(
                    "a state it was given has {} bytes, but `{name}_state_size()` says {} (a checkpoint written by another version of module `{}`?)",
                    bytes.len(),
                    self.size,
                    self.module
                ),
            }),
            None => {
                self.ready(name, limits)?;
                self.init
                    .call(&mut self.store, at)
                    .map_err(|e| classify(name, limits, &e))
            }
        }
    }

    /// The state at `at`.
    fn get(&self, at: i32) -> Result<Vec<u8>, UdfError> {
        let mut out = vec![0; self.size];
        self.memory
            .read(&self.store, at as u32 as usize, &mut out)
            .map_err(|e| UdfError::Engine(e.to_string()))?;
        Ok(out)
    }

    /// Where slot `slot`'s state lies in room starting at `base`.
    fn at(&self, base: i32, slot: usize) -> i32 {
        base.wrapping_add((slot * self.size) as i32)
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
                let room = self.room(name, limits, states.len())?;
                for (slot, s) in states.iter().enumerate() {
                    let at = self.at(room.0, slot);
                    self.put(name, limits, at, s.as_deref())?;
                }
                for (row, slot) in steps {
                    self.params.clear();
                    self.params.push(Val::I32(self.at(room.0, *slot)));
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
                    self.ready(name, limits)?;
                    f.call(&mut self.store, &self.params, &mut [])
                        .map_err(|e| classify(name, limits, &e))?;
                }
                let out = (0..states.len())
                    .map(|slot| self.get(self.at(room.0, slot)))
                    .collect::<Result<Vec<_>, _>>()?;
                self.give_back(name, limits, room)?;
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
                let room = self.room(name, limits, states.len() + 1)?;
                for (slot, s) in states.iter().enumerate() {
                    let at = self.at(room.0, slot);
                    self.put(name, limits, at, s.as_deref())?;
                }
                let scratch = self.at(room.0, states.len());
                for (slot, incoming) in steps {
                    self.put(name, limits, scratch, Some(incoming))?;
                    let into = self.at(room.0, *slot);
                    self.ready(name, limits)?;
                    merge
                        .call(&mut self.store, (into, scratch))
                        .map_err(|e| classify(name, limits, &e))?;
                }
                let out = (0..states.len())
                    .map(|slot| self.get(self.at(room.0, slot)))
                    .collect::<Result<Vec<_>, _>>()?;
                self.give_back(name, limits, room)?;
                Ok(Answer::States(out))
            }
            Job::Finish { states } => {
                let room = self.room(name, limits, 1)?;
                let mut out = Builder::new(d.result, states.len());
                for s in states {
                    self.put(name, limits, room.0, s.as_deref())?;
                    self.ready(name, limits)?;
                    self.finish
                        .call(&mut self.store, &[Val::I32(room.0)], &mut self.results)
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
                self.give_back(name, limits, room)?;
                Ok(Answer::Values(out.finish()))
            }
        }
    }
}
