//! A live `pipeline = "split"` of an operator that runs in a copy of a hot standby is refused
//! with the reason: the stream selector fails over between whole copies, and a split copy
//! would feed it from a new task while the loss of its first half stopped the run. The run
//! goes on unsplit and writes what it writes without the request.

use crate::common;
use common::{ctl, slowed};

use crate::a_chain_split_while_it_runs_writes_what_an_unsplit_run_writes::{tasks, CHAIN};

/// `ctl set q OP pipeline split` (through the API at `api`, from `d`) is refused for `w` and
/// its copy `w_replica_1`, saying why, and splits nothing.
pub(crate) fn assert_copies_refuse_to_split(d: &std::path::Path, api: &str) {
    let client = anduin_api::Client::new(api, None).expect("an address");
    let before = tasks(&client);
    for op in ["w", "w_replica_1"] {
        let refused = ctl(d, api, &["set", "q", op, "pipeline", "split"]);
        assert_ne!(refused.status.code(), Some(0), "{op}");
        let why = String::from_utf8_lossy(&refused.stderr);
        assert!(why.contains("copy of a hot standby"), "{op}: {why}");
    }
    assert_eq!(tasks(&client), before, "nothing was split");
}

#[test]
fn a_live_split_of_a_hot_standby_copy_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let query = CHAIN.replace(
        "  param keys = \"sensor\"",
        "  param keys = \"sensor\"\n  param fault_tolerance = \"hot-standby\"\n  param replicas = 2",
    );
    let expected = slowed::prepare(d, &query);
    let (run, api) = slowed::start(d, &[]);
    assert_copies_refuse_to_split(d, &api);
    slowed::finish(d, &api, run, &["gen"], &expected);
}
