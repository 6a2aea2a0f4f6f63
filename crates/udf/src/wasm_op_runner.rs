//! One instance of a module serving one operator, and one job on it: the states of the
//! job's keys written into room the module's allocator gives (or `init`ed), `process` or
//! `on_timer` called one call at a time (each with its own fuel), the rows each call emits
//! read from the module's memory after it, each state's `timer` asked, the states read back,
//! the room given back.

use wasmtime::{Func, Memory, Store, TypedFunc, Val};

use crate::call::{classify, instantiate, Arg, Out};
use crate::columns::Column;
use crate::limits::Limiter;
use crate::operator::{OpAnswer, OpFailure, OpJob, OperatorDeclaration};
use crate::{Limits, SqlType, UdfError, WasmModule};

/// What `name_timer` returns for no timer.
const NO_TIMER: i64 = i64::MIN;

/// An instance of a module with its own store, ready to step one operator's states.
pub(crate) struct OpRunner {
    store: Store<Limiter>,
    memory: Memory,
    alloc: TypedFunc<i32, i32>,
    dealloc: TypedFunc<(i32, i32), ()>,
    state_size: TypedFunc<(), i32>,
    init: Option<TypedFunc<i32, ()>>,
    process: Func,
    timer: Option<TypedFunc<i32, i64>>,
    on_timer: Option<TypedFunc<(i32, i64), i64>>,
    /// The bytes of a state (0 until asked).
    size: usize,
    params: Vec<Val>,
    results: [Val; 1],
    /// The module's label, for errors.
    module: std::sync::Arc<str>,
}

impl OpRunner {
    /// Instantiates `module` for operator `declaration` (already checked against the
    /// module's exports).
    pub(crate) fn new(
        module: &WasmModule,
        declaration: &OperatorDeclaration,
        limits: Limits,
    ) -> Result<OpRunner, UdfError> {
        let name = &declaration.name;
        let (mut store, instance) = instantiate(module, name, limits)?;
        let missing = |what: &str| UdfError::WasmOperator {
            function: name.clone(),
            module: module.label.to_string(),
            message: format!("it exports no {what} of the operator ABI's type"),
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
            .ok();
        let process = instance
            .get_func(&mut store, &format!("{name}_process"))
            .ok_or_else(|| missing(&format!("`{name}_process`")))?;
        let timer = instance
            .get_typed_func(&mut store, &format!("{name}_timer"))
            .ok();
        let on_timer = instance
            .get_typed_func(&mut store, &format!("{name}_on_timer"))
            .ok();
        Ok(OpRunner {
            store,
            memory,
            alloc,
            dealloc,
            state_size,
            init,
            process,
            timer,
            on_timer,
            size: 0,
            params: Vec::new(),
            results: [Val::I64(0)],
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

    fn broken_allocator(&self, name: &str, call: String, problem: String) -> UdfError {
        UdfError::Allocator {
            function: name.to_string(),
            module: self.module.to_string(),
            call,
            problem,
        }
    }

    /// Room for `states` states from the module's allocator, checked to lie in its memory.
    fn room(&mut self, name: &str, limits: Limits, states: usize) -> Result<(i32, i32), UdfError> {
        let len = states
            .max(1)
            .checked_mul(self.size)
            .and_then(|n| i32::try_from(n).ok())
            .ok_or_else(|| UdfError::Memory {
                function: name.to_string(),
                desired: states.saturating_mul(self.size),
                limit: limits.memory_bytes,
            })?;
        self.ready(name, limits)?;
        let call = format!("alloc({len})");
        let ptr = self.alloc.call(&mut self.store, len).map_err(|e| {
            match classify(name, limits, &e) {
                UdfError::Trap { trap, .. } => {
                    self.broken_allocator(name, call.clone(), format!("trapped: {trap}"))
                }
                other => other,
            }
        })?;
        let end = u64::from(ptr as u32) + u64::from(len as u32);
        if end > self.memory.data_size(&self.store) as u64 {
            return Err(self.broken_allocator(
                name,
                call,
                format!("returned {ptr}: its {len} bytes lie outside the module's memory"),
            ));
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
                UdfError::Trap { trap, .. } => self.broken_allocator(
                    name,
                    format!("dealloc({ptr}, {len})"),
                    format!("trapped: {trap}"),
                ),
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
        let write = |runner: &mut OpRunner, bytes: &[u8]| {
            runner
                .memory
                .write(&mut runner.store, at as u32 as usize, bytes)
                .map_err(|e| UdfError::Engine(e.to_string()))
        };
        match state {
            Some(bytes) if bytes.len() == self.size => write(self, bytes),
            Some(bytes) => Err(UdfError::WasmOperator {
                function: name.to_string(),
                module: self.module.to_string(),
                message: format!(
                    "a state it was given has {} bytes, but `{name}_state_size()` says {} (a checkpoint written by another version of the module?)",
                    bytes.len(),
                    self.size
                ),
            }),
            None => {
                write(self, &vec![0; self.size])?;
                match self.init.clone() {
                    Some(init) => {
                        self.ready(name, limits)?;
                        init.call(&mut self.store, at)
                            .map_err(|e| classify(name, limits, &e))
                    }
                    None => Ok(()),
                }
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

    /// The rows a call of `step` emitted (`pointer << 32 | count`), as values of `d`'s
    /// columns.
    fn emitted(
        &self,
        d: &OperatorDeclaration,
        step: &str,
        packed: i64,
        slot: usize,
        out: &mut Vec<(usize, Vec<Option<Out>>)>,
    ) -> Result<(), UdfError> {
        let (ptr, count) = (
            (packed as u64 >> 32) as usize,
            packed as u64 as u32 as usize,
        );
        if count == 0 {
            return Ok(());
        }
        let width = 8 * d.output.len();
        let fits = count
            .checked_mul(width)
            .and_then(|len| ptr.checked_add(len))
            .is_some_and(|end| end <= self.memory.data_size(&self.store));
        if !fits {
            return Err(UdfError::WasmOperator {
                function: d.name.clone(),
                module: self.module.to_string(),
                message: format!(
                    "`{step}` returned {count} rows of {width} bytes at {ptr}, which lie outside the module's memory (it returns `pointer << 32 | count`)"
                ),
            });
        }
        let mut bytes = vec![0u8; count * width];
        self.memory
            .read(&self.store, ptr, &mut bytes)
            .map_err(|e| UdfError::Engine(e.to_string()))?;
        for row in bytes.chunks_exact(width) {
            let values = row
                .chunks_exact(8)
                .zip(&d.output)
                .map(|(b, (_, t))| {
                    let v = i64::from_le_bytes(b.try_into().expect("8 bytes"));
                    Some(match t {
                        SqlType::Double => Out::F64(f64::from_bits(v as u64)),
                        SqlType::Boolean => Out::Bool(v != 0),
                        _ => Out::I64(v),
                    })
                })
                .collect();
            out.push((slot, values));
        }
        Ok(())
    }

    /// Does `job` for operator `d`.
    pub(crate) fn run(
        &mut self,
        d: &OperatorDeclaration,
        limits: Limits,
        job: &OpJob,
    ) -> Result<OpAnswer, OpFailure> {
        let name = &d.name;
        let states = match job {
            OpJob::Rows { states, .. } | OpJob::Timers { states, .. } => states,
        };
        let room = self.room(name, limits, states.len())?;
        for (slot, s) in states.iter().enumerate() {
            let at = self.at(room.0, slot);
            self.put(name, limits, at, s.as_deref())
                .map_err(|error| OpFailure {
                    error: Box::new(error),
                    row: None,
                    slot: Some(slot),
                })?;
        }
        let mut answer = OpAnswer::default();
        match job {
            OpJob::Rows { args, steps, .. } => {
                let step = format!("{name}_process");
                let cols = args
                    .iter()
                    .zip(&d.args)
                    .map(|(a, (_, t))| Column::of(a, *t, name))
                    .collect::<Result<Vec<_>, _>>()?;
                for (row, slot) in steps {
                    let fail = |error| OpFailure {
                        error: Box::new(error),
                        row: Some(*row),
                        slot: Some(*slot),
                    };
                    self.params.clear();
                    self.params.push(Val::I32(self.at(room.0, *slot)));
                    for (c, (_, t)) in cols.iter().zip(&d.args) {
                        self.params.push(match (c.get(*row), t) {
                            (Some(Arg::I64(v)), _) => Val::I64(v),
                            (Some(Arg::F64(v)), _) => Val::F64(v.to_bits()),
                            (Some(Arg::Bool(v)), _) => Val::I32(i32::from(v)),
                            // A NULL: its type's zero.
                            (None, SqlType::Double) => Val::F64(0),
                            (None, SqlType::Boolean) => Val::I32(0),
                            (None, SqlType::Bigint) => Val::I64(0),
                            (Some(Arg::Str(_)), _) | (None, _) => {
                                return Err(fail(UdfError::Abi {
                                    function: name.clone(),
                                    message: "a VARCHAR column, which a WebAssembly operator does not take".into(),
                                }))
                            }
                        });
                    }
                    self.ready(name, limits).map_err(fail)?;
                    self.process
                        .call(&mut self.store, &self.params, &mut self.results)
                        .map_err(|e| fail(classify(name, limits, &e)))?;
                    let packed = self.results[0].i64().unwrap_or(0);
                    self.emitted(d, &step, packed, *slot, &mut answer.rows)
                        .map_err(fail)?;
                }
            }
            OpJob::Timers { watermark, .. } => {
                let step = format!("{name}_on_timer");
                let Some(on_timer) = self.on_timer.clone() else {
                    return Err(UdfError::Engine(format!(
                        "operator `{name}` has no `{step}` but a timer fired (a bug in anduin)"
                    ))
                    .into());
                };
                for slot in 0..states.len() {
                    let fail = |error| OpFailure {
                        error: Box::new(error),
                        row: None,
                        slot: Some(slot),
                    };
                    self.ready(name, limits).map_err(fail)?;
                    let at = self.at(room.0, slot);
                    let packed = on_timer
                        .call(&mut self.store, (at, *watermark))
                        .map_err(|e| fail(classify(name, limits, &e)))?;
                    self.emitted(d, &step, packed, slot, &mut answer.rows)
                        .map_err(fail)?;
                }
            }
        }
        for slot in 0..states.len() {
            let fail = |error| OpFailure {
                error: Box::new(error),
                row: None,
                slot: Some(slot),
            };
            let at = self.at(room.0, slot);
            let state = self.get(at).map_err(fail)?;
            if state.iter().all(|b| *b == 0) {
                answer.states.push(None);
                answer.timers.push(None);
                continue;
            }
            let due = match self.timer.clone() {
                Some(timer) => {
                    self.ready(name, limits).map_err(fail)?;
                    let t = timer
                        .call(&mut self.store, at)
                        .map_err(|e| fail(classify(name, limits, &e)))?;
                    (t != NO_TIMER).then_some(t)
                }
                None => None,
            };
            answer.timers.push(due);
            answer.states.push(Some(state));
        }
        self.give_back(name, limits, room)?;
        Ok(answer)
    }
}
