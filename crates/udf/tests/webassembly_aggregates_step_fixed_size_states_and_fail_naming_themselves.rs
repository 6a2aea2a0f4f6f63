//! Issue 21, aggregates in WebAssembly: a module's aggregate (`name_state_size`, `_init`,
//! `_accumulate`, `_retract`, `_merge`, `_finish`, its state a fixed number of bytes in the
//! module's memory) gives per group what a naive computation gives, on seeded random rows cut
//! into random batches, its states written out and read back between batches as a
//! checkpoint does; and a module that breaks the ABI, traps or runs away is an error naming
//! the aggregate.

use std::path::Path;
use std::sync::Arc;

use anduin_udf::{Declaration, GroupStates, Limits, UdfError, WasmModule};
use arrow::array::{Array, ArrayRef, BinaryArray, Float64Array, Int64Array};

fn int_avg() -> WasmModule {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/udfs/int_avg.wat");
    WasmModule::load(&path).expect("the example module loads")
}

fn ints(v: Vec<Option<i64>>) -> ArrayRef {
    Arc::new(Int64Array::from(v))
}

/// A small seeded generator (xorshift), so that a failure names its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

#[test]
fn the_average_per_group_equals_the_naive_one_whatever_the_batches() {
    let aggs = int_avg()
        .declared_aggregates(Limits::default())
        .expect("declared in its section");
    let [f] = aggs.as_slice() else {
        panic!("one aggregate: {aggs:?}")
    };
    assert_eq!(f.declaration().to_string(), "int_avg(BIGINT) -> DOUBLE");
    assert!(f.merges() && f.retracts());
    assert_eq!(f.state_size(), 16);
    for seed in [5u64, 6, 99] {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let rows = 400;
        let groups: Vec<usize> = (0..rows).map(|_| rng.next(6) as usize).collect();
        let values: Vec<Option<i64>> = (0..rows)
            .map(|_| (rng.next(9) != 0).then(|| rng.next(2000) as i64 - 1000))
            .collect();
        let mut states: GroupStates = vec![None; 6];
        let mut at = 0;
        while at < rows {
            let len = (1 + rng.next(50) as usize).min(rows - at);
            f.accumulate(
                &mut states,
                &groups[at..at + len],
                &[ints(values[at..at + len].to_vec())],
                None,
                false,
            )
            .expect("no trap");
            // Written out and read back, as a checkpoint and a restore do.
            let column = BinaryArray::from_iter(states.clone());
            let mut restored: GroupStates = vec![None; states.len()];
            let ids: Vec<usize> = (0..states.len()).collect();
            f.merge(&mut restored, &ids, &column, "a test")
                .expect("adopted");
            assert_eq!(restored, states, "seed {seed}");
            states = restored;
            at += len;
        }
        let out = f.finish(states).expect("no trap");
        let out = out
            .as_any()
            .downcast_ref::<Float64Array>()
            .expect("doubles");
        for g in 0..6 {
            let vs: Vec<i64> = (0..rows)
                .filter(|i| groups[*i] == g)
                .filter_map(|i| values[i])
                .collect();
            let want = vs.iter().sum::<i64>() as f64 / vs.len() as f64;
            assert_eq!(out.value(g), want, "seed {seed}, group {g}");
        }
    }
}

#[test]
fn states_merge_and_rows_retract() {
    let f = int_avg()
        .aggregate(
            Declaration::parse("int_avg(BIGINT) -> DOUBLE").expect("valid"),
            Limits::default(),
        )
        .expect("matches the ABI");
    let mut a: GroupStates = vec![None];
    f.accumulate(
        &mut a,
        &[0, 0],
        &[ints(vec![Some(1), Some(3)])],
        None,
        false,
    )
    .expect("no trap");
    let mut b: GroupStates = vec![None];
    f.accumulate(&mut b, &[0], &[ints(vec![Some(8)])], None, false)
        .expect("no trap");
    f.merge(&mut a, &[0], &BinaryArray::from_iter(b), "a test")
        .expect("merges");
    f.accumulate(&mut a, &[0], &[ints(vec![Some(3)])], None, true)
        .expect("retracts");
    let out = f.finish(a).expect("no trap");
    assert_eq!(
        out.as_any().downcast_ref::<Float64Array>(),
        Some(&Float64Array::from(vec![4.5]))
    );
    let mut short: GroupStates = vec![Some(vec![1, 2, 3])];
    let e = f
        .accumulate(&mut short, &[0], &[ints(vec![Some(1)])], None, false)
        .expect_err("a state of another size");
    assert!(
        e.to_string().starts_with("aggregate `int_avg`: a state it was given has 3 bytes, but `int_avg_state_size()` says 16"),
        "{e}"
    );
}

/// A module of aggregates that go wrong, with the stack allocator of the example.
fn hostile(extra: &str) -> WasmModule {
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
  {extra})"#
    );
    let bytes = wat::parse_str(&text).expect("valid text");
    WasmModule::from_binary("hostile.wat", &bytes).expect("valid module")
}

const COUNTER: &str = r#"
  (func (export "c_state_size") (result i32) i32.const 8)
  (func (export "c_init") (param $s i32) local.get $s i64.const 0 i64.store)
  (func (export "c_finish") (param $s i32) (result i64) local.get $s i64.load)"#;

#[test]
fn a_trap_and_a_runaway_name_the_aggregate() {
    let m = hostile(&format!(
        r#"{COUNTER}
  (func (export "c_accumulate") (param $s i32) (param $x i64)
    (loop $l local.get $x i64.const 7 i64.eq br_if $l)
    local.get $x i64.const 3 i64.eq if unreachable end)"#
    ));
    let f = m
        .aggregate(
            Declaration::parse("c(BIGINT) -> BIGINT").expect("valid"),
            Limits::default(),
        )
        .expect("matches the ABI");
    let mut states: GroupStates = vec![None];
    let e = f
        .accumulate(
            &mut states,
            &[0, 0],
            &[ints(vec![Some(1), Some(3)])],
            None,
            false,
        )
        .expect_err("traps");
    assert!(
        matches!(e, UdfError::Trap { ref function, .. } if function == "c"),
        "{e}"
    );
    let mut states: GroupStates = vec![None];
    let e = f
        .accumulate(&mut states, &[0], &[ints(vec![Some(7)])], None, false)
        .expect_err("runs away");
    assert_eq!(
        e.to_string(),
        "function `c` ran out of fuel: it did not return within 10000000 instructions (a runaway loop?)"
    );
}

#[test]
fn a_module_that_breaks_the_abi_is_refused_when_declared() {
    let declare = |extra: &str| {
        hostile(extra)
            .aggregate(
                Declaration::parse("c(BIGINT) -> BIGINT").expect("valid"),
                Limits::default(),
            )
            .expect_err("refused")
            .to_string()
    };
    assert_eq!(
        declare(COUNTER),
        "aggregate `c` of module `hostile.wat`: it exports no `c_accumulate`, which the aggregate ABI needs: `c_accumulate(i32, i64) -> ()`"
    );
    assert_eq!(
        declare(&format!(
            "{COUNTER}\n(func (export \"c_accumulate\") (param $s i32) (param $x i32))"
        )),
        "aggregate `c` of module `hostile.wat`: it exports `c_accumulate` as (i32, i32) -> (), but the aggregate ABI asks (i32, i64) -> () for c(BIGINT) -> BIGINT"
    );
    assert_eq!(
        declare(
            r#"(func (export "c_state_size") (result i32) i32.const 0)
  (func (export "c_init") (param $s i32))
  (func (export "c_accumulate") (param $s i32) (param $x i64))
  (func (export "c_finish") (param $s i32) (result i64) i64.const 0)"#
        ),
        "aggregate `c` of module `hostile.wat`: `c_state_size()` says 0 bytes: a state has 1 to 1048576 bytes"
    );
    let e = hostile(COUNTER)
        .aggregate(
            Declaration::parse("c(VARCHAR) -> BIGINT").expect("valid"),
            Limits::default(),
        )
        .expect_err("no strings yet");
    assert!(
        e.to_string()
            .contains("VARCHAR is not supported yet in a WebAssembly aggregate"),
        "{e}"
    );
}
