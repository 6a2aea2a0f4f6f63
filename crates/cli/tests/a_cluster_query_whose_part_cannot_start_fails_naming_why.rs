//! A cluster query whose part cannot start (here its writer's output, with checkpoints a
//! directory of part files, is a file already: one an embedded run of the query left) fails
//! naming why, after the coordinator's attempts, and `submit --wait` ends. Its executor used
//! to wait for ever for the control plane to let go of the sender of its events, which a run
//! lets go of when it ends but did not when it failed before its tasks started: the part never
//! ended, and the query never failed (the hang d61db25 brought to light in
//! `a_function_failing_on_a_row_on_a_cluster_names_the_query_file_as_the_user_gave_it`).

use crate::common;

use common::cluster::{failing_at_start, LocalCluster};

#[test]
fn a_part_whose_output_is_in_the_way_fails_its_query_naming_the_output() {
    let work = tempfile::tempdir().expect("tempdir");
    failing_at_start(work.path());
    let cluster = LocalCluster::start(1, 8);
    let out = cluster.submit(work.path(), "q.sql", &[]).wait_output();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && stderr.contains(
                "`out` is a file, but with checkpoints a writer writes part files into a directory of that name"
            ),
        "{stderr}\n{}",
        cluster.logs()
    );
    assert_eq!(cluster.status("q")["state"], "failed", "{}", cluster.logs());
}
