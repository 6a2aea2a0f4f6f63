//! Requests written byte for byte on a socket, as a hostile client sends them: the path
//! exactly as given (no client normalises `..` or decodes `%2e`), any headers, one request
//! per connection.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// What the server answered.
#[derive(Debug)]
pub struct Answer {
    /// The status code.
    pub status: u16,
    /// The headers, names in lower case.
    pub headers: Vec<(String, String)>,
    /// The body as text (lossy).
    pub body: String,
}

impl Answer {
    /// The value of header `name` (lower case), if any.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The `error` code of a JSON problem body (empty if it is none).
    pub fn error(&self) -> String {
        serde_json::from_str::<serde_json::Value>(&self.body)
            .ok()
            .and_then(|v| v["error"].as_str().map(str::to_string))
            .unwrap_or_default()
    }
}

/// Sends `method target` to `addr` with `headers` (a `Host` naming `addr` unless one is
/// given) and `body`, and reads the whole answer (the connection is closed after it).
pub fn send(
    addr: SocketAddr,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Answer {
    let mut request = format!("{method} {target} HTTP/1.1\r\n");
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        request.push_str(&format!("Host: {addr}\r\n"));
    }
    for (n, v) in headers {
        request.push_str(&format!("{n}: {v}\r\n"));
    }
    let body = body.unwrap_or("");
    request.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ));
    let mut s = TcpStream::connect(addr).expect("the server accepts");
    // A safety net only: the server answers and closes at once.
    s.set_read_timeout(Some(Duration::from_secs(60)))
        .expect("a timeout");
    s.write_all(request.as_bytes())
        .expect("the request is sent");
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).expect("the answer is read");
    parse(&raw).unwrap_or_else(|| panic!("not an HTTP answer: {:?}", String::from_utf8_lossy(&raw)))
}

fn parse(raw: &[u8]) -> Option<Answer> {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&raw[..end]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let rest = &raw[end + 4..];
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked {
        dechunk(rest)?
    } else {
        rest.to_vec()
    };
    Some(Answer {
        status,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

fn dechunk(mut rest: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let line = rest.windows(2).position(|w| w == b"\r\n")?;
        let size =
            usize::from_str_radix(std::str::from_utf8(&rest[..line]).ok()?.trim(), 16).ok()?;
        rest = &rest[line + 2..];
        if size == 0 {
            return Some(out);
        }
        out.extend_from_slice(rest.get(..size)?);
        rest = rest.get(size + 2..)?;
    }
}

/// A concrete path for a route of the table (`anduin_api::routes::served`), and a body it
/// takes.
pub fn concrete(path: &str) -> (String, Option<&'static str>) {
    let p = path
        .replace("{query}", "sensors")
        .replace("{operator}", "low")
        .replace("{param}", "condition")
        .replace("{asset}", "app.js");
    let body = path
        .ends_with("{param}")
        .then_some(r#"{"value": "value < 20"}"#);
    (p, body)
}
