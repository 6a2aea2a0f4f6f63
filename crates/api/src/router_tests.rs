//! The router against a fake query: every route's success, malformed bodies, unknown names,
//! body limit, token, and the formats of `/metrics` and the event stream.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use axum::Router;
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tokio::sync::watch;
use tower::ServiceExt;

use anduin_runtime::{EngineEvent, Subscriber};

use crate::fake::FakeQuery;
use crate::routes::{router, served};
use crate::{QueryControl, Registry, DEFAULT_BODY_LIMIT};

const TOKEN: &str = "s3cret-token";

struct Fixture {
    app: Router,
    registry: Registry,
    sensors: Arc<FakeQuery>,
    _stop: watch::Sender<bool>,
}

fn fixture(token: Option<&str>) -> Fixture {
    let registry = Registry::new();
    let sensors = Arc::new(FakeQuery::new("sensors"));
    registry
        .add(Arc::clone(&sensors) as Arc<dyn QueryControl>)
        .expect("new name");
    registry
        .add(Arc::new(FakeQuery::without_checkpoints("plain")))
        .expect("new name");
    let (stop, stopped) = watch::channel(false);
    let app = router(
        registry.clone(),
        token.map(str::to_string),
        DEFAULT_BODY_LIMIT,
        stopped,
    );
    Fixture {
        app,
        registry,
        sensors,
        _stop: stop,
    }
}

/// A request's status and body (JSON if it parses, else a JSON string of the text).
async fn call(
    app: &Router,
    method: Method,
    uri: &str,
    body: Option<&str>,
    token: Option<&str>,
) -> (StatusCode, Value) {
    let mut req = Request::builder().method(method).uri(uri);
    if let Some(t) = token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    let req = req
        .body(
            body.map(|b| Body::from(b.to_string()))
                .unwrap_or_else(Body::empty),
        )
        .expect("a valid request");
    let resp = app.clone().oneshot(req).await.expect("the router answers");
    let status = resp.status();
    let bytes = resp.into_body().collect().await.expect("a body").to_bytes();
    let text = String::from_utf8_lossy(&bytes).to_string();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

async fn get(app: &Router, uri: &str) -> (StatusCode, Value) {
    call(app, Method::GET, uri, None, None).await
}

fn error_of(v: &Value) -> &str {
    v["error"]
        .as_str()
        .unwrap_or_else(|| panic!("a JSON error body, got {v}"))
}

const SET: &str = "/api/v1/queries/sensors/operators/low/params/condition";

#[tokio::test]
async fn the_queries_and_one_query_s_graph_are_listed() {
    let f = fixture(None);
    let (s, v) = get(&f.app, "/api/v1/queries").await;
    assert_eq!(s, StatusCode::OK);
    let names: Vec<&str> = v
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|q| q["name"].as_str())
        .collect();
    assert_eq!(names, ["plain", "sensors"]);
    let (s, v) = get(&f.app, "/api/v1/queries/sensors").await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v["state"], "running");
    assert_eq!(v["operators"][1]["name"], "low");
    assert_eq!(v["operators"][1]["adjustable"], json!(["condition"]));
    assert_eq!(v["tasks"][0]["operators"], json!(["source", "low", "out"]));
}

#[tokio::test]
async fn unknown_queries_operators_and_paths_are_404_with_a_json_reason() {
    let f = fixture(None);
    for uri in [
        "/api/v1/queries/nope",
        "/api/v1/queries/nope/history",
        "/api/v1/queries/nope/checkpoints",
        "/api/v1/queries/nope/metrics",
        "/api/v1/queries/nope/operators/low/params",
    ] {
        let (s, v) = get(&f.app, uri).await;
        assert_eq!(
            (s, error_of(&v)),
            (StatusCode::NOT_FOUND, "unknown_query"),
            "{uri}"
        );
        assert!(
            v["message"]
                .as_str()
                .is_some_and(|m| m.contains("served: plain, sensors")),
            "{v}"
        );
    }
    let (s, v) = get(&f.app, "/api/v1/queries/sensors/operators/nope/params").await;
    assert_eq!(
        (s, error_of(&v)),
        (StatusCode::NOT_FOUND, "unknown_operator")
    );
    let (s, v) = call(
        &f.app,
        Method::PUT,
        "/api/v1/queries/sensors/operators/nope/params/x",
        Some(r#"{"value":"a < 1"}"#),
        None,
    )
    .await;
    assert_eq!(
        (s, error_of(&v)),
        (StatusCode::NOT_FOUND, "unknown_operator")
    );
    let (s, v) = call(
        &f.app,
        Method::PUT,
        "/api/v1/queries/nope/operators/low/params/condition",
        Some(r#"{"value":"a < 1"}"#),
        None,
    )
    .await;
    assert_eq!((s, error_of(&v)), (StatusCode::NOT_FOUND, "unknown_query"));
    let (s, v) = get(&f.app, "/api/v2/queries").await;
    assert_eq!((s, error_of(&v)), (StatusCode::NOT_FOUND, "not_found"));
    let (s, v) = get(&f.app, "/api/v1/events?query=nope").await;
    assert_eq!((s, error_of(&v)), (StatusCode::NOT_FOUND, "unknown_query"));
}

#[tokio::test]
async fn a_wrong_method_is_405_naming_the_methods_the_path_takes() {
    let f = fixture(None);
    let (s, v) = call(
        &f.app,
        Method::DELETE,
        "/api/v1/queries/sensors/checkpoints",
        None,
        None,
    )
    .await;
    assert_eq!(
        (s, error_of(&v)),
        (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed")
    );
    assert!(
        v["message"]
            .as_str()
            .is_some_and(|m| m.contains("GET, POST")),
        "{v}"
    );
    let (s, _) = call(&f.app, Method::POST, SET, Some("{}"), None).await;
    assert_eq!(s, StatusCode::METHOD_NOT_ALLOWED);
}

#[tokio::test]
async fn a_param_is_listed_changed_and_the_change_is_in_the_history() {
    let f = fixture(None);
    let (s, v) = get(&f.app, "/api/v1/queries/sensors/operators/low/params").await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(
        v,
        json!([{"name": "condition", "type": "expression", "value": "value < 40", "doc": "The rows that pass."}])
    );
    let (s, v) = call(
        &f.app,
        Method::PUT,
        SET,
        Some(r#"{"value": "value < 30", "from": "ctl:alice"}"#),
        None,
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(
        (
            v["epoch"].as_u64(),
            v["old"].as_str(),
            v["new"].as_str(),
            v["from"].as_str()
        ),
        (
            Some(1),
            Some("value < 40"),
            Some("value < 30"),
            Some("ctl:alice")
        )
    );
    // `from` is a short name.
    for from in [String::new(), "x".repeat(101), "a\u{7}b".to_string()] {
        let body = json!({"value": "value < 30", "from": from}).to_string();
        let (s, v) = call(&f.app, Method::PUT, SET, Some(&body), None).await;
        assert_eq!(
            (s, error_of(&v)),
            (StatusCode::BAD_REQUEST, "bad_request"),
            "{from:?}: {v}"
        );
    }
    // A number is taken as its text (which the fake refuses: no comparison); `from`
    // defaults to `api`.
    let (s, v) = call(&f.app, Method::PUT, SET, Some(r#"{"value": 5}"#), None).await;
    assert_eq!((s, error_of(&v)), (StatusCode::BAD_REQUEST, "invalid"));
    assert!(
        v["message"]
            .as_str()
            .is_some_and(|m| m.contains("found `5`")),
        "{v}"
    );
    let (s, v) = call(
        &f.app,
        Method::PUT,
        SET,
        Some(r#"{"value": "value >= 7"}"#),
        None,
    )
    .await;
    assert_eq!((s, v["from"].as_str()), (StatusCode::OK, Some("api")));
    let (s, v) = get(&f.app, "/api/v1/queries/sensors/history").await;
    assert_eq!(s, StatusCode::OK);
    let seqs: Vec<u64> = v
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|r| r["seq"].as_u64())
        .collect();
    assert_eq!(seqs, [1, 2]);
    assert_eq!(
        f.sensors.params("low").expect("known")[0].value,
        "value >= 7"
    );
}

#[tokio::test]
async fn malformed_bodies_are_400_with_the_reason_and_change_nothing() {
    let f = fixture(None);
    for (body, reason) in [
        ("not json", "expected ident"),
        ("", "the body is empty"),
        (r#"{"from": "x"}"#, "missing field `value`"),
        (
            r#"{"value": "a < 1", "colour": 1}"#,
            "unknown field `colour`",
        ),
        (
            r#"{"value": [1]}"#,
            "a string (the value as written in the query) or a number",
        ),
        (r#"{"value": "a < 1""#, "EOF while parsing"),
        (
            r#"{"value": null}"#,
            "invalid type: null, expected a string",
        ),
        (r#"{"value": true}"#, "invalid type: boolean `true`"),
    ] {
        let (s, v) = call(&f.app, Method::PUT, SET, Some(body), None).await;
        assert_eq!(
            (s, error_of(&v)),
            (StatusCode::BAD_REQUEST, "bad_request"),
            "{body}: {v}"
        );
        let m = v["message"].as_str().unwrap_or_default();
        assert!(m.contains(reason), "{body}: `{m}` lacks `{reason}`");
    }
    // Valid JSON, refused by the query: its own code, still 400.
    let (s, v) = call(
        &f.app,
        Method::PUT,
        SET,
        Some(r#"{"value": "value"}"#),
        None,
    )
    .await;
    assert_eq!((s, error_of(&v)), (StatusCode::BAD_REQUEST, "invalid"));
    assert!(
        v["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("<value>:1:1: ")),
        "{v}"
    );
    let (s, v) = call(
        &f.app,
        Method::PUT,
        "/api/v1/queries/sensors/operators/source/params/rate",
        Some(r#"{"value": "5"}"#),
        None,
    )
    .await;
    assert_eq!(
        (s, error_of(&v)),
        (StatusCode::BAD_REQUEST, "not_adjustable")
    );
    assert!(f.sensors.history().is_empty());
}

#[tokio::test]
async fn a_body_over_the_limit_is_413() {
    let f = fixture(None);
    let big = format!(r#"{{"value": "{}"}}"#, "x".repeat(DEFAULT_BODY_LIMIT));
    let (s, v) = call(&f.app, Method::PUT, SET, Some(&big), None).await;
    assert_eq!(
        (s, error_of(&v)),
        (StatusCode::PAYLOAD_TOO_LARGE, "too_large")
    );
    assert!(f.sensors.history().is_empty());
}

#[tokio::test]
async fn checkpoints_are_listed_and_taken_and_refused_without_a_checkpoint_directory() {
    let f = fixture(None);
    let uri = "/api/v1/queries/sensors/checkpoints";
    let (s, v) = call(&f.app, Method::POST, uri, None, None).await;
    assert_eq!((s, v.clone()), (StatusCode::OK, json!({"epoch": 1})));
    let (s, v) = get(&f.app, uri).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v[0]["epoch"], 1);
    for method in [Method::GET, Method::POST] {
        let (s, v) = call(
            &f.app,
            method,
            "/api/v1/queries/plain/checkpoints",
            None,
            None,
        )
        .await;
        assert_eq!((s, error_of(&v)), (StatusCode::CONFLICT, "no_checkpoints"));
    }
}

#[tokio::test]
async fn stop_is_accepted_once_and_then_conflicts() {
    let f = fixture(None);
    let uri = "/api/v1/queries/sensors/stop";
    let (s, v) = call(&f.app, Method::POST, uri, None, None).await;
    assert_eq!(
        (s, v),
        (
            StatusCode::ACCEPTED,
            json!({"query": "sensors", "state": "stopping"})
        )
    );
    let (s, v) = call(&f.app, Method::POST, uri, None, None).await;
    assert_eq!((s, error_of(&v)), (StatusCode::CONFLICT, "not_running"));
    let (s, v) = call(
        &f.app,
        Method::PUT,
        SET,
        Some(r#"{"value": "a < 1"}"#),
        None,
    )
    .await;
    assert_eq!((s, error_of(&v)), (StatusCode::CONFLICT, "not_running"));
}

#[tokio::test]
async fn metrics_are_served_as_json_per_query_and_as_prometheus_text() {
    let f = fixture(None);
    let (s, v) = get(&f.app, "/api/v1/queries/sensors/metrics").await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v["instances"][1]["rows_in"], 1000);
    let (s, v) = get(&f.app, "/metrics").await;
    assert_eq!(s, StatusCode::OK);
    let text = v.as_str().expect("text");
    let scrape =
        prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).expect("parses");
    let rows_in: Vec<(String, String, f64)> = scrape
        .samples
        .iter()
        .filter(|s| {
            s.metric == "anduin_operator_rows_in_total" && s.labels.get("operator") == Some("low")
        })
        .map(|s| {
            let v = match s.value {
                prometheus_parse::Value::Counter(v) | prometheus_parse::Value::Untyped(v) => v,
                _ => f64::NAN,
            };
            (
                s.labels.get("query").unwrap_or_default().to_string(),
                s.labels.get("instance").unwrap_or_default().to_string(),
                v,
            )
        })
        .collect();
    assert_eq!(
        rows_in,
        [
            ("plain".into(), "0".into(), 1000.0),
            ("sensors".into(), "0".into(), 1000.0)
        ]
    );
    // Every sample line is `name{labels} value`.
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let (name, value) = line.rsplit_once(' ').expect("name and value");
        assert!(name.starts_with("anduin_"), "{line}");
        assert!(value.parse::<f64>().is_ok(), "{line}");
    }
}

#[tokio::test]
async fn the_openapi_document_is_served() {
    let f = fixture(None);
    let (s, v) = get(&f.app, "/openapi.json").await;
    assert_eq!(s, StatusCode::OK);
    assert!(v["paths"]["/api/v1/queries"]["get"].is_object(), "{v}");
}

/// A concrete path for a route of the table, and a body it takes.
fn concrete(path: &str) -> (String, Option<&'static str>) {
    let p = path
        .replace("{query}", "sensors")
        .replace("{operator}", "low")
        .replace("{param}", "condition")
        .replace("{asset}", "app.js");
    let body = path
        .ends_with("{param}")
        .then_some(r#"{"value": "value < 20"}"#);
    (p, body)
}

#[tokio::test]
async fn with_a_token_every_route_refuses_requests_without_it_or_with_a_wrong_one() {
    let f = fixture(Some(TOKEN));
    // The UI's files hold no data and are served without it (below).
    for route in served() {
        let (path, body) = concrete(route.path);
        if crate::ui::is_ui(&route.method, &path) {
            continue;
        }
        for token in [None, Some("wrong"), Some("s3cret-tokeX"), Some("")] {
            let (s, v) = call(&f.app, route.method.clone(), &path, body, token).await;
            assert_eq!(
                (s, error_of(&v)),
                (StatusCode::UNAUTHORIZED, "unauthorized"),
                "{} {path} with {token:?}",
                route.method
            );
        }
        if route.path == "/api/v1/events" {
            continue; // endless; served with the token below
        }
        let (s, v) = call(&f.app, route.method.clone(), &path, body, Some(TOKEN)).await;
        assert!(
            s.is_success(),
            "{} {path} with the token: {s} {v}",
            route.method
        );
    }
    // Unknown paths need the token as well: nothing is told without it.
    let (s, _) = get(&f.app, "/nothing").await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn without_a_token_every_route_is_served() {
    let f = fixture(None);
    for route in served().into_iter().filter(|r| r.path != "/api/v1/events") {
        let (path, body) = concrete(route.path);
        let (s, v) = call(&f.app, route.method.clone(), &path, body, None).await;
        assert!(s.is_success(), "{} {path}: {s} {v}", route.method);
    }
}

/// A request with `headers`: its status and error code.
async fn with_headers(
    app: &Router,
    method: Method,
    uri: &str,
    headers: &[(&str, &str)],
) -> (StatusCode, String) {
    let mut req = Request::builder().method(method).uri(uri);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = app
        .clone()
        .oneshot(req.body(Body::empty()).expect("a request"))
        .await
        .expect("answers");
    let status = resp.status();
    let bytes = resp.into_body().collect().await.expect("a body").to_bytes();
    let v: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (status, v["error"].as_str().unwrap_or_default().to_string())
}

#[tokio::test]
async fn without_a_token_requests_from_web_pages_are_refused_and_local_tools_served() {
    let f = fixture(None);
    let stop = "/api/v1/queries/sensors/stop";
    // A page elsewhere posting to /stop (a "simple" request, sent without a preflight).
    let (s, e) = with_headers(
        &f.app,
        Method::POST,
        stop,
        &[("origin", "https://evil.example")],
    )
    .await;
    assert_eq!((s, e.as_str()), (StatusCode::FORBIDDEN, "forbidden"));
    // A page whose name was rebound to 127.0.0.1, reading the queries.
    let (s, e) = with_headers(
        &f.app,
        Method::GET,
        "/api/v1/queries",
        &[("host", "evil.example:4000")],
    )
    .await;
    assert_eq!((s, e.as_str()), (StatusCode::FORBIDDEN, "forbidden"));
    assert_eq!(
        f.sensors.state(),
        anduin_runtime::control::QueryState::Running
    );
    // A second Host header: every one is checked, in either order.
    for hosts in [
        [("host", "localhost:4000"), ("host", "evil.example")],
        [("host", "evil.example"), ("host", "localhost:4000")],
    ] {
        let (s, e) = with_headers(&f.app, Method::POST, stop, &hosts).await;
        assert_eq!((s, e.as_str()), (StatusCode::FORBIDDEN, "forbidden"));
    }
    assert_eq!(
        f.sensors.state(),
        anduin_runtime::control::QueryState::Running
    );
    for host in ["127.0.0.1:4000", "localhost:4000", "[::1]:4000"] {
        let (s, _) = with_headers(&f.app, Method::GET, "/api/v1/queries", &[("host", host)]).await;
        assert_eq!(s, StatusCode::OK, "{host}");
    }
    // With a token, the token decides.
    let f = fixture(Some(TOKEN));
    let bearer = format!("Bearer {TOKEN}");
    let (s, _) = with_headers(
        &f.app,
        Method::POST,
        stop,
        &[
            ("origin", "https://ops.example"),
            ("host", "anduin.example"),
            ("authorization", &bearer),
        ],
    )
    .await;
    assert_eq!(s, StatusCode::ACCEPTED);
}

/// The next SSE frame's text.
async fn next_frame(body: &mut Body) -> String {
    loop {
        let frame = body
            .frame()
            .await
            .expect("the stream goes on")
            .expect("a frame");
        if let Ok(data) = frame.into_data() {
            let text = String::from_utf8_lossy(&data).to_string();
            if !text.starts_with(':') {
                return text;
            }
        }
    }
}

#[tokio::test]
async fn engine_events_are_streamed_as_server_sent_events() {
    let f = fixture(Some(TOKEN));
    let req = Request::get("/api/v1/events?query=sensors")
        .header("authorization", format!("Bearer {TOKEN}"))
        .body(Body::empty())
        .expect("a request");
    let resp = f.app.clone().oneshot(req).await.expect("answers");
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let mut body = resp.into_body();
    // The stream is subscribed once the response is there: these are in it.
    f.registry
        .event_feed("plain")
        .event(&EngineEvent::TaskStarted {
            task: 0,
            name: "x".into(),
        });
    f.registry
        .event_feed("sensors")
        .event(&EngineEvent::CheckpointCompleted {
            epoch: 4,
            finished: false,
        });
    let frame = next_frame(&mut body).await;
    assert_eq!(
        frame,
        "event: checkpoint_completed\ndata: {\"query\":\"sensors\",\"event\":\"checkpoint_completed\",\"epoch\":4,\"finished\":false}\n\n"
    );
}

#[tokio::test]
async fn the_topology_places_every_instance_and_names_the_exchanges() {
    let f = fixture(None);
    let (s, v) = get(&f.app, "/api/v1/queries/sensors/topology").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["workers"], json!([0]));
    assert_eq!(v["tasks"][0]["operators"], json!(["source", "low", "out"]));
    assert_eq!(
        v["tasks"][0]["instances"],
        json!([{"instance": 0, "id": 0, "worker": 0}])
    );
    assert_eq!(v["exchanges"], json!([]), "one task: nothing crosses");
    let (s, v) = get(&f.app, "/api/v1/queries/nope/topology").await;
    assert_eq!((s, error_of(&v)), (StatusCode::NOT_FOUND, "unknown_query"));
}

/// A GET of `uri` with `headers`: status, the headers and the body as text.
async fn fetch(
    app: &Router,
    uri: &str,
    headers: &[(&str, &str)],
) -> (StatusCode, axum::http::HeaderMap, String) {
    let mut req = Request::builder().method(Method::GET).uri(uri);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = app
        .clone()
        .oneshot(req.body(Body::empty()).expect("a request"))
        .await
        .expect("answers");
    let (parts, body) = resp.into_parts();
    let bytes = body.collect().await.expect("a body").to_bytes();
    (
        parts.status,
        parts.headers,
        String::from_utf8_lossy(&bytes).into_owned(),
    )
}

#[tokio::test]
async fn the_ui_is_served_at_the_root_with_its_modules_and_a_strict_policy() {
    let f = fixture(None);
    let (s, headers, page) = fetch(&f.app, "/", &[]).await;
    assert_eq!(s, StatusCode::OK);
    assert!(headers["content-type"]
        .to_str()
        .expect("text")
        .starts_with("text/html"));
    let policy = headers["content-security-policy"].to_str().expect("text");
    assert!(policy.contains("script-src 'self'"), "{policy}");
    assert!(policy.contains("frame-ancestors 'none'"), "{policy}");
    assert!(page.contains("/ui/app.js"), "{page}");
    for asset in crate::ui::ASSETS {
        let (s, headers, body) = fetch(&f.app, &format!("/ui/{}", asset.name), &[]).await;
        assert_eq!(s, StatusCode::OK, "{}", asset.name);
        assert_eq!(
            headers["content-type"], asset.content_type,
            "{}",
            asset.name
        );
        assert_eq!(body, asset.body);
    }
    let (s, _, body) = fetch(&f.app, "/ui/nothing.js", &[]).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    assert!(body.contains("app.js"), "names the files it has: {body}");
}

#[tokio::test]
async fn with_a_token_the_ui_s_files_are_served_without_it_and_its_data_is_not() {
    let f = fixture(Some(TOKEN));
    for path in ["/", "/ui/app.js", "/ui/style.css"] {
        let (s, _, _) = fetch(&f.app, path, &[]).await;
        assert_eq!(s, StatusCode::OK, "{path}");
    }
    for path in [
        "/api/v1/queries",
        "/api/v1/queries/sensors/topology",
        "/metrics",
    ] {
        let (s, _, _) = fetch(&f.app, path, &[]).await;
        assert_eq!(s, StatusCode::UNAUTHORIZED, "{path}");
    }
    // A POST to the UI's paths is no request for a file: it needs the token too.
    let (s, v) = call(&f.app, Method::POST, "/", None, None).await;
    assert_eq!(
        (s, error_of(&v)),
        (StatusCode::UNAUTHORIZED, "unauthorized")
    );
}

#[tokio::test]
async fn without_a_token_the_ui_s_own_origin_may_change_and_stop_a_query_and_others_may_not() {
    let f = fixture(None);
    let host = ("host", "127.0.0.1:4000");
    let put = |origin: &'static str| {
        let app = f.app.clone();
        async move {
            let req = Request::builder()
                .method(Method::PUT)
                .uri(SET)
                .header("host", host.1)
                .header("origin", origin)
                .body(Body::from(r#"{"value": "value < 20", "from": "ui"}"#))
                .expect("a request");
            app.oneshot(req).await.expect("answers").status()
        }
    };
    assert_eq!(put("http://127.0.0.1:4000").await, StatusCode::OK);
    for other in [
        "http://127.0.0.1:4001",
        "http://localhost:4000",
        "https://127.0.0.1:4000",
        "null",
    ] {
        assert_eq!(put(other).await, StatusCode::FORBIDDEN, "{other}");
    }
    // Two Origin headers, or two Host headers with one Origin: refused.
    let (s, e) = with_headers(
        &f.app,
        Method::POST,
        "/api/v1/queries/sensors/stop",
        &[
            host,
            ("origin", "http://127.0.0.1:4000"),
            ("origin", "http://evil.example"),
        ],
    )
    .await;
    assert_eq!((s, e.as_str()), (StatusCode::FORBIDDEN, "forbidden"));
    let (s, e) = with_headers(
        &f.app,
        Method::POST,
        "/api/v1/queries/sensors/stop",
        &[host, host, ("origin", "http://127.0.0.1:4000")],
    )
    .await;
    assert_eq!((s, e.as_str()), (StatusCode::FORBIDDEN, "forbidden"));
    assert_eq!(
        f.sensors.state(),
        anduin_runtime::control::QueryState::Running
    );
    let (s, _) = with_headers(
        &f.app,
        Method::POST,
        "/api/v1/queries/sensors/stop",
        &[host, ("origin", "http://127.0.0.1:4000")],
    )
    .await;
    assert_eq!(s, StatusCode::ACCEPTED);
}
