//! The web UI: static files embedded in the binary (no build step, no network at run time)
//! and served by the API's router — the page at `/`, its modules and style sheet under
//! `/ui/`. The page reads everything it shows through the API's routes (`/api/v1/…`, the
//! event stream), with the token the user gives it, so that any server of those routes (an
//! embedded run's, later a coordinator's) serves the same UI. See `docs/ui.md`.
//!
//! The files hold no data of any query: they are served without the token, as the page a
//! browser opens cannot carry one; everything else keeps the API's rules.

use axum::http::{header, HeaderValue, Method};
use axum::response::{IntoResponse, Response};

use crate::handlers::Names;
use crate::problem::Problem;

/// One embedded file of the UI.
#[derive(Debug, Clone, Copy)]
pub struct Asset {
    /// Its name under `/ui/` (the page is `index.html`, served at `/`).
    pub name: &'static str,
    /// Its `Content-Type`.
    pub content_type: &'static str,
    /// Its text.
    pub body: &'static str,
}

const JS: &str = "text/javascript; charset=utf-8";

/// Every file of the UI.
pub const ASSETS: &[Asset] = &[
    Asset {
        name: "index.html",
        content_type: "text/html; charset=utf-8",
        body: include_str!("../ui/index.html"),
    },
    Asset {
        name: "style.css",
        content_type: "text/css; charset=utf-8",
        body: include_str!("../ui/style.css"),
    },
    Asset {
        name: "app.js",
        content_type: JS,
        body: include_str!("../ui/app.js"),
    },
    Asset {
        name: "api.js",
        content_type: JS,
        body: include_str!("../ui/api.js"),
    },
    Asset {
        name: "dom.js",
        content_type: JS,
        body: include_str!("../ui/dom.js"),
    },
    Asset {
        name: "figures.js",
        content_type: JS,
        body: include_str!("../ui/figures.js"),
    },
    Asset {
        name: "graph.js",
        content_type: JS,
        body: include_str!("../ui/graph.js"),
    },
    Asset {
        name: "panels.js",
        content_type: JS,
        body: include_str!("../ui/panels.js"),
    },
    Asset {
        name: "console.js",
        content_type: JS,
        body: include_str!("../ui/console.js"),
    },
];

/// The UI's file `name`.
pub fn asset(name: &str) -> Option<&'static Asset> {
    ASSETS.iter().find(|a| a.name == name)
}

/// Whether a request is for a file of the UI, served without the token: a `GET` (or
/// `HEAD`) of `/` or of `/ui/NAME` where `NAME` is exactly one of [`ASSETS`], as the request
/// line spells it. Nothing else under `/ui/` is let by: `/ui/nothing.js`,
/// `/ui/../api/v1/queries`, `/ui/%2e%2e%2fapi` and the like need the token as every route
/// does (a router or proxy that normalised paths would otherwise take them elsewhere).
pub(crate) fn is_ui(method: &Method, path: &str) -> bool {
    (method == Method::GET || method == Method::HEAD)
        && (path == "/"
            || path
                .strip_prefix("/ui/")
                .is_some_and(|name| asset(name).is_some()))
}

/// What a browser may do with the UI's files: scripts, styles and connections to this
/// server only, no inline script, no framing (a page elsewhere cannot put the stop button
/// under a click of its own).
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; \
     frame-ancestors 'none'";

fn serve(a: &Asset) -> Response {
    (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static(a.content_type),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
            (
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(CONTENT_SECURITY_POLICY),
            ),
            (
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ),
            (header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY")),
            (
                header::REFERRER_POLICY,
                HeaderValue::from_static("no-referrer"),
            ),
        ],
        a.body,
    )
        .into_response()
}

/// `GET /`: the page.
pub(crate) async fn index() -> Response {
    serve(asset("index.html").expect("the page is one of the assets"))
}

/// `GET /ui/{asset}`.
pub(crate) async fn file(Names(name): Names<String>) -> Result<Response, Problem> {
    asset(&name).map(serve).ok_or_else(|| {
        let names: Vec<&str> = ASSETS.iter().map(|a| a.name).collect();
        Problem::new(
            axum::http::StatusCode::NOT_FOUND,
            "not_found",
            format!(
                "the UI has no file \"{}\" (it has {})",
                crate::problem::shown(&name),
                names.join(", ")
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_module_the_ui_imports_is_embedded() {
        let names: Vec<&str> = ASSETS.iter().map(|a| a.name).collect();
        for a in ASSETS {
            for line in a.body.lines() {
                let Some(from) = line.split(" from \"./").nth(1) else {
                    continue;
                };
                let module = from.split('"').next().expect("a closing quote");
                assert!(
                    names.contains(&module),
                    "{} imports {module}, which is not embedded",
                    a.name
                );
            }
        }
        let page = asset("index.html").expect("the page").body;
        for referenced in page.split("\"/ui/").skip(1) {
            let name = referenced.split('"').next().expect("a closing quote");
            assert!(
                names.contains(&name),
                "the page refers to {name}, not embedded"
            );
        }
    }

    #[test]
    fn the_page_has_no_inline_script_the_policy_would_block() {
        let page = asset("index.html").expect("the page").body;
        for tag in page.split("<script").skip(1) {
            let open = tag.split('>').next().expect("a tag");
            assert!(open.contains("src="), "an inline script: <script{open}>");
        }
        for (i, _) in page.match_indices(" on") {
            let attribute: String = page[i + 1..]
                .chars()
                .take_while(|c| c.is_ascii_alphabetic())
                .collect();
            let rest = &page[i + 1 + attribute.len()..];
            assert!(
                !(attribute.len() > 2 && rest.starts_with('=')),
                "an inline event handler: {attribute}="
            );
        }
    }
}
