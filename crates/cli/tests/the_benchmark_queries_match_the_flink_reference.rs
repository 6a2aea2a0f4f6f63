//! Q1 (filter), Q2 (tumbling window) and Q4 (sliding window) of the peer benchmark
//! (`shared/bench/QUERIES.md`), as `.flow` and as SQL, over the first 100 000 benchmark
//! events give exactly the
//! reference results computed by Flink 2.3 and the other engines (`shared/bench/REFERENCE.md`:
//! rows and sha256 prefix), with the checksum computed as `normalize.py` does (canonical
//! lines, doubles as `%.6f`, byte-sorted, sha256).

use crate::common;

use common::{anduin_ok, normalize, repo, GENERATE_100K as GENERATE};

#[test]
fn q1_q2_and_q4_over_the_benchmark_events_match_the_reference() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("gen.flow"), GENERATE).expect("query");
    anduin_ok(
        dir.path(),
        &["run", "gen.flow", "--var", "OUTPUT=events.csv"],
    );
    let events = std::fs::read_to_string(dir.path().join("events.csv")).expect("events");
    assert!(
        events.starts_with("ts,sensor,value\n1700000000000,413,52\n"),
        "same rows as gen_events.py"
    );

    let q1 = repo().join("examples/q1.flow");
    for extra in [&[][..], &["--no-chaining", "--batch-size", "1000"][..]] {
        let mut args = vec![
            "run",
            q1.to_str().expect("utf-8"),
            "--var",
            "INPUT=events.csv",
            "--var",
            "OUTPUT=q1.csv",
        ];
        args.extend_from_slice(extra);
        anduin_ok(dir.path(), &args);
        let q1_out = std::fs::read_to_string(dir.path().join("q1.csv")).expect("q1 output");
        assert_eq!(
            normalize(&q1_out, "iii"),
            (24_578, "a2da40b61775e12d".to_string()),
            "{extra:?}"
        );
    }

    for (query, kinds, rows, sha) in [
        ("q2.flow", "iiifi", 63_276, "49ea6c22f760c13c"),
        ("q4.flow", "iif", 107_885, "9d92dac7a74ee050"),
        ("q1.sql", "iii", 24_578, "a2da40b61775e12d"),
        ("q2.sql", "iiifi", 63_276, "49ea6c22f760c13c"),
        ("q4.sql", "iif", 107_885, "9d92dac7a74ee050"),
    ] {
        let flow = repo().join(format!("examples/{query}"));
        let output = format!("OUTPUT={query}.csv");
        anduin_ok(
            dir.path(),
            &[
                "run",
                flow.to_str().expect("utf-8"),
                "--var",
                "INPUT=events.csv",
                "--var",
                &output,
            ],
        );
        let text =
            std::fs::read_to_string(dir.path().join(format!("{query}.csv"))).expect("output");
        assert_eq!(normalize(&text, kinds), (rows, sha.to_string()), "{query}");
    }
}
