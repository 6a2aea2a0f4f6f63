//! Nexmark's q6 needs what anduin lacks (an OVER window over an updating stream;
//! docs/benchmarks.md): `anduin check` refuses it at the position of the first thing it
//! lacks, and accepts the others.

use crate::common;

use common::{anduin, repo};

fn check(q: &str) -> (Option<i32>, String) {
    let file = repo().join(format!("benches/nexmark/{q}.sql"));
    let out = anduin(&repo(), &["check", file.to_str().expect("utf-8")]);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_unsupported_queries_are_refused_at_what_they_lack() {
    for (q, at, lacks) in [
        (
            "q6",
            "q6.sql:70:5:",
            "an OVER window over an updating stream (a GROUP BY without a window",
        ),
    ] {
        let (code, err) = check(q);
        assert_ne!(code, Some(0), "{q} is refused");
        assert!(err.contains(at), "{q}: {err}");
        assert!(
            err.contains(lacks) && err.contains("not supported yet"),
            "{q}: {err}"
        );
    }
}

#[test]
fn the_other_queries_pass_the_checks() {
    for q in [
        "q0", "q1", "q2", "q3", "q4", "q5", "q7", "q8", "q9", "cep_q0", "cep_q1", "cep_q2", "cep_q3",
    ] {
        let (code, err) = check(q);
        assert_eq!(code, Some(0), "{q}: {err}");
    }
}
