//! A keyed operator's state is stored under its key's bytes; a key longer than a backend's
//! entry key (64 KiB) is stored by its 128-bit hash, the key itself beside the state, so a
//! GROUP BY over 100 KB text keys checkpoints like any other (docs/operations.md once said such
//! a key stopped the query at its first checkpoint; issue 17's probe found it did not). The run
//! checkpoints to its end, and a run from that checkpoint finds the query finished.

use crate::common;

use common::{anduin, anduin_ok};

#[test]
fn a_group_by_over_100_kb_keys_completes_its_checkpoints() {
    let dir = tempfile::tempdir().expect("tempdir");
    let long = |c: char| c.to_string().repeat(100_000);
    let mut input = String::from("ts,k,v\n");
    for (i, c) in ['a', 'b', 'a', 'c', 'b', 'a'].into_iter().enumerate() {
        input.push_str(&format!("2024-01-01T00:00:0{i}Z,{},{i}\n", long(c)));
    }
    std::fs::write(dir.path().join("in.csv"), input).expect("input");
    std::fs::write(
        dir.path().join("q.sql"),
        "CREATE TABLE t (ts TIMESTAMP, k VARCHAR, v BIGINT) WITH (connector = 'file', path = 'in.csv');
CREATE TABLE o WITH (connector = 'file', path = 'out.csv', mode = 'upsert', primary_key = 'k');
INSERT INTO o SELECT k, COUNT(*) AS n, SUM(v) AS s FROM t GROUP BY k;
",
    )
    .expect("query");
    let store = format!("file://{}", dir.path().join("ckpt").display());
    let args = [
        "run",
        "q.sql",
        "--no-api",
        "-q",
        "--batch-size",
        "1",
        "--checkpoint-store",
        &store,
        "--events",
        "events.jsonl",
    ];
    anduin_ok(dir.path(), &args);
    let events = std::fs::read_to_string(dir.path().join("events.jsonl")).expect("events");
    assert!(
        events.contains("\"event\":\"checkpoint_completed\""),
        "no checkpoint completed: {events}"
    );
    assert!(!events.contains("checkpoint_failed"), "{events}");
    // The upserts fold to one row per key (the output is a directory of part files).
    let mut folded = std::collections::BTreeMap::new();
    let mut parts: Vec<_> = std::fs::read_dir(dir.path().join("out.csv"))
        .expect("the output directory")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "csv"))
        .collect();
    parts.sort();
    for part in parts {
        let text = std::fs::read_to_string(&part).expect("a part");
        for line in text.lines().filter(|l| !l.starts_with("op,")) {
            let cols: Vec<&str> = line.split(',').collect();
            let (op, k) = (cols[0], cols[1]);
            if op == "-D" {
                folded.remove(k);
            } else {
                folded.insert(k.to_string(), (cols[2].to_string(), cols[3].to_string()));
            }
        }
    }
    let expected = std::collections::BTreeMap::from([
        (long('a'), ("3".to_string(), "7".to_string())),
        (long('b'), ("2".to_string(), "5".to_string())),
        (long('c'), ("1".to_string(), "3".to_string())),
    ]);
    assert_eq!(folded, expected);
    // Resumed from its last checkpoint: the query had finished.
    let again = anduin(dir.path(), &args);
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert_eq!(again.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("already finished"), "{stderr}");
}
