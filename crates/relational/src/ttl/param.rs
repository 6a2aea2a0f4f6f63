//! The `state_ttl` param of the updating operators (set for every one of them by
//! `anduin run --state-ttl`, or in SQL by `SET 'table.exec.state.ttl'`).

use anduin_graph::{ParamKind, ParamSpec};
use anduin_operator_api::Params;

/// The `state_ttl` param.
pub(crate) const STATE_TTL: ParamSpec = ParamSpec {
    name: "state_ttl",
    required: false,
    kind: ParamKind::Duration,
    default: None,
    doc: "how long a key's state is kept after its last write (Flink's table.exec.state.ttl, processing time): a key not written for that long is forgotten, and starts afresh if it comes again (its earlier results are not retracted); \"0s\" for never (default: `anduin run --state-ttl`, else never)",
};

/// The operator's time-to-live in milliseconds, 0 for none (the graph check has verified
/// the duration).
pub(crate) fn ttl_ms(p: &Params<'_>) -> u64 {
    p.duration_ms_or(STATE_TTL.name, 0)
}
