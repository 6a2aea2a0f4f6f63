//! A module whose every instance fails (its start function loops or traps, its memory or a
//! table starts beyond the limits) is refused when its function is declared, naming the
//! function, the module and why: otherwise every row would fail, slowly, on a fresh instance.

use anduin_udf::{Declaration, Limits, UdfError, WasmModule};

/// The error declaring `id(BIGINT) -> BIGINT` of a module whose other fields are `fields`.
fn declare(fields: &str, limits: Limits) -> UdfError {
    let wasm = wat::parse_str(format!(
        r#"(module {fields}
             (func (export "id") (param i64) (result i64) local.get 0))"#
    ))
    .expect("valid text");
    let m = WasmModule::from_binary("broken.wasm", &wasm).expect("valid module");
    m.function(
        Declaration::parse("id(BIGINT) -> BIGINT").expect("valid"),
        limits,
    )
    .expect_err("cannot be instantiated")
}

fn reason(e: UdfError) -> String {
    let UdfError::Instantiate {
        function,
        module,
        reason,
    } = &e
    else {
        panic!("not an instantiation error: {e}");
    };
    assert_eq!((function.as_str(), module.as_str()), ("id", "broken.wasm"));
    assert!(
        e.to_string()
            .starts_with("module `broken.wasm` cannot be instantiated for function `id`: "),
        "{e}"
    );
    reason.clone()
}

#[test]
fn a_start_function_that_loops_is_refused_as_a_runaway() {
    let limits = Limits {
        fuel: 50_000,
        ..Limits::default()
    };
    let e = declare(
        "(func $start (loop $forever br $forever)) (start $start)",
        limits,
    );
    assert_eq!(
        reason(e),
        "its start function did not return within 50000 instructions (a runaway loop?)"
    );
}

#[test]
fn a_start_function_that_traps_is_refused_with_the_trap() {
    let e = declare(
        "(func $start unreachable) (start $start)",
        Limits::default(),
    );
    let r = reason(e);
    assert!(r.starts_with("it traps while being instantiated"), "{r}");
    assert!(r.contains("unreachable"), "{r}");
}

#[test]
fn a_memory_that_starts_over_the_limit_is_refused() {
    let limits = Limits {
        memory_bytes: 1 << 20,
        ..Limits::default()
    };
    let e = declare("(memory 17)", limits);
    assert_eq!(
        reason(e),
        "its memory's initial size of 1114112 bytes is beyond the limit of 1048576 bytes"
    );
    // At the limit, it is fine.
    let wasm = wat::parse_str(
        r#"(module (memory 16) (func (export "id") (param i64) (result i64) local.get 0))"#,
    )
    .expect("valid text");
    let m = WasmModule::from_binary("ok.wasm", &wasm).expect("valid module");
    m.function(
        Declaration::parse("id(BIGINT) -> BIGINT").expect("valid"),
        limits,
    )
    .expect("16 pages are 1 MiB");
}

#[test]
fn a_table_that_starts_over_the_limit_is_refused() {
    let e = declare("(table 200000 funcref)", Limits::default());
    assert_eq!(
        reason(e),
        "its table's initial size of 200000 elements is beyond the limit of 100000"
    );
}

#[test]
fn a_data_segment_outside_its_memory_is_refused() {
    let e = declare(
        r#"(memory 1) (data (i32.const 65535) "ab")"#,
        Limits::default(),
    );
    let r = reason(e);
    assert!(r.starts_with("it traps while being instantiated"), "{r}");
}
