//! The cluster form of probe41 H1: a query on a cluster whose last checkpoint (the one that
//! says every input ended) completed, but whose exactly-once Kafka sink's commit of it then
//! failed (a worker lost, or the broker refusing), was ended as finished ("nothing to
//! recover") with the rows of that checkpoint never committed. Now every instance is
//! restored from that checkpoint, so that the sinks commit what it holds, and nothing runs;
//! `anduin submit --resume` of a finished query does the same (it was refused).

use crate::common;

use common::cluster::LocalCluster;
use common::kafka::{filter_query, filter_rows, Cluster};
use common::wait_until_or_show;
use rdkafka::types::{RDKafkaApiKey, RDKafkaRespErr};

#[test]
fn a_cluster_query_whose_last_kafka_commit_failed_after_its_last_checkpoint_still_commits_every_row(
) {
    let kafka = Cluster::start();
    kafka.topic("events", 2);
    kafka.topic("out", 1);
    let (input, expected) = filter_rows(2_000);
    kafka.produce("events", 2, &input);
    let work = tempfile::tempdir().expect("tempdir");
    let query = filter_query("param bounded = true", "out", "");
    std::fs::write(work.path().join("q.flow"), query).expect("query");
    let servers = format!("SERVERS={}", kafka.servers());

    // The one commit (of the last checkpoint) is refused, once.
    kafka.refuse(
        RDKafkaApiKey::AddPartitionsToTxn,
        &[RDKafkaRespErr::RD_KAFKA_RESP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED],
    );
    let cluster = LocalCluster::start(1, 4);
    let submit = cluster.submit(
        work.path(),
        "q.flow",
        &["--var", &servers, "--checkpoint-interval", "1h"],
    );
    let out = submit.wait_output();
    let said = String::from_utf8_lossy(&out.stderr).to_string();
    let logs = cluster.logs();
    let count = std::cell::Cell::new(0);
    wait_until_or_show(
        "every row committed",
        || {
            count.set(kafka.read_committed("out").len());
            count.get() >= expected.len()
        },
        || format!("{} of {} rows\n{said}\n{logs}", count.get(), expected.len()),
    );
    let mut got = kafka.read_committed("out");
    got.sort();
    assert_eq!(got, expected, "{said}");

    // Submitted again with --resume, the finished query commits what is left (nothing
    // here) and runs nothing: no row twice.
    let again = cluster
        .submit(
            work.path(),
            "q.flow",
            &["--var", &servers, "--checkpoint-interval", "1h", "--resume"],
        )
        .wait_output();
    let said = String::from_utf8_lossy(&again.stderr).to_string();
    assert!(again.status.success(), "{said}\n{}", cluster.logs());
    assert!(
        cluster
            .coordinator_log()
            .contains("which says every input ended: its sinks commit what it holds"),
        "{}",
        cluster.logs()
    );
    let mut got = kafka.read_committed("out");
    got.sort();
    assert_eq!(got, expected, "{said}");
}
