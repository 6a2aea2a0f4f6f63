//! The ABI's scalar and string functions, called on columns with NULLs, and the
//! declarations a module carries in its custom section.

use std::sync::Arc;

use anduin_udf::{Declaration, Limits, SqlType, WasmModule};
use arrow::array::{Array, ArrayRef, Float64Array, Int64Array, StringArray};

fn module(file: &str) -> WasmModule {
    let path = format!("{}/../../examples/udfs/{file}", env!("CARGO_MANIFEST_DIR"));
    let wasm = wat::parse_file(&path).expect("valid text");
    WasmModule::from_binary(file, &wasm).expect("valid module")
}

#[test]
fn a_bigint_function_adds_one_and_passes_nulls_through() {
    let m = module("add_one.wat");
    let f = m
        .function(
            Declaration::parse("add_one(BIGINT) -> BIGINT").expect("valid"),
            Limits::default(),
        )
        .expect("matches");
    let input: ArrayRef = Arc::new(Int64Array::from(vec![Some(1), None, Some(i64::MAX - 1)]));
    let out = f.call(&[input], 3).expect("no trap");
    assert_eq!(
        out.as_any().downcast_ref::<Int64Array>(),
        Some(&Int64Array::from(vec![Some(2), None, Some(i64::MAX)]))
    );
}

#[test]
fn a_module_declares_its_functions_in_a_custom_section() {
    let m = module("add_one.wat");
    let names: Vec<String> = m.declared().iter().map(ToString::to_string).collect();
    assert_eq!(
        names,
        ["add_one(BIGINT) -> BIGINT", "half(DOUBLE) -> DOUBLE"]
    );
    let fs = m.declared_functions(Limits::default()).expect("they match");
    let half = fs
        .iter()
        .find(|f| f.declaration().name == "half")
        .expect("declared");
    let input: ArrayRef = Arc::new(Float64Array::from(vec![3.0, -1.0]));
    let out = half.call(&[input], 2).expect("no trap");
    assert_eq!(
        out.as_any().downcast_ref::<Float64Array>(),
        Some(&Float64Array::from(vec![1.5, -0.5]))
    );
}

#[test]
fn a_string_function_reads_and_writes_through_linear_memory() {
    let m = module("shout.wat");
    let f = m
        .function(m.declared()[0].clone(), Limits::default())
        .expect("matches");
    assert_eq!(f.declaration().args, [SqlType::Varchar]);
    let long = "x".repeat(200_000);
    let input: ArrayRef = Arc::new(StringArray::from(vec![
        Some("hello"),
        None,
        Some(""),
        Some("grüße"),
        Some(long.as_str()),
    ]));
    // Twice over the same instance: the stack allocator gives every byte back.
    for _ in 0..2 {
        let out = f.call(&[Arc::clone(&input)], 5).expect("no trap");
        let out = out.as_any().downcast_ref::<StringArray>().expect("strings");
        assert_eq!(out.value(0), "HELLO!");
        assert!(out.is_null(1));
        assert_eq!(out.value(2), "!");
        assert_eq!(out.value(3), "GRüßE!");
        assert_eq!(out.value(4).len(), 200_001);
    }
}

#[test]
fn a_module_that_imports_anything_is_refused() {
    let wasm = wat::parse_str(
        r#"(module (import "wasi_snapshot_preview1" "fd_write" (func (param i32 i32 i32 i32) (result i32))))"#,
    )
    .expect("valid text");
    let e = WasmModule::from_binary("wasi.wasm", &wasm).expect_err("imports");
    assert_eq!(
        e.to_string(),
        "module `wasi.wasm` imports `wasi_snapshot_preview1.fd_write`: a UDF module is granted no imports (no WASI: no file system, no network, no clock)"
    );
}

#[test]
fn a_module_in_the_text_format_is_translated_when_loaded() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/udfs/add_one.wat");
    let m = WasmModule::load(&path).expect("text is translated");
    assert_eq!(m.declared().len(), 2);
    let e = WasmModule::load(std::path::Path::new("nowhere.wasm")).expect_err("missing");
    assert!(
        e.to_string()
            .starts_with("cannot read WebAssembly module `nowhere.wasm`: "),
        "{e}"
    );
}

#[test]
fn a_registered_function_is_called_from_expressions_by_name() {
    use anduin_expr::{compile_predicate, compile_projection, FunctionProvider, Scope};
    use arrow::datatypes::{DataType, Field, Schema};
    let m = module("shout.wat");
    let f = m
        .function(m.declared()[0].clone(), Limits::default())
        .expect("matches");
    FunctionProvider::get()
        .register_scalar(Arc::new(f).into_scalar_udf())
        .expect("not a built-in name");
    let schema = Arc::new(Schema::new(vec![Field::new("name", DataType::Utf8, true)]));
    let scope = Scope::new("people", Arc::clone(&schema));
    let cols = compile_projection("SHOUT(name) AS loud, shout('x') AS x", &scope).expect("known");
    assert_eq!(cols[0].data_type, DataType::Utf8);
    let batch = arrow::record_batch::RecordBatch::try_new(
        schema,
        vec![Arc::new(StringArray::from(vec!["ann", "bo"]))],
    )
    .expect("batch");
    let loud = cols[0].evaluate(&batch).expect("no trap");
    assert_eq!(
        loud.as_any().downcast_ref::<StringArray>(),
        Some(&StringArray::from(vec!["ANN!", "BO!"]))
    );
    let x = cols[1].evaluate(&batch).expect("a constant");
    assert_eq!(
        x.as_any().downcast_ref::<StringArray>().map(|a| a.value(1)),
        Some("X!")
    );
    let p = compile_predicate("shout(name) = 'BO!'", &scope).expect("a condition");
    let kept = p.evaluate_bool(&batch).expect("no trap");
    assert_eq!(kept, arrow::array::BooleanArray::from(vec![false, true]));
}
