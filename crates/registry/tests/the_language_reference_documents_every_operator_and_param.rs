//! `docs/flow-language.md` stays true: every built-in operator type has a section, and every
//! param of it appears in that section.

use std::path::Path;

use anduin_registry::SIGNATURES;

#[test]
fn the_language_reference_documents_every_operator_and_param() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/flow-language.md");
    let doc = std::fs::read_to_string(&path).expect("docs/flow-language.md exists");
    for sig in SIGNATURES {
        let heading = format!("### `{}`", sig.kind);
        let start = doc
            .find(&heading)
            .unwrap_or_else(|| panic!("{} has no section `{heading}`", path.display()));
        let rest = &doc[start + heading.len()..];
        let section = &rest[..rest.find("\n### ").unwrap_or(rest.len())];
        for p in sig.params {
            assert!(
                section.contains(&format!("`{}`", p.name)),
                "the section of `{}` does not mention its param `{}`",
                sig.kind,
                p.name
            );
        }
    }
}
