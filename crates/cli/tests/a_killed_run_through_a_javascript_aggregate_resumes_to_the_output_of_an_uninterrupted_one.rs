//! Issue 21, aggregates: the states of a JavaScript aggregate (`CREATE AGGREGATE … LANGUAGE
//! javascript`), JSON text, and of a WebAssembly one (`… LANGUAGE wasm`), the bytes of a
//! struct, go into the window's checkpoints and come back on restore: a SQL query with
//! such aggregates over tumbling windows (open windows' states in every checkpoint) and
//! sliding ones (open and sealed panes' states, merged when a window fires), killed with
//! SIGKILL at seeded random moments and resumed from its checkpoints, writes exactly the rows
//! an uninterrupted run writes.

use crate::common;

use std::path::Path;
use std::process::{Child, Command, Stdio};

use common::{anduin, kill_after, output_rows, repo, Rng};

const QUERY: &str = r#"
CREATE AGGREGATE js_avg(x BIGINT) RETURNS DOUBLE LANGUAGE javascript AS $$
export function create_state() { return { sum: 0, n: 0 }; }
export function accumulate(s, x) { s.sum += x; s.n += 1; return s; }
export function merge(a, b) { return { sum: a.sum + b.sum, n: a.n + b.n }; }
export function finish(s) { return s.n == 0 ? null : s.sum / s.n; }
$$;
CREATE AGGREGATE top_two(x BIGINT) RETURNS VARCHAR LANGUAGE javascript AS $$
const keep = (values) => values.sort((a, b) => b - a).slice(0, 2);
export function create_state() { return []; }
export function accumulate(s, x) { return keep(s.concat([x])); }
export function merge(a, b) { return keep(a.concat(b)); }
export function finish(s) { return s.join(' '); }
$$;
CREATE AGGREGATE int_avg(x BIGINT) RETURNS DOUBLE LANGUAGE wasm AS 'int_avg.wat';
CREATE TABLE events (ts TIMESTAMP, sensor BIGINT, value BIGINT)
WITH (connector = 'generator', profile = 'events', seed = '11', count = '60000', rate = '40000', event_time = 'ts');
CREATE TABLE tumbling WITH (connector = 'file', path = '${OUT1}');
CREATE TABLE sliding WITH (connector = 'file', path = '${OUT2}');
INSERT INTO tumbling
SELECT window_start, sensor, js_avg(value) AS mean, top_two(value) AS top, int_avg(value) AS w, COUNT(*) AS n
FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(ts), INTERVAL '100' MILLISECOND))
GROUP BY window_start, window_end, sensor;
INSERT INTO sliding
SELECT window_start, sensor, js_avg(value) AS mean, top_two(value) AS top, int_avg(value) AS w
FROM TABLE(HOP(TABLE events, DESCRIPTOR(ts), INTERVAL '50' MILLISECOND, INTERVAL '200' MILLISECOND))
GROUP BY window_start, window_end, sensor;
"#;

const CHECKPOINTED: &[&str] = &[
    "run",
    "q.sql",
    "--no-api",
    "--var",
    "OUT1=out1",
    "--var",
    "OUT2=out2",
    "--checkpoint-dir",
    "ckpt",
    "--checkpoint-every",
    "5000",
];

fn start(dir: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_anduin"))
        .args(CHECKPOINTED)
        .args(["--batch-size", "500", "--events", "-"])
        .current_dir(dir)
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts")
}

#[test]
fn a_killed_run_through_javascript_and_webassembly_aggregates_resumes_to_the_uninterrupted_output()
{
    for seed in [31u64, 32] {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("q.sql"), QUERY).expect("query");
        std::fs::copy(
            repo().join("examples/udfs/int_avg.wat"),
            dir.path().join("int_avg.wat"),
        )
        .expect("the example module");

        // The reference: one run without checkpoints.
        let out = anduin(
            dir.path(),
            &[
                "run",
                "q.sql",
                "--no-api",
                "--var",
                "OUT1=reference1.csv",
                "--var",
                "OUT2=reference2.csv",
            ],
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let expected1 = output_rows(&dir.path().join("reference1.csv"));
        let expected2 = output_rows(&dir.path().join("reference2.csv"));
        assert!(
            expected1.len() > 1000 && expected2.len() > 4000,
            "enough rows"
        );

        // Kill it two to four times, each time after a random number of checkpoints.
        let mut rng = Rng(seed);
        let kills = 2 + rng.next(3);
        let mut killed = 0;
        for round in 0..kills {
            let drawn = 1 + rng.next(4);
            // The first kill after the first checkpoint, which every run reaches: a later count may
            // outlast what is left of the input (on a fast machine, the whole run).
            let after = if round == 0 { 1 } else { drawn };
            let delay_ms = rng.next(150);
            if kill_after(start(dir.path()), after, delay_ms) {
                killed += 1;
            }
        }
        assert!(killed >= 1, "seed {seed}: the run was never killed mid-way");
        let out = anduin(dir.path(), CHECKPOINTED);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "seed {seed}: {stderr}");
        let got1 = output_rows(&dir.path().join("out1"));
        let got2 = output_rows(&dir.path().join("out2"));
        assert_eq!(
            (got1.len(), got2.len()),
            (expected1.len(), expected2.len()),
            "seed {seed}: rows lost or duplicated"
        );
        assert!(
            got1 == expected1,
            "seed {seed}: the tumbling windows differ from the uninterrupted run"
        );
        assert!(
            got2 == expected2,
            "seed {seed}: the sliding windows differ from the uninterrupted run"
        );
    }
}
