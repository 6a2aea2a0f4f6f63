//! The fault-tolerance option of a SQL query. `fault_tolerance = 'hot-standby'` (and
//! `replicas = 'N'`, 2 by default) in the `WITH (…)` of the table an INSERT writes asks hot
//! standby for every operator of that INSERT between its sources and its sink — as `param
//! fault_tolerance` on each operator of a `.flow` query does — so that the loss of a copy, or
//! of its worker, costs the output nothing. The operators are then checked as in `.flow`: one
//! that cannot be copied (a join's two inputs can interleave differently in each copy) is
//! refused, named, at the option. `standby` and `checkpoint` are what every operator of a
//! query gets anyway (restarted, or restored from the last checkpoint, when its worker is
//! lost), so the option takes only `hot-standby`.

use anduin_types::{Diagnostic, Pos};

use crate::ast::{OperatorDef, Param};

/// The table options that ask for a fault-tolerance pattern.
pub(crate) const OPTIONS: &[&str] = &["fault_tolerance", "replicas"];

/// Gives `ops`, the operators an INSERT made (its sources and sink are not among them), the
/// options `qos` of the table it writes, declared at `table`.
pub(crate) fn apply(qos: &[Param], table: Pos, ops: &mut [OperatorDef]) -> Result<(), Diagnostic> {
    if qos.is_empty() {
        return Ok(());
    }
    let Some(ft) = qos.iter().find(|p| p.name.as_str() == "fault_tolerance") else {
        let replicas = &qos[0];
        return Err(Diagnostic::error(
            replicas.name.pos(),
            "`replicas` is for fault_tolerance = 'hot-standby': add it to the table's WITH (…)",
        ));
    };
    let value = ft.value.as_text();
    if value.as_str() != "hot-standby" {
        return Err(Diagnostic::error(
            value.pos(),
            format!(
                "fault_tolerance = '{value}' in SQL: every operator of a query is restarted (a stateless one) or restored from its last checkpoint (a stateful one) when its worker is lost, without asking; the option asks for 'hot-standby' (copies on distinct workers behind a stream selector)"
            ),
        ));
    }
    let mut copied = 0;
    for op in ops
        .iter_mut()
        .filter(|op| !op.inputs.is_empty() && !op.outputs.is_empty())
    {
        op.params.extend(qos.iter().cloned());
        copied += 1;
    }
    if copied == 0 {
        return Err(Diagnostic::error(
            table,
            "fault_tolerance = 'hot-standby': this INSERT has no operator between its source and this table to copy (it only copies rows); hot standby protects a filter, projection, window or pattern",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::{OutputDef, Value};
    use crate::Text;

    fn param(name: &str, value: &str) -> Param {
        Param {
            name: Text::at(name, Pos::new(1, 1)),
            value: Value::String(Text::at(value, Pos::new(1, 20))),
        }
    }

    fn op(name: &str, inputs: usize, outputs: usize) -> OperatorDef {
        OperatorDef {
            name: Text::unplaced(name),
            kind: Text::unplaced("filter"),
            params: vec![],
            inputs: (0..inputs)
                .map(|i| Text::unplaced(format!("s{i}")))
                .collect(),
            outputs: (0..outputs)
                .map(|i| OutputDef {
                    name: Text::unplaced(format!("o{i}")),
                    ty: None,
                })
                .collect(),
            control: None,
            pos: Pos::new(1, 1),
        }
    }

    #[test]
    fn hot_standby_goes_to_every_operator_between_source_and_sink() {
        let mut ops = vec![op("f", 1, 1), op("w", 1, 1)];
        let qos = [
            param("fault_tolerance", "hot-standby"),
            param("replicas", "3"),
        ];
        apply(&qos, Pos::new(1, 1), &mut ops).expect("applied");
        for o in &ops {
            assert_eq!(
                o.param("fault_tolerance")
                    .map(|p| p.value.as_text().to_string()),
                Some("hot-standby".into())
            );
            assert_eq!(
                o.param("replicas").map(|p| p.value.as_text().to_string()),
                Some("3".into())
            );
        }
    }

    #[test]
    fn other_patterns_replicas_alone_and_nothing_to_copy_are_refused() {
        let mut ops = vec![op("f", 1, 1)];
        let e = apply(
            &[param("fault_tolerance", "checkpoint")],
            Pos::new(1, 1),
            &mut ops,
        )
        .expect_err("checkpoint");
        assert!(e.message.contains("without asking"), "{}", e.message);
        let e = apply(&[param("replicas", "2")], Pos::new(1, 1), &mut ops).expect_err("replicas");
        assert!(e.message.starts_with("`replicas` is for"), "{}", e.message);
        let e = apply(
            &[param("fault_tolerance", "hot-standby")],
            Pos::new(1, 1),
            &mut [],
        )
        .expect_err("nothing");
        assert!(e.message.contains("no operator between"), "{}", e.message);
        assert!(ops[0].params.is_empty(), "a refused option changes nothing");
    }
}
