//! Issue 21, operators with keyed state: an operator that throws, traps or runs away on a
//! row fails naming itself, the function and where (the row of the batch, the key's slot),
//! a runaway marked as exhausted (which stops a query whatever `on_error` says); one that
//! emits rows or keeps states it may not, or whose body or module does not have what the
//! operator needs, is an error saying what and what to write instead.

use std::sync::Arc;

use anduin_expr::{OperatorFailure, UserOperator};
use anduin_udf::{JsOperator, Limits, OperatorDeclaration, WasmModule};
use arrow::array::{ArrayRef, Int64Array};

fn declaration(text: &str) -> OperatorDeclaration {
    OperatorDeclaration::parse(text).expect("declaration")
}

fn js(body: &str) -> JsOperator {
    JsOperator::new(
        declaration("f(v BIGINT) -> TABLE(a BIGINT, b BIGINT)"),
        body,
        Limits::default(),
    )
    .expect("compiles")
}

/// `process` on the values `v`, each row its own key (slot).
fn process(op: &dyn UserOperator, v: &[i64]) -> Result<anduin_expr::Emitted, OperatorFailure> {
    let column: ArrayRef = Arc::new(Int64Array::from(v.to_vec()));
    let steps: Vec<(usize, usize)> = (0..v.len()).map(|i| (i, i)).collect();
    op.process(vec![None; v.len()], &[column], &steps)
}

#[test]
fn a_javascript_throw_names_the_function_the_step_and_the_row() {
    let op = js("export function process(s, v) { if (v == 7) throw new RangeError('no sevens'); return s; }");
    let e = process(&op, &[1, 2, 7, 4]).expect_err("throws on the third row");
    assert_eq!(
        e.message,
        "function `f` threw RangeError: no sevens (in process(state, …))"
    );
    assert_eq!((e.row, e.slot, e.exhausted), (Some(2), Some(2), false));
    // The operator goes on with a fresh engine.
    assert!(process(&op, &[1]).is_ok());
}

#[test]
fn a_javascript_runaway_is_exhausted_on_its_row() {
    let op = js("export function process(s, v) { if (v == 3) { for (;;) {} } return s; }");
    let e = process(&op, &[1, 3]).expect_err("runs away");
    assert!(
        e.message.starts_with("function `f` ran out of fuel"),
        "{}",
        e.message
    );
    assert_eq!((e.row, e.exhausted), (Some(1), true));
}

#[test]
fn rows_and_states_an_operator_may_not_give_are_errors_saying_what_to_write() {
    for (body, expected) in [
        (
            "export function process(s, v) { emit(v); return s; }",
            "operator `f`: process(state, …) called emit(…) with 1 values, but it returns 2 columns (a BIGINT, b BIGINT): emit one value per column, in order",
        ),
        (
            "export function process(s, v) { emit('x', v); return s; }",
            "function `f`: process(state, …) emitted, as column `a`, the string \"x\" where BIGINT was declared",
        ),
        (
            "export function process(s, v) { return new Map(); }",
            "operator `f`: a state it returned holds a Map: a state must be plain JSON data (objects, arrays, strings, finite numbers, booleans, null), since it is written to checkpoints as JSON and must read back the same",
        ),
        (
            "export function process(s, v) { return { toJSON() { return 5; }, z: 1 }; }",
            "operator `f`: a state it returned holds a toJSON method: a state must be plain JSON data (objects, arrays, strings, finite numbers, booleans, null), since it is written to checkpoints as JSON and must read back the same",
        ),
        (
            "export function process(s, v) { return Object.defineProperty({ z: 2 }, 'x', { value: 1, enumerable: false }); }",
            "operator `f`: a state it returned holds a property that is not enumerable: a state must be plain JSON data (objects, arrays, strings, finite numbers, booleans, null), since it is written to checkpoints as JSON and must read back the same",
        ),
        (
            "export function process(s, v) { s = v; }",
            "operator `f`: process(state, …) returned undefined: it must return the key's state (`return state;` at the end of `process`; null: the key keeps no state)",
        ),
        (
            "export function create_state() { emit(1, 2); return 0; }\nexport function process(s, v) { return s; }",
            "operator `f`: create_state() called emit(…): only process(state, …) and on_timer(state, watermark) emit rows",
        ),
        (
            "export function process(s, v) { return 1; }\nexport function timer(s) { return 1.5; }\nexport function on_timer(s, w) { return s; }",
            "operator `f`: timer(state) returned the number 1.5: it must return an event time in milliseconds, an integer number (or null: no timer)",
        ),
        (
            "export function process(s, v) { return 1; }\nexport function timer(s) { if (s > 5) return 1; }\nexport function on_timer(s, w) { return s; }",
            "operator `f`: timer(state) returned undefined: it must return an event time in milliseconds, an integer number, or null for no timer (`return null;`)",
        ),
    ] {
        let e = process(&js(body), &[5]).expect_err(body);
        assert_eq!(e.message, expected, "{body}");
        assert!(!e.exhausted);
    }
}

#[test]
fn a_javascript_body_without_what_an_operator_needs_is_refused_when_declared() {
    let new = |body: &str| {
        JsOperator::new(
            declaration("f(v BIGINT) -> TABLE(a BIGINT)"),
            body,
            Limits::default(),
        )
        .expect_err(body)
        .to_string()
    };
    assert_eq!(
        new("export function proces(s, v) { return s; }"),
        "operator `f`: its body exports no `process`, which is called for each row: write `export function process(state, …) { … }` (the body is a module)"
    );
    assert!(new(
        "export function process(s, v) { return s; }\nexport function timer(s) { return null; }"
    )
    .starts_with("operator `f`: it exports `timer(state)` without `on_timer(state, watermark)`"));
    assert!(new("export function process(s, v) { return s }}")
        .starts_with("function `f`: its JavaScript does not compile: SyntaxError"));
}

/// A module with the example's stack allocator and `extra` exports.
fn module(extra: &str, section: &str) -> WasmModule {
    let text = format!(
        r#"(module
  (memory (export "memory") 1)
  (global $top (mut i32) (i32.const 1024))
  (func (export "alloc") (param $n i32) (result i32)
    (local $p i32)
    global.get $top
    local.set $p
    global.get $top
    local.get $n
    i32.add
    global.set $top
    local.get $p)
  (func (export "dealloc") (param $p i32) (param $n i32)
    local.get $p
    global.set $top)
  {extra}
  (@custom "anduin:operators" "{section}"))"#
    );
    WasmModule::from_binary("hostile.wat", &wat::parse_str(text).expect("valid text"))
        .expect("valid module")
}

const SIZE: &str = r#"(func (export "f_state_size") (result i32) i32.const 8)"#;

#[test]
fn a_webassembly_trap_names_its_row_and_a_runaway_is_exhausted() {
    let m = module(
        &format!(
            r#"{SIZE}
  (func (export "f_process") (param $s i32) (param $v i64) (result i64)
    local.get $v
    i64.const 7
    i64.eq
    if
      unreachable
    end
    (loop $spin
      local.get $v
      i64.const 3
      i64.eq
      br_if $spin)
    i64.const 0)"#
        ),
        "f(v BIGINT) -> TABLE(a BIGINT)",
    );
    let [op] = <[_; 1]>::try_from(m.declared_operators(Limits::default()).expect("checked"))
        .expect("one operator");
    let e = process(&op, &[1, 7]).expect_err("traps");
    assert!(
        e.message.starts_with("function `f` trapped: "),
        "{}",
        e.message
    );
    assert_eq!((e.row, e.exhausted), (Some(1), false));
    let e = process(&op, &[3]).expect_err("runs away");
    assert!(
        e.message.starts_with("function `f` ran out of fuel"),
        "{}",
        e.message
    );
    assert_eq!((e.row, e.exhausted), (Some(0), true));
}

#[test]
fn a_webassembly_operator_that_breaks_its_abi_is_refused_or_fails_saying_how() {
    let declared = |extra: &str| {
        module(extra, "f(v BIGINT) -> TABLE(a BIGINT)")
            .declared_operators(Limits::default())
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    assert_eq!(
        declared(SIZE),
        Err("operator `f` of module `hostile.wat`: it exports no `f_process`, which the operator ABI needs: `f_process(i32, i64) -> i64`".into())
    );
    assert_eq!(
        declared(&format!(
            r#"{SIZE} (func (export "f_process") (param i32 i32) (result i64) i64.const 0)"#
        )),
        Err("operator `f` of module `hostile.wat`: it exports `f_process` as (i32, i32) -> i64, but the operator ABI asks (i32, i64) -> i64 for f(v BIGINT) -> TABLE(a BIGINT)".into())
    );
    assert!(declared(&format!(
        r#"{SIZE} (func (export "f_process") (param i32 i64) (result i64) i64.const 0)
        (func (export "f_timer") (param i32) (result i64) i64.const 0)"#
    ))
    .is_err_and(|e| e.contains("it exports `f_timer` or `f_on_timer` without the other")));
    let e = module("", "f(v VARCHAR) -> TABLE(a BIGINT)")
        .declared_operators(Limits::default())
        .expect_err("strings");
    assert_eq!(
        e.to_string(),
        "operator `f` of module `hostile.wat`: column `v` is VARCHAR, which is not supported yet in a WebAssembly operator (BIGINT, DOUBLE and BOOLEAN are)"
    );
    // Rows said to lie beyond its memory.
    let m = module(
        &format!(
            r#"{SIZE} (func (export "f_process") (param i32 i64) (result i64) i64.const 0x7fff000000000002)"#
        ),
        "f(v BIGINT) -> TABLE(a BIGINT)",
    );
    let [op] = <[_; 1]>::try_from(m.declared_operators(Limits::default()).expect("checked"))
        .expect("one operator");
    let e = process(&op, &[1]).expect_err("outside");
    assert_eq!(
        e.message,
        "operator `f` of module `hostile.wat`: `f_process` returned 2 rows of 8 bytes at 2147418112, which lie outside the module's memory (it returns `pointer << 32 | count`)"
    );
    assert_eq!(e.row, Some(0));
}
