//! Issue 21, from the hostile probe: a string function that returns its argument unchanged
//! (an identity), or a part of it, returns room the host allocated for the argument. The host
//! gave that room back twice — once as the result, once as the argument — which a strict
//! allocator takes for a double free, and a lenient one may hand out twice later. The room is
//! now the argument's, given back once.

use std::sync::Arc;

use anduin_udf::{Declaration, Limits, WasmModule};
use arrow::array::{Array, ArrayRef, StringArray};

/// A stack allocator that checks what it is given back: `dealloc` traps unless it is given
/// the latest room still out (so it traps on a double free), `id(s)`
/// returns `s` itself; `tail(s)` all of `s` but its first byte.
const MODULE: &str = r#"(module
  (memory (export "memory") 1)
  (global $top (mut i32) (i32.const 1024))
  (func (export "alloc") (param $n i32) (result i32)
    global.get $top
    global.get $top local.get $n i32.add global.set $top)
  (func (export "dealloc") (param $p i32) (param $n i32)
    local.get $p local.get $n i32.add
    global.get $top
    i32.ne
    if unreachable end
    local.get $p global.set $top)
  (func (export "id") (param $p i32) (param $n i32) (result i64)
    local.get $p i64.extend_i32_u i64.const 32 i64.shl
    local.get $n i64.extend_i32_u i64.or)
  (func (export "tail") (param $p i32) (param $n i32) (result i64)
    local.get $p i32.const 1 i32.add i64.extend_i32_u i64.const 32 i64.shl
    local.get $n i32.const 1 i32.sub i64.extend_i32_u i64.or))"#;

fn strings(v: Vec<&str>) -> ArrayRef {
    Arc::new(StringArray::from(v))
}

#[test]
fn an_identity_and_a_substring_give_their_results_and_the_allocator_stays_sound() {
    let wasm = wat::parse_str(MODULE).expect("valid text");
    let module = WasmModule::from_binary("id.wasm", &wasm).expect("valid module");
    for (decl, want) in [
        ("id(VARCHAR) -> VARCHAR", ["hello", "x", "grüße"]),
        ("tail(VARCHAR) -> VARCHAR", ["ello", "", "rüße"]),
    ] {
        let f = module
            .function(Declaration::parse(decl).expect("valid"), Limits::default())
            .expect("matches");
        // Three rows on one instance: a double free would trap on the first, and room given
        // back wrongly would garble a later row.
        let out = f
            .call(&[strings(vec!["hello", "x", "grüße"])], 3)
            .unwrap_or_else(|e| panic!("{decl}: {e}"));
        let out = out.as_any().downcast_ref::<StringArray>().expect("strings");
        let got: Vec<&str> = (0..out.len()).map(|i| out.value(i)).collect();
        assert_eq!(got, want, "{decl}");
    }
}
