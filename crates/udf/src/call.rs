//! One instance of a module, and one call of a function on it: the ABI's steps.

use wasmtime::{Func, Instance, Store, Trap, TypedFunc, Val};

use crate::limits::{InitialSize, Limiter};
use crate::strings::{Failed, Names, Strings};
use crate::{Declaration, Limits, SqlType, UdfError, WasmModule};

/// An argument of one call.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Arg<'a> {
    I64(i64),
    F64(f64),
    Bool(bool),
    Str(&'a str),
}

/// The result of one call.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Out {
    I64(i64),
    F64(f64),
    Bool(bool),
    Str(String),
}

/// The function through a typed entry point, for the most common signatures: about ten
/// times cheaper a call than through a list of dynamic values.
enum Typed {
    /// `(BIGINT) -> BIGINT`.
    I64(TypedFunc<i64, i64>),
    /// `(DOUBLE) -> DOUBLE`.
    F64(TypedFunc<f64, f64>),
    /// `(BIGINT, BIGINT) -> BIGINT`.
    I64I64(TypedFunc<(i64, i64), i64>),
}

/// An instance of a module with its own store (memory, fuel, limits), ready to call one
/// function. Not shared: a caller takes one from the function's pool for a batch.
pub(crate) struct Runner {
    store: Store<Limiter>,
    func: Func,
    typed: Option<Typed>,
    result: SqlType,
    strings: Option<Strings>,
    params: Vec<Val>,
    results: [Val; 1],
    /// The module's label, for errors.
    module: std::sync::Arc<str>,
}

impl Runner {
    /// Instantiates `module` for `declaration` (already checked against the module).
    pub(crate) fn new(
        module: &WasmModule,
        declaration: &Declaration,
        limits: Limits,
    ) -> Result<Runner, UdfError> {
        let name = &declaration.name;
        let (mut store, instance) = instantiate(module, name, limits)?;
        let missing = |what: &str| UdfError::MissingAbiExport {
            function: name.clone(),
            module: module.label.to_string(),
            missing: what.to_string(),
        };
        let func = instance
            .get_func(&mut store, name)
            .ok_or_else(|| missing(&format!("`{name}`")))?;
        use SqlType::{Bigint, Double};
        let typed = match (declaration.args.as_slice(), declaration.result) {
            ([Bigint], Bigint) => func.typed(&store).ok().map(Typed::I64),
            ([Double], Double) => func.typed(&store).ok().map(Typed::F64),
            ([Bigint, Bigint], Bigint) => func.typed(&store).ok().map(Typed::I64I64),
            _ => None,
        };
        let strings = if declaration.uses_strings() {
            Some(Strings::new(
                instance
                    .get_memory(&mut store, "memory")
                    .ok_or_else(|| missing("its `memory`"))?,
                instance
                    .get_typed_func(&mut store, "alloc")
                    .map_err(|_| missing("`alloc(len: i32) -> i32`"))?,
                instance
                    .get_typed_func(&mut store, "dealloc")
                    .map_err(|_| missing("`dealloc(ptr: i32, len: i32)`"))?,
            ))
        } else {
            None
        };
        Ok(Runner {
            store,
            func,
            typed,
            result: declaration.result,
            strings,
            params: Vec::new(),
            results: [Val::I64(0)],
            module: std::sync::Arc::clone(&module.label),
        })
    }

    /// Calls the function on one row's `args` with `limits.fuel` of fuel.
    pub(crate) fn call(
        &mut self,
        name: &str,
        limits: Limits,
        args: &[Arg<'_>],
    ) -> Result<Out, UdfError> {
        let fail = |e: wasmtime::Error| classify(name, limits, &e);
        self.store.set_fuel(limits.fuel).map_err(fail)?;
        self.store
            .set_epoch_deadline(crate::module::backstop_ticks(limits));
        match (&self.typed, args) {
            (Some(Typed::I64(f)), [Arg::I64(a)]) => {
                return f.call(&mut self.store, *a).map(Out::I64).map_err(fail)
            }
            (Some(Typed::F64(f)), [Arg::F64(a)]) => {
                return f.call(&mut self.store, *a).map(Out::F64).map_err(fail)
            }
            (Some(Typed::I64I64(f)), [Arg::I64(a), Arg::I64(b)]) => {
                return f
                    .call(&mut self.store, (*a, *b))
                    .map(Out::I64)
                    .map_err(fail)
            }
            _ => {}
        }
        self.params.clear();
        let strs: Vec<&str> = args
            .iter()
            .filter_map(|a| match a {
                Arg::Str(s) => Some(*s),
                _ => None,
            })
            .collect();
        let names = Names {
            function: name,
            module: &self.module,
        };
        let allocator = |f: Failed| match f {
            Failed::Wasm(e, call) => allocator_failed(&names, limits, &e, call),
            Failed::Udf(e) => e,
        };
        let mut rooms = Vec::new().into_iter();
        if !strs.is_empty() {
            let Some(strings) = &mut self.strings else {
                return Err(UdfError::Abi {
                    function: name.to_string(),
                    message: "a string argument without the string ABI".into(),
                });
            };
            rooms = strings
                .pass(&mut self.store, &names, &strs)
                .map_err(allocator)?
                .into_iter();
        }
        for arg in args {
            match *arg {
                Arg::I64(v) => self.params.push(Val::I64(v)),
                Arg::F64(v) => self.params.push(Val::F64(v.to_bits())),
                Arg::Bool(v) => self.params.push(Val::I32(i32::from(v))),
                Arg::Str(_) => {
                    let (ptr, len) = rooms.next().ok_or_else(|| UdfError::Abi {
                        function: name.to_string(),
                        message: "fewer strings passed than taken".into(),
                    })?;
                    self.params.push(Val::I32(ptr));
                    self.params.push(Val::I32(len));
                }
            }
        }
        self.func
            .call(&mut self.store, &self.params, &mut self.results)
            .map_err(fail)?;
        let out = match (self.result, &self.results[0], &mut self.strings) {
            (SqlType::Varchar, Val::I64(v), Some(strings)) => {
                let ptr = (v >> 32) as u32;
                let len = *v as u32;
                Out::Str(strings.result(&self.store, name, ptr, len)?)
            }
            (SqlType::Bigint, Val::I64(v), _) => Out::I64(*v),
            (SqlType::Double, Val::F64(bits), _) => Out::F64(f64::from_bits(*bits)),
            (SqlType::Boolean, Val::I32(v), _) => Out::Bool(*v != 0),
            (_, other, _) => {
                return Err(UdfError::Abi {
                    function: name.to_string(),
                    message: format!("it returned {other:?}"),
                })
            }
        };
        if let Some(strings) = &mut self.strings {
            strings.give_back(&mut self.store).map_err(allocator)?;
        }
        Ok(out)
    }
}

/// A failed call `call` of the module's allocator for function `names.function`: out of
/// fuel or memory is what it would be in the function itself; a trap is the allocator's.
fn allocator_failed(
    names: &Names<'_>,
    limits: Limits,
    e: &wasmtime::Error,
    call: String,
) -> UdfError {
    match classify(names.function, limits, e) {
        UdfError::Trap { trap, .. } => UdfError::Allocator {
            function: names.function.to_string(),
            module: names.module.to_string(),
            call,
            problem: format!("trapped: {trap}"),
        },
        other => other,
    }
}

/// A failed instantiation of `module` for function `name`, saying why.
/// A store for function `name` under `limits` (memory, fuel, the wall-clock backstop), and
/// `module` instantiated in it: the start function, if any, runs here with one call's fuel.
pub(crate) fn instantiate(
    module: &WasmModule,
    name: &str,
    limits: Limits,
) -> Result<(Store<Limiter>, Instance), UdfError> {
    let mut store = Store::new(
        module.module.engine(),
        Limiter {
            function: name.to_string(),
            memory_bytes: limits.memory_bytes,
            instantiating: true,
        },
    );
    store.limiter(|l| l);
    store
        .set_fuel(limits.fuel)
        .map_err(|e| classify(name, limits, &e))?;
    store.set_epoch_deadline(crate::module::backstop_ticks(limits));
    let instance = Instance::new(&mut store, &module.module, &[])
        .map_err(|e| not_instantiated(name, module, limits, &e))?;
    store.data_mut().instantiating = false;
    Ok((store, instance))
}

pub(crate) fn not_instantiated(
    name: &str,
    module: &WasmModule,
    limits: Limits,
    e: &wasmtime::Error,
) -> UdfError {
    let fuel = limits.fuel;
    let reason = if let Some(size) = e.downcast_ref::<InitialSize>() {
        size.to_string()
    } else {
        match e.downcast_ref::<Trap>() {
            Some(Trap::OutOfFuel) => format!(
                "its start function did not return within {fuel} instructions (a runaway loop?)"
            ),
            Some(Trap::Interrupt) => format!(
                "its start function ran for more than {:?} of wall-clock time",
                limits.backstop
            ),
            Some(trap) => format!(
                "it traps while being instantiated (in its start function, or placing its data or elements): {trap}"
            ),
            None => format!("{e:#}"),
        }
    };
    UdfError::Instantiate {
        function: name.to_string(),
        module: module.label.to_string(),
        reason,
    }
}

/// A failed call of function `name` as a [`UdfError`] that names it.
pub(crate) fn classify(name: &str, limits: Limits, e: &wasmtime::Error) -> UdfError {
    let fuel = limits.fuel;
    if let Some(u) = e.downcast_ref::<UdfError>() {
        return u.clone();
    }
    match e.downcast_ref::<Trap>() {
        Some(Trap::OutOfFuel) => UdfError::OutOfFuel {
            function: name.to_string(),
            fuel,
        },
        Some(Trap::Interrupt) => UdfError::OutOfTime {
            function: name.to_string(),
            limit: limits.backstop,
        },
        Some(trap) => UdfError::Trap {
            function: name.to_string(),
            trap: trap.to_string(),
        },
        None => UdfError::Trap {
            function: name.to_string(),
            trap: format!("{e:#}"),
        },
    }
}
