//! A malformed record never stops the query and is never lost: it goes to the dead-letter
//! file with its source file, line and reason, and the run ends with a line counting them.

use crate::common;

use common::{anduin, repo};

const INPUT: &str = "ts,sensor,value
1700000000000,1,10
1700000000001,2,abc
1700000000002,3
2023-11-14T22:13:20.003Z,4,20
not-a-time,5,30
1700000000005,6,99
\"1700000000006\",7,5
";

#[test]
fn malformed_records_go_to_the_dead_letter_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("in.csv"), INPUT).expect("input");
    let flow = repo().join("examples/sensors.flow");
    let out = anduin(
        dir.path(),
        &[
            "run",
            flow.to_str().expect("utf-8 path"),
            "--var",
            "INPUT=in.csv",
            "--var",
            "OUTPUT=low.csv",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("low.csv")).expect("output"),
        "ts,sensor,value\n1700000000000,1,10\n1700000000003,4,20\n1700000000006,7,5\n"
    );
    assert!(
        stderr.contains("anduin: 3 malformed records went to low.csv.rejected"),
        "{stderr}"
    );
    let rejected =
        std::fs::read_to_string(dir.path().join("low.csv.rejected")).expect("dead letters");
    let lines: Vec<serde_json::Value> = rejected
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    let summary: Vec<(u64, &str, &str)> = lines
        .iter()
        .map(|v| {
            (
                v["line"].as_u64().expect("line"),
                v["record"].as_str().expect("record"),
                v["source"].as_str().expect("source"),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            (3, "1700000000001,2,abc", "in.csv"),
            (4, "1700000000002,3", "in.csv"),
            (6, "not-a-time,5,30", "in.csv"),
        ]
    );
    assert!(lines[0]["reason"]
        .as_str()
        .expect("reason")
        .contains("value"));
    assert_eq!(lines[0]["operator"], "source");
}

#[test]
fn the_dead_letter_path_can_be_chosen_and_a_clean_run_leaves_no_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("bad.csv"), "ts,sensor,value\n1,2,x\n").expect("input");
    std::fs::write(dir.path().join("good.csv"), "ts,sensor,value\n1,2,3\n").expect("input");
    let flow = repo().join("examples/sensors.flow");
    let flow = flow.to_str().expect("utf-8 path");
    let out = anduin(
        dir.path(),
        &[
            "run",
            flow,
            "--var",
            "INPUT=bad.csv",
            "--var",
            "OUTPUT=o.csv",
            "--dead-letter",
            "dl.jsonl",
        ],
    );
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("dl.jsonl"))
            .expect("dead letters")
            .lines()
            .count(),
        1
    );
    assert!(!dir.path().join("o.csv.rejected").exists());
    let out = anduin(
        dir.path(),
        &[
            "run",
            flow,
            "--var",
            "INPUT=good.csv",
            "--var",
            "OUTPUT=o.csv",
        ],
    );
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("anduin: no malformed records"));
    assert!(!dir.path().join("o.csv.rejected").exists());
}

#[test]
fn on_error_fail_stops_the_query_naming_the_file_and_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("in.csv"), INPUT).expect("input");
    let flow = std::fs::read_to_string(repo().join("examples/sensors.flow"))
        .expect("example")
        .replace(
            "param format = \"csv\"\n  output",
            "param on_error = \"fail\"\n  output",
        );
    assert!(flow.contains("on_error"));
    std::fs::write(dir.path().join("q.flow"), flow).expect("query");
    let out = anduin(
        dir.path(),
        &[
            "run",
            "q.flow",
            "--var",
            "INPUT=in.csv",
            "--var",
            "OUTPUT=o.csv",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("operator \"source\": malformed record at in.csv:3:"),
        "{stderr}"
    );
    assert!(stderr.contains("on_error = \"fail\""), "{stderr}");
}

#[test]
fn malformed_json_lines_go_to_the_dead_letter_file_too() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("in.jsonl"),
        "{\"ts\": 1, \"sensor\": 1, \"value\": 10}\n{\"ts\": 2, \"sensor\": \"two\", \"value\": 1}\nnot json\n\n{\"ts\": \"2023-11-14T22:13:20Z\", \"value\": 3, \"extra\": true}\n",
    )
    .expect("input");
    let flow = std::fs::read_to_string(repo().join("examples/sensors.flow"))
        .expect("example")
        .replace(
            "param format = \"csv\"\n  output",
            "param format = \"jsonl\"\n  output",
        );
    std::fs::write(dir.path().join("q.flow"), flow).expect("query");
    let out = anduin(
        dir.path(),
        &[
            "run",
            "q.flow",
            "--var",
            "INPUT=in.jsonl",
            "--var",
            "OUTPUT=o.csv",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("o.csv")).expect("output"),
        "ts,sensor,value\n1,1,10\n1700000000000,,3\n"
    );
    let rejected =
        std::fs::read_to_string(dir.path().join("o.csv.rejected")).expect("dead letters");
    let lines: Vec<u64> = rejected
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).expect("json")["line"]
                .as_u64()
                .expect("line")
        })
        .collect();
    assert_eq!(lines, vec![2, 3]);
}
