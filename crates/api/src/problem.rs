//! Error responses: a status and `{"error": code, "message": text}`.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

use crate::{ControlFailure, FailureKind};

/// The body of every error response. `error` is a stable code a program can match
/// (`unknown_query`, `unknown_operator`, `not_adjustable`, `invalid`, `not_running`,
/// `no_checkpoints`, `not_autoscaled`, `checkpoint_failed`, `not_yet_applied`, `bad_request`, `too_large`, `unauthorized`, `forbidden`, `not_found`,
/// `method_not_allowed`, `timeout` (the body did not arrive in time), `busy` (too many
/// connections), `internal`); `message` says what went wrong and what to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// The code.
    pub error: String,
    /// The explanation, for a person.
    pub message: String,
}

/// The longest name (of a query, operator, file, path) an error message repeats whole.
const SHOWN_NAME: usize = 120;

/// The longest message an error carries: beyond, it is cut (a refusal that repeats a huge
/// value from the request does not send it all back).
const LONGEST_MESSAGE: usize = 8 * 1024;

/// `name` as an error message repeats it: whole up to [`SHOWN_NAME`] bytes, else its start
/// and how long it is (a request with a 60 KB name gets a short answer, not its name back).
pub(crate) fn shown(name: &str) -> std::borrow::Cow<'_, str> {
    if name.len() <= SHOWN_NAME {
        return name.into();
    }
    let end = (0..=SHOWN_NAME)
        .rev()
        .find(|i| name.is_char_boundary(*i))
        .unwrap_or(0);
    format!("{}… ({} bytes)", &name[..end], name.len()).into()
}

/// `message`, cut at [`LONGEST_MESSAGE`] bytes.
fn bounded(mut message: String) -> String {
    if message.len() > LONGEST_MESSAGE {
        let end = (0..=LONGEST_MESSAGE)
            .rev()
            .find(|i| message.is_char_boundary(*i))
            .unwrap_or(0);
        let total = message.len();
        message.truncate(end);
        message.push_str(&format!("… (cut: the message had {total} bytes)"));
    }
    message
}

/// An error response.
#[derive(Debug)]
pub(crate) struct Problem {
    status: StatusCode,
    body: ErrorBody,
}

impl Problem {
    pub(crate) fn new(status: StatusCode, error: &str, message: impl Into<String>) -> Self {
        Self {
            status,
            body: ErrorBody {
                error: error.to_string(),
                message: bounded(message.into()),
            },
        }
    }

    /// No query `name` is served; `served` are the names that are.
    pub(crate) fn unknown_query(name: &str, served: &[String]) -> Self {
        let known = if served.is_empty() {
            "no query is served here".to_string()
        } else {
            format!("served: {}", served.join(", "))
        };
        Self::new(
            StatusCode::NOT_FOUND,
            "unknown_query",
            format!("no query named \"{}\" ({known})", shown(name)),
        )
    }

    /// The query refused the request. The names it repeats from the request's path are
    /// shortened ([`shown`]).
    pub(crate) fn failure(f: &ControlFailure) -> Self {
        let short;
        let f = match f {
            ControlFailure::UnknownOperator {
                query,
                operator,
                hint,
            } => {
                short = ControlFailure::UnknownOperator {
                    query: query.clone(),
                    operator: shown(operator).into_owned(),
                    hint: hint.clone(),
                };
                &short
            }
            ControlFailure::NotAdjustable {
                operator,
                param,
                adjustable,
                can,
                exists,
            } => {
                short = ControlFailure::NotAdjustable {
                    operator: shown(operator).into_owned(),
                    param: shown(param).into_owned(),
                    adjustable: adjustable.clone(),
                    can: can.clone(),
                    exists: *exists,
                };
                &short
            }
            other => other,
        };
        let status = match f.kind() {
            FailureKind::NotFound => StatusCode::NOT_FOUND,
            FailureKind::Invalid => StatusCode::BAD_REQUEST,
            FailureKind::Conflict => StatusCode::CONFLICT,
        };
        let code = serde_json::to_value(f)
            .ok()
            .and_then(|v| v.get("error").and_then(|e| e.as_str()).map(str::to_string))
            .unwrap_or_else(|| "refused".to_string());
        Self::new(status, &code, f.to_string())
    }

    /// The body is not what the route takes.
    pub(crate) fn bad_body(reason: impl std::fmt::Display) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "bad_request",
            format!("malformed request body: {reason}"),
        )
    }

    /// The body is larger than the limit.
    pub(crate) fn too_large(limit: usize) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_large",
            format!("the request body is larger than the limit of {limit} bytes"),
        )
    }

    /// No or a wrong bearer token.
    pub(crate) fn unauthorized(given: bool) -> Self {
        let message = if given {
            "the bearer token is wrong: send the token the run was started with (--api-token-file)"
        } else {
            "this API needs a bearer token: send `Authorization: Bearer <token>` \
             (anduin ctl reads it from --api-token-file or ANDUIN_API_TOKEN)"
        };
        Self::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
    }

    /// A bug, or a query whose call panicked.
    pub(crate) fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
    }
}

impl From<ControlFailure> for Problem {
    fn from(f: ControlFailure) -> Self {
        Self::failure(&f)
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let mut r = (self.status, axum::Json(self.body)).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            r.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_huge_name_or_message_is_not_sent_back_whole() {
        let name = "é".repeat(30_000);
        let p = Problem::unknown_query(&name, &["sensors".into()]);
        assert!(p.body.message.len() < 400, "{}", p.body.message);
        assert!(
            p.body.message.contains("(60000 bytes)"),
            "{}",
            p.body.message
        );
        assert_eq!(shown("sensors"), "sensors");
        let p = Problem::failure(&ControlFailure::UnknownOperator {
            query: "q".into(),
            operator: "x".repeat(70_000),
            hint: " (its operators: a, b)".into(),
        });
        assert!(p.body.message.len() < 400, "{}", p.body.message);
        assert!(
            p.body.message.ends_with("(its operators: a, b)"),
            "{}",
            p.body.message
        );
        let p = Problem::failure(&ControlFailure::Invalid {
            operator: "low".into(),
            param: "condition".into(),
            message: format!("low.condition:1:1: unknown column `{}`", "y".repeat(70_000)),
        });
        assert!(
            p.body.message.len() < 8 * 1024 + 100,
            "{}",
            p.body.message.len()
        );
        assert!(p.body.message.starts_with("low.condition:1:1: "));
        assert!(
            p.body.message.ends_with("bytes)"),
            "{}",
            &p.body.message[8000..]
        );
    }

    #[test]
    fn a_refusal_keeps_its_code_and_maps_its_kind_to_a_status() {
        let p = Problem::failure(&ControlFailure::NoCheckpoints {
            query: "sensors".into(),
        });
        assert_eq!(p.status, StatusCode::CONFLICT);
        assert_eq!(p.body.error, "no_checkpoints");
        assert!(
            p.body.message.contains("--checkpoint-store"),
            "{}",
            p.body.message
        );
        let p = Problem::failure(&ControlFailure::UnknownOperator {
            query: "q".into(),
            operator: "x".into(),
            hint: String::new(),
        });
        assert_eq!(
            (p.status, p.body.error.as_str()),
            (StatusCode::NOT_FOUND, "unknown_operator")
        );
    }
}
