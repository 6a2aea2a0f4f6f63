//! A live `pipeline = "split"` of an operator that runs in a copy of a hot standby is refused
//! with the reason: the stream selector fails over between whole copies, and a split copy
//! would feed it from a new task while the loss of its first half stopped the run. The run
//! goes on unsplit and writes what it writes without the request.

use crate::common;
use common::{ctl, slowed};

use crate::a_chain_split_while_it_runs_writes_what_an_unsplit_run_writes::{tasks, CHAIN};

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
    let client = anduin_api::Client::new(&api, None).expect("an address");
    let before = tasks(&client);
    for op in ["w", "w_replica_1"] {
        let refused = ctl(d, &api, &["set", "q", op, "pipeline", "split"]);
        assert_ne!(refused.status.code(), Some(0), "{op}");
        let why = String::from_utf8_lossy(&refused.stderr);
        assert!(why.contains("copy of a hot standby"), "{op}: {why}");
    }
    assert_eq!(tasks(&client), before, "nothing was split");
    slowed::finish(d, &api, run, &["gen"], &expected);
}
