//! A crate whose scenario tests are compiled into one binary (`autotests = false`, a
//! `[[test]]` at `tests/main.rs`) runs only the files `tests/main.rs` names: a scenario file
//! without its `mod` line would never run, and nothing else would say so. This test says so.

use std::fs;
use std::path::Path;

#[test]
fn every_test_file_of_the_workspace_is_compiled_into_its_crates_test_binary() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut missing = Vec::new();
    let mut binaries = 0;
    for krate in fs::read_dir(&crates).expect("the workspace's crates directory is readable") {
        let krate = krate.expect("a crate directory entry").path();
        let main = krate.join("tests/main.rs");
        let Ok(main_text) = fs::read_to_string(&main) else {
            continue; // cargo finds every tests/*.rs of this crate by itself
        };
        binaries += 1;
        let declared = |name: &str| {
            main_text
                .lines()
                .any(|l| l.trim() == format!("mod {name};"))
        };
        for entry in fs::read_dir(krate.join("tests")).expect("tests/ is readable") {
            let path = entry.expect("a tests/ entry").path();
            let name = match path.file_stem().and_then(|s| s.to_str()) {
                Some(name) => name.to_owned(),
                None => continue,
            };
            let is_module = if path.is_dir() {
                path.join("mod.rs").exists()
            } else {
                path.extension().is_some_and(|e| e == "rs") && name != "main"
            };
            if is_module && !declared(&name) {
                missing.push(path.display().to_string());
            }
        }
    }
    assert!(
        binaries >= 1,
        "no crate has a tests/main.rs under {}",
        crates.display()
    );
    assert!(
        missing.is_empty(),
        "these test files are not declared in their crate's tests/main.rs, so they never run: \
         add a `mod NAME;` line there for each: {missing:#?}"
    );
}
