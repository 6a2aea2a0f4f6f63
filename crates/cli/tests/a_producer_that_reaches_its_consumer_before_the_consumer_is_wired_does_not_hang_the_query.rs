//! The executors of an attempt start together, and a producer connects to its consumer's
//! worker as soon as it is wired itself; the consumer's executor may still be building its
//! own tasks then (opening its inputs, restoring its state). Its listener must not turn the
//! producer away for that ("no query … runs on this process"), and whatever happens to a
//! network edge must end the attempt rather than leave it waiting for ever.
//!
//! Found by a hostile probe: about one submission in six lost this race on a shared 2-core
//! machine (a spurious rollback), and when the refused producer's executor also runs a task
//! that waits on the consumer's executor, neither executor ends: the consumer's end waits in
//! the listener for a producer that gave up, the producer's executor only stops its sources
//! (net/mod.rs `Failures::record`), and the coordinator, which hears of no part ending, shows
//! the query `running` for ever.
//!
//! Here the race is all but certain: the consumer's worker also runs a reader of a named pipe,
//! which blocks in `open` until the test writes to the pipe — after the producer has
//! connected. Placement (least used worker first, the lower id on a tie, instances in the
//! order of the plan's tasks): `genA` and `outR` on the first worker, `R` and `outA` on the
//! second, so `genA -> outA` crosses into the blocked executor while `outR` waits on it. (The
//! listener's thread answers the producer's handshake at once, while the unblocked executor
//! still has its tasks to build; a cluster without the race passes whatever the order.)

use crate::common;

use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::Path;

use common::cluster::{children, listening_port, tcp, LocalCluster};
use common::{anduin_ok, output_rows, wait_until};

const QUERY: &str = r#"
type name = "Event" {
  column name = "ts", type = "int"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "genA", type = "generator" {
  param profile = "events"
  param count = 1000
  output name = "a", type = "Event"
}
operator name = "R", type = "reader" {
  param path = "${FIFO}"
  output name = "r", type = "Event"
}
operator name = "outR", type = "writer" {
  input name = "r"
  param path = "${OUT_R}"
}
operator name = "outA", type = "writer" {
  input name = "a"
  param path = "${OUT_A}"
}
"#;

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_string_lossy().as_bytes()).expect("a path");
    // SAFETY: a valid NUL-terminated path; mkfifo only reads it.
    let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
    assert_eq!(rc, 0, "mkfifo {}", path.display());
}

#[test]
fn a_producer_that_reaches_its_consumer_before_the_consumer_is_wired_does_not_hang_the_query() {
    let work = tempfile::tempdir().expect("tempdir");
    std::fs::write(work.path().join("q.flow"), QUERY).expect("query");
    let mut rows = String::from("ts,sensor,value\n");
    for i in 1..=100 {
        rows.push_str(&format!("{i},{},{}\n", i % 7, i * 3));
    }
    std::fs::write(work.path().join("rows.csv"), &rows).expect("rows");
    anduin_ok(
        work.path(),
        &[
            "run",
            "q.flow",
            "--var",
            "FIFO=rows.csv",
            "--var",
            "OUT_R=ref_r.csv",
            "--var",
            "OUT_A=ref_a.csv",
        ],
    );
    mkfifo(&work.path().join("fifo"));

    // The workers one after the other, so that their ids follow their order.
    let mut cluster = LocalCluster::start(0, 4);
    cluster.add_worker("first", 4);
    wait_until("the first worker", || cluster.workers_joined() == 1);
    cluster.add_worker("second", 4);
    wait_until("the second worker", || cluster.workers_joined() == 2);
    let submit = cluster.submit(
        work.path(),
        "q.flow",
        &[
            "--var",
            "FIFO=fifo",
            "--var",
            "OUT_R=out_r",
            "--var",
            "OUT_A=out_a",
            "--no-chaining",
        ],
    );

    // The second worker's executor: blocked opening the pipe, its listener up.
    let second = cluster.workers[1].pid();
    let mut port = None;
    wait_until("the second worker's executor listening", || {
        port = children(second).into_iter().find_map(listening_port);
        port.is_some()
    });
    let port = port.expect("found");
    // (Any state but listening: a refused connection is closed at once and lingers closing.)
    wait_until("the producer of genA -> outA connected to it", || {
        tcp()
            .iter()
            .any(|(local, remote, state, _)| state != "0A" && (*local == port || *remote == port))
    });
    // Now the blocked executor may go on. The reader opens the pipe twice: a check while the
    // query is built (it reads nothing), then to read. The rows go in once and the pipe is
    // closed once they have been read: whichever open a write meets, the reading gets them.
    // (This thread ends with the test.)
    let fifo = work.path().join("fifo");
    let bytes = rows.clone().into_bytes();
    std::thread::spawn(move || loop {
        let Ok(mut pipe) = std::fs::OpenOptions::new().write(true).open(&fifo) else {
            return;
        };
        if pipe.write_all(&bytes).is_err() {
            continue; // the check had closed it already
        }
        loop {
            let mut unread: libc::c_int = 0;
            // SAFETY: FIONREAD writes one int: the bytes still in the pipe.
            let rc = unsafe { libc::ioctl(pipe.as_raw_fd(), libc::FIONREAD, &mut unread) };
            if rc != 0 || unread == 0 {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    });
    wait_until(
        "the query to be over (it hangs when the edge was refused)",
        || {
            cluster.status("q")["state"]
                .as_str()
                .is_some_and(|s| matches!(s, "finished" | "failed" | "cancelled"))
        },
    );
    let out = submit.wait_output();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        output_rows(&work.path().join("out_a")),
        output_rows(&work.path().join("ref_a.csv"))
    );
    assert_eq!(
        output_rows(&work.path().join("out_r")),
        output_rows(&work.path().join("ref_r.csv"))
    );
    assert_eq!(
        cluster.status("q")["attempt"],
        1,
        "the producer was turned away and the query rolled back: {stderr}"
    );
}
