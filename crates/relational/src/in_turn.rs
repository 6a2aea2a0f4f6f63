//! Stateless operators run in parallel with their rows dealt in turn (round robin, the
//! splitter `by = "round-robin"` of the paper's partitioning pattern): `param parallelism = N`
//! on a `filter` or a `map`. Each row needs no other, so any instance may take it; an instance
//! takes whole batches, the next batch the next instance, starting again at the first after
//! every barrier, so that a producer restored from a checkpoint deals its replay as it dealt
//! it the first time. `--parallelism` does not apply to them (it is for keyed operators):
//! they run in parallel only when asked.

use anduin_graph::{ParamKind, ParamSpec};
use anduin_operator_api::Params;
use anduin_types::Diagnostics;

/// The `parallelism` param of an operator whose instances take rows in turn.
pub(crate) const PARALLELISM: ParamSpec = ParamSpec {
    name: "parallelism",
    required: false,
    kind: ParamKind::Int,
    default: Some("1"),
    doc: "how many instances run it, each taking batches of rows in turn (round robin; what a rewriting rule's `splitter{by = \"round-robin\"}` asks for); `--parallelism` does not apply. Not over an updating stream: a key's changes must stay in order",
};

/// Refuses instances in turn over an updating input: a key's changes (`-U` then `+U`) could
/// be taken by two instances and come out in the other order.
pub(crate) fn check(p: &Params<'_>, updating: bool) -> Result<(), Diagnostics> {
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
