//! With a token, the web UI changed nothing of the API's rules: every data and control
//! route answers `401` to a request without the token (or with a wrong one), whatever the
//! request claims about where it comes from — the server's own `Origin` and `Host` (what the
//! page served here sends), `Sec-Fetch-Site: same-origin`, a forwarded-for loopback address,
//! the token in a cookie, another header or the query string. Only `GET /` and the UI's
//! embedded files are served without it, and a path that merely starts like them
//! (`/ui/../api/v1/queries`, `/ui/%2e%2e/…`) is not one of them. Nothing was changed,
//! stopped or checkpointed on the way; the page's own calls, with the token, work.

use crate::common;

use std::sync::Arc;

use anduin_api::fake::FakeQuery;
use anduin_api::{ApiConfig, ApiServer, QueryControl, Registry};
use anyhow::Result;
use common::{concrete, send};

const TOKEN: &str = "a-long-enough-secret";

/// Whether `route` is one of the UI's files (served without the token).
fn ui_file(method: &str, path: &str) -> bool {
    method == "GET" && (path == "/" || path == "/ui/{asset}")
}

#[test]
fn a_forged_origin_without_the_token_reaches_no_data_and_no_control() -> Result<()> {
    let registry = Registry::new();
    let sensors = Arc::new(FakeQuery::new("sensors"));
    registry.add(Arc::clone(&sensors) as Arc<dyn QueryControl>)?;
    let server = ApiServer::start(
        ApiConfig {
            token: Some(TOKEN.into()),
            ..ApiConfig::loopback()
        },
        registry,
    )?;
    let addr = server.local_addr();
    let host = addr.to_string();
    let origin = format!("http://{host}");
    let localhost = format!("localhost:{}", addr.port());
    let local_origin = format!("http://{localhost}");
    let referer = format!("{origin}/");
    let cookie = format!("token={TOKEN}; anduin-api-token={TOKEN}");
    let wrong = "Bearer a-long-enough-secreT".to_string();
    let scheme = format!("Token {TOKEN}");
    // What a request may claim: none of it stands for the token.
    let disguises: Vec<Vec<(&str, &str)>> = vec![
        vec![],
        vec![("Origin", &origin)],
        vec![
            ("Origin", &origin),
            ("Sec-Fetch-Site", "same-origin"),
            ("Sec-Fetch-Mode", "cors"),
            ("Referer", &referer),
        ],
        vec![("Host", &localhost), ("Origin", &local_origin)],
        vec![("Origin", "null")],
        vec![
            ("X-Forwarded-For", "127.0.0.1"),
            ("X-Real-IP", "127.0.0.1"),
            ("Forwarded", "for=127.0.0.1;host=127.0.0.1"),
        ],
        vec![
            ("Cookie", &cookie),
            ("X-Api-Token", TOKEN),
            ("Token", TOKEN),
        ],
        vec![("Origin", &origin), ("Authorization", &wrong)],
        vec![("Authorization", &scheme)],
        vec![("Authorization", "Bearer ")],
    ];

    let mut checked = 0;
    for route in anduin_api::routes::served() {
        let method = route.method.as_str();
        if ui_file(method, route.path) {
            continue;
        }
        let (path, body) = concrete(route.path);
        for headers in &disguises {
            for target in [path.clone(), format!("{path}?token={TOKEN}")] {
                let a = send(addr, method, &target, headers, body);
                assert_eq!(
                    (a.status, a.error().as_str()),
                    (401, "unauthorized"),
                    "{method} {target} with {headers:?}: {}",
                    a.body
                );
                assert_eq!(a.header("www-authenticate"), Some("Bearer"));
                checked += 1;
            }
        }
    }
    assert!(checked > 100, "every data and control route was tried");

    // Paths that start like the UI's but are none of its files need the token too.
    for target in [
        "/ui/",
        "/ui",
        "/ui/nothing.js",
        "/ui/../api/v1/queries",
        "/ui/../../api/v1/queries/sensors/history",
        "/ui/..%2fapi%2fv1%2fqueries",
        "/ui/%2e%2e/api/v1/queries",
        "/ui/%2e%2e%2fapi%2fv1%2fqueries",
        "/ui/app.js/../../api/v1/queries",
        "/ui/APP.JS",
        "/ui/app.js%00",
        "//api/v1/queries",
        "/./api/v1/queries",
        "/%61pi/v1/queries",
        "/index.html",
        "/api/v1/queries/sensors/../../../ui/app.js",
    ] {
        let a = send(addr, "GET", target, &[("Origin", &origin)], None);
        assert_eq!(
            (a.status, a.error().as_str()),
            (401, "unauthorized"),
            "GET {target}: {}",
            a.body
        );
    }
    // Nor does a POST to the page's own path read or change anything.
    let a = send(addr, "POST", "/", &[("Origin", &origin)], Some("{}"));
    assert_eq!(a.status, 401, "{}", a.body);

    // Nothing changed, stopped or checkpointed on the way.
    assert_eq!(
        sensors.state(),
        anduin_runtime::control::QueryState::Running
    );
    assert!(sensors.history().is_empty());
    assert!(sensors.checkpoints()?.is_empty());

    // The UI's files come without the token; the page's calls, with it, work.
    for target in ["/", "/ui/app.js", "/ui/api.js", "/ui/style.css"] {
        let a = send(addr, "GET", target, &[], None);
        assert_eq!(a.status, 200, "GET {target}");
        assert!(!a.body.contains("sensors"), "the files hold no data");
    }
    let bearer = format!("Bearer {TOKEN}");
    let a = send(
        addr,
        "GET",
        "/api/v1/queries",
        &[("Origin", &origin), ("Authorization", &bearer)],
        None,
    );
    assert_eq!(a.status, 200, "{}", a.body);
    assert!(a.body.contains("\"sensors\""), "{}", a.body);
    let a = send(
        addr,
        "PUT",
        "/api/v1/queries/sensors/operators/low/params/condition",
        &[("Origin", &origin), ("Authorization", &bearer)],
        Some(r#"{"value": "value < 20", "from": "ui"}"#),
    );
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(sensors.history().len(), 1);
    Ok(())
}
