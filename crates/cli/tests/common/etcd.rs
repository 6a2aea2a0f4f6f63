//! An etcd for the tests: Debian's `etcd` (package `etcd-server`; scripts/test.sh installs it
//! when missing), one member on loopback, its data in a temporary directory, killed by PID
//! when the guard drops.

use std::net::TcpListener;
use std::process::{Command, Stdio};

use super::{wait_until, ChildGuard};

/// The server binary: `$ANDUIN_ETCD`, or `etcd` on the PATH.
fn binary() -> String {
    std::env::var("ANDUIN_ETCD").unwrap_or_else(|_| "etcd".into())
}

/// A one-member etcd.
pub struct EtcdServer {
    /// Killed (by PID) when dropped, before its data goes (fields drop in order).
    child: ChildGuard,
    data: tempfile::TempDir,
    /// `127.0.0.1:PORT`, its client port (with the JSON gateway).
    pub endpoint: String,
}

impl EtcdServer {
    /// Starts a member whose client port is one the OS had free (etcd's gateway cannot
    /// serve on a port it is told as 0: it dials its own advertised address), and waits
    /// until its gateway answers. Panics, saying how to install it, when `etcd` is missing:
    /// these tests are never skipped.
    pub fn start() -> EtcdServer {
        let data = tempfile::tempdir().expect("a data directory");
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let endpoint = format!("127.0.0.1:{port}");
        let client = format!("http://{endpoint}");
        let log = std::fs::File::create(data.path().join("etcd.log")).expect("a log");
        let child = Command::new(binary())
            .arg("--data-dir")
            .arg(data.path().join("member"))
            .args(["--listen-client-urls", &client])
            .args(["--advertise-client-urls", &client])
            .args(["--listen-peer-urls", "http://127.0.0.1:0"])
            .args(["--initial-advertise-peer-urls", "http://127.0.0.1:0"])
            .args(["--initial-cluster", "default=http://127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "etcd does not start ({e}): run scripts/test.sh, which installs it, or \
                     `apt-get install etcd-server`"
                )
            });
        let mut server = EtcdServer {
            child: ChildGuard(child),
            data,
            endpoint,
        };
        wait_until("etcd's gateway answering", || {
            assert!(
                matches!(server.child.0.try_wait(), Ok(None)),
                "etcd ended at its start: {}",
                server.log()
            );
            ureq::post(&format!("{client}/v3/kv/range"))
                .send_json(serde_json::json!({ "key": "eA==" }))
                .is_ok()
        });
        server
    }

    /// What etcd wrote on stderr.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.data.path().join("etcd.log")).unwrap_or_default()
    }

    /// Kills it with SIGKILL (its data stays until the guard drops).
    pub fn kill(&mut self) {
        let _ = self.child.0.kill();
        let _ = self.child.0.wait();
    }
}
