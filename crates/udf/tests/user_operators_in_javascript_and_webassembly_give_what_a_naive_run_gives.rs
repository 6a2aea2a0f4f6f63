//! Issue 21, operators with keyed state: a user operator in JavaScript and the same one in
//! WebAssembly (examples/udfs/operators.wat), run as anduin's `user_operator` runs them —
//! per key a state kept outside the engine as bytes between batches, `process` on each
//! batch's rows, the timers the watermark reaches fired after each batch and at the end —
//! emit per key what a naive computation gives, on seeded random rows cut into random
//! batches: the earliest row of each key once the watermark passes it (keep-first
//! deduplication, through timers), and every second row's running count and total.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use anduin_expr::UserOperator;
use anduin_udf::{JsOperator, Limits, OperatorDeclaration, WasmModule};
use arrow::array::{Array, ArrayRef, AsArray, Int64Array};
use arrow::datatypes::Int64Type;

/// A row: its key, its event time and its value.
type Row = (i64, i64, i64);

/// The example module's operators, by name.
fn wasm_operators() -> BTreeMap<String, Arc<dyn UserOperator>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/udfs/operators.wat");
    let module = WasmModule::load(&path).expect("the example module loads");
    module
        .declared_operators(Limits::default())
        .expect("declared in its section")
        .into_iter()
        .map(|o| {
            let o: Arc<dyn UserOperator> = Arc::new(o);
            (o.name().to_string(), o)
        })
        .collect()
}

const FIRST_ROW_JS: &str = r#"
export function process(s, ts, value) {
  if (s === null) return { ts, value, emitted: false };
  if (!s.emitted && ts < s.ts) { s.ts = ts; s.value = value; }
  return s;
}
export function timer(s) { return s.emitted ? null : s.ts; }
export function on_timer(s, watermark) { emit(s.ts, s.value); s.emitted = true; return s; }
"#;

const EVERY_SECOND_JS: &str = r#"
export function create_state() { return { n: 0, total: 0 }; }
export function process(s, value) {
  s.n += 1;
  s.total += value;
  if (s.n % 2 == 0) emit(s.n, s.total);
  return s;
}
"#;

fn js(declaration: &str, body: &str) -> Arc<dyn UserOperator> {
    let d = OperatorDeclaration::parse(declaration).expect("declaration");
    Arc::new(JsOperator::new(d, body, Limits::default()).expect("compiles"))
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

/// Rows whose times go up by 3 with a disorder of up to 9, so that none is behind the
/// watermark of 12 below the latest time when it comes.
fn rows(rng: &mut Rng, n: usize) -> Vec<Row> {
    (0..n)
        .map(|i| {
            let key = rng.next(7) as i64;
            let ts = 3 * i as i64 + rng.next(10) as i64;
            (key, ts, rng.next(100) as i64 - 20)
        })
        .collect()
}

/// What anduin keeps for an operator: each key's state and timer.
#[derive(Default)]
struct Kept {
    states: BTreeMap<i64, Vec<u8>>,
    timers: BTreeMap<i64, i64>,
}

impl Kept {
    /// The changed states and timers of `keys` (one per slot) back, and the rows emitted,
    /// each as its key and values.
    fn take(
        &mut self,
        keys: &[i64],
        out: anduin_expr::Emitted,
        emitted: &mut Vec<(i64, Vec<i64>)>,
    ) {
        for (slot, key) in keys.iter().enumerate() {
            match &out.states[slot] {
                Some(s) => self.states.insert(*key, s.clone()),
                None => self.states.remove(key),
            };
            match out.timers[slot] {
                Some(t) => self.timers.insert(*key, t),
                None => self.timers.remove(key),
            };
        }
        for (i, slot) in out.slots.iter().enumerate() {
            let values = out
                .columns
                .iter()
                .map(|c| c.as_primitive::<Int64Type>().value(i))
                .collect();
            emitted.push((keys[*slot], values));
        }
    }

    /// Fires the timers `watermark` reached, earliest first.
    fn fire(&mut self, op: &dyn UserOperator, watermark: i64, emitted: &mut Vec<(i64, Vec<i64>)>) {
        let mut due: Vec<(i64, i64)> = self
            .timers
            .iter()
            .filter(|(_, t)| **t <= watermark)
            .map(|(k, t)| (*t, *k))
            .collect();
        due.sort_unstable();
        if due.is_empty() {
            return;
        }
        let keys: Vec<i64> = due.iter().map(|(_, k)| *k).collect();
        let states = keys.iter().map(|k| self.states.get(k).cloned()).collect();
        let out = op.on_timer(states, watermark).expect("no throw");
        self.take(&keys, out, emitted);
    }
}

/// Runs `op` over `rows` cut into seeded random batches, taking `columns` of each row
/// (indices into ts, value), firing timers after each batch and at the end; the rows it
/// emits, each with its key, sorted.
fn run(
    op: &dyn UserOperator,
    rows: &[Row],
    columns: &[usize],
    rng: &mut Rng,
) -> Vec<(i64, Vec<i64>)> {
    let mut kept = Kept::default();
    let mut emitted = Vec::new();
    let mut at = 0;
    let mut latest = i64::MIN;
    while at < rows.len() {
        let len = (1 + rng.next(40) as usize).min(rows.len() - at);
        let batch = &rows[at..at + len];
        let mut keys: Vec<i64> = Vec::new();
        let steps: Vec<(usize, usize)> = batch
            .iter()
            .enumerate()
            .map(|(row, (key, _, _))| {
                let slot = keys.iter().position(|k| k == key).unwrap_or_else(|| {
                    keys.push(*key);
                    keys.len() - 1
                });
                (row, slot)
            })
            .collect();
        let args: Vec<ArrayRef> = columns
            .iter()
            .map(|c| {
                let v: Vec<i64> = batch
                    .iter()
                    .map(|r| if *c == 0 { r.1 } else { r.2 })
                    .collect();
                Arc::new(Int64Array::from(v)) as ArrayRef
            })
            .collect();
        let states = keys.iter().map(|k| kept.states.get(k).cloned()).collect();
        let out = op.process(states, &args, &steps).expect("no throw");
        kept.take(&keys, out, &mut emitted);
        latest = batch.iter().map(|r| r.1).fold(latest, i64::max);
        if op.has_timers() {
            kept.fire(op, latest - 12, &mut emitted);
        }
        at += len;
    }
    if op.has_timers() {
        kept.fire(op, i64::MAX, &mut emitted);
    }
    emitted.sort();
    emitted
}

/// The earliest row of each key (of equal times, the first), as (key, [ts, value]).
fn naive_first(rows: &[Row]) -> Vec<(i64, Vec<i64>)> {
    let mut first: BTreeMap<i64, (i64, i64)> = BTreeMap::new();
    for (k, ts, v) in rows {
        let e = first.entry(*k).or_insert((*ts, *v));
        if *ts < e.0 {
            *e = (*ts, *v);
        }
    }
    first
        .into_iter()
        .map(|(k, (t, v))| (k, vec![t, v]))
        .collect()
}

/// Every second row of each key's count and running total, as (key, [n, total]).
fn naive_every_second(rows: &[Row]) -> Vec<(i64, Vec<i64>)> {
    let mut sums: BTreeMap<i64, (i64, i64)> = BTreeMap::new();
    let mut out = Vec::new();
    for (k, _, v) in rows {
        let e = sums.entry(*k).or_default();
        e.0 += 1;
        e.1 += v;
        if e.0 % 2 == 0 {
            out.push((*k, vec![e.0, e.1]));
        }
    }
    out.sort();
    out
}

#[test]
fn both_languages_keep_the_first_row_of_each_key_through_their_timers() {
    let wasm = wasm_operators();
    let first_js = js(
        "first_row(ts BIGINT, value BIGINT) -> TABLE(ts BIGINT, value BIGINT)",
        FIRST_ROW_JS,
    );
    let first_wasm = &wasm["first_row"];
    assert!(first_js.has_timers() && first_wasm.has_timers());
    for seed in [3u64, 4, 77] {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let rows = rows(&mut rng, 300);
        let expected = naive_first(&rows);
        for op in [&first_js, first_wasm] {
            let got = run(op.as_ref(), &rows, &[0, 1], &mut rng);
            assert_eq!(got, expected, "seed {seed}: {op:?}");
        }
    }
}

#[test]
fn both_languages_emit_every_second_row_of_a_key_with_its_running_total() {
    let wasm = wasm_operators();
    let every_js = js(
        "every_second(value BIGINT) -> TABLE(n BIGINT, total BIGINT)",
        EVERY_SECOND_JS,
    );
    let every_wasm = &wasm["every_second"];
    assert!(!every_js.has_timers() && !every_wasm.has_timers());
    for seed in [8u64, 9] {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let rows = rows(&mut rng, 400);
        let expected = naive_every_second(&rows);
        assert!(expected.len() > 20, "enough rows");
        for op in [&every_js, every_wasm] {
            assert_eq!(
                run(op.as_ref(), &rows, &[1], &mut rng),
                expected,
                "seed {seed}: {op:?}"
            );
        }
    }
}

/// A key whose state becomes `null` holds no state: it is given back as `None` (and its
/// next row starts afresh).
#[test]
fn a_null_state_is_no_state() {
    let op = js(
        "pairs(value BIGINT) -> TABLE(a BIGINT, b BIGINT)",
        "export function process(held, v) { if (held === null) return v; emit(held, v); return null; }",
    );
    let values: ArrayRef = Arc::new(Int64Array::from(vec![1, 2, 3]));
    let out = op
        .process(vec![None], &[values], &[(0, 0), (1, 0), (2, 0)])
        .expect("no throw");
    assert_eq!(out.states, vec![Some(b"3".to_vec())]);
    assert_eq!(out.slots, vec![0]);
    let column = |i: usize| out.columns[i].as_primitive::<Int64Type>().values().to_vec();
    assert_eq!((column(0), column(1)), (vec![1], vec![2]));
    let out = op
        .process(
            vec![Some(b"3".to_vec())],
            &[Arc::new(Int64Array::from(vec![4])) as ArrayRef],
            &[(0, 0)],
        )
        .expect("no throw");
    assert_eq!(out.states, vec![None], "null: no state");
    assert_eq!(out.columns[0].len(), 1);
}

/// A JavaScript operator takes and emits strings and NULLs: a NULL column arrives as `null`,
/// and `null` (or `undefined`) emitted is a NULL.
#[test]
fn strings_and_nulls_travel_both_ways_in_javascript() {
    let op = js(
        "joined(name VARCHAR, n BIGINT) -> TABLE(names VARCHAR, missing BIGINT)",
        r#"export function create_state() { return { names: [], missing: 0 }; }
export function process(s, name, n) {
  if (n === null) s.missing += 1; else s.names.push(name);
  emit(s.names.join('+'), n === null ? s.missing : null);
  return s;
}"#,
    );
    let names: ArrayRef = Arc::new(arrow::array::StringArray::from(vec!["ann", "bo", "cy"]));
    let n: ArrayRef = Arc::new(Int64Array::from(vec![Some(1), None, Some(3)]));
    let out = op
        .process(vec![None], &[names, n], &[(0, 0), (1, 0), (2, 0)])
        .expect("no throw");
    let joined = out.columns[0].as_string::<i32>();
    let got: Vec<&str> = (0..joined.len()).map(|i| joined.value(i)).collect();
    assert_eq!(got, ["ann", "ann", "ann+cy"]);
    let missing = out.columns[1].as_primitive::<Int64Type>();
    let got: Vec<Option<i64>> = (0..missing.len())
        .map(|i| missing.is_valid(i).then(|| missing.value(i)))
        .collect();
    assert_eq!(got, [None, Some(1), None]);
    assert_eq!(
        out.states,
        vec![Some(br#"{"names":["ann","cy"],"missing":1}"#.to_vec())]
    );
}
