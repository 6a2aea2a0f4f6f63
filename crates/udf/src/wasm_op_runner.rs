//! One instance of a module serving one operator, and one job on it: the states of the
//! job's keys written into room the module's allocator gives (or `init`ed), `process` or
//! `on_timer` called one call at a time (each with its own fuel), the rows each call emits
//! read from the module's memory after it, each state's `timer` asked, the states read back,
//! the room given back.

use wasmtime::{Func, TypedFunc, Val};

use crate::call::{classify, Arg, Out};
use crate::columns::Column;
use crate::operator::{OpAnswer, OpFailure, OpJob, OperatorDeclaration};
use crate::wasm_state::StateStore;
use crate::{Limits, SqlType, UdfError, WasmModule};

/// What `name_timer` returns for no timer.
const NO_TIMER: i64 = i64::MIN;

/// An instance of a module with its own store, ready to step one operator's states.
pub(crate) struct OpRunner {
    core: StateStore,
    init: Option<TypedFunc<i32, ()>>,
    process: Func,
    timer: Option<TypedFunc<i32, i64>>,
    on_timer: Option<TypedFunc<(i32, i64), i64>>,
    params: Vec<Val>,
    results: [Val; 1],
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
        let missing = |what: &str| UdfError::WasmOperator {
            function: name.clone(),
            module: module.label.to_string(),
            message: format!("it exports no {what} of the operator ABI's type"),
        };
        let (mut core, instance) = StateStore::new(module, name, limits, &missing)?;
        let store = &mut core.store;
        let init = instance
            .get_typed_func(&mut *store, &format!("{name}_init"))
            .ok();
        let process = instance
            .get_func(&mut *store, &format!("{name}_process"))
            .ok_or_else(|| missing(&format!("`{name}_process`")))?;
        let timer = instance
            .get_typed_func(&mut *store, &format!("{name}_timer"))
            .ok();
        let on_timer = instance
            .get_typed_func(&mut *store, &format!("{name}_on_timer"))
            .ok();
        Ok(OpRunner {
            core,
            init,
            process,
            timer,
            on_timer,
            params: Vec::new(),
            results: [Val::I64(0)],
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
            Some(bytes) => Err(UdfError::WasmOperator {
                function: name.to_string(),
                module: self.core.module.to_string(),
                message: format!(
                    "a state it was given has {} bytes, but `{name}_state_size()` says {size} (a checkpoint written by another version of the module?)",
                    bytes.len(),
                ),
            }),
            None => {
                self.core.write(at, &vec![0; size])?;
                match self.init.clone() {
                    Some(init) => {
                        self.core.ready(name, limits)?;
                        init.call(&mut self.core.store, at)
                            .map_err(|e| classify(name, limits, &e))
                    }
                    None => Ok(()),
                }
            }
        }
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
            .is_some_and(|end| end <= self.core.memory.data_size(&self.core.store));
        if !fits {
            return Err(UdfError::WasmOperator {
                function: d.name.clone(),
                module: self.core.module.to_string(),
                message: format!(
                    "`{step}` returned {count} rows of {width} bytes at {ptr}, which lie outside the module's memory (it returns `pointer << 32 | count`)"
                ),
            });
        }
        let mut bytes = vec![0u8; count * width];
        self.core
            .memory
            .read(&self.core.store, ptr, &mut bytes)
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
        // Room for one state at least, for a job without any.
        let room = self.core.room(name, limits, states.len().max(1))?;
        for (slot, s) in states.iter().enumerate() {
            let at = self.core.at(room.0, slot);
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
                    self.params.push(Val::I32(self.core.at(room.0, *slot)));
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
                    self.core.ready(name, limits).map_err(fail)?;
                    self.process
                        .call(&mut self.core.store, &self.params, &mut self.results)
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
                    self.core.ready(name, limits).map_err(fail)?;
                    let at = self.core.at(room.0, slot);
                    let packed = on_timer
                        .call(&mut self.core.store, (at, *watermark))
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
            let at = self.core.at(room.0, slot);
            let state = self.core.get(at).map_err(fail)?;
            if state.iter().all(|b| *b == 0) {
                answer.states.push(None);
                answer.timers.push(None);
                continue;
            }
            let due = match self.timer.clone() {
                Some(timer) => {
                    self.core.ready(name, limits).map_err(fail)?;
                    let t = timer
                        .call(&mut self.core.store, at)
                        .map_err(|e| fail(classify(name, limits, &e)))?;
                    (t != NO_TIMER).then_some(t)
                }
                None => None,
            };
            answer.timers.push(due);
            answer.states.push(Some(state));
        }
        self.core.give_back(name, limits, room)?;
        Ok(answer)
    }
}
