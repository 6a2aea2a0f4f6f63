//! Redis servers for the tests: Debian's `redis-server` (scripts/test.sh installs it when
//! missing), on loopback, without persistence, killed by PID when the guard drops.

use std::net::TcpListener;
use std::process::{Command, Stdio};

use super::{wait_until, ChildGuard};

/// A `redis-server`.
pub struct RedisServer {
    /// Killed (by PID) when dropped, before its directory goes; `None` while stopped.
    child: Option<ChildGuard>,
    dir: tempfile::TempDir,
    /// Its port on 127.0.0.1 (kept across a restart).
    pub port: u16,
}

impl RedisServer {
    /// Starts a server on a port the OS had free (`--port 0` would turn TCP off), and waits
    /// until it answers. Panics, saying how to install it, when `redis-server` is missing:
    /// these tests are never skipped.
    pub fn start() -> RedisServer {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let mut server = RedisServer {
            child: None,
            dir: tempfile::tempdir().expect("a directory"),
            port,
        };
        server.restart();
        server
    }

    /// `127.0.0.1:PORT`.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Kills it with SIGKILL (what it held is gone: no persistence).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.0.kill();
            let _ = child.0.wait();
        }
    }

    /// Starts it (again) on its port, and waits until it answers.
    pub fn restart(&mut self) {
        self.kill();
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(self.dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "redis-server does not start ({e}): run scripts/test.sh, which installs it, \
                     or `apt-get install redis-server`"
                )
            });
        self.child = Some(ChildGuard(child));
        let url = format!("redis://{}/", self.address());
        wait_until("redis-server answering", || {
            redis::Client::open(url.as_str())
                .and_then(|c| c.get_connection())
                .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c))
                .is_ok()
        });
    }
}
