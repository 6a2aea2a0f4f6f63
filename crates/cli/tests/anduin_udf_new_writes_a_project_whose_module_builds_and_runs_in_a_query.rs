//! Issue 21: `anduin udf new NAME` writes a template project for WebAssembly functions in C;
//! its build.sh (Debian's clang, wasm-ld and llvm-objcopy, which the test command installs)
//! builds NAME.wasm, and a query calls its functions with `--udf`, a BIGINT one and a
//! VARCHAR one (through the template's allocator), as the examples' text modules do.

use crate::common;

use std::process::Command;

use common::{anduin, anduin_ok, repo};

#[test]
fn anduin_udf_new_writes_a_project_whose_module_builds_and_runs_in_a_query() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = anduin_ok(dir.path(), &["udf", "new", "my_udfs"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("build it with my_udfs/build.sh"), "{said}");

    let built = Command::new(dir.path().join("my_udfs/build.sh"))
        .output()
        .expect("build.sh runs");
    assert!(
        built.status.success(),
        "my_udfs/build.sh failed (scripts/test.sh installs clang, lld and llvm when missing): {}",
        String::from_utf8_lossy(&built.stderr)
    );
    std::fs::write(
        dir.path().join("q.sql"),
        "CREATE TABLE orders (ts TIMESTAMP, customer STRING, amount BIGINT)
WITH (connector = 'file', path = '${INPUT}', event_time = 'ts');
CREATE TABLE out WITH (connector = 'file', path = 'out.csv');
INSERT INTO out SELECT shout(customer) AS who, add_one(amount) AS next FROM orders
WHERE add_one(amount) > 13;",
    )
    .expect("query");
    let input = format!("INPUT={}", repo().join("data/orders.csv").display());
    anduin_ok(
        dir.path(),
        &[
            "run",
            "q.sql",
            "--var",
            &input,
            "--udf",
            "my_udfs/my_udfs.wasm",
        ],
    );
    let out = std::fs::read_to_string(dir.path().join("out.csv")).expect("output");
    assert_eq!(
        out,
        "who,next\nALICE!,31\nBOB!,41\nALICE!,31\nCAROL!,19\nALICE!,91\nCAROL!,19\n"
    );

    // Never over a folder that exists.
    let again = anduin(dir.path(), &["udf", "new", "my_udfs"]);
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(
        !again.status.success() && stderr.contains("exists already"),
        "{stderr}"
    );
}
