//! A fake Kubernetes API server for the scheduler's tests: pods in one namespace, kept in
//! memory, listed by label selector, created (within a pod quota, if given) and deleted, and Leases read, created and
//! replaced under optimistic concurrency (a stale `resourceVersion` is a 409), on 127.0.0.1
//! (a port the system chooses). One connection at a time, each closed after its answer. A test changes the
//! pods (a phase, a deletion) between the scheduler's ticks, which are synchronous: no
//! waiting.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

use serde_json::{json, Value};

/// A request the fake took.
#[derive(Clone, Debug)]
pub struct Request {
    pub method: String,
    pub path: String,
    /// The `labelSelector` of a list, decoded.
    pub selector: Option<String>,
    pub authorization: Option<String>,
}

/// What the fake holds.
#[derive(Default)]
pub struct State {
    /// The pods by name.
    pub pods: BTreeMap<String, Value>,
    /// The Leases by name.
    pub leases: BTreeMap<String, Value>,
    /// The last `resourceVersion` given.
    pub version: u64,
    /// Answer every request 403 with this message.
    pub forbid: Option<String>,
    /// A ResourceQuota of this many pods: a create beyond it is answered 403, as Kubernetes'
    /// quota admission answers.
    pub pod_quota: Option<usize>,
    pub requests: Vec<Request>,
}

impl State {
    /// Sets the phase of pod `name`.
    pub fn set_phase(&mut self, name: &str, phase: &str) {
        if let Some(pod) = self.pods.get_mut(name) {
            pod["status"]["phase"] = json!(phase);
        }
    }
}

/// The fake's server thread, stopped on drop.
pub struct FakeApi {
    pub addr: SocketAddr,
    pub namespace: String,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl FakeApi {
    /// A fake of namespace `namespace`, over plain HTTP.
    pub fn start(namespace: &str) -> Self {
        Self::start_with(namespace, None)
    }

    /// A fake of namespace `namespace` over HTTPS, with the certificate chain `cert` and the
    /// PKCS#8 key `key` (PEM).
    pub fn start_tls(namespace: &str, cert: &[u8], key: &[u8]) -> Self {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert)
            .collect::<Result<_, _>>()
            .expect("PEM certificates");
        let key = PrivateKeyDer::from_pem_slice(key).expect("a PEM key");
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .expect("the server's certificate");
        Self::start_with(namespace, Some(Arc::new(config)))
    }

    fn start_with(namespace: &str, tls: Option<Arc<rustls::ServerConfig>>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a port on loopback");
        let addr = listener.local_addr().expect("its address");
        let state: Arc<Mutex<State>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (state, stop, namespace) =
                (Arc::clone(&state), Arc::clone(&stop), namespace.to_string());
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let _ = match &tls {
                        None => serve(stream, &state, &namespace),
                        Some(config) => rustls::ServerConnection::new(Arc::clone(config))
                            .map_err(std::io::Error::other)
                            .and_then(|c| {
                                serve(rustls::StreamOwned::new(c, stream), &state, &namespace)
                            }),
                    };
                }
            })
        };
        Self {
            addr,
            namespace: namespace.to_string(),
            state,
            stop,
            thread: Some(thread),
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What it holds, for another thread (a scenario's stand-in for the kubelet).
    #[allow(dead_code)] // by the scenarios only
    pub fn shared(&self) -> Arc<Mutex<State>> {
        Arc::clone(&self.state)
    }
}

impl Drop for FakeApi {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept.
        let _ = TcpStream::connect(self.addr);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Answers one request.
fn serve(stream: impl Read + Write, state: &Mutex<State>, namespace: &str) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut words = line.split_whitespace();
    let (Some(method), Some(target)) = (words.next(), words.next()) else {
        return Ok(());
    };
    let (mut length, mut authorization) = (0, None);
    loop {
        let mut header = String::new();
        reader.read_line(&mut header)?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            match name.to_ascii_lowercase().as_str() {
                "content-length" => length = value.trim().parse().unwrap_or(0),
                "authorization" => authorization = Some(value.trim().to_string()),
                _ => {}
            }
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let selector = query
        .split('&')
        .find_map(|kv| kv.strip_prefix("labelSelector="))
        .map(decode);
    let mut state = state.lock().unwrap_or_else(|p| p.into_inner());
    state.requests.push(Request {
        method: method.to_string(),
        path: path.to_string(),
        selector: selector.clone(),
        authorization,
    });
    let pods = format!("/api/v1/namespaces/{namespace}/pods");
    let leases = format!("/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases");
    let (status, answer) = if let Some(message) = &state.forbid {
        (403, status_object(403, "Forbidden", message))
    } else if path.starts_with(leases.as_str()) {
        let name = path
            .strip_prefix(leases.as_str())
            .and_then(|p| p.strip_prefix('/'));
        lease(&mut state, method, name, &body)
    } else if method == "GET" && path == pods {
        let items: Vec<&Value> = state
            .pods
            .values()
            .filter(|p| selector.as_deref().is_none_or(|s| matches(p, s)))
            .collect();
        (200, json!({"kind": "PodList", "items": items}))
    } else if method == "POST" && path == pods {
        let mut pod: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let name = pod["metadata"]["name"].as_str().unwrap_or("").to_string();
        let (used, quota) = (state.pods.len(), state.pod_quota);
        match state.pods.entry(name) {
            std::collections::btree_map::Entry::Vacant(e) if quota.is_some_and(|q| used >= q) => {
                let limit = quota.unwrap_or_default();
                (
                    403,
                    status_object(
                        403,
                        "Forbidden",
                        &format!(
                            "pods \"{}\" is forbidden: exceeded quota: pods, requested: pods=1, used: pods={used}, limited: pods={limit}",
                            e.key()
                        ),
                    ),
                )
            }
            std::collections::btree_map::Entry::Occupied(e) => (
                409,
                status_object(
                    409,
                    "AlreadyExists",
                    &format!("pods \"{}\" already exists", e.key()),
                ),
            ),
            std::collections::btree_map::Entry::Vacant(e) => {
                pod["metadata"]["creationTimestamp"] = json!(chrono::Utc::now().to_rfc3339());
                pod["status"] = json!({"phase": "Pending"});
                e.insert(pod.clone());
                (201, pod)
            }
        }
    } else if let Some(name) = path
        .strip_prefix(pods.as_str())
        .and_then(|p| p.strip_prefix('/'))
        .filter(|_| method == "DELETE")
    {
        match state.pods.remove(name) {
            Some(pod) => (200, pod),
            None => (
                404,
                status_object(404, "NotFound", &format!("pods \"{name}\" not found")),
            ),
        }
    } else {
        (
            404,
            status_object(
                404,
                "NotFound",
                "the server could not find the requested resource",
            ),
        )
    };
    drop(state);
    let body = answer.to_string();
    let stream = reader.get_mut();
    write!(
        stream,
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    stream.flush()
}

/// Answers a request of the Leases: GET, POST and PUT (with the current `resourceVersion`).
fn lease(state: &mut State, method: &str, name: Option<&str>, body: &[u8]) -> (u16, Value) {
    let sent: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    match (method, name) {
        ("GET", Some(name)) => match state.leases.get(name) {
            Some(lease) => (200, lease.clone()),
            None => (
                404,
                status_object(404, "NotFound", &format!("leases \"{name}\" not found")),
            ),
        },
        ("POST", None) => {
            let name = sent["metadata"]["name"].as_str().unwrap_or("").to_string();
            if state.leases.contains_key(&name) {
                return (
                    409,
                    status_object(
                        409,
                        "AlreadyExists",
                        &format!("leases \"{name}\" already exists"),
                    ),
                );
            }
            state.version += 1;
            let mut lease = sent;
            lease["metadata"]["resourceVersion"] = json!(state.version.to_string());
            state.leases.insert(name, lease.clone());
            (201, lease)
        }
        ("PUT", Some(name)) => {
            let current = state
                .leases
                .get(name)
                .map(|l| l["metadata"]["resourceVersion"].clone());
            if current.is_none() || current != Some(sent["metadata"]["resourceVersion"].clone()) {
                return (
                    409,
                    status_object(409, "Conflict", &format!("Operation cannot be fulfilled on leases.coordination.k8s.io \"{name}\": the object has been modified")),
                );
            }
            state.version += 1;
            let mut lease = sent;
            lease["metadata"]["resourceVersion"] = json!(state.version.to_string());
            state.leases.insert(name.to_string(), lease.clone());
            (200, lease)
        }
        _ => (
            405,
            status_object(405, "MethodNotAllowed", "not served by the fake"),
        ),
    }
}

fn status_object(code: u16, reason: &str, message: &str) -> Value {
    json!({"kind": "Status", "status": "Failure", "code": code, "reason": reason, "message": message})
}

/// Whether `pod` has every `k=v` label of `selector`.
fn matches(pod: &Value, selector: &str) -> bool {
    selector.split(',').all(|kv| {
        kv.split_once('=')
            .is_some_and(|(k, v)| pod["metadata"]["labels"][k].as_str() == Some(v))
    })
}

/// A query value, percent- and plus-decoded.
fn decode(s: &str) -> String {
    let mut out = Vec::new();
    let bytes = s.as_bytes();
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'%' => {
                let hex = s
                    .get(i + 1..i + 3)
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                out.push(hex.unwrap_or(b'%'));
                i += if hex.is_some() { 3 } else { 1 };
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            _ => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
