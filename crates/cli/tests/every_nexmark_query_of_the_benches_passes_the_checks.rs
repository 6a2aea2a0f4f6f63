//! Every query of `benches/nexmark/` passes `anduin check`: q0–q22 and the CEP queries. q4
//! (a GROUP BY over a join), q6 (an OVER window over an updating stream) and q12 (a view and
//! processing-time windows) were refused until anduin had them; a query that anduin cannot run would be refused at the position of what
//! it lacks (docs/benchmarks.md, Nexmark).

use crate::common;

use common::{anduin, repo};

#[test]
fn every_query_passes_the_checks() {
    let dir = repo().join("benches/nexmark");
    let mut checked = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("benches/nexmark") {
        let path = entry.expect("an entry").path();
        if path.extension().is_none_or(|e| e != "sql") {
            continue;
        }
        let out = anduin(&repo(), &["check", path.to_str().expect("utf-8")]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        checked.push(
            path.file_stem()
                .expect("a name")
                .to_string_lossy()
                .into_owned(),
        );
    }
    checked.sort();
    for q in [
        "q0", "q1", "q2", "q3", "q4", "q5", "q6", "q7", "q8", "q9", "q10", "q11", "q12", "q13",
        "q14", "q15", "q16", "q17", "q18", "q19", "q20", "q21", "q22", "cep_q0", "cep_q1",
        "cep_q2", "cep_q3",
    ] {
        assert!(
            checked.iter().any(|c| c == q),
            "{q} is in benches/nexmark: {checked:?}"
        );
    }
}

/// bench/nexmark-csv/make.py (issue 23: beside Flink on the same events) writes every `qN` of
/// benches/nexmark over the files of `anduin bench nexmark --dump`: each passes the checks and
/// reads no `nexmark` table.
#[test]
fn every_query_over_the_dumped_files_passes_the_checks_and_reads_only_files() {
    let benches = repo().join("benches/nexmark");
    let made = tempfile::tempdir().expect("tempdir");
    let csv = made.path();
    let status = std::process::Command::new("python3")
        .arg(repo().join("bench/nexmark-csv/make.py"))
        .arg(csv)
        .status()
        .expect("python3 runs bench/nexmark-csv/make.py");
    assert!(status.success(), "bench/nexmark-csv/make.py: {status}");
    assert!(csv.join("side_input.txt").exists(), "q13's side table");
    for entry in std::fs::read_dir(&benches).expect("benches/nexmark") {
        let path = entry.expect("an entry").path();
        let name = path
            .file_name()
            .expect("a name")
            .to_string_lossy()
            .into_owned();
        if !(name.starts_with('q') && name.ends_with(".sql")) {
            continue;
        }
        let over_files = csv.join(&name);
        let text = std::fs::read_to_string(&over_files)
            .unwrap_or_else(|e| panic!("{}: {e} (not made)", over_files.display()));
        assert!(
            !text.contains("'nexmark'") && text.contains("path = '${DATA}/"),
            "{}: reads the dumped files",
            over_files.display()
        );
        let file = over_files.to_str().expect("utf-8");
        let out = anduin(&repo(), &["check", file, "--var", "DATA=/tmp"]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{file}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
