//! A blocking client of the API (what `anduin ctl` uses): one method per route, typed
//! answers, the server's error message on a refusal.

use std::io::{BufRead, BufReader, Read};
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::handlers::CheckpointTaken;
use crate::{
    ChangeRecord, CheckpointInfo, ErrorBody, ParamInfo, QueryInfo, QueryMetrics, TopologyInfo,
};

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The address is not one the client can use.
    #[error("cannot use the API address `{addr}`: {reason}")]
    BadAddress {
        /// The address given.
        addr: String,
        /// What is wrong.
        reason: String,
    },
    /// No answer: nothing listens there, or the connection broke.
    #[error("cannot reach the API at {url}: {reason} (is the run still going? `anduin ctl queries` lists the local ones)")]
    Unreachable {
        /// The URL called.
        url: String,
        /// The system's reason.
        reason: String,
    },
    /// The server took the connection (or the connection was being made) but did not answer
    /// in time: the run is stopped (`kill -STOP`), stuck or overloaded.
    #[error(
        "the run at {url} did not answer within {after:?} (is it stopped with SIGSTOP, stuck or \
         overloaded? its log may say; `anduin ctl queries` lists the local runs)"
    )]
    NoAnswer {
        /// The URL called.
        url: String,
        /// How long the client waited.
        after: Duration,
    },
    /// The server refused the request; `message` is its explanation.
    #[error("{message}")]
    Refused {
        /// The HTTP status.
        status: u16,
        /// The server's code (`unknown_query`, `invalid`, …).
        error: String,
        /// The server's message.
        message: String,
    },
    /// The answer is not what the route sends.
    #[error("unexpected answer from {url}: {reason} (is it an anduin API?)")]
    Decode {
        /// The URL called.
        url: String,
        /// What did not fit.
        reason: String,
    },
}

/// How long a [`Client`] waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientTimeouts {
    /// For the connection to be made.
    pub connect: Duration,
    /// For a whole call, answer included; above the server's own deadline for a change
    /// (a `PUT` waits for its consistent point). The event stream has no such limit.
    pub answer: Duration,
}

impl Default for ClientTimeouts {
    /// 5 s to connect, 60 s for an answer.
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(5),
            answer: Duration::from_secs(60),
        }
    }
}

/// A client of one server.
#[derive(Debug, Clone)]
pub struct Client {
    base: String,
    token: Option<String>,
    timeouts: ClientTimeouts,
    /// For calls: bounded by `timeouts.answer`.
    agent: ureq::Agent,
    /// For the event stream, which lasts as long as the run: only the connect timeout.
    streams: ureq::Agent,
}

/// One server-sent event of `GET /api/v1/events`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseMessage {
    /// Its kind (`checkpoint_completed`, …, or `lagged`).
    pub event: String,
    /// Its data: a JSON object.
    pub data: String,
}

/// The events of `GET /api/v1/events`, as they come; blocks for the next. Ends when the
/// server stops.
pub struct EventStream {
    lines: std::io::Lines<BufReader<Box<dyn Read + Send>>>,
    url: String,
}

impl std::fmt::Debug for EventStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventStream")
            .field("url", &self.url)
            .finish()
    }
}

impl Iterator for EventStream {
    type Item = Result<SseMessage, ClientError>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut event = String::new();
        let mut data: Vec<String> = Vec::new();
        loop {
            let line = match self.lines.next()? {
                Ok(l) => l,
                Err(e) => {
                    return Some(Err(ClientError::Unreachable {
                        url: self.url.clone(),
                        reason: e.to_string(),
                    }))
                }
            };
            if line.is_empty() {
                if data.is_empty() && event.is_empty() {
                    continue; // a keep-alive comment's end
                }
                return Some(Ok(SseMessage {
                    event: if event.is_empty() {
                        "message".into()
                    } else {
                        event
                    },
                    data: data.join("\n"),
                }));
            }
            if line.starts_with(':') {
                continue;
            }
            let (field, value) = line.split_once(':').unwrap_or((line.as_str(), ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "event" => event = value.to_string(),
                "data" => data.push(value.to_string()),
                _ => {}
            }
        }
    }
}

/// A path segment, percent-encoded.
fn segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

impl Client {
    /// A client of the server at `addr` (`HOST:PORT` or `http://HOST:PORT`), sending `token`
    /// as a bearer token if given, with the default [`ClientTimeouts`].
    pub fn new(addr: &str, token: Option<String>) -> Result<Self, ClientError> {
        Self::with_timeouts(addr, token, ClientTimeouts::default())
    }

    /// As [`Client::new`], waiting as long as `timeouts` say.
    pub fn with_timeouts(
        addr: &str,
        token: Option<String>,
        timeouts: ClientTimeouts,
    ) -> Result<Self, ClientError> {
        let bad = |reason: &str| ClientError::BadAddress {
            addr: addr.to_string(),
            reason: reason.to_string(),
        };
        let trimmed = addr.trim().trim_end_matches('/');
        if trimmed.starts_with("https://") {
            return Err(bad("the API serves plain HTTP (use http://, or HOST:PORT)"));
        }
        let base = if trimmed.starts_with("http://") {
            trimmed.to_string()
        } else {
            format!("http://{trimmed}")
        };
        let uri: ureq::http::Uri = base
            .parse()
            .map_err(|_| bad("expected HOST:PORT or http://HOST:PORT"))?;
        if uri.host().is_none_or(str::is_empty) || uri.port().is_none() {
            return Err(bad("expected HOST:PORT or http://HOST:PORT, with the port"));
        }
        if uri.path() != "/" && !uri.path().is_empty() {
            return Err(bad("expected no path after HOST:PORT"));
        }
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(timeouts.connect))
            .timeout_global(Some(timeouts.answer))
            .build()
            .new_agent();
        let streams = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(timeouts.connect))
            .build()
            .new_agent();
        Ok(Self {
            base,
            token,
            timeouts,
            agent,
            streams,
        })
    }

    /// The server's URL, `http://HOST:PORT`.
    pub fn url(&self) -> &str {
        &self.base
    }

    fn query_path(query: &str) -> String {
        format!("/api/v1/queries/{}", segment(query))
    }

    /// The body of a successful answer, or the server's refusal.
    fn text(
        &self,
        url: &str,
        r: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    ) -> Result<String, ClientError> {
        let mut resp = r.map_err(|e| self.failed(url, e))?;
        let status = resp.status().as_u16();
        let text = resp
            .body_mut()
            .read_to_string()
            .map_err(|e| self.failed(url, e))?;
        if status >= 400 {
            return Err(match serde_json::from_str::<ErrorBody>(&text) {
                Ok(b) => ClientError::Refused {
                    status,
                    error: b.error,
                    message: b.message,
                },
                Err(_) => ClientError::Refused {
                    status,
                    error: format!("http_{status}"),
                    message: format!("{url} answered {status}: {}", text.trim()),
                },
            });
        }
        Ok(text)
    }

    /// Why a call to `url` got no answer.
    fn failed(&self, url: &str, e: ureq::Error) -> ClientError {
        match e {
            ureq::Error::Timeout(ureq::Timeout::Connect) => ClientError::NoAnswer {
                url: url.to_string(),
                after: self.timeouts.connect,
            },
            ureq::Error::Timeout(_) => ClientError::NoAnswer {
                url: url.to_string(),
                after: self.timeouts.answer,
            },
            e => ClientError::Unreachable {
                url: url.to_string(),
                reason: e.to_string(),
            },
        }
    }

    fn answer<T: DeserializeOwned>(
        &self,
        url: &str,
        r: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    ) -> Result<T, ClientError> {
        let text = self.text(url, r)?;
        serde_json::from_str(&text).map_err(|e| ClientError::Decode {
            url: url.to_string(),
            reason: e.to_string(),
        })
    }

    fn auth<B>(&self, r: ureq::RequestBuilder<B>) -> ureq::RequestBuilder<B> {
        match &self.token {
            Some(t) => r.header("Authorization", format!("Bearer {t}")),
            None => r,
        }
    }

    fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T, ClientError> {
        let url = format!("{}{path}", self.base);
        let r = self.auth(self.agent.get(&url)).call();
        self.answer(&url, r)
    }

    fn post<T: DeserializeOwned>(&self, path: &str) -> Result<T, ClientError> {
        let url = format!("{}{path}", self.base);
        let r = self.auth(self.agent.post(&url)).send_empty();
        self.answer(&url, r)
    }

    fn put<T: DeserializeOwned>(
        &self,
        path: &str,
        body: &impl Serialize,
    ) -> Result<T, ClientError> {
        let url = format!("{}{path}", self.base);
        let r = self.auth(self.agent.put(&url)).send_json(body);
        self.answer(&url, r)
    }

    /// `GET /api/v1/queries`.
    pub fn queries(&self) -> Result<Vec<QueryInfo>, ClientError> {
        self.get("/api/v1/queries")
    }

    /// `GET /api/v1/queries/{query}`.
    pub fn query(&self, query: &str) -> Result<QueryInfo, ClientError> {
        self.get(&Self::query_path(query))
    }

    /// `GET /api/v1/queries/{query}/metrics`.
    pub fn metrics(&self, query: &str) -> Result<QueryMetrics, ClientError> {
        self.get(&format!("{}/metrics", Self::query_path(query)))
    }

    /// `GET /api/v1/queries/{query}/autoscale`.
    pub fn autoscale(&self, query: &str) -> Result<crate::AutoscaleReport, ClientError> {
        self.get(&format!("{}/autoscale", Self::query_path(query)))
    }

    /// `GET /api/v1/queries/{query}/topology`.
    pub fn topology(&self, query: &str) -> Result<TopologyInfo, ClientError> {
        self.get(&format!("{}/topology", Self::query_path(query)))
    }

    /// `GET /api/v1/queries/{query}/operators/{operator}/params`.
    pub fn params(&self, query: &str, operator: &str) -> Result<Vec<ParamInfo>, ClientError> {
        self.get(&format!(
            "{}/operators/{}/params",
            Self::query_path(query),
            segment(operator)
        ))
    }

    /// `PUT /api/v1/queries/{query}/operators/{operator}/params/{param}`: blocks until the
    /// change is applied everywhere (or refused).
    pub fn set(
        &self,
        query: &str,
        operator: &str,
        param: &str,
        value: &str,
        from: &str,
    ) -> Result<ChangeRecord, ClientError> {
        self.put(
            &format!(
                "{}/operators/{}/params/{}",
                Self::query_path(query),
                segment(operator),
                segment(param)
            ),
            &serde_json::json!({"value": value, "from": from}),
        )
    }

    /// `GET /api/v1/queries/{query}/history`.
    pub fn history(&self, query: &str) -> Result<Vec<ChangeRecord>, ClientError> {
        self.get(&format!("{}/history", Self::query_path(query)))
    }

    /// `GET /api/v1/queries/{query}/checkpoints`.
    pub fn checkpoints(&self, query: &str) -> Result<Vec<CheckpointInfo>, ClientError> {
        self.get(&format!("{}/checkpoints", Self::query_path(query)))
    }

    /// `POST /api/v1/queries/{query}/checkpoints`: blocks until the checkpoint is complete;
    /// its epoch.
    pub fn checkpoint(&self, query: &str) -> Result<u64, ClientError> {
        let t: CheckpointTaken = self.post(&format!("{}/checkpoints", Self::query_path(query)))?;
        Ok(t.epoch)
    }

    /// `POST /api/v1/queries/{query}/stop`: returns once the query is stopping.
    pub fn stop(&self, query: &str) -> Result<(), ClientError> {
        let _: serde_json::Value = self.post(&format!("{}/stop", Self::query_path(query)))?;
        Ok(())
    }

    /// `GET /metrics`: the Prometheus exposition.
    pub fn prometheus(&self) -> Result<String, ClientError> {
        let url = format!("{}/metrics", self.base);
        let r = self.auth(self.agent.get(&url)).call();
        self.text(&url, r)
    }

    /// `GET /api/v1/events` (of `query` only, if given): returns once the server has
    /// subscribed the stream, so every event published after this returns is in it.
    pub fn events(&self, query: Option<&str>) -> Result<EventStream, ClientError> {
        let url = match query {
            Some(q) => format!("{}/api/v1/events?query={}", self.base, segment(q)),
            None => format!("{}/api/v1/events", self.base),
        };
        let r = self.auth(self.streams.get(&url)).call();
        let resp = r.map_err(|e| self.failed(&url, e))?;
        let status = resp.status().as_u16();
        if status >= 400 {
            let r: Result<(), ClientError> = self.answer(&url, Ok(resp));
            return Err(r.err().unwrap_or(ClientError::Decode {
                url,
                reason: format!("status {status}"),
            }));
        }
        let reader: Box<dyn Read + Send> = Box::new(resp.into_body().into_reader());
        Ok(EventStream {
            lines: BufReader::new(reader).lines(),
            url,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_may_be_host_port_or_an_http_url_and_nothing_else() {
        assert_eq!(
            Client::new("127.0.0.1:80", None).expect("ok").url(),
            "http://127.0.0.1:80"
        );
        assert_eq!(
            Client::new("http://[::1]:80/", None).expect("ok").url(),
            "http://[::1]:80"
        );
        for bad in ["https://h:1", "127.0.0.1", "http://h:1/x", ":::"] {
            assert!(Client::new(bad, None).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn a_server_that_takes_the_connection_but_never_answers_is_given_up_on() {
        // Bound and listening, never accepting: the system completes the connection and
        // takes the request; nothing answers, as with a run stopped by SIGSTOP.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("binds");
        let addr = silent.local_addr().expect("bound").to_string();
        let client = Client::with_timeouts(
            &addr,
            None,
            ClientTimeouts {
                connect: Duration::from_secs(5),
                answer: Duration::from_millis(50),
            },
        )
        .expect("a valid address");
        let e = client.queries().expect_err("no answer");
        assert!(matches!(e, ClientError::NoAnswer { .. }), "{e:?}");
        assert!(e.to_string().contains("did not answer"), "{e}");
        let e = client
            .set("q", "low", "condition", "value < 3", "me")
            .expect_err("no answer");
        assert!(matches!(e, ClientError::NoAnswer { .. }), "{e:?}");
    }

    #[test]
    fn path_segments_are_percent_encoded() {
        assert_eq!(segment("a b/c"), "a%20b%2Fc");
        assert_eq!(segment("sensors-2.v1"), "sensors-2.v1");
    }
}
