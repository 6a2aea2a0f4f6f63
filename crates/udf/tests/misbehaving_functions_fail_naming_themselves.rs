//! The sandbox: a runaway loop runs out of fuel, a trap and a memory bomb are errors, each
//! naming the function; a declaration that does not match the export is refused at load.

use std::sync::Arc;

use anduin_udf::{Declaration, Limits, UdfError, WasmModule};
use arrow::array::{ArrayRef, Int64Array};

fn hostile() -> WasmModule {
    let path = format!("{}/testdata/hostile.wat", env!("CARGO_MANIFEST_DIR"));
    let wasm = wat::parse_file(&path).expect("valid text");
    WasmModule::from_binary("hostile.wasm", &wasm).expect("valid module")
}

fn ints(v: Vec<i64>) -> ArrayRef {
    Arc::new(Int64Array::from(v))
}

fn call(name: &str, limits: Limits, input: Vec<i64>) -> Result<ArrayRef, UdfError> {
    let d = Declaration::parse(&format!("{name}(BIGINT) -> BIGINT")).expect("valid");
    let f = hostile().function(d, limits).expect("matches");
    let rows = input.len();
    f.call(&[ints(input)], rows)
}

#[test]
fn a_runaway_loop_runs_out_of_fuel_instead_of_hanging() {
    let limits = Limits {
        fuel: 100_000,
        ..Limits::default()
    };
    let e = call("spin", limits, vec![1]).expect_err("runaway");
    assert_eq!(
        e,
        UdfError::OutOfFuel {
            function: "spin".into(),
            fuel: 100_000
        }
    );
    assert_eq!(
        e.to_string(),
        "function `spin` ran out of fuel: it did not return within 100000 instructions (a runaway loop?)"
    );
}

#[test]
fn a_trap_is_an_error_naming_the_function_and_the_next_call_works() {
    let d = Declaration::parse("boom(BIGINT) -> BIGINT").expect("valid");
    let f = hostile().function(d, Limits::default()).expect("matches");
    let e = f
        .call(&[ints(vec![1, 2, 3, 4])], 4)
        .expect_err("traps on 3");
    let UdfError::Trap { function, trap } = &e else {
        panic!("not a trap: {e}");
    };
    assert_eq!(function, "boom");
    assert!(trap.contains("unreachable"), "{trap}");
    assert!(
        e.to_string().starts_with("function `boom` trapped: "),
        "{e}"
    );
    // The trapped instance is dropped; a fresh one serves the next batch.
    let out = f.call(&[ints(vec![1, 2])], 2).expect("no 3");
    assert_eq!(
        out.as_ref(),
        &Int64Array::from(vec![1, 2]) as &dyn arrow::array::Array
    );
}

#[test]
fn a_memory_bomb_stops_at_the_limit() {
    let limits = Limits {
        memory_bytes: 1 << 20,
        ..Limits::default()
    };
    let e = call("bomb", limits, vec![1]).expect_err("too much memory");
    assert_eq!(
        e.to_string(),
        format!(
            "function `bomb` tried to grow its memory to {} bytes, beyond the limit of 1048576 bytes",
            (32768 + 1) * 65536_usize
        )
    );
}

#[test]
fn a_declaration_that_does_not_match_the_export_is_refused() {
    let m = hostile();
    let e = m
        .function(
            Declaration::parse("narrow(BIGINT) -> BIGINT").expect("valid"),
            Limits::default(),
        )
        .expect_err("i32 is not BIGINT");
    assert_eq!(
        e.to_string(),
        "function `narrow` is declared as (BIGINT) RETURNS BIGINT, which takes (i64) -> i64 in WebAssembly, but module `hostile.wasm` exports it as (i32) -> i32"
    );
    let e = m
        .function(
            Declaration::parse("nope(BIGINT) -> BIGINT").expect("valid"),
            Limits::default(),
        )
        .expect_err("no such export");
    assert_eq!(
        e.to_string(),
        "module `hostile.wasm` exports no function `nope`: it exports spin, boom, bomb, narrow"
    );
    let e = m
        .function(
            Declaration::parse("spin(VARCHAR) -> BIGINT").expect("valid"),
            Limits::default(),
        )
        .expect_err("strings");
    assert!(e.to_string().contains("(i32, i32) -> i64"), "{e}");
}

#[test]
fn a_runaway_in_an_expression_is_an_exhausted_error_and_a_trap_a_row_error() {
    use anduin_expr::{compile_projection, ExprErrorKind, FunctionProvider, Scope};
    use arrow::datatypes::{DataType, Field, Schema};
    let limits = Limits {
        fuel: 100_000,
        ..Limits::default()
    };
    for name in ["spin", "boom"] {
        let d = Declaration::parse(&format!("{name}(BIGINT) -> BIGINT")).expect("valid");
        let f = hostile().function(d, limits).expect("matches");
        FunctionProvider::get()
            .register_scalar(Arc::new(f).into_scalar_udf())
            .expect("not a built-in name");
    }
    let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, true)]));
    let scope = Scope::new("t", Arc::clone(&schema));
    let cols = compile_projection("spin(x) AS s, boom(x) AS b", &scope).expect("known");
    let batch =
        arrow::record_batch::RecordBatch::try_new(schema, vec![ints(vec![3])]).expect("batch");
    let e = cols[0].evaluate(&batch).expect_err("runs away");
    assert_eq!(e.kind, ExprErrorKind::Exhausted, "{e}");
    assert_eq!(
        e.message,
        "function `spin` ran out of fuel: it did not return within 100000 instructions (a runaway loop?)"
    );
    let e = cols[1].evaluate(&batch).expect_err("traps on 3");
    assert_eq!(e.kind, ExprErrorKind::Row, "{e}");
    assert!(e.message.starts_with("function `boom` trapped: "), "{e}");
}

/// From the hostile probe of UDFs: a bulk memory instruction is one unit of fuel whatever its
/// size, so a loop of 32 MiB `memory.fill`s ran for hours on its fuel (and the first SIGTERM
/// did not stop the run). The wall-clock backstop stops it, an error that stops the query.
#[test]
fn bulk_memory_work_that_fuel_does_not_count_is_stopped_by_the_wall_clock_backstop() {
    let wasm = wat::parse_str(
        r#"(module
  (memory 512)
  (func (export "fill") (param i64) (result i64)
    (loop $again
      (memory.fill (i32.const 0) (i32.const 7) (i32.const 33554432))
      (br $again))
    (i64.const 0)))"#,
    )
    .expect("valid text");
    let module = WasmModule::from_binary("fill.wasm", &wasm).expect("valid module");
    let d = Declaration::parse("fill(BIGINT) -> BIGINT").expect("valid");
    // A backstop of one tick of the epoch (100 ms), so that the test is quick; the default is
    // 10 s.
    let limits = Limits {
        backstop: std::time::Duration::from_millis(1),
        ..Limits::default()
    };
    let f = module.function(d, limits).expect("matches");
    let e = f.call(&[ints(vec![1])], 1).expect_err("stopped");
    assert!(matches!(e, UdfError::OutOfTime { .. }), "{e}");
    assert!(
        e.to_string().starts_with(
            "function `fill` ran for more than 1ms of wall-clock time and was stopped"
        ),
        "{e}"
    );
}
