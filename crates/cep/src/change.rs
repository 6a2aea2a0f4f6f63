//! A running pattern's `pattern`, `define` or `within` changed (a meta query, paper §4.5):
//! the operator's definition is compiled again with the param replaced, as `anduin check`
//! compiles the query, so that a value it would refuse is refused with the same message,
//! pointing inside the value (`OPERATOR.PARAM:LINE:COL: …`). The running operator switches
//! to the new program at its next point with an output (see `PatternOp::switch`).
//!
//! A new `define` replaces every DEFINE condition (all of them in one value, comma-separated:
//! `"B AS B.value < 30, C AS C.value > 70"`); a variable it leaves out matches any row. The
//! other params stay as they are, with the values earlier changes gave them: a new pattern
//! is compiled with the current conditions, so a variable that a condition names must stay
//! in it (change `define` first), and the measures must keep their columns.

use anduin_operator_api::ControlError;
use anduin_spec::Text;
use anduin_types::Pos;

use super::{compile, Setup, ADJUSTABLE};

/// The program of `setup`'s operator with each `(param, value)` of `changes` set (one
/// change of several params, checked together), or why it is refused.
pub(crate) fn changed(setup: &Setup, changes: &[(&str, &str)]) -> Result<Setup, ControlError> {
    let operator = setup.name.clone();
    let params: Vec<&str> = changes.iter().map(|(p, _)| *p).collect();
    let param = params.join(", ");
    if let Some(p) = params.iter().find(|p| !ADJUSTABLE.contains(p)) {
        return Err(ControlError::NotAdjustable {
            operator,
            param: p.to_string(),
            adjustable: ADJUSTABLE.join(", "),
        });
    }
    let invalid = |message: String| ControlError::Invalid {
        operator: setup.name.clone(),
        param: param.clone(),
        message,
    };
    let input = [(setup.stream.as_str(), std::sync::Arc::clone(&setup.input))];
    // Rows a new condition fails on name it by its text, not by a place in the query file.
    let mut def = setup.def.clone();
    for (p, v) in changes {
        def = def.with_param(p, Text::unplaced(*v));
    }
    let file = format!("{operator}.{}", params.first().copied().unwrap_or("?"));
    let new = compile(&def, &input).map_err(|unplaced| {
        // Again, with only the value placed, for a message that points inside it (of one
        // change; the values of several cannot share one place).
        let diags = match changes {
            [(p, v)] => {
                let placed = setup
                    .def
                    .unplaced()
                    .with_param(p, Text::at(*v, Pos::new(1, 1)));
                compile(&placed, &input).err().unwrap_or(unplaced)
            }
            _ => unplaced,
        };
        invalid(diags.render(&file).trim_end().to_string())
    })?;
    if let Some(m) = anduin_graph::schema_mismatch(&setup.schema, &new.schema) {
        return Err(invalid(format!(
            "{file}: the new value changes the pattern's output columns ({m}); a running pattern must keep emitting the same columns"
        )));
    }
    Ok(new)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use anduin_operator_api::{BuildContext, Collector, Operator, OperatorError};
    use anduin_spec::OperatorDef;
    use anduin_types::Watermark;
    use arrow::array::{Array, Int64Array, RecordBatch};
    use arrow::datatypes::{DataType, Field, Schema, SchemaRef};

    use super::super::{compile, PatternOp};
    use super::*;

    /// Event time (ms), sensor, value.
    fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("ts", DataType::Int64, true),
            Field::new("sensor", DataType::Int64, true),
            Field::new("value", DataType::Int64, true),
        ]))
    }

    /// A pattern `p` over stream `s` with `params` (`.flow` param lines).
    fn def(params: &str) -> OperatorDef {
        let src = format!(
            "operator name = \"p\", type = \"pattern\" {{\n  input name = \"s\"\n  param order_by = \"ts\"\n{params}\n  output name = \"m\"\n}}\n"
        );
        let spec = anduin_spec::parse_flow(&src).expect("parses");
        spec.operators.into_iter().next().expect("one operator")
    }

    /// A rise above 50 then a drop below 10, per sensor.
    fn up_down() -> OperatorDef {
        def(r#"  param partition_by = "sensor"
  param pattern = "UP DOWN"
  param define = "UP AS value > 50, DOWN AS value < 10"
  param measures = "UP.ts AS up_ts, DOWN.ts AS down_ts""#)
    }

    fn running(d: &OperatorDef) -> PatternOp {
        let setup = compile(d, &[("s", schema())]).expect("compiles");
        PatternOp::new(Arc::new(setup), &BuildContext::default()).expect("builds")
    }

    /// Every output row (port 0) as its values.
    #[derive(Default)]
    struct Sink(Vec<Vec<Option<i64>>>);

    impl Collector for Sink {
        fn collect(&mut self, port: usize, batch: RecordBatch) -> Result<(), OperatorError> {
            assert_eq!(port, 0, "no timeout output here");
            for r in 0..batch.num_rows() {
                self.0.push(
                    batch
                        .columns()
                        .iter()
                        .map(|c| {
                            let c = c.as_any().downcast_ref::<Int64Array>().expect("ints");
                            (!c.is_null(r)).then(|| c.value(r))
                        })
                        .collect(),
                );
            }
            Ok(())
        }
    }

    /// `(ts, sensor, value)` rows as a batch.
    fn batch(rows: &[(i64, i64, i64)]) -> RecordBatch {
        let col = |f: fn(&(i64, i64, i64)) -> i64| -> Arc<dyn Array> {
            Arc::new(Int64Array::from_iter_values(rows.iter().map(f)))
        };
        RecordBatch::try_new(schema(), vec![col(|r| r.0), col(|r| r.1), col(|r| r.2)])
            .expect("valid")
    }

    /// Feeds `rows` one batch each, with the watermark at each row's time after it (so the
    /// row before it is released and the last one waits).
    fn feed(op: &mut PatternOp, rows: &[(i64, i64, i64)], out: &mut Sink) {
        for r in rows {
            op.process_batch(0, batch(&[*r]), out)
                .expect("takes the row");
            op.handle_watermark(Watermark(r.0), out)
                .expect("takes the watermark");
        }
    }

    /// The output of a new operator of `d` over `rows`, to the end of the input.
    fn run(d: &OperatorDef, rows: &[(i64, i64, i64)]) -> Vec<Vec<Option<i64>>> {
        let mut op = running(d);
        let mut out = Sink::default();
        feed(&mut op, rows, &mut out);
        op.on_end_of_input(&mut out).expect("ends");
        out.0
    }

    fn sorted(mut rows: Vec<Vec<Option<i64>>>) -> Vec<Vec<Option<i64>>> {
        rows.sort();
        rows
    }

    const BEFORE: &[(i64, i64, i64)] = &[(1, 1, 60), (2, 1, 5), (3, 1, 70), (4, 2, 90)];
    const AFTER: &[(i64, i64, i64)] = &[
        (5, 1, 3),
        (6, 2, 4),
        (7, 1, 90),
        (8, 1, 2),
        (9, 2, 70),
        (10, 2, 1),
    ];

    /// Feeds [`BEFORE`], sets `param` to `value`, lets it take effect, feeds [`AFTER`] and
    /// ends: the output.
    fn switched(d: &OperatorDef, param: &str, value: &str) -> Vec<Vec<Option<i64>>> {
        let mut op = running(d);
        let mut out = Sink::default();
        feed(&mut op, BEFORE, &mut out);
        op.set_param(param, value).expect("a valid change");
        op.handle_param_changes(&mut out).expect("switches");
        feed(&mut op, AFTER, &mut out);
        op.on_end_of_input(&mut out).expect("ends");
        out.0
    }

    #[test]
    fn a_new_condition_applies_from_the_switch_and_the_partial_matches_open_then_are_dropped() {
        let old = up_down();
        let new_define = "UP AS value > 80, DOWN AS value < 10";
        let out = switched(&old, "define", new_define);
        // Sensor 1: (1, 2) before the switch; its UP at 3 waits for a DOWN at the switch and
        // is dropped (5 would have completed it); (7, 8) after, under the new condition.
        // Sensor 2: its UP at 4 is dropped too; 9 is no UP under the new condition.
        let expected = vec![
            vec![Some(1), Some(1), Some(2)],
            vec![Some(1), Some(7), Some(8)],
        ];
        assert_eq!(sorted(out.clone()), expected);
        // That is the old definition over the rows before the switch, then the new one over
        // the rows after it, each from scratch.
        let mut reference = run(&old, BEFORE);
        reference.extend(run(
            &old.with_param("define", Text::unplaced(new_define)),
            AFTER,
        ));
        assert_eq!(sorted(out), sorted(reference));
    }

    #[test]
    fn the_rows_waiting_for_the_watermark_at_the_switch_are_matched_under_the_old_definition() {
        let mut op = running(&up_down());
        let mut out = Sink::default();
        // No watermark: every row waits.
        op.process_batch(0, batch(&[(1, 1, 60), (2, 1, 5)]), &mut out)
            .expect("takes the rows");
        op.set_param("define", "UP AS value > 80, DOWN AS value < 10")
            .expect("valid");
        assert!(out.0.is_empty(), "set_param only records the change");
        op.handle_param_changes(&mut out).expect("switches");
        assert_eq!(out.0, vec![vec![Some(1), Some(1), Some(2)]]);
        op.process_batch(0, batch(&[(3, 1, 60), (4, 1, 5)]), &mut out)
            .expect("takes the rows");
        op.on_end_of_input(&mut out).expect("ends");
        assert_eq!(out.0.len(), 1, "60 is no UP under the new condition");
    }

    #[test]
    fn a_new_pattern_then_a_condition_of_its_new_variable_apply_one_after_the_other() {
        let mut op = running(&up_down());
        op.set_param("pattern", "UP FLAT DOWN")
            .expect("FLAT matches any row");
        op.set_param(
            "define",
            "UP AS value > 50, FLAT AS value = 30, DOWN AS value < 10",
        )
        .expect("checked with the new pattern");
        finds_only_the_flat_run(&mut op);
    }

    /// Feeds rows of which only 4-5-6 run up, flat at 30, down: the match `UP FLAT DOWN`
    /// with `FLAT AS value = 30` finds (1-2-3 has 31 in the middle).
    fn finds_only_the_flat_run(op: &mut PatternOp) {
        let mut out = Sink::default();
        feed(
            op,
            &[
                (1, 1, 60),
                (2, 1, 31),
                (3, 1, 5),
                (4, 1, 60),
                (5, 1, 30),
                (6, 1, 5),
            ],
            &mut out,
        );
        op.on_end_of_input(&mut out).expect("ends");
        assert_eq!(out.0, vec![vec![Some(1), Some(4), Some(6)]]);
    }

    #[test]
    fn changes_made_together_are_checked_together_in_any_order() {
        let mut op = running(&up_down());
        let define = "UP AS value > 50, FLAT AS value = 30, DOWN AS value < 10";
        // Alone, the conditions name a variable the pattern does not have.
        assert!(op.set_param("define", define).is_err());
        // With the pattern that has it (as a restore applies the latest value of each
        // param, the define's change may come first), they are one valid definition.
        op.set_params(&[("define", define), ("pattern", "UP FLAT DOWN")])
            .expect("valid together");
        finds_only_the_flat_run(&mut op);
        let mut op = running(&up_down());
        let refused = op
            .set_params(&[("pattern", "UP FLAT DOWN"), ("measures", "UP.ts AS t")])
            .expect_err("measures cannot change");
        assert!(refused.to_string().contains("`measures`"), "{refused}");
        assert!(!op.switching(), "nothing of a refused change is kept");
    }

    #[test]
    fn a_refused_change_says_where_in_the_value_and_changes_nothing() {
        let d = up_down();
        let mut op = running(&d);
        let mut out = Sink::default();
        feed(&mut op, BEFORE, &mut out);
        let refused = |op: &mut PatternOp, param: &str, value: &str| -> String {
            op.set_param(param, value).expect_err("refused").to_string()
        };
        let cases = [
            ("pattern", "UP (DOWN", "p.pattern:1:"),
            (
                "define",
                "UP AS valeu > 50",
                "p.define:1:7: unknown column `valeu`",
            ),
            (
                "define",
                "UP AS value + 1",
                "p.define:1:7: the condition of `UP` is",
            ),
            (
                "define",
                "SIDE AS value > 1",
                "`SIDE` is not a variable of the pattern",
            ),
            (
                "within",
                "soon",
                "p.within:1:1: must be a positive duration",
            ),
            // The conditions name DOWN: the pattern cannot lose it while they do.
            ("pattern", "UP", "(in param `define` of operator \"p\")"),
            (
                "measures",
                "UP.ts AS t",
                "cannot be changed while running (adjustable: pattern, define, within)",
            ),
        ];
        for (param, value, part) in cases {
            let message = refused(&mut op, param, value);
            assert!(
                message.contains(part),
                "{param} = {value:?}: {part:?} not in {message}"
            );
        }
        assert!(!op.switching(), "nothing to switch to");
        feed(&mut op, AFTER, &mut out);
        op.on_end_of_input(&mut out).expect("ends");
        let mut all = BEFORE.to_vec();
        all.extend_from_slice(AFTER);
        assert_eq!(
            sorted(out.0),
            sorted(run(&d, &all)),
            "as without the changes"
        );
    }

    #[test]
    fn a_longer_within_holds_the_watermark_where_it_is_never_back() {
        let d = def(r#"  param pattern = "UP DOWN"
  param define = "UP AS value > 50, DOWN AS value < 10"
  param measures = "UP.ts AS up_ts"
  param within = "10s""#);
        let mut op = running(&d);
        let mut out = Sink::default();
        let mut forward = |op: &mut PatternOp, w: i64| {
            op.handle_watermark(Watermark(w), &mut out)
                .expect("takes it")
                .expect("forwards one")
                .0
        };
        assert_eq!(forward(&mut op, 100_000), 90_000);
        op.set_param("within", "30s").expect("valid");
        assert_eq!(forward(&mut op, 110_000), 90_000, "held, not moved back");
        assert_eq!(forward(&mut op, 130_000), 100_000);
        op.set_param("within", "1s").expect("valid");
        assert_eq!(forward(&mut op, 131_000), 130_000);
    }

    #[test]
    fn partitions_kept_only_in_the_lsm_tree_start_afresh_too() {
        // PREV reaches the row before: a partition keeps its last row, idle, and with one
        // partition in memory the other lives only in the LSM tree.
        let d = def(r#"  param partition_by = "sensor"
  param pattern = "DROP"
  param define = "DROP AS value < PREV(value)"
  param measures = "DROP.ts AS t"
  param state_backend = "lsm"
  param cache_partitions = 1"#);
        let mut op = running(&d);
        let mut out = Sink::default();
        feed(
            &mut op,
            &[(1, 1, 50), (2, 2, 50), (3, 3, 50), (4, 4, 50)],
            &mut out,
        );
        op.set_param("define", "DROP AS value < PREV(value) - 1")
            .expect("valid");
        op.handle_param_changes(&mut out).expect("switches");
        feed(
            &mut op,
            &[(5, 1, 40), (6, 2, 40), (7, 3, 40), (8, 4, 40), (9, 1, 30)],
            &mut out,
        );
        op.on_end_of_input(&mut out).expect("ends");
        // Across the switch PREV sees nothing: only sensor 1's second row after it drops.
        assert_eq!(out.0, vec![vec![Some(1), Some(9)]]);
    }
}
