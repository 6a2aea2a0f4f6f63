//! A hostile client's paths against the UI's route and the names in the API's paths: `..`
//! plain and percent-encoded (once and twice), backslashes, NUL bytes, paths of 60 KB, names
//! that are not UTF-8. The UI's files are looked up by their exact names among those
//! embedded in the binary (no file system behind them), so nothing but those files comes
//! back; every refusal is a short JSON problem (a huge name is not sent back whole), and
//! the server goes on serving.

use crate::common;

use std::sync::Arc;

use anduin_api::fake::FakeQuery;
use anduin_api::{ApiConfig, ApiServer, QueryControl, Registry};
use anyhow::Result;
use common::send;

#[test]
fn the_ui_s_route_serves_its_embedded_files_and_nothing_else_whatever_the_path() -> Result<()> {
    let registry = Registry::new();
    let sensors = Arc::new(FakeQuery::new("sensors"));
    registry.add(Arc::clone(&sensors) as Arc<dyn QueryControl>)?;
    let server = ApiServer::start(ApiConfig::loopback(), registry)?;
    let addr = server.local_addr();
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_else(|_| "root:x:0:0".into());
    let first_line = passwd.lines().next().unwrap_or("root:x:0:0").to_string();
    let long = "a".repeat(60_000);
    let long_dots = "../".repeat(20_000);

    let hostile: Vec<String> = vec![
        "/../../etc/passwd".into(),
        "/ui/../../etc/passwd".into(),
        "/ui/..%2f..%2f..%2fetc%2fpasswd".into(),
        "/ui/%2e%2e%2f%2e%2e%2f%2e%2e%2fetc%2fpasswd".into(),
        "/ui/%252e%252e%252fetc%252fpasswd".into(),
        "/ui/..%5c..%5cetc%5cpasswd".into(),
        "/ui/....//....//etc/passwd".into(),
        "/ui/%2fetc%2fpasswd".into(),
        "/ui//etc/passwd".into(),
        "/ui/.%2e/.%2e/etc/passwd".into(),
        "/ui/%c0%ae%c0%ae%c0%afetc%c0%afpasswd".into(),
        "/ui/app.js%00../../etc/passwd".into(),
        "/ui/%00".into(),
        "/ui/%ff%fe".into(),
        "/ui/index.html/".into(),
        "/ui/.".into(),
        "/ui/..".into(),
        "/ui/Cargo.toml".into(),
        "/ui/../src/ui.rs".into(),
        "/ui/..%2fsrc%2fui.rs".into(),
        format!("/ui/{long}"),
        format!("/ui/{long_dots}etc/passwd"),
        format!("/{long}"),
        format!("/api/v1/queries/{long}"),
        format!("/api/v1/queries/{long}/metrics"),
        format!("/api/v1/queries/sensors/operators/{long}/params"),
        "/api/v1/queries/%ff%fe/metrics".into(),
        "/api/v1/queries/%00/history".into(),
        "/api/v1/queries/..%2f..%2fetc%2fpasswd/topology".into(),
        "/api/v1/events?query=%ff%fe".into(),
        format!("/api/v1/events?query={long}"),
        "/api/v1/events?query=sensors&query=x".into(),
        "/api/v1/events?nope=1".into(),
    ];
    for target in &hostile {
        let a = send(addr, "GET", target, &[], None);
        let shown: String = target.chars().take(80).collect();
        assert!(
            [400, 404, 414, 431].contains(&a.status),
            "GET {shown}…: {} {}",
            a.status,
            a.body.chars().take(300).collect::<String>()
        );
        assert!(
            !a.body.contains(&first_line) && !a.body.contains("root:"),
            "GET {shown}… answered a file of the system"
        );
        assert!(
            a.body.len() < 2048,
            "GET {shown}… sent back {} bytes: {}…",
            a.body.len(),
            a.body.chars().take(200).collect::<String>()
        );
        if a.status == 404 || a.status == 400 {
            assert!(
                a.header("content-type")
                    .is_some_and(|t| t.starts_with("application/json")),
                "GET {shown}…: {:?}",
                a.headers
            );
            assert!(!a.error().is_empty(), "a JSON problem: {}", a.body);
        }
    }

    // The embedded files, and only them, as embedded.
    for asset in anduin_api::ui::ASSETS {
        let a = send(addr, "GET", &format!("/ui/{}", asset.name), &[], None);
        assert_eq!(a.status, 200, "{}", asset.name);
        assert_eq!(a.body, asset.body, "{}", asset.name);
        assert_eq!(a.header("x-content-type-options"), Some("nosniff"));
    }
    let page = send(addr, "GET", "/", &[], None);
    assert_eq!(page.status, 200);
    assert!(page.body.contains("/ui/app.js"));

    // The server is still there, and the query untouched.
    let a = send(addr, "GET", "/api/v1/queries/sensors", &[], None);
    assert_eq!(a.status, 200, "{}", a.body);
    assert!(sensors.history().is_empty());
    Ok(())
}
