//! Issue 21's user operators under issue 15's live rescale: the `user_operator` moves key
//! groups itself (`Operator::give_key_groups`, `take_key_groups`) with each key's state and
//! timer. One instance runs alone while another waits idle; half the key groups move to the
//! idle one; both checkpoint and are restored (or not); then part of the taker's key groups
//! move back. Fed the rows the exchange sends each (by key group), the two write the rows of
//! one instance that ran straight through — a sum per key emitted once its key was quiet for
//! 40 ms of event time (a timer per key, pending on either side of a move), and a running sum
//! emitted every third row. The
//! user's operator here is a Rust one behind the same face the JavaScript and WebAssembly
//! ones have (`anduin_expr::UserOperator`), with the heap and the LSM backend, on seeded
//! input.

use std::sync::{Arc, Once};

use crate::common;
use crate::common::moves::{arrivals, handed_back_and_forth};

use anduin_expr::{Emitted, FunctionProvider, OperatorFailure, UserOperator, UserStates};
use anduin_operator_api::Operator;
use arrow::array::{ArrayRef, AsArray, Int64Array};
use arrow::datatypes::{DataType, Int64Type};

/// A state: three numbers, little-endian: the latest time, the sum and whether it was emitted
/// (quiet), or the count and sum (every third).
fn read(state: Option<&Vec<u8>>) -> [i64; 3] {
    let mut out = [0; 3];
    if let Some(bytes) = state {
        for (i, chunk) in bytes.chunks_exact(8).take(3).enumerate() {
            out[i] = i64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        }
    }
    out
}

fn write(state: [i64; 3]) -> Vec<u8> {
    state.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// `quiet` (a timer per key) or `every_third`.
#[derive(Debug)]
struct Fake {
    name: &'static str,
}

impl Fake {
    fn emitted(states: Vec<[i64; 3]>, timers: bool, rows: Vec<(usize, i64, i64)>) -> Emitted {
        let timers = states
            .iter()
            .map(|s| (timers && s[2] == 0).then_some(s[0] + 40))
            .collect();
        Emitted {
            states: states.into_iter().map(|s| Some(write(s))).collect(),
            timers,
            slots: rows.iter().map(|r| r.0).collect(),
            columns: vec![
                Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.1))) as ArrayRef,
                Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.2))),
            ],
        }
    }
}

impl UserOperator for Fake {
    fn name(&self) -> &str {
        self.name
    }

    fn args(&self) -> Vec<(String, DataType)> {
        vec![
            ("ts".into(), DataType::Int64),
            ("v".into(), DataType::Int64),
        ]
    }

    fn output(&self) -> Vec<(String, DataType)> {
        vec![("a".into(), DataType::Int64), ("b".into(), DataType::Int64)]
    }

    fn has_timers(&self) -> bool {
        self.name == "quiet"
    }

    fn process(
        &self,
        states: UserStates,
        args: &[ArrayRef],
        steps: &[(usize, usize)],
    ) -> Result<Emitted, OperatorFailure> {
        let mut states: Vec<[i64; 3]> = states.iter().map(|s| read(s.as_ref())).collect();
        let (ts, v) = (
            args[0].as_primitive::<Int64Type>(),
            args[1].as_primitive::<Int64Type>(),
        );
        let mut rows = Vec::new();
        for (row, slot) in steps {
            let (t, x) = (ts.value(*row), v.value(*row));
            let s = &mut states[*slot];
            if self.has_timers() {
                // A state of zeros, or one emitted, starts afresh: times here are far from 0.
                if s[2] == 1 || *s == [0; 3] {
                    *s = [t, x, 0];
                } else {
                    s[0] = s[0].max(t);
                    s[1] += x;
                }
            } else {
                s[0] += 1;
                s[1] += x;
                if s[0] % 3 == 0 {
                    rows.push((*slot, s[0], s[1]));
                }
            }
        }
        Ok(Fake::emitted(states, self.has_timers(), rows))
    }

    fn on_timer(&self, states: UserStates, _watermark: i64) -> Result<Emitted, OperatorFailure> {
        let mut states: Vec<[i64; 3]> = states.iter().map(|s| read(s.as_ref())).collect();
        let mut rows = Vec::new();
        for (slot, s) in states.iter_mut().enumerate() {
            rows.push((slot, s[0], s[1]));
            s[2] = 1;
        }
        Ok(Fake::emitted(states, true, rows))
    }
}

fn user_operator(backend: &str, function: &str) -> Box<dyn Operator> {
    static REGISTERED: Once = Once::new();
    REGISTERED.call_once(|| {
        for name in ["quiet", "every_third"] {
            FunctionProvider::get()
                .register_operator(Arc::new(Fake { name }))
                .expect("a free name");
        }
    });
    common::operator(&format!(
        r#"type name = "T" {{ column name = "ts", type = "timestamp" column name = "k", type = "int" column name = "v", type = "int" }}
operator name = "g", type = "generator" {{ output name = "s", type = "T" }}
operator name = "op", type = "user_operator" {{
  input name = "s" param keys = "k" param function = "{function}" param state_backend = "{backend}"
  output name = "out" }}
operator name = "d", type = "discard" {{ input name = "out" }}"#
    ))
}

#[test]
fn two_user_operators_handing_key_groups_back_and_forth_give_the_rows_of_one() {
    for backend in ["heap", "lsm"] {
        for function in ["quiet", "every_third"] {
            for (seed, restore) in [(3u64, false), (11, true), (0xfeed, true)] {
                let input = arrivals(seed, 60, 25, 1);
                let (got, expected) =
                    handed_back_and_forth(&|| user_operator(backend, function), &input, restore);
                assert!(expected.len() > 50, "a test with output: {function}");
                assert_eq!(got, expected, "{backend}, {function}, seed {seed}");
            }
        }
    }
}
