//! An S3-compatible server on loopback for the tests of checkpoints in an object store: the
//! `moto` server from PyPI (scripts/test.sh installs it when missing), started on a free port
//! and killed by PID when the guard drops.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use super::ChildGuard;

/// The bucket every test server has.
pub const BUCKET: &str = "anduin-test";

/// A moto server and its endpoint (`http://127.0.0.1:PORT`).
pub struct S3Server {
    /// Killed (by PID) when dropped.
    _child: ChildGuard,
    /// The endpoint.
    pub endpoint: String,
    port: u16,
}

/// The Python that runs moto: `$ANDUIN_TEST_PYTHON`, or `python3`.
fn python() -> String {
    std::env::var("ANDUIN_TEST_PYTHON").unwrap_or_else(|_| "python3".into())
}

impl S3Server {
    /// Starts a moto server on a port of its choosing (port 0), reads the port from its
    /// first lines, and makes [`BUCKET`]. Panics, saying how to install it, when moto is
    /// missing: these tests are never skipped.
    pub fn start() -> S3Server {
        let python = python();
        let has_moto = Command::new(&python)
            .args(["-c", "import moto.server"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        assert!(
            has_moto,
            "the S3-compatible test server (moto) is missing from `{python}`: run scripts/test.sh, \
             which installs it, or `{python} -m pip install 'moto[server]'`"
        );
        let mut child = Command::new(&python)
            .args(["-m", "moto.server", "-H", "127.0.0.1", "-p", "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("moto starts");
        // Werkzeug says where it listens, on stderr (or stdout): read both until the port
        // shows, and keep draining them so that the server never blocks on a full pipe.
        let (tx, rx) = mpsc::channel::<u16>();
        let drain = |stream: Box<dyn Read + Send>, tx: mpsc::Sender<u16>| {
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines() {
                    let Ok(line) = line else { break };
                    if let Some(rest) = line.split("http://127.0.0.1:").nth(1) {
                        let digits: String =
                            rest.chars().take_while(char::is_ascii_digit).collect();
                        if let Ok(port) = digits.parse() {
                            let _ = tx.send(port);
                        }
                    }
                }
            })
        };
        drain(Box::new(child.stderr.take().expect("stderr")), tx.clone());
        drain(Box::new(child.stdout.take().expect("stdout")), tx);
        let child = ChildGuard(child);
        let port = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("moto said which port it listens on within a minute");
        let server = S3Server {
            _child: child,
            endpoint: format!("http://127.0.0.1:{port}"),
            port,
        };
        let (status, body) = server.request("PUT", &format!("/{BUCKET}"), b"");
        assert_eq!(status, 200, "moto made the bucket: {body}");
        server
    }

    /// The environment a run reaches the server with.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ACCESS_KEY_ID", "testing".into()),
            ("AWS_SECRET_ACCESS_KEY", "testing".into()),
            ("AWS_REGION", "us-east-1".into()),
            ("AWS_ENDPOINT_URL", self.endpoint.clone()),
        ]
    }

    /// The same as settings, for a store opened in the test itself.
    pub fn settings(&self) -> anduin_checkpoint::S3Settings {
        anduin_checkpoint::S3Settings::from_vars(
            self.env().into_iter().map(|(k, v)| (k.to_string(), v)),
        )
    }

    /// Overwrites the object `key` of [`BUCKET`] with `body`, through boto3 (which moto
    /// brings), as another client of the store would.
    pub fn put_object(&self, key: &str, body: &[u8]) {
        let file = tempfile::NamedTempFile::new().expect("a temporary file");
        std::fs::write(file.path(), body).expect("writes");
        let script = "import sys, boto3\n\
            s3 = boto3.client('s3', endpoint_url=sys.argv[1], region_name='us-east-1', \
            aws_access_key_id='testing', aws_secret_access_key='testing')\n\
            s3.put_object(Bucket=sys.argv[2], Key=sys.argv[3], Body=open(sys.argv[4], 'rb').read())\n";
        let out = Command::new(python())
            .args(["-c", script, &self.endpoint, BUCKET, key])
            .arg(file.path())
            .output()
            .expect("python runs");
        assert!(
            out.status.success(),
            "PUT {key}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// One HTTP/1.1 request to the server: its status and body.
    fn request(&self, method: &str, path: &str, body: &[u8]) -> (u16, String) {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).expect("connects");
        s.set_read_timeout(Some(Duration::from_secs(60)))
            .expect("timeout");
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            self.port,
            body.len()
        );
        s.write_all(head.as_bytes()).expect("writes");
        s.write_all(body).expect("writes");
        let mut response = String::new();
        s.read_to_string(&mut response).expect("reads");
        let status = response
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        (status, response)
    }
}
