//! A NATS server with JetStream for the tests: Debian's `nats-server` (scripts/test.sh
//! installs it when missing), started on loopback on a port the OS chooses, with its store
//! in a temporary directory, killed by PID when the guard drops; with helpers to make a
//! stream, publish to it and read it back.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use async_nats::jetstream;
use async_nats::jetstream::consumer::pull::OrderedConfig;
use futures_util::StreamExt;

use super::{wait_until, ChildGuard};

/// The server binary: `$ANDUIN_NATS_SERVER`, or Debian's (in /usr/sbin, which a user's PATH
/// may lack), or `nats-server` on the PATH.
fn binary() -> String {
    std::env::var("ANDUIN_NATS_SERVER").unwrap_or_else(|_| {
        let debian = "/usr/sbin/nats-server";
        if std::path::Path::new(debian).exists() {
            debian.into()
        } else {
            "nats-server".into()
        }
    })
}

/// A `nats-server -js` and a client of it.
pub struct NatsServer {
    /// Killed (by PID) when dropped, before its store goes (fields drop in order).
    child: ChildGuard,
    _store: tempfile::TempDir,
    /// Started with JetStream.
    jetstream: bool,
    /// The port it listens on (kept across [`NatsServer::restart`]).
    port: u16,
    /// `nats://127.0.0.1:PORT`.
    pub url: String,
    /// The user and password its clients must give, if any.
    login: Option<(String, String)>,
    runtime: tokio::runtime::Runtime,
    js: jetstream::Context,
}

impl NatsServer {
    /// Starts a server on a port of the OS's choosing (`-p -1`), reads the port from its
    /// log, and connects. Panics, saying how to install it, when `nats-server` is missing:
    /// these tests are never skipped.
    pub fn start() -> NatsServer {
        Self::start_with(true)
    }

    /// [`NatsServer::start`], with JetStream or without.
    pub fn start_with(jetstream: bool) -> NatsServer {
        Self::start_full(jetstream, None)
    }

    /// [`NatsServer::start`], its clients logging in as `user` with `password`.
    pub fn start_with_login(user: &str, password: &str) -> NatsServer {
        Self::start_full(true, Some((user.to_string(), password.to_string())))
    }

    fn start_full(jetstream: bool, login: Option<(String, String)>) -> NatsServer {
        let store = tempfile::tempdir().expect("a store directory");
        let (child, port) = spawn(jetstream, store.path(), None, login.as_ref());
        let url = format!("nats://127.0.0.1:{port}");
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a runtime");
        let js = connect(&runtime, &url, login.as_ref());
        NatsServer {
            child,
            _store: store,
            jetstream,
            port,
            url,
            login,
            runtime,
            js,
        }
    }

    /// Kills the server (SIGKILL, by PID) and starts it again on the same port with the same
    /// store, as a broker lost and back; the test's client connects anew. What its clients
    /// see meanwhile is a lost connection, then a server that answers again.
    pub fn restart(&mut self) {
        self.restart_with(self.jetstream);
    }

    /// [`NatsServer::restart`], with JetStream or without (a server whose JetStream is not
    /// there yet: its clients connect, but no stream answers).
    pub fn restart_with(&mut self, jetstream: bool) {
        let _ = self.child.0.kill();
        let _ = self.child.0.wait();
        let (child, _) = spawn(
            jetstream,
            self._store.path(),
            Some(self.port),
            self.login.as_ref(),
        );
        self.child = child;
        self.jetstream = jetstream;
        self.js = connect(&self.runtime, &self.url, self.login.as_ref());
    }

    /// Kills the server (SIGKILL, by PID) and starts it again on the same port with an empty
    /// store, as a broker back without its disk: every stream is gone.
    pub fn restart_empty(&mut self) {
        let _ = self.child.0.kill();
        let _ = self.child.0.wait();
        self._store = tempfile::tempdir().expect("a store directory");
        let (child, _) = spawn(
            self.jetstream,
            self._store.path(),
            Some(self.port),
            self.login.as_ref(),
        );
        self.child = child;
        self.js = connect(&self.runtime, &self.url, self.login.as_ref());
    }

    /// Deletes stream `name`, and its messages.
    pub fn delete_stream(&self, name: &str) {
        self.runtime
            .block_on(self.js.delete_stream(name))
            .expect("the stream is deleted");
    }

    /// The server's PID.
    pub fn pid(&self) -> u32 {
        self.child.pid()
    }

    /// Makes stream `name` of `subjects`, keeping message ids for `duplicate_window`.
    pub fn stream(&self, name: &str, subjects: &[&str], duplicate_window: Duration) {
        self.runtime
            .block_on(self.js.create_stream(jetstream::stream::Config {
                name: name.to_string(),
                subjects: subjects.iter().map(|s| s.to_string()).collect(),
                duplicate_window,
                ..Default::default()
            }))
            .expect("the stream is made");
    }

    /// Makes stream `name` of `subjects`, keeping message ids for `duplicate_window` and only
    /// its last `max_messages` messages (older ones are removed as new ones come).
    pub fn stream_keeping(
        &self,
        name: &str,
        subjects: &[&str],
        duplicate_window: Duration,
        max_messages: i64,
    ) {
        self.runtime
            .block_on(self.js.create_stream(jetstream::stream::Config {
                name: name.to_string(),
                subjects: subjects.iter().map(|s| s.to_string()).collect(),
                duplicate_window,
                max_messages,
                discard: jetstream::stream::DiscardPolicy::Old,
                ..Default::default()
            }))
            .expect("the stream is made");
    }

    /// Publishes `values` to `subject`, and waits until every one is acknowledged.
    pub fn publish(&self, subject: &str, values: &[String]) {
        self.runtime.block_on(async {
            let mut acks = Vec::new();
            for v in values {
                acks.push(
                    self.js
                        .publish(subject.to_string(), v.clone().into_bytes().into())
                        .await
                        .expect("published"),
                );
                if acks.len() >= 1000 {
                    for a in acks.drain(..) {
                        a.await.expect("acknowledged");
                    }
                }
            }
            for a in acks {
                a.await.expect("acknowledged");
            }
        });
    }

    /// Removes every message of `stream` (its sequence goes on from where it was).
    pub fn purge(&self, stream: &str) {
        self.runtime.block_on(async {
            let s = self.js.get_stream(stream).await.expect("the stream");
            s.purge().await.expect("purged");
        });
    }

    /// How many messages `stream` holds.
    pub fn count(&self, stream: &str) -> u64 {
        self.runtime.block_on(async {
            let mut s = self.js.get_stream(stream).await.expect("the stream");
            s.info().await.expect("its info").state.messages
        })
    }

    /// Every message of `stream`, in stream order, as text.
    pub fn read(&self, stream: &str) -> Vec<String> {
        self.runtime.block_on(async {
            let mut s = self.js.get_stream(stream).await.expect("the stream");
            let count = s.info().await.expect("its info").state.messages;
            let mut values = Vec::new();
            if count == 0 {
                return values;
            }
            let consumer = s
                .create_consumer(OrderedConfig::default())
                .await
                .expect("a consumer");
            let mut messages = consumer.messages().await.expect("messages");
            while (values.len() as u64) < count {
                let m = tokio::time::timeout(Duration::from_secs(60), messages.next())
                    .await
                    .expect("the stream is read to its end within a minute")
                    .expect("more messages")
                    .expect("a message");
                values.push(String::from_utf8_lossy(&m.payload).into_owned());
            }
            values
        })
    }
}

/// Starts `nats-server` (with JetStream, when asked) on loopback, on `port` or (`None`) one of
/// the OS's choosing, storing in `store`; the server and the port it says it listens on.
fn spawn(
    jetstream: bool,
    store: &std::path::Path,
    port: Option<u16>,
    login: Option<&(String, String)>,
) -> (ChildGuard, u16) {
    let port_arg = port.map_or_else(|| "-1".to_string(), |p| p.to_string());
    let mut child = Command::new(binary())
        .args(if jetstream { &["-js"][..] } else { &[] })
        .args(login.map_or_else(Vec::new, |(user, password)| {
            vec!["--user", user.as_str(), "--pass", password.as_str()]
        }))
        .args(["-a", "127.0.0.1", "-p", port_arg.as_str(), "-sd"])
        .arg(store)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "nats-server does not start ({e}): run scripts/test.sh, which installs it, \
                 or `apt-get install nats-server`"
            )
        });
    // The server says where it listens in its log (stderr); keep draining it so that the
    // server never blocks on a full pipe.
    let stderr = child.stderr.take().expect("stderr");
    let child = ChildGuard(child);
    let (tx, rx) = mpsc::channel::<u16>();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if let Some(rest) = line.split("Listening for client connections on ").nth(1) {
                if let Some(port) = rest.rsplit(':').next().and_then(|p| p.trim().parse().ok()) {
                    let _ = tx.send(port);
                }
            }
        }
    });
    let port = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("nats-server said which port it listens on within a minute");
    (child, port)
}

/// A JetStream client of the server at `url`, on `runtime`, logged in with `login`.
fn connect(
    runtime: &tokio::runtime::Runtime,
    url: &str,
    login: Option<&(String, String)>,
) -> jetstream::Context {
    let options = async_nats::ConnectOptions::new();
    let options = match login {
        Some((user, password)) => options.user_and_password(user.clone(), password.clone()),
        None => options,
    };
    let client = runtime
        .block_on(options.connect(url))
        .expect("the test connects to its server");
    let _entered = runtime.enter();
    jetstream::new(client)
}

/// A query copying stream `EVENTS` (rows `ts,value`) into stream `OUT` (subject `out`) on the
/// server `${SERVER}`, its source waiting 2 s for a stream gone or made again.
pub const EVENTS_TO_OUT: &str = r#"
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "value", type = "int"
}
operator name = "in", type = "nats" {
  param server = "${SERVER}"
  param stream = "EVENTS"
  param format = "csv"
  param connect.timeout = "2s"
  output name = "events", type = "Event"
}
operator name = "out", type = "nats" {
  input name = "events"
  param server = "${SERVER}"
  param stream = "OUT"
  param subject = "out"
  param format = "csv"
}
"#;

/// The rows `ts,value` of [`EVENTS_TO_OUT`] numbered `from..to`.
pub fn events(from: u64, to: u64) -> Vec<String> {
    (from..to)
        .map(|i| format!("{},{i}", 1_700_000_000_000 + i))
        .collect()
}

/// `anduin run q.flow` in `dir` against `server` (`--var SERVER=…`), with `extra` arguments,
/// stderr piped.
pub fn start_run(dir: &std::path::Path, server: &NatsServer, extra: &[&str]) -> ChildGuard {
    let var = format!("SERVER={}", server.url);
    ChildGuard(
        Command::new(env!("CARGO_BIN_EXE_anduin"))
            .args(["run", "q.flow", "--var", &var])
            .args(extra)
            .current_dir(dir)
            .env_remove("RUST_LOG")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starts"),
    )
}

/// The output of `run` once it has ended by itself (a run that goes on is a failure).
pub fn ended(mut run: ChildGuard) -> std::process::Output {
    wait_until("the run to end by itself", || {
        run.0.try_wait().expect("its state").is_some()
    });
    run.wait_output()
}

/// The newest checkpoint's epoch in `ckpt` (0: none yet).
pub fn newest_checkpoint(ckpt: &std::path::Path) -> u64 {
    std::fs::read_dir(ckpt).map_or(0, |d| {
        d.filter_map(Result::ok)
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().to_string();
                name.strip_prefix("chk-")?.parse::<u64>().ok()
            })
            .max()
            .unwrap_or(0)
    })
}
