//! Two coordinators elected by Redlock over 3 Redis servers, 2 s locks. Mid-run, 2 of the 3
//! servers are killed: the leader cannot extend its lock on a majority and steps down
//! (status 75); the standby cannot take the lock and says so; no coordinator leads, and the
//! workers' executors run on. One server comes back (empty: no persistence): the standby
//! leads, takes the query over without restarting a task, and the output equals an
//! uninterrupted embedded run's.

use crate::common;

use common::cluster::{
    assert_submitted_output, executors, windowed_reference, LocalCluster, Setup,
};
use common::redis::RedisServer;
use common::wait_until;

#[test]
fn with_two_of_three_redis_servers_gone_no_coordinator_leads_until_one_returns() {
    let mut servers: Vec<RedisServer> = (0..3).map(|_| RedisServer::start()).collect();
    let addresses: Vec<String> = servers.iter().map(RedisServer::address).collect();
    let work = tempfile::tempdir().expect("tempdir");
    let expected = windowed_reference(work.path(), 11, 60_000, 10_000);

    let mut cluster = LocalCluster::start_with(
        2,
        8,
        Setup {
            standby: true,
            election: Some(format!("redlock://{}", addresses.join(","))),
            coordinator_flags: vec!["--leader-lease".into(), "2s".into()],
            ..Setup::default()
        },
    );
    let submit = cluster.submit_windowed(work.path());
    wait_until("a first checkpoint", || {
        cluster.status("q")["last_checkpoint"]
            .as_u64()
            .is_some_and(|e| e >= 1)
    });
    let running = executors(&cluster, None);
    servers[0].kill();
    servers[2].kill();
    cluster.assert_coordinator_steps_down();
    wait_until("the standby saying it cannot lead", || {
        cluster
            .standby_log()
            .contains("cannot reach a majority of the Redis servers")
    });
    assert!(
        !cluster.standby_log().contains(" leads (term"),
        "{}",
        cluster.logs()
    );
    // No coordinator: the executors run on.
    let still: Vec<u32> = executors(&cluster, None);
    assert!(
        running.iter().all(|p| still.contains(p)) || cluster.status("q")["state"] == "finished",
        "executors ended while no coordinator led: {running:?} then {still:?}\n{}",
        cluster.logs()
    );

    servers[0].restart();
    wait_until("the standby leading", || {
        cluster.standby_log().contains(" leads (term")
    });
    assert_submitted_output(&cluster, submit, &work.path().join("out"), &expected);
    let status = cluster.status("q");
    assert_eq!(status["state"], "finished", "{status}");
    assert_eq!(status["attempt"], 1, "tasks restarted: {status}");
}
