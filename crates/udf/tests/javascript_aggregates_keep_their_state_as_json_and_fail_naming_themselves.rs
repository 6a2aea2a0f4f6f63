//! Issue 21, aggregates: an inline JavaScript aggregate (`CREATE AGGREGATE … LANGUAGE
//! javascript`, RisingWave's `create_state` / `accumulate` / `retract` / `merge` / `finish`)
//! gives per group what a naive computation gives, on seeded random rows cut into random
//! batches, with its states written out and read back (as a checkpoint does) between
//! batches; states merge; and every way it can go wrong is an error naming it.

use std::sync::Arc;

use anduin_udf::{Declaration, GroupStates, JsAggregate, Limits, UdfError};
use arrow::array::{Array, ArrayRef, BinaryArray, BooleanArray, Float64Array, Int64Array};

/// A weighted average as RisingWave's documentation writes it, with a `merge` and a
/// `retract`.
const WAVG: &str = r#"
export function create_state() {
  return { sum: 0, weight: 0 };
}
export function accumulate(state, value, weight) {
  state.sum += value * weight;
  state.weight += weight;
  return state;
}
export function retract(state, value, weight) {
  state.sum -= value * weight;
  state.weight -= weight;
  return state;
}
export function merge(a, b) {
  return { sum: a.sum + b.sum, weight: a.weight + b.weight };
}
export function finish(state) {
  return state.weight == 0 ? null : state.sum / state.weight;
}
"#;

fn agg(decl: &str, body: &str) -> Result<JsAggregate, UdfError> {
    JsAggregate::new(
        Declaration::parse(decl).expect("valid"),
        body,
        Limits::default(),
    )
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
fn a_weighted_average_per_group_equals_the_naive_one_whatever_the_batches() {
    let f = agg("wavg(BIGINT, BIGINT) -> DOUBLE", WAVG).expect("compiles");
    assert!(f.merges() && f.retracts());
    for seed in [1u64, 7, 42] {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let rows = 500;
        let groups: Vec<usize> = (0..rows).map(|_| rng.next(7) as usize).collect();
        let values: Vec<Option<i64>> = (0..rows)
            .map(|_| (rng.next(10) != 0).then(|| rng.next(1000) as i64 - 500))
            .collect();
        let weights: Vec<Option<i64>> = (0..rows).map(|_| Some(rng.next(5) as i64)).collect();
        let keep: Vec<bool> = (0..rows).map(|_| rng.next(6) != 0).collect();
        let mut states: GroupStates = Vec::new();
        let mut at = 0;
        while at < rows {
            let len = (1 + rng.next(80) as usize).min(rows - at);
            let cut = |v: &[Option<i64>]| ints(v[at..at + len].to_vec());
            states.resize(8, None);
            let filter = BooleanArray::from(keep[at..at + len].to_vec());
            f.accumulate(
                &mut states,
                &groups[at..at + len],
                &[cut(&values), cut(&weights)],
                Some(&filter),
                false,
            )
            .expect("no throw");
            // Written out and read back, as a checkpoint and a restore do: into groups
            // without a state, which take it as it is.
            let column = BinaryArray::from_iter(states.clone());
            let mut restored: GroupStates = vec![None; states.len()];
            let ids: Vec<usize> = (0..states.len()).collect();
            f.merge(&mut restored, &ids, &column, "a test")
                .expect("adopted");
            assert_eq!(restored, states, "seed {seed}");
            states = restored;
            at += len;
        }
        let out = f.finish(states).expect("no throw");
        let out = out
            .as_any()
            .downcast_ref::<Float64Array>()
            .expect("doubles");
        for g in 0..8 {
            let (mut sum, mut weight) = (0i64, 0i64);
            for i in 0..rows {
                if groups[i] == g && keep[i] {
                    if let (Some(v), Some(w)) = (values[i], weights[i]) {
                        sum += v * w;
                        weight += w;
                    }
                }
            }
            let want = (weight != 0).then(|| sum as f64 / weight as f64);
            let got = out.is_valid(g).then(|| out.value(g));
            assert_eq!(got, want, "seed {seed}, group {g}");
        }
    }
}

#[test]
fn states_merge_and_rows_retract() {
    let f = agg("wavg(BIGINT, BIGINT) -> DOUBLE", WAVG).expect("compiles");
    let mut a: GroupStates = vec![None];
    f.accumulate(
        &mut a,
        &[0, 0],
        &[ints(vec![Some(1), Some(3)]), ints(vec![Some(1), Some(1)])],
        None,
        false,
    )
    .expect("no throw");
    let mut b: GroupStates = vec![None];
    f.accumulate(
        &mut b,
        &[0],
        &[ints(vec![Some(8)]), ints(vec![Some(2)])],
        None,
        false,
    )
    .expect("no throw");
    let column = BinaryArray::from_iter(b);
    f.merge(&mut a, &[0], &column, "a test").expect("merges");
    f.accumulate(
        &mut a,
        &[0],
        &[ints(vec![Some(3)]), ints(vec![Some(1)])],
        None,
        true,
    )
    .expect("retracts");
    let out = f.finish(a).expect("no throw");
    assert_eq!(
        out.as_any().downcast_ref::<Float64Array>(),
        Some(&Float64Array::from(vec![(1.0 + 16.0) / 3.0]))
    );
}

#[test]
fn without_finish_the_state_is_the_result_and_an_empty_group_finishes_its_first_state() {
    let f = agg(
        "total(BIGINT) -> BIGINT",
        "export function create_state() { return 0 }
         export function accumulate(s, x) { return s + x }",
    )
    .expect("compiles");
    let mut states: GroupStates = vec![None, None, None];
    f.accumulate(
        &mut states,
        &[0, 0, 2],
        &[ints(vec![Some(2), Some(5), None])],
        None,
        false,
    )
    .expect("no throw");
    let out = f.finish(states).expect("no throw");
    assert_eq!(
        out.as_any().downcast_ref::<Int64Array>(),
        Some(&Int64Array::from(vec![7, 0, 0]))
    );
}

#[test]
fn a_missing_function_is_refused_when_declared_naming_the_aggregate() {
    let e = agg(
        "f(BIGINT) -> BIGINT",
        "export function create_state() { return 0 }",
    )
    .expect_err("no accumulate");
    assert_eq!(
        e.to_string(),
        "aggregate `f`: its body exports no `accumulate`, which adds a row to a state: write `export function accumulate(state, …) { … }` (the body is a module, as RisingWave's)"
    );
    let e = agg(
        "f(BIGINT) -> BIGINT",
        "function create_state() { return 0 }\nexport function accumulate(s, x) { return s }",
    )
    .expect_err("create_state not exported");
    assert!(e.to_string().contains("exports no `create_state`"), "{e}");
    let e = agg(
        "f(BIGINT) -> BIGINT",
        "export const create_state = 3;\nexport function accumulate(s, x) { return s }",
    )
    .expect_err("not a function");
    assert!(
        e.to_string()
            .contains("exports `create_state` as something other than a function"),
        "{e}"
    );
    let e = agg(
        "f(BIGINT) -> BIGINT",
        "export function accumulate(s, x) { return s +",
    )
    .expect_err("syntax");
    assert!(
        e.to_string()
            .starts_with("function `f`: its JavaScript does not compile: SyntaxError"),
        "{e}"
    );
    let e = agg(
        "f(BIGINT) -> BIGINT",
        "import { x } from 'elsewhere';\nexport function create_state() { return 0 }\nexport function accumulate(s, x) { return s }",
    )
    .expect_err("no imports");
    assert!(
        e.to_string()
            .starts_with("function `f`: its JavaScript does not compile: "),
        "{e}"
    );
}

#[test]
fn a_throw_a_missing_return_and_a_state_json_cannot_hold_name_the_aggregate() {
    let one = |body: &str| {
        let f = agg("f(BIGINT) -> BIGINT", body).expect("compiles");
        let mut states: GroupStates = vec![None];
        f.accumulate(&mut states, &[0], &[ints(vec![Some(7)])], None, false)
            .expect_err("fails")
            .to_string()
    };
    assert_eq!(
        one("export function create_state() { return 0 }
             export function accumulate(s, x) { if (x == 7) throw new RangeError('no sevens'); return s }"),
        "function `f` threw RangeError: no sevens (in accumulate(state, …))"
    );
    assert_eq!(
        one("export function create_state() { return { n: 0 } }
             export function accumulate(s, x) { s.n += x }"),
        "aggregate `f`: accumulate(state, …) returned undefined: it must return the state (`return state;` at the end of `accumulate`; null is a state too)"
    );
    for (state, what) in [
        ("{ n: NaN }", "NaN"),
        ("{ n: [1, undefined] }", "undefined"),
        ("new Map()", "a Map"),
        ("{ d: new Date(0) }", "a Date"),
        ("{ f: () => 1 }", "a function"),
        ("{ big: 1n }", "a bigint"),
        ("[Infinity]", "Infinity"),
    ] {
        let e = one(&format!(
            "export function create_state() {{ return null }}
             export function accumulate(s, x) {{ return {state} }}"
        ));
        assert_eq!(
            e,
            format!("aggregate `f`: a state it returned holds {what}: a state must be plain JSON data (objects, arrays, strings, finite numbers, booleans, null), since it is written to checkpoints as JSON and must read back the same"),
        );
    }
    let e = one("export function create_state() { return null }
         export function accumulate(s, x) { const a = {}; a.self = a; return a }");
    assert!(
        e.starts_with("aggregate `f`: a state it returned holds "),
        "{e}"
    );
}

#[test]
fn a_runaway_runs_out_of_fuel_and_the_clock_stays_away_from_the_top_level() {
    let f = agg(
        "f(BIGINT) -> BIGINT",
        "export function create_state() { return 0 }
         export function accumulate(s, x) { while (x == 7) {} return s }",
    )
    .expect("compiles");
    let mut states: GroupStates = vec![None];
    let e = f
        .accumulate(
            &mut states,
            &[0, 0],
            &[ints(vec![Some(1), Some(7)])],
            None,
            false,
        )
        .expect_err("runs away");
    assert!(
        matches!(e, UdfError::OutOfFuel { ref function, .. } if function == "f"),
        "{e}"
    );
    // A clock kept by the top level before the functions run would make them depend on
    // the time: the lockdown comes first.
    let f = agg(
        "f(BIGINT) -> BIGINT",
        "const now = Date.now;
         export function create_state() { return 0 }
         export function accumulate(s, x) { return now() }",
    )
    .expect("compiles");
    let mut states: GroupStates = vec![None];
    let e = f
        .accumulate(&mut states, &[0], &[ints(vec![Some(1)])], None, false)
        .expect_err("no clock");
    assert!(e.to_string().contains("Date.now() is not available"), "{e}");
    let e = agg(
        "f(BIGINT) -> BIGINT",
        "while (true) {}\nexport function create_state() { return 0 }\nexport function accumulate(s, x) { return s }",
    )
    .expect_err("top level runs away");
    assert!(matches!(e, UdfError::OutOfFuel { .. }), "{e}");
}

#[test]
fn merging_two_states_without_merge_names_what_needed_it() {
    let f = agg(
        "total(BIGINT) -> BIGINT",
        "export function create_state() { return 0 }
         export function accumulate(s, x) { return s + x }",
    )
    .expect("compiles");
    assert!(!f.merges() && !f.retracts());
    let mut states: GroupStates = vec![Some(b"3".to_vec())];
    let column = BinaryArray::from_iter(vec![Some(b"4")]);
    let e = f
        .merge(&mut states, &[0], &column, "a sliding window")
        .expect_err("no merge");
    assert_eq!(
        e.to_string(),
        "aggregate `total` has no `merge`, which a sliding window needs: give it one (JavaScript: `export function merge(state1, state2)`; WebAssembly: `total_merge`)"
    );
    assert_eq!(states, vec![Some(b"3".to_vec())], "left as it was");
    let e = f
        .accumulate(&mut states, &[0], &[ints(vec![Some(1)])], None, true)
        .expect_err("no retract");
    assert!(e.to_string().contains("it has no `retract`"), "{e}");
}
