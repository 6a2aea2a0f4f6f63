//! The handlers of the routes ([`crate::routes`]): each finds the query, calls it on the
//! blocking pool and answers JSON, or a [`Problem`].

use std::convert::Infallible;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Path, Query, Request, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderValue, Method, StatusCode, Uri};
use axum::middleware::Next;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures_util::{Stream, StreamExt};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use subtle::ConstantTimeEq;

use crate::events::{feed_items, FeedItem};
use crate::problem::Problem;
use crate::routes::AppState;
use crate::{
    ChangeRecord, ChangeRequest, CheckpointInfo, ParamInfo, QueryControl, QueryInfo, QueryMetrics,
    TopologyInfo,
};

/// Runs a (blocking) call into a query on tokio's blocking pool.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T, Problem> {
    tokio::task::spawn_blocking(f).await.map_err(|e| {
        tracing::error!(error = %e, "a control call into a query panicked");
        Problem::internal(format!(
            "the query's control call failed: {e} (a bug in anduin; the run's log may say more)"
        ))
    })
}

impl AppState {
    fn query(&self, name: &str) -> Result<Arc<dyn QueryControl>, Problem> {
        self.registry
            .get(name)
            .ok_or_else(|| Problem::unknown_query(name, &self.registry.names()))
    }
}

/// Path parameters, with a JSON error when they cannot be decoded.
pub(crate) struct Names<T>(pub(crate) T);

impl<T, S> FromRequestParts<S> for Names<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        Path::<T>::from_request_parts(parts, state)
            .await
            .map(|Path(t)| Names(t))
            .map_err(|r| Problem::new(StatusCode::BAD_REQUEST, "bad_request", r.body_text()))
    }
}

/// A JSON body: 413 beyond the limit, 400 with serde's reason when malformed. The content
/// type is not checked (`curl -d` sends a form's).
pub(crate) struct JsonBody<T>(T);

impl<T> FromRequest<AppState> for JsonBody<T>
where
    T: DeserializeOwned,
{
    type Rejection = Problem;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        let bytes = Bytes::from_request(req, state)
            .await
            .map_err(|r: BytesRejection| {
                if r.status() == StatusCode::PAYLOAD_TOO_LARGE {
                    Problem::too_large(state.body_limit)
                } else {
                    Problem::bad_body(r.body_text())
                }
            })?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Err(Problem::bad_body(
                "the body is empty; send a JSON object such as {\"value\": \"value < 30\"}",
            ));
        }
        serde_json::from_slice(&bytes)
            .map(JsonBody)
            .map_err(Problem::bad_body)
    }
}

/// `GET /api/v1/queries`.
pub(crate) async fn list_queries(
    State(s): State<AppState>,
) -> Result<Json<Vec<QueryInfo>>, Problem> {
    let queries = s.registry.entries();
    let infos = blocking(move || queries.iter().map(|(_, q)| q.info()).collect()).await?;
    Ok(Json(infos))
}

/// `GET /api/v1/queries/{query}`.
pub(crate) async fn query_info(
    State(s): State<AppState>,
    Names(query): Names<String>,
) -> Result<Json<QueryInfo>, Problem> {
    let q = s.query(&query)?;
    Ok(Json(blocking(move || q.info()).await?))
}

/// `GET /api/v1/queries/{query}/metrics`.
pub(crate) async fn query_metrics(
    State(s): State<AppState>,
    Names(query): Names<String>,
) -> Result<Json<QueryMetrics>, Problem> {
    let q = s.query(&query)?;
    Ok(Json(blocking(move || q.metrics()).await?))
}

/// `GET /api/v1/queries/{query}/autoscale`.
pub(crate) async fn autoscale(
    State(s): State<AppState>,
    Names(query): Names<String>,
) -> Result<Json<crate::AutoscaleReport>, Problem> {
    let q = s.query(&query)?;
    Ok(Json(blocking(move || q.autoscale()).await??))
}

/// `GET /api/v1/queries/{query}/topology`.
pub(crate) async fn topology(
    State(s): State<AppState>,
    Names(query): Names<String>,
) -> Result<Json<TopologyInfo>, Problem> {
    let q = s.query(&query)?;
    Ok(Json(blocking(move || q.topology()).await?))
}

/// `GET /api/v1/queries/{query}/operators/{operator}/params`.
pub(crate) async fn params(
    State(s): State<AppState>,
    Names((query, operator)): Names<(String, String)>,
) -> Result<Json<Vec<ParamInfo>>, Problem> {
    let q = s.query(&query)?;
    Ok(Json(blocking(move || q.params(&operator)).await??))
}

/// The body of `PUT …/params/{param}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SetBody {
    /// The new value as it would be written in the query; a JSON number is taken as its text.
    value: TextOrNumber,
    /// Who asks; `api` when absent.
    from: Option<String>,
}

/// A value given as a JSON string or number; anything else is refused with serde's
/// `invalid type: null, expected …`.
#[derive(Debug)]
enum TextOrNumber {
    Text(String),
    Number(serde_json::Number),
}

impl<'de> Deserialize<'de> for TextOrNumber {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = TextOrNumber;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string (the value as written in the query) or a number")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(TextOrNumber::Text(v.to_string()))
            }
            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(TextOrNumber::Text(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(TextOrNumber::Number(v.into()))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(TextOrNumber::Number(v.into()))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Self::Value, E> {
                serde_json::Number::from_f64(v)
                    .map(TextOrNumber::Number)
                    .ok_or_else(|| E::invalid_value(serde::de::Unexpected::Float(v), &self))
            }
        }
        d.deserialize_any(Visitor)
    }
}

/// The longest `from` of a change (it is kept in the history and in checkpoints).
const MAX_FROM_LEN: usize = 100;

/// `PUT /api/v1/queries/{query}/operators/{operator}/params/{param}`.
pub(crate) async fn set_param(
    State(s): State<AppState>,
    Names((query, operator, param)): Names<(String, String, String)>,
    JsonBody(body): JsonBody<SetBody>,
) -> Result<Json<ChangeRecord>, Problem> {
    let q = s.query(&query)?;
    let value = match body.value {
        TextOrNumber::Text(t) => t,
        TextOrNumber::Number(n) => n.to_string(),
    };
    let from = body.from.unwrap_or_else(|| "api".to_string());
    if from.is_empty() || from.len() > MAX_FROM_LEN || from.chars().any(char::is_control) {
        return Err(Problem::bad_body(format!(
            "`from` names who asks in the history: 1 to {MAX_FROM_LEN} bytes without control characters, not {:?}",
            from.chars().take(40).collect::<String>()
        )));
    }
    let request = ChangeRequest {
        operator,
        param,
        value,
        from,
    };
    // Debug-quoted: a name or value from the request with a line break in it cannot forge a
    // line of the log.
    tracing::info!(%query, operator = ?request.operator, param = ?request.param, value = ?request.value, from = ?request.from, "param change asked");
    Ok(Json(blocking(move || q.set(request)).await??))
}

/// `GET /api/v1/queries/{query}/history`.
pub(crate) async fn history(
    State(s): State<AppState>,
    Names(query): Names<String>,
) -> Result<Json<Vec<ChangeRecord>>, Problem> {
    let q = s.query(&query)?;
    Ok(Json(blocking(move || q.history()).await?))
}

/// `GET /api/v1/queries/{query}/checkpoints`.
pub(crate) async fn checkpoints(
    State(s): State<AppState>,
    Names(query): Names<String>,
) -> Result<Json<Vec<CheckpointInfo>>, Problem> {
    let q = s.query(&query)?;
    Ok(Json(blocking(move || q.checkpoints()).await??))
}

/// The answer of `POST …/checkpoints`.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct CheckpointTaken {
    /// The epoch of the checkpoint, complete.
    pub(crate) epoch: u64,
}

/// `POST /api/v1/queries/{query}/checkpoints`.
pub(crate) async fn take_checkpoint(
    State(s): State<AppState>,
    Names(query): Names<String>,
) -> Result<Json<CheckpointTaken>, Problem> {
    let q = s.query(&query)?;
    let epoch = blocking(move || q.checkpoint()).await??;
    Ok(Json(CheckpointTaken { epoch }))
}

/// The answer of `POST …/stop`.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct StopAccepted {
    /// The query.
    pub(crate) query: String,
    /// Always `stopping`: the query's state says when it is done.
    pub(crate) state: String,
}

/// `POST /api/v1/queries/{query}/stop`.
pub(crate) async fn stop(
    State(s): State<AppState>,
    Names(query): Names<String>,
) -> Result<(StatusCode, Json<StopAccepted>), Problem> {
    let q = s.query(&query)?;
    blocking(move || q.stop()).await??;
    tracing::info!(%query, "stop asked through the API");
    Ok((
        StatusCode::ACCEPTED,
        Json(StopAccepted {
            query,
            state: "stopping".into(),
        }),
    ))
}

/// The query string of `GET /api/v1/events`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct EventsParams {
    /// Only this query's events.
    query: Option<String>,
}

/// `GET /api/v1/events`: server-sent events, one per engine event (`event:` its kind,
/// `data:` its JSON), and `event: lagged` with `{"missed": N}` when the client fell behind.
pub(crate) async fn events(
    State(s): State<AppState>,
    params: Result<Query<EventsParams>, QueryRejection>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, Problem> {
    let Query(params) =
        params.map_err(|r| Problem::new(StatusCode::BAD_REQUEST, "bad_request", r.body_text()))?;
    if let Some(q) = &params.query {
        s.query(q)?;
    }
    let items = feed_items(
        s.registry.events().subscribe(),
        params.query,
        s.shutdown.clone(),
    );
    let events = items.map(|item| Ok(sse_event(&item)));
    Ok(Sse::new(events).keep_alive(KeepAlive::default()))
}

fn sse_event(item: &FeedItem) -> Event {
    match item {
        FeedItem::Event(e) => {
            let data = serde_json::to_string(e.as_ref())
                .unwrap_or_else(|err| format!("{{\"error\":\"unserialisable event: {err}\"}}"));
            let kind = serde_json::to_value(&e.event)
                .ok()
                .and_then(|v| v.get("event").and_then(|k| k.as_str()).map(str::to_string))
                .unwrap_or_else(|| "event".to_string());
            Event::default().event(kind).data(data)
        }
        FeedItem::Lagged(n) => Event::default().event("lagged").data(
            serde_json::json!({
                "missed": n,
                "message": format!("this client fell behind and missed {n} events; the query was not held back"),
            })
            .to_string(),
        ),
    }
}

/// `GET /metrics`.
pub(crate) async fn prometheus(State(s): State<AppState>) -> Result<Response, Problem> {
    let queries = s.registry.entries();
    let figures = blocking(move || {
        queries
            .into_iter()
            .map(|(name, q)| (name, q.metrics()))
            .collect::<Vec<_>>()
    })
    .await?;
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0);
    let text = crate::metrics::render_prometheus(&figures, now_ms).map_err(|e| {
        Problem::internal(format!("cannot write the metrics: {e} (a bug in anduin)"))
    })?;
    Ok((
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static(crate::metrics::CONTENT_TYPE),
        )],
        text,
    )
        .into_response())
}

/// `GET /openapi.json`.
pub(crate) async fn openapi() -> Response {
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        crate::openapi::DOCUMENT,
    )
        .into_response()
}

/// No route has this path.
pub(crate) async fn no_route(uri: Uri) -> Problem {
    Problem::new(
        StatusCode::NOT_FOUND,
        "not_found",
        format!(
            "no route {} (the routes are under /api/v1, listed in /openapi.json)",
            crate::problem::shown(uri.path())
        ),
    )
}

/// The path exists, not with this method.
pub(crate) async fn wrong_method(method: Method, uri: Uri) -> Problem {
    let allowed: Vec<String> = crate::routes::methods_of(uri.path())
        .iter()
        .map(Method::to_string)
        .collect();
    Problem::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!(
            "{} does not take {method} (it takes {})",
            crate::problem::shown(uri.path()),
            allowed.join(", ")
        ),
    )
}

/// Whether `host` (a `Host` header: `NAME[:PORT]`) names this machine by address or as
/// `localhost`: what a local tool sends, and what a web page rebinding its own name to
/// 127.0.0.1 (DNS rebinding) cannot.
fn local_host(host: &str) -> bool {
    let name = match host.rsplit_once(':') {
        Some((n, port)) if port.bytes().all(|b| b.is_ascii_digit()) && !n.ends_with(':') => n,
        _ => host,
    };
    let name = name.trim_start_matches('[').trim_end_matches(']');
    name.eq_ignore_ascii_case("localhost") || name.parse::<std::net::IpAddr>().is_ok()
}

/// Whether `origin` (an `Origin` header) is this server's own as `host` (a local `Host`
/// header) names it: the page of the UI, served here, calling the API.
fn same_origin(origin: &str, host: &str) -> bool {
    origin
        .strip_prefix("http://")
        .is_some_and(|o| o.eq_ignore_ascii_case(host))
}

/// Who may call. With a token, every request must carry it as `Authorization: Bearer
/// <token>` (401), but those for the UI's files, which hold no data. Without one (a loopback
/// listener), a request from a web page other than the UI is refused (403): it carries an
/// `Origin` header other than this server's own (a page posting to `/stop` across origins),
/// or a `Host` that is a name other than `localhost` (a page whose name was rebound to
/// 127.0.0.1).
pub(crate) async fn guard(State(s): State<AppState>, req: Request, next: Next) -> Response {
    let headers = req.headers();
    match &s.token {
        Some(_) if crate::ui::is_ui(req.method(), req.uri().path()) => {}
        Some(token) => {
            let given = headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "));
            match given {
                None => return Problem::unauthorized(false).into_response(),
                // Constant time over the token's bytes: the time taken does not tell how much
                // of a guess was right (a length mismatch is told at once; the length is no
                // secret).
                Some(g) if !bool::from(g.trim().as_bytes().ct_eq(token.as_bytes())) => {
                    tracing::warn!(path = %req.uri().path(), "API request with a wrong token refused");
                    return Problem::unauthorized(true).into_response();
                }
                Some(_) => {}
            }
        }
        None => {
            // Every Host header: a second one (or one that is not text) must not slip by.
            let hosts: Vec<_> = headers.get_all(header::HOST).iter().collect();
            let foreign = hosts
                .iter()
                .find(|v| v.to_str().map_or(true, |h| !local_host(h)));
            // An Origin is taken only when it is this server's own, as the one Host names it.
            let origins: Vec<_> = headers.get_all(header::ORIGIN).iter().collect();
            let foreign_origin = match (origins.as_slice(), hosts.as_slice()) {
                ([], _) => false,
                ([origin], [host]) => match (origin.to_str(), host.to_str()) {
                    (Ok(o), Ok(h)) => !same_origin(o, h),
                    _ => true,
                },
                _ => true,
            };
            if foreign_origin || foreign.is_some() {
                let host = foreign.map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
                tracing::warn!(path = %req.uri().path(), host, "API request from a web page refused");
                return Problem::new(
                    StatusCode::FORBIDDEN,
                    "forbidden",
                    "requests from web pages (with an Origin header other than this server's, \
                     or a Host other than an address or localhost) are refused by an API \
                     without a token; open the UI at this server's own address, or start the \
                     run with a token (--api-token-file) to call it from elsewhere",
                )
                .into_response();
            }
        }
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::{local_host, same_origin};

    #[test]
    fn only_this_server_s_own_origin_is_the_same_origin() {
        assert!(same_origin("http://127.0.0.1:4000", "127.0.0.1:4000"));
        assert!(same_origin("http://LOCALHOST:4000", "localhost:4000"));
        for (origin, host) in [
            ("http://127.0.0.1:4001", "127.0.0.1:4000"),
            ("https://127.0.0.1:4000", "127.0.0.1:4000"),
            ("http://localhost:4000", "127.0.0.1:4000"),
            ("null", "127.0.0.1:4000"),
            ("http://127.0.0.1:4000/", "127.0.0.1:4000"),
        ] {
            assert!(!same_origin(origin, host), "{origin} for {host}");
        }
    }

    #[test]
    fn local_hosts_are_addresses_and_localhost() {
        for h in [
            "127.0.0.1:8080",
            "127.0.0.1",
            "[::1]:80",
            "[::1]",
            "LOCALHOST:1",
            "10.0.0.2:9",
        ] {
            assert!(local_host(h), "{h}");
        }
        for h in [
            "evil.example:8080",
            "evil.example",
            "localhost.evil.example",
            "127.0.0.1.nip.io:80",
        ] {
            assert!(!local_host(h), "{h}");
        }
    }
}
