//! The routes of the API, as one table: the router is built from it, and a test checks that
//! the OpenAPI document (`docs/openapi.json`, served at `/openapi.json`) describes exactly
//! these.
//!
//! | method | path | what |
//! | --- | --- | --- |
//! | GET | `/api/v1/queries` | the queries served ([`crate::QueryInfo`] each) |
//! | GET | `/api/v1/queries/{query}` | one query: its logical graph (operators) and physical graph (tasks) |
//! | GET | `/api/v1/queries/{query}/metrics` | its live figures ([`crate::QueryMetrics`]) |
//! | GET | `/api/v1/queries/{query}/autoscale` | what its autoscaler did: settings, latest rounds with their figures, rescales ([`crate::AutoscaleReport`]) |
//! | GET | `/api/v1/queries/{query}/topology` | where its instances run, the exchanges between its tasks ([`crate::TopologyInfo`]) |
//! | GET | `/api/v1/queries/{query}/operators/{operator}/params` | an operator's adjustable params |
//! | PUT | `/api/v1/queries/{query}/operators/{operator}/params/{param}` | change a param: body `{"value": "…", "from": "…"}`, answers the [`crate::ChangeRecord`] |
//! | GET | `/api/v1/queries/{query}/history` | every change applied |
//! | GET | `/api/v1/queries/{query}/checkpoints` | the complete checkpoints |
//! | POST | `/api/v1/queries/{query}/checkpoints` | take a checkpoint now: `{"epoch": N}` when complete |
//! | POST | `/api/v1/queries/{query}/stop` | stop (after a last checkpoint): 202 |
//! | GET | `/api/v1/events` | engine events as server-sent events (`?query=NAME` for one query's) |
//! | GET | `/metrics` | every query's figures in the Prometheus (OpenMetrics) text format |
//! | GET | `/openapi.json` | the OpenAPI 3 document of these routes |
//! | GET | `/` | the web UI's page ([`crate::ui`]) |
//! | GET | `/ui/{asset}` | its modules and style sheet |

use std::sync::{Arc, OnceLock};

use axum::extract::DefaultBodyLimit;
use axum::handler::Handler;
use axum::http::Method;
use axum::routing::{on, MethodFilter};
use axum::Router;
use tokio::sync::watch;

use crate::handlers;
use crate::Registry;

/// One route: a method and a path (with `{name}` placeholders, as in OpenAPI).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Route {
    /// `GET`, `PUT`, `POST`.
    pub method: Method,
    /// The path.
    pub path: &'static str,
}

/// What every handler can reach.
#[derive(Clone)]
pub(crate) struct AppState {
    pub(crate) registry: Registry,
    /// The bearer token every request must carry, if any.
    pub(crate) token: Option<Arc<str>>,
    /// The largest request body taken, in bytes.
    pub(crate) body_limit: usize,
    /// Turns true when the server shuts down (ends the event streams).
    pub(crate) shutdown: watch::Receiver<bool>,
}

/// Builds the router and the table of what it serves, from one list.
struct Builder {
    router: Router<AppState>,
    served: Vec<Route>,
}

impl Builder {
    fn add<H, T>(mut self, method: Method, path: &'static str, handler: H) -> Self
    where
        H: Handler<T, AppState>,
        T: 'static,
    {
        let filter = MethodFilter::try_from(method.clone())
            .expect("the table uses only GET, PUT and POST, which are method filters");
        self.router = self.router.route(path, on(filter, handler));
        self.served.push(Route { method, path });
        self
    }
}

fn build() -> Builder {
    let b = Builder {
        router: Router::new(),
        served: Vec::new(),
    };
    b.add(Method::GET, "/api/v1/queries", handlers::list_queries)
        .add(Method::GET, "/api/v1/queries/{query}", handlers::query_info)
        .add(
            Method::GET,
            "/api/v1/queries/{query}/metrics",
            handlers::query_metrics,
        )
        .add(
            Method::GET,
            "/api/v1/queries/{query}/autoscale",
            handlers::autoscale,
        )
        .add(
            Method::GET,
            "/api/v1/queries/{query}/topology",
            handlers::topology,
        )
        .add(
            Method::GET,
            "/api/v1/queries/{query}/operators/{operator}/params",
            handlers::params,
        )
        .add(
            Method::PUT,
            "/api/v1/queries/{query}/operators/{operator}/params/{param}",
            handlers::set_param,
        )
        .add(
            Method::GET,
            "/api/v1/queries/{query}/history",
            handlers::history,
        )
        .add(
            Method::GET,
            "/api/v1/queries/{query}/checkpoints",
            handlers::checkpoints,
        )
        .add(
            Method::POST,
            "/api/v1/queries/{query}/checkpoints",
            handlers::take_checkpoint,
        )
        .add(Method::POST, "/api/v1/queries/{query}/stop", handlers::stop)
        .add(Method::GET, "/api/v1/events", handlers::events)
        .add(Method::GET, "/metrics", handlers::prometheus)
        .add(Method::GET, "/openapi.json", handlers::openapi)
        .add(Method::GET, "/", crate::ui::index)
        .add(Method::GET, "/ui/{asset}", crate::ui::file)
}

/// Every route the router serves, in the order of the table.
pub fn served() -> Vec<Route> {
    build().served
}

/// The methods the routes of `path` (a concrete path) take.
pub(crate) fn methods_of(path: &str) -> Vec<Method> {
    static SERVED: OnceLock<Vec<Route>> = OnceLock::new();
    SERVED
        .get_or_init(served)
        .iter()
        .filter(|r| crate::openapi::path_matches(r.path, path))
        .map(|r| r.method.clone())
        .collect()
}

/// The router of the API over `registry`: every route of [`served`], JSON errors for
/// unknown paths (404) and methods (405), bodies up to `body_limit` bytes (413 beyond), and,
/// with a `token`, `Authorization: Bearer <token>` required on every request but those for
/// the UI's files (401); without one, requests from web pages other than the UI refused (403:
/// an `Origin` header other than this server's own, or a `Host` that is a name other than
/// `localhost`).
/// `shutdown` turning true ends the event streams. [`crate::ApiServer`] serves it; a test
/// or another server can mount it.
pub fn router(
    registry: Registry,
    token: Option<String>,
    body_limit: usize,
    shutdown: watch::Receiver<bool>,
) -> Router {
    let state = AppState {
        registry,
        token: token.map(Arc::from),
        body_limit,
        shutdown,
    };
    build()
        .router
        .fallback(handlers::no_route)
        .method_not_allowed_fallback(handlers::wrong_method)
        .layer(DefaultBodyLimit::max(body_limit))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            handlers::guard,
        ))
        .with_state(state)
}
