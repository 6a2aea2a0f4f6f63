//! The string ABI trusts the module's own `alloc` and `dealloc`. When they trap, hand out
//! room outside the module's memory, or hand out the same room for two arguments of one call
//! (which garbled the first argument before: a silent wrong answer), the call fails with an
//! error that names the function, the module and the allocator's call.

use std::sync::Arc;

use anduin_udf::{Declaration, Limits, UdfError, WasmModule};
use arrow::array::{Array, ArrayRef, Int64Array, StringArray};

/// A module whose `first_byte(a, b)` returns the first byte of `a` (0 if empty), with
/// allocator `alloc` (the body of `(func (param $n i32) (result i32) …)`) and `dealloc`.
fn module(alloc: &str, dealloc: &str) -> anduin_udf::WasmFunction {
    let wasm = wat::parse_str(format!(
        r#"(module
  (memory (export "memory") 1)
  (global $top (mut i32) (i32.const 1024))
  (func (export "alloc") (param $n i32) (result i32) {alloc})
  (func (export "dealloc") (param $p i32) (param $n i32) {dealloc})
  (func (export "first_byte") (param $a i32) (param $an i32) (param $b i32) (param $bn i32)
    (result i64)
    local.get $an
    i32.eqz
    if (result i64)
      i64.const 0
    else
      local.get $a
      i64.load8_u
    end))"#
    ))
    .expect("valid text");
    let m = WasmModule::from_binary("alloc.wasm", &wasm).expect("valid module");
    m.function(
        Declaration::parse("first_byte(VARCHAR, VARCHAR) -> BIGINT").expect("valid"),
        Limits::default(),
    )
    .expect("matches")
}

/// A bump allocator that never gives back: every argument gets room of its own.
const BUMP: &str = "global.get $top global.get $top local.get $n i32.add global.set $top";

fn call(f: &anduin_udf::WasmFunction, a: &str, b: &str) -> Result<Option<i64>, UdfError> {
    let a: ArrayRef = Arc::new(StringArray::from(vec![a]));
    let b: ArrayRef = Arc::new(StringArray::from(vec![b]));
    let out = f.call(&[a, b], 1)?;
    let out = out.as_any().downcast_ref::<Int64Array>().expect("ints");
    Ok(out.is_valid(0).then(|| out.value(0)))
}

fn allocator_error(e: UdfError) -> (String, String) {
    let UdfError::Allocator {
        function,
        module,
        call,
        problem,
    } = &e
    else {
        panic!("not the allocator's fault: {e}");
    };
    assert_eq!(
        (function.as_str(), module.as_str()),
        ("first_byte", "alloc.wasm")
    );
    assert!(
        e.to_string().starts_with(
            "function `first_byte`: the allocator of module `alloc.wasm` is broken: `"
        ),
        "{e}"
    );
    (call.clone(), problem.clone())
}

#[test]
fn a_sound_allocator_gives_the_right_answer() {
    let f = module(BUMP, "");
    assert_eq!(call(&f, "a", "b").expect("no fault"), Some(i64::from(b'a')));
    assert_eq!(call(&f, "", "b").expect("no fault"), Some(0));
}

#[test]
fn the_same_room_for_two_arguments_is_refused_not_a_garbled_argument() {
    // Always 1024: `b` would be written over `a`, and first_byte("a", "b") be 'b'.
    let f = module("i32.const 1024", "");
    let (call_, problem) = allocator_error(call(&f, "a", "b").expect_err("overlap"));
    assert_eq!(call_, "alloc(1)");
    assert_eq!(
        problem,
        "returned 1024: its 1 bytes overlap the 1 bytes at 1024 it returned for string argument 1 of the same call, not given back yet"
    );
    // An empty argument needs no room of its own.
    assert_eq!(
        call(&f, "a", "").expect("nothing overlaps"),
        Some(i64::from(b'a'))
    );
}

#[test]
fn room_outside_the_memory_is_refused() {
    let f = module("i32.const 65535", "");
    let (call_, problem) = allocator_error(call(&f, "abc", "").expect_err("outside"));
    assert_eq!(call_, "alloc(3)");
    assert_eq!(
        problem,
        "returned 65535: its 3 bytes end at 65538, beyond its memory of 65536 bytes"
    );
    let f = module("i32.const -4", "");
    let (_, problem) = allocator_error(call(&f, "abc", "").expect_err("negative"));
    assert!(problem.starts_with("returned 4294967292: "), "{problem}");
}

#[test]
fn a_trap_in_alloc_or_dealloc_names_the_call() {
    let f = module("unreachable", "");
    let (call_, problem) = allocator_error(call(&f, "abc", "de").expect_err("alloc traps"));
    assert_eq!(call_, "alloc(3)");
    assert!(problem.starts_with("trapped: "), "{problem}");
    assert!(problem.contains("unreachable"), "{problem}");
    let f = module(BUMP, "unreachable");
    let (call_, _) = allocator_error(call(&f, "abc", "de").expect_err("dealloc traps"));
    // Given back latest first: the second argument's room first.
    assert_eq!(call_, "dealloc(1027, 2)");
}

#[test]
fn an_allocator_that_runs_away_runs_out_of_the_calls_fuel() {
    let f = module("(loop $l br $l) i32.const 0", "");
    let e = call(&f, "abc", "de").expect_err("runs away");
    assert_eq!(
        e,
        UdfError::OutOfFuel {
            function: "first_byte".into(),
            fuel: Limits::DEFAULT_FUEL
        }
    );
}
