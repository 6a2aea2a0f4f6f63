//! Without a token (a loopback listener, the default) there is no secret to check: a local
//! program (`curl`, `anduin ctl`, Prometheus) is served, as before the UI. What is refused is
//! a web page elsewhere that a local browser visits: its requests carry an `Origin` other
//! than this server's own, or (a name rebound to 127.0.0.1) a `Host` that is a name. Every
//! data and control route answers those `403`, whatever else they say; the page served
//! here, whose `Origin` is this server's own, is served.

use crate::common;

use std::sync::Arc;

use anduin_api::fake::FakeQuery;
use anduin_api::{ApiConfig, ApiServer, QueryControl, Registry};
use anyhow::Result;
use common::{concrete, send};

#[test]
fn without_a_token_only_the_page_served_here_may_call_from_a_browser() -> Result<()> {
    let registry = Registry::new();
    let sensors = Arc::new(FakeQuery::new("sensors"));
    registry.add(Arc::clone(&sensors) as Arc<dyn QueryControl>)?;
    let server = ApiServer::start(ApiConfig::loopback(), registry)?;
    let addr = server.local_addr();
    let port = addr.port();
    let own = format!("http://{addr}");
    let other_port = format!("http://127.0.0.1:{}", port.wrapping_add(1));
    let rebound_host = format!("evil.example:{port}");
    let rebound_origin = format!("http://evil.example:{port}");
    let nip = format!("127.0.0.1.nip.io:{port}");
    let nip_origin = format!("http://127.0.0.1.nip.io:{port}");
    let localhost_origin = format!("http://localhost:{port}");
    let https = format!("https://{addr}");
    let trailing = format!("{own}/");
    let addr_s = addr.to_string();
    let pages: Vec<Vec<(&str, &str)>> = vec![
        vec![("Origin", "http://evil.example")],
        vec![("Origin", &other_port)],
        vec![("Origin", "null")],
        vec![("Origin", &https)],
        vec![("Origin", &trailing)],
        // The Host names this server as an address, the Origin as localhost: not the same.
        vec![("Origin", &localhost_origin)],
        // A name rebound to 127.0.0.1: its Origin matches its Host, and the Host is a name.
        vec![("Host", &rebound_host), ("Origin", &rebound_origin)],
        vec![("Host", &rebound_host)],
        vec![("Host", &nip), ("Origin", &nip_origin)],
        // Two Origins, or two Hosts, one of them this server's own.
        vec![("Origin", &own), ("Origin", "http://evil.example")],
        vec![("Host", &addr_s), ("Host", &addr_s), ("Origin", &own)],
    ];
    for route in anduin_api::routes::served() {
        let method = route.method.as_str();
        let (path, body) = concrete(route.path);
        for headers in &pages {
            let a = send(addr, method, &path, headers, body);
            assert_eq!(
                (a.status, a.error().as_str()),
                (403, "forbidden"),
                "{method} {path} with {headers:?}: {}",
                a.body
            );
        }
    }
    assert_eq!(
        sensors.state(),
        anduin_runtime::control::QueryState::Running
    );
    assert!(sensors.history().is_empty());
    assert!(sensors.checkpoints()?.is_empty());

    // A local program (no Origin) and the page served here (its own Origin) are served.
    let a = send(addr, "GET", "/api/v1/queries", &[], None);
    assert_eq!(a.status, 200, "{}", a.body);
    let a = send(
        addr,
        "PUT",
        "/api/v1/queries/sensors/operators/low/params/condition",
        &[("Origin", &own)],
        Some(r#"{"value": "value < 20", "from": "ui"}"#),
    );
    assert_eq!(a.status, 200, "{}", a.body);
    let a = send(
        addr,
        "GET",
        "/api/v1/queries/sensors/metrics",
        &[
            ("Host", &format!("localhost:{port}")),
            ("Origin", &localhost_origin),
        ],
        None,
    );
    assert_eq!(a.status, 200, "{}", a.body);
    Ok(())
}
