//! Q3 (`A B+ C D+ E`) and Q3r (`A B+ C D+?`) of the peer benchmark (`shared/bench/QUERIES.md`)
//! over the first 100 000 benchmark events give exactly Flink 2.3's MATCH_RECOGNIZE results
//! (`shared/bench/REFERENCE.md`), and Q3g (`A B+ C D+`, a greedy last variable, which Flink
//! refuses) gives the result of `ref_q.py`; at parallelism 1 and 4, through `.flow`; and Q3 as
//! SQL (`examples/q3.sql`, MATCH_RECOGNIZE) gives Flink's result too.

use crate::common;

use common::{anduin_ok, normalize, repo, GENERATE_100K};

#[test]
fn q3_q3r_and_q3g_match_the_references_at_parallelism_1_and_4() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("gen.flow"), GENERATE_100K).expect("query");
    anduin_ok(
        dir.path(),
        &["run", "gen.flow", "--var", "OUTPUT=events.csv"],
    );
    let q3 = repo().join("examples/q3.flow");
    for (variant, vars, rows, sha) in [
        ("Q3", &[][..], 1936, "07aa454c8d855933"),
        (
            "Q3r",
            &["PATTERN=A B+ C D+?", "DEFINE_E="][..],
            2125,
            "33bd39b17c0870eb",
        ),
        (
            "Q3g",
            &["PATTERN=A B+ C D+", "DEFINE_E="][..],
            2094,
            "18ce8d3507a9110f",
        ),
    ] {
        for parallelism in ["1", "4"] {
            let mut args = vec![
                "run",
                q3.to_str().expect("utf-8"),
                "--var",
                "INPUT=events.csv",
                "--var",
                "OUTPUT=out.csv",
                "--parallelism",
                parallelism,
            ];
            for v in vars {
                args.extend(["--var", v]);
            }
            anduin_ok(dir.path(), &args);
            let text = std::fs::read_to_string(dir.path().join("out.csv")).expect("output");
            assert_eq!(
                normalize(&text, "iiiiii"),
                (rows, sha.to_string()),
                "{variant} at parallelism {parallelism}"
            );
        }
    }
    let sql = repo().join("examples/q3.sql");
    anduin_ok(
        dir.path(),
        &[
            "run",
            sql.to_str().expect("utf-8"),
            "--var",
            "INPUT=events.csv",
            "--var",
            "OUTPUT=sql.csv",
        ],
    );
    let text = std::fs::read_to_string(dir.path().join("sql.csv")).expect("output");
    assert_eq!(
        normalize(&text, "iiiiii"),
        (1936, "07aa454c8d855933".to_string()),
        "examples/q3.sql"
    );
}
