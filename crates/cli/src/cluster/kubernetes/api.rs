//! The few calls of the Kubernetes API the scheduler makes (list, create and delete pods in
//! one namespace) and the leader election by a Lease makes (read, create and replace one
//! Lease), as plain JSON over HTTP(S), and their errors, each naming the API, the namespace
//! and the object, and saying what to do.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::pod::PodFacts;

/// How long one call may take: the scheduler calls from the coordinator's liveness tick.
pub const CALL_WITHIN: Duration = Duration::from_secs(5);

/// The verbs the coordinator's service account needs on pods in its namespace.
pub const VERBS: &str = "create, delete, get, list and watch";

/// The verbs coordinators electing by a Lease need on leases (coordination.k8s.io).
pub const LEASE_VERBS: &str = "get, create and update";

/// What a call was for, in an error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Call {
    /// Listing the pods of a label selector.
    List { selector: String },
    /// Creating a pod.
    Create { pod: String },
    /// Deleting a pod.
    Delete { pod: String },
    /// Reading, creating or replacing a Lease.
    Lease { verb: &'static str, name: String },
}

impl Call {
    /// What RBAC must grant for it.
    fn needs(&self) -> String {
        match self {
            Self::Lease { .. } => {
                format!("the verbs {LEASE_VERBS} on leases (coordination.k8s.io)")
            }
            _ => format!("the verbs {VERBS} on pods"),
        }
    }
}

impl fmt::Display for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::List { selector } => write!(f, "list the pods labelled {selector}"),
            Self::Create { pod } => write!(f, "create pod {pod}"),
            Self::Delete { pod } => write!(f, "delete pod {pod}"),
            Self::Lease { verb, name } => write!(f, "{verb} the Lease {name}"),
        }
    }
}

/// A call of the Kubernetes API that failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApiError {
    /// The connection failed (address, TLS, timeout).
    #[error(
        "cannot {call} in namespace {namespace}: the Kubernetes API at {api} cannot be reached \
         ({cause}); check --kube-api (in a pod: https://kubernetes.default.svc) and, for https, \
         --kube-ca-file"
    )]
    Unreachable {
        api: String,
        namespace: String,
        call: Call,
        cause: String,
    },
    /// 401: no token, or a token the API does not take.
    #[error(
        "cannot {call} in namespace {namespace}: the Kubernetes API at {api} does not accept \
         the coordinator's token ({message}); check --kube-token-file (in a pod, the service \
         account's /var/run/secrets/kubernetes.io/serviceaccount/token)"
    )]
    Unauthorized {
        api: String,
        namespace: String,
        call: Call,
        message: String,
    },
    /// 403: RBAC forbids it.
    #[error(
        "cannot {call} in namespace {namespace}: the Kubernetes API at {api} forbids it \
         ({message}); RBAC: the coordinator's service account needs a Role granting {} \
         in namespace {namespace}, and a RoleBinding to it (deploy/kubernetes/rbac.yaml)",
        call.needs()
    )]
    Forbidden {
        api: String,
        namespace: String,
        call: Call,
        message: String,
    },
    /// 403 that is no RBAC denial: the namespace's ResourceQuota, a LimitRange or an
    /// admission policy (Pod Security) refuses the pod.
    #[error(
        "cannot {call} in namespace {namespace}: the Kubernetes API at {api} refuses it \
         ({message}); the namespace's ResourceQuota, LimitRange or Pod Security admission does \
         not let it in (`kubectl describe quota,limitrange -n {namespace}`): raise them, or \
         lower --max-workers or --slots"
    )]
    Refused {
        api: String,
        namespace: String,
        call: Call,
        message: String,
    },
    /// 409 on a create: a pod of that name is still there (being deleted).
    #[error(
        "cannot {call} in namespace {namespace} at {api}: a pod of that name is still there \
         (being deleted); it is created on a later tick"
    )]
    AlreadyExists {
        api: String,
        namespace: String,
        call: Call,
    },
    /// Any other answer than the call's success.
    #[error("cannot {call} in namespace {namespace}: the Kubernetes API at {api} answered {status}: {message}")]
    Status {
        api: String,
        namespace: String,
        call: Call,
        status: u16,
        message: String,
    },
}

/// Where the API is and how the coordinator proves who it is.
#[derive(Clone, Debug)]
pub struct Endpoint {
    /// `https://HOST[:PORT]` or `http://HOST[:PORT]` (a `kubectl proxy`, a test's fake).
    pub api: String,
    pub namespace: String,
    /// The bearer token's file, read again on every call (Kubernetes rotates service
    /// account tokens).
    pub token_file: Option<PathBuf>,
    /// The CA certificates (PEM) the API's certificate is checked against, for https.
    pub ca_file: Option<PathBuf>,
}

/// A client of one namespace's pods.
pub struct Api {
    endpoint: Endpoint,
    agent: ureq::Agent,
}

impl Api {
    /// A client of `endpoint`; for https, with the CA certificates of its `ca_file`.
    pub fn new(endpoint: Endpoint) -> anyhow::Result<Self> {
        let api = endpoint.api.trim_end_matches('/').to_string();
        let config = ureq::Agent::config_builder()
            .timeout_global(Some(CALL_WITHIN))
            .http_status_as_error(false);
        let config = if api.starts_with("https://") {
            let Some(ca_file) = &endpoint.ca_file else {
                anyhow::bail!(
                    "--kube-api {api} is https: give the CA certificate its certificate is checked against with --kube-ca-file (in a pod, /var/run/secrets/kubernetes.io/serviceaccount/ca.crt)"
                );
            };
            config.tls_config(tls(ca_file)?)
        } else if api.starts_with("http://") {
            config
        } else {
            anyhow::bail!("--kube-api {api} is neither https://HOST[:PORT] nor http://HOST[:PORT]");
        };
        Ok(Self {
            endpoint: Endpoint { api, ..endpoint },
            agent: config.build().into(),
        })
    }

    fn pods_url(&self) -> String {
        format!(
            "{}/api/v1/namespaces/{}/pods",
            self.endpoint.api, self.endpoint.namespace
        )
    }

    /// The pods of the label selector `selector`.
    pub fn list(&self, selector: &str) -> Result<Vec<PodFacts>, ApiError> {
        let call = Call::List {
            selector: selector.to_string(),
        };
        let request = self
            .agent
            .get(&self.pods_url())
            .query("labelSelector", selector);
        let (status, body) = self.send(&call, self.auth(request).call())?;
        if status != 200 {
            return Err(self.refused(call, status, &body));
        }
        let items = body.get("items").and_then(Value::as_array).ok_or_else(|| {
            self.status(
                &call,
                status,
                "an answer without `items`, not a PodList".into(),
            )
        })?;
        Ok(items.iter().filter_map(PodFacts::read).collect())
    }

    /// Creates the pod `manifest` (named `pod`).
    pub fn create(&self, pod: &str, manifest: &Value) -> Result<(), ApiError> {
        let call = Call::Create {
            pod: pod.to_string(),
        };
        let request = self.auth(self.agent.post(&self.pods_url()));
        let (status, body) = self.send(&call, request.send_json(manifest))?;
        match status {
            200..=202 => Ok(()),
            409 => Err(ApiError::AlreadyExists {
                api: self.endpoint.api.clone(),
                namespace: self.endpoint.namespace.clone(),
                call,
            }),
            _ => Err(self.refused(call, status, &body)),
        }
    }

    /// Deletes the pod `pod` (one already gone is no error).
    pub fn delete(&self, pod: &str) -> Result<(), ApiError> {
        let call = Call::Delete {
            pod: pod.to_string(),
        };
        let url = format!("{}/{pod}", self.pods_url());
        let (status, body) = self.send(&call, self.auth(self.agent.delete(&url)).call())?;
        match status {
            200..=202 | 404 => Ok(()),
            _ => Err(self.refused(call, status, &body)),
        }
    }

    fn lease_url(&self, name: Option<&str>) -> String {
        let all = format!(
            "{}/apis/coordination.k8s.io/v1/namespaces/{}/leases",
            self.endpoint.api, self.endpoint.namespace
        );
        match name {
            Some(name) => format!("{all}/{name}"),
            None => all,
        }
    }

    /// Lease `name`; `None` if there is none.
    pub fn get_lease(&self, name: &str) -> Result<Option<Value>, ApiError> {
        let call = Call::Lease {
            verb: "read",
            name: name.to_string(),
        };
        let request = self.auth(self.agent.get(&self.lease_url(Some(name))));
        match self.send(&call, request.call())? {
            (200, lease) => Ok(Some(lease)),
            (404, _) => Ok(None),
            (status, body) => Err(self.refused(call, status, &body)),
        }
    }

    /// Creates the Lease `lease` (named `name`); `None` if one of that name exists.
    pub fn create_lease(&self, name: &str, lease: &Value) -> Result<Option<Value>, ApiError> {
        let call = Call::Lease {
            verb: "create",
            name: name.to_string(),
        };
        let request = self.auth(self.agent.post(&self.lease_url(None)));
        match self.send(&call, request.send_json(lease))? {
            (200..=202, created) => Ok(Some(created)),
            (409, _) => Ok(None),
            (status, body) => Err(self.refused(call, status, &body)),
        }
    }

    /// Replaces Lease `name` by `lease`, whose `metadata.resourceVersion` must be the one
    /// there (optimistic concurrency); `None` if another changed it since.
    pub fn replace_lease(&self, name: &str, lease: &Value) -> Result<Option<Value>, ApiError> {
        let call = Call::Lease {
            verb: "update",
            name: name.to_string(),
        };
        let request = self.auth(self.agent.put(&self.lease_url(Some(name))));
        match self.send(&call, request.send_json(lease))? {
            (200..=201, replaced) => Ok(Some(replaced)),
            (409, _) => Ok(None),
            (status, body) => Err(self.refused(call, status, &body)),
        }
    }

    /// `request` with the token, read now; without one when there is no token file, or
    /// when it cannot be read (the API then answers 401, and that error names the file).
    fn auth<B>(&self, request: ureq::RequestBuilder<B>) -> ureq::RequestBuilder<B> {
        match self
            .endpoint
            .token_file
            .as_deref()
            .and_then(|f| std::fs::read_to_string(f).ok())
        {
            Some(token) => request.header("Authorization", format!("Bearer {}", token.trim())),
            None => request,
        }
    }

    /// The status and JSON body of an answer.
    fn send(
        &self,
        call: &Call,
        answer: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    ) -> Result<(u16, Value), ApiError> {
        let mut response = answer.map_err(|e| ApiError::Unreachable {
            api: self.endpoint.api.clone(),
            namespace: self.endpoint.namespace.clone(),
            call: call.clone(),
            cause: e.to_string(),
        })?;
        let status = response.status().as_u16();
        let body = response
            .body_mut()
            .read_to_string()
            .map_err(|e| self.status(call, status, format!("an unreadable answer ({e})")))?;
        // A Status object's message, or the text itself when it is not JSON.
        let body = serde_json::from_str(&body).unwrap_or(Value::String(body));
        Ok((status, body))
    }

    fn status(&self, call: &Call, status: u16, message: String) -> ApiError {
        ApiError::Status {
            api: self.endpoint.api.clone(),
            namespace: self.endpoint.namespace.clone(),
            call: call.clone(),
            status,
            message,
        }
    }

    /// The error of a refusal, by its status.
    fn refused(&self, call: Call, status: u16, body: &Value) -> ApiError {
        let message = body
            .get("message")
            .and_then(Value::as_str)
            .or_else(|| body.as_str())
            .unwrap_or("no message")
            .to_string();
        let (api, namespace) = (self.endpoint.api.clone(), self.endpoint.namespace.clone());
        match status {
            401 => ApiError::Unauthorized {
                api,
                namespace,
                call,
                message: match &self.endpoint.token_file {
                    Some(f) if std::fs::metadata(f).is_err() => {
                        format!("{message}; the token file `{}` cannot be read", f.display())
                    }
                    None => format!("{message}; no --kube-token-file given"),
                    Some(_) => message,
                },
            },
            403 if !by_rbac(&message) => ApiError::Refused {
                api,
                namespace,
                call,
                message,
            },
            403 => ApiError::Forbidden {
                api,
                namespace,
                call,
                message,
            },
            _ => ApiError::Status {
                api,
                namespace,
                call,
                status,
                message,
            },
        }
    }
}

/// Whether a 403's message is RBAC's (`… is forbidden: User "…" cannot create resource
/// "pods" …`), not an admission's that refuses the object itself (`pods "w-2" is forbidden:
/// exceeded quota: …`, `… violates PodSecurity …`, a LimitRange's `maximum cpu usage …`).
fn by_rbac(message: &str) -> bool {
    let admission = [
        "exceeded quota",
        "violates PodSecurity",
        "LimitRange",
        "maximum ",
        "minimum ",
        "must specify limits",
        "must specify requests",
    ];
    !admission.iter().any(|a| message.contains(a))
}

/// TLS that trusts the certificates of `ca_file` only, with rustls's ring provider.
fn tls(ca_file: &Path) -> anyhow::Result<ureq::tls::TlsConfig> {
    use anyhow::Context;
    use ureq::tls::{parse_pem, PemItem, RootCerts, TlsConfig};
    let pem = std::fs::read(ca_file).with_context(|| {
        format!(
            "cannot read the Kubernetes API's CA certificate `{}` (--kube-ca-file)",
            ca_file.display()
        )
    })?;
    let mut certs = Vec::new();
    for item in parse_pem(&pem) {
        if let PemItem::Certificate(c) =
            item.with_context(|| format!("`{}` (--kube-ca-file) is not PEM", ca_file.display()))?
        {
            certs.push(c);
        }
    }
    if certs.is_empty() {
        anyhow::bail!(
            "`{}` (--kube-ca-file) holds no PEM certificate",
            ca_file.display()
        );
    }
    Ok(TlsConfig::builder()
        .root_certs(RootCerts::Specific(Arc::new(certs)))
        .unversioned_rustls_crypto_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .build())
}
