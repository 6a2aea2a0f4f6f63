//! The OpenAPI 3 document of the routes, served at `/openapi.json`. Its source is
//! `docs/openapi.json`; a test checks it describes exactly the routes served.

/// The document.
pub(crate) const DOCUMENT: &str = include_str!("../../../docs/openapi.json");

/// Whether the concrete `path` fits the `template` (`{name}` matches one segment).
pub(crate) fn path_matches(template: &str, path: &str) -> bool {
    let t: Vec<&str> = template.split('/').collect();
    let p: Vec<&str> = path.split('/').collect();
    t.len() == p.len()
        && t.iter()
            .zip(&p)
            .all(|(t, p)| (t.starts_with('{') && t.ends_with('}') && !p.is_empty()) || t == p)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::routes::served;

    fn documented() -> BTreeSet<(String, String)> {
        let doc: serde_json::Value =
            serde_json::from_str(DOCUMENT).expect("docs/openapi.json is JSON");
        assert!(
            doc["openapi"].as_str().is_some_and(|v| v.starts_with("3.")),
            "an OpenAPI 3 document"
        );
        let paths = doc["paths"].as_object().expect("the document has paths");
        let mut out = BTreeSet::new();
        for (path, item) in paths {
            for method in item.as_object().expect("a path item is an object").keys() {
                if ["get", "put", "post", "delete", "patch", "head", "options"]
                    .contains(&method.as_str())
                {
                    out.insert((method.to_uppercase(), path.clone()));
                }
            }
        }
        out
    }

    #[test]
    fn the_openapi_document_describes_exactly_the_routes_served() {
        let served: BTreeSet<(String, String)> = served()
            .into_iter()
            .map(|r| (r.method.to_string(), r.path.to_string()))
            .collect();
        let documented = documented();
        let undocumented: Vec<_> = served.difference(&documented).collect();
        let unserved: Vec<_> = documented.difference(&served).collect();
        assert!(
            undocumented.is_empty(),
            "served but not in docs/openapi.json: {undocumented:?}"
        );
        assert!(
            unserved.is_empty(),
            "in docs/openapi.json but not served: {unserved:?}"
        );
    }

    #[test]
    fn every_schema_the_document_refers_to_is_defined() {
        let doc: serde_json::Value = serde_json::from_str(DOCUMENT).expect("JSON");
        let mut refs = Vec::new();
        fn walk(v: &serde_json::Value, refs: &mut Vec<String>) {
            match v {
                serde_json::Value::Object(m) => {
                    for (k, v) in m {
                        match (k.as_str(), v.as_str()) {
                            ("$ref", Some(r)) => refs.push(r.to_string()),
                            _ => walk(v, refs),
                        }
                    }
                }
                serde_json::Value::Array(a) => a.iter().for_each(|v| walk(v, refs)),
                _ => {}
            }
        }
        walk(&doc, &mut refs);
        assert!(!refs.is_empty());
        for r in refs {
            let pointer = r.strip_prefix('#').expect("local references only");
            assert!(doc.pointer(pointer).is_some(), "{r} is not defined");
        }
    }

    #[test]
    fn a_template_matches_paths_with_one_segment_per_placeholder() {
        assert!(path_matches(
            "/api/v1/queries/{query}",
            "/api/v1/queries/sensors"
        ));
        assert!(!path_matches("/api/v1/queries/{query}", "/api/v1/queries/"));
        assert!(!path_matches(
            "/api/v1/queries/{query}",
            "/api/v1/queries/a/b"
        ));
        assert!(path_matches("/metrics", "/metrics"));
    }
}
