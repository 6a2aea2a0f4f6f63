//! From the hostile probe of hot standby on a cluster: a query whose copies cannot be placed
//! apart (one worker, two copies) waits for workers, and `anduin submit --wait` says why while
//! it waits (it printed only "scheduling"); once a second worker joins, the query runs, and
//! what it waited for is no longer its error.

use crate::common;

use std::io::{BufRead, BufReader};
use std::sync::{Arc, Mutex};

use common::cluster::{tumbling_generator, LocalCluster};
use common::wait_until;

#[test]
fn a_hot_standby_waiting_for_workers_says_why_and_runs_once_they_come() {
    let hot = tumbling_generator(5, 4_000).replacen(
        "param time = \"ts\"",
        "param fault_tolerance = \"hot-standby\"\n  param replicas = 2\n  param time = \"ts\"",
        1,
    );
    let work = tempfile::tempdir().expect("tempdir");
    std::fs::write(work.path().join("q.flow"), &hot).expect("query");
    let mut cluster = LocalCluster::start(1, 8);
    let mut submit = cluster.submit(work.path(), "q.flow", &["--var", "OUTPUT=out"]);
    let said = Arc::new(Mutex::new(String::new()));
    let reader = {
        let said = Arc::clone(&said);
        let stderr = submit.0.stderr.take().expect("stderr");
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let mut s = said.lock().expect("lock");
                s.push_str(&line);
                s.push('\n');
            }
        })
    };
    let text = || said.lock().expect("lock").clone();
    wait_until("submit to say why the query waits", || {
        text().contains("must run on distinct workers")
    });
    cluster.add_worker("w1", 8);
    let status = submit.0.wait().expect("submit ends");
    reader.join().expect("the reader ends");
    let said = text();
    assert!(status.success(), "{said}\n{}", cluster.logs());
    let running = said
        .lines()
        .find(|l| l.contains("running"))
        .unwrap_or_else(|| panic!("a running line: {said}"));
    assert!(
        !running.contains("waiting for workers"),
        "the reason it waited is not the running query's error: {running}"
    );
    let q = cluster.status("q");
    assert!(q["error"].is_null(), "{q}");
}
