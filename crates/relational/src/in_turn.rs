//! Stateless operators run in parallel with their rows dealt in turn (round robin, the
//! splitter `by = "round-robin"` of the paper's partitioning pattern): `param parallelism = N`
//! on a `filter` or a `map`. Each row needs no other, so any instance may take it; an instance
//! takes whole batches, the next batch the next instance, starting again at the first after
//! every barrier, so that a producer restored from a checkpoint deals its replay as it dealt
//! it the first time. `--parallelism` does not apply to them (it is for keyed operators):
//! they run in parallel only when asked.
//!
//! Or with their rows split by ranges of a column's value (the splitter `by = "range"`):
//! `param ranges = "value: 10, 20"` runs three instances, one per range
//! ([`anduin_graph::ranges`]).

use anduin_graph::ranges::Ranges;
use anduin_graph::{ParamKind, ParamSpec};
use anduin_operator_api::Params;
use anduin_types::Diagnostics;
use arrow::datatypes::Schema;

/// The `parallelism` param of an operator whose instances take rows in turn.
pub(crate) const PARALLELISM: ParamSpec = ParamSpec {
    name: "parallelism",
    required: false,
    kind: ParamKind::Int,
    default: Some("1"),
    doc: "how many instances run it, each taking batches of rows in turn (round robin; what a rewriting rule's `splitter{by = \"round-robin\"}` asks for); `--parallelism` does not apply. Not over an updating stream: a key's changes must stay in order",
};

/// The `ranges` param of an operator whose instances take rows by ranges of a column's value.
pub(crate) const RANGES: ParamSpec = ParamSpec {
    name: anduin_graph::ranges::PARAM,
    required: false,
    kind: ParamKind::Text,
    default: None,
    doc: "runs one instance per range of a column's value: `COLUMN: BOUND, BOUND, …`, e.g. \"value: 10, 20\" runs three, taking the rows below 10 (and nulls), from 10 up to 20, and from 20 on (what a rewriting rule's `splitter{by = \"range\"}` asks for). Not over an updating stream",
};

/// Refuses instances in turn over an updating input: a key's changes (`-U` then `+U`) could
/// be taken by two instances and come out in the other order. Checks `ranges` against the
/// input and `parallelism`.
pub(crate) fn check(p: &Params<'_>, schema: &Schema, updating: bool) -> Result<(), Diagnostics> {
    if let Some(text) = p.text(RANGES.name) {
        let ranges = Ranges::parse(text.as_str())
            .and_then(|r| r.bind(schema).map(|_| r))
            .map_err(|e| p.error(RANGES.name, format!("operator \"{}\": {e}", p.operator())))?;
        let n = ranges.instances();
        if p.int("parallelism")
            .is_some_and(|asked| usize::try_from(asked) != Ok(n))
        {
            return Err(p
                .error(
                    "parallelism",
                    format!(
                        "operator \"{}\" asks for `parallelism` and for `ranges` that make {n} instances: remove `parallelism` (the ranges say how many)",
                        p.operator()
                    ),
                )
                .into());
        }
        if updating {
            return Err(p
                .error(
                    RANGES.name,
                    format!(
                        "operator \"{}\" cannot split an updating stream by `ranges`: a row's change and the change undoing it could go to two instances and come out in the other order; remove `ranges`",
                        p.operator()
                    ),
                )
                .into());
        }
    }
    let n = p.int("parallelism").unwrap_or(1);
    if n > 1 && updating {
        return Err(p
            .error(
                "parallelism",
                format!(
                    "operator \"{}\" cannot run in {n} instances over an updating stream: its instances take rows in turn, and a key's changes could come out of order; remove `parallelism`",
                    p.operator()
                ),
            )
            .into());
    }
    Ok(())
}
