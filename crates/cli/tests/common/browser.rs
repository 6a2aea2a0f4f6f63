//! A headless Chromium (Debian's package) driven over the Chrome DevTools Protocol, for the
//! tests of the web UI: open a page, evaluate JavaScript, click, type, take screenshots.
//!
//! The protocol is JSON over a WebSocket (tungstenite); the few methods used here are sent
//! by hand rather than through a crate that generates the whole protocol at build time. The
//! browser runs in a process group of its own, killed (by its id) when [`Browser`] drops.

#![allow(dead_code)]

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tungstenite::{Message, WebSocket};

/// How long a test waits for a page to show something before it fails.
const PATIENCE: Duration = Duration::from_secs(60);

/// Where Chromium is: `ANDUIN_CHROMIUM`, else `chromium` (Debian's package) or
/// `chromium-browser` on the `PATH`. Fails the test, saying what to do, when there is none:
/// a browser test is never skipped silently.
pub fn chromium() -> PathBuf {
    if let Some(p) = std::env::var_os("ANDUIN_CHROMIUM") {
        let p = PathBuf::from(p);
        assert!(
            p.is_file(),
            "ANDUIN_CHROMIUM names {}, which is not a file: point it at a Chromium binary, or \
             unset it and run scripts/test.sh, which installs Debian's chromium package",
            p.display()
        );
        return p;
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser"] {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return candidate;
            }
        }
    }
    panic!(
        "headless Chromium is not installed, and this test drives the web UI in it: run \
         scripts/test.sh, which installs Debian's chromium package when it is missing (or \
         `apt-get install chromium`, or set ANDUIN_CHROMIUM to a Chromium binary)"
    );
}

/// A headless Chromium with one page open.
pub struct Browser {
    child: Child,
    ws: WebSocket<TcpStream>,
    session: String,
    next_id: u64,
    artefacts: PathBuf,
    /// Events of the `Fetch` domain that arrived while a call waited for its answer.
    fetch_events: std::collections::VecDeque<Value>,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts Chromium (its log in `artefacts/chromium.log`, where screenshots go too) with
    /// a blank page of `width` × `height` CSS pixels.
    pub fn launch(artefacts: &Path, width: u32, height: u32) -> Self {
        use std::os::unix::process::CommandExt;
        std::fs::create_dir_all(artefacts).expect("the artefacts directory");
        let profile = tempfile::tempdir().expect("a profile directory");
        let log = std::fs::File::create(artefacts.join("chromium.log")).expect("a log file");
        let child = Command::new(chromium())
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-default-apps",
                "--disable-sync",
                "--mute-audio",
                "--password-store=basic",
                "--remote-debugging-port=0",
                &format!("--window-size={width},{height}"),
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .process_group(0)
            .spawn()
            .expect("Chromium starts");
        let mut browser = Self::connect(child, profile, artefacts);
        let target = browser.call("Target.createTarget", json!({"url": "about:blank"}), false)
            ["targetId"]
            .as_str()
            .expect("a target id")
            .to_string();
        let session = browser.call(
            "Target.attachToTarget",
            json!({"targetId": target, "flatten": true}),
            false,
        )["sessionId"]
            .as_str()
            .expect("a session id")
            .to_string();
        browser.session = session;
        browser.send(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}),
        );
        browser
    }

    /// Waits for the browser's DevTools address (the `DevToolsActivePort` file of its
    /// profile) and connects to it.
    fn connect(mut child: Child, profile: tempfile::TempDir, artefacts: &Path) -> Self {
        let port_file = profile.path().join("DevToolsActivePort");
        let deadline = Instant::now() + PATIENCE;
        let (port, path) = loop {
            if let Ok(text) = std::fs::read_to_string(&port_file) {
                let mut lines = text.lines();
                if let (Some(port), Some(path)) = (lines.next(), lines.next()) {
                    break (port.trim().to_string(), path.trim().to_string());
                }
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!(
                    "Chromium ended ({status}) before it listened for DevTools; its log: {}",
                    std::fs::read_to_string(artefacts.join("chromium.log")).unwrap_or_default()
                );
            }
            assert!(
                Instant::now() < deadline,
                "Chromium did not listen for DevTools within {PATIENCE:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        let stream = TcpStream::connect(format!("127.0.0.1:{port}")).expect("DevTools accepts");
        stream
            .set_read_timeout(Some(PATIENCE))
            .expect("a read timeout");
        let (ws, _) = tungstenite::client(format!("ws://127.0.0.1:{port}{path}"), stream)
            .expect("the DevTools WebSocket handshake");
        Self {
            child,
            ws,
            session: String::new(),
            next_id: 0,
            artefacts: artefacts.to_path_buf(),
            fetch_events: std::collections::VecDeque::new(),
            _profile: profile,
        }
    }

    /// Sends `method` with `params` (to the page's session, or to the browser) and returns
    /// its result; events that arrive meanwhile are passed over.
    fn call(&mut self, method: &str, params: Value, to_page: bool) -> Value {
        self.try_call(method, params, to_page)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    fn try_call(&mut self, method: &str, params: Value, to_page: bool) -> Result<Value, String> {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({"id": id, "method": method, "params": params});
        if to_page {
            message["sessionId"] = Value::String(self.session.clone());
        }
        self.ws
            .send(Message::text(message.to_string()))
            .map_err(|e| format!("sending {method} to Chromium: {e}"))?;
        loop {
            let text = match self.ws.read() {
                Ok(Message::Text(t)) => t,
                Ok(_) => continue,
                Err(e) => return Err(format!("no answer from Chromium to {method}: {e}")),
            };
            let v: Value = serde_json::from_str(text.as_str())
                .map_err(|e| format!("DevTools sent something that is not JSON: {e}"))?;
            if v["id"].as_u64() != Some(id) {
                if v["method"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("Fetch."))
                {
                    self.fetch_events.push_back(v);
                }
                continue;
            }
            if let Some(error) = v.get("error") {
                return Err(format!("Chromium refused {method}: {error}"));
            }
            return Ok(v["result"].clone());
        }
    }

    /// Sends `method` to the page.
    pub fn send(&mut self, method: &str, params: Value) -> Value {
        self.call(method, params, true)
    }

    /// The params of the next event `method` of the `Fetch` domain (one that arrived during
    /// an earlier call counts): e.g. `Fetch.requestPaused` once `Fetch.enable` holds requests.
    pub fn next_fetch_event(&mut self, method: &str) -> Value {
        if let Some(i) = self.fetch_events.iter().position(|e| e["method"] == method) {
            let e = self
                .fetch_events
                .remove(i)
                .expect("the position is in the queue");
            return e["params"].clone();
        }
        loop {
            let text = match self.ws.read() {
                Ok(Message::Text(t)) => t,
                Ok(_) => continue,
                Err(e) => panic!("no {method} from Chromium: {e}"),
            };
            let v: Value = serde_json::from_str(text.as_str()).expect("DevTools sends JSON");
            if v["method"] == method {
                return v["params"].clone();
            }
        }
    }

    /// Opens `url` in the page.
    pub fn navigate(&mut self, url: &str) {
        self.send("Page.navigate", json!({"url": url}));
    }

    /// The value of the JavaScript expression `js` (awaited if it is a promise); fails the
    /// test if it throws.
    pub fn eval(&mut self, js: &str) -> Value {
        let r = self.send(
            "Runtime.evaluate",
            json!({"expression": js, "returnByValue": true, "awaitPromise": true}),
        );
        if let Some(e) = r.get("exceptionDetails") {
            panic!("the page threw evaluating {js}: {e}");
        }
        r["result"]["value"].clone()
    }

    /// Evaluates `js` until it gives something truthy (not `null`, `false`, `0` or `""`),
    /// and returns that; fails after a minute naming `what` and the last value.
    pub fn wait_for(&mut self, what: &str, js: &str) -> Value {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let v = self.eval(js);
            let truthy = match &v {
                Value::Null => false,
                Value::Bool(b) => *b,
                Value::Number(n) => n.as_f64() != Some(0.0),
                Value::String(s) => !s.is_empty(),
                _ => true,
            };
            if truthy {
                return v;
            }
            if Instant::now() >= deadline {
                self.screenshot("timed-out.png");
                panic!(
                    "gave up waiting for {what} (last value {v}; screenshot in {})",
                    self.artefacts.display()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The text of the first element `selector` matches (`null` if none does).
    pub fn text(&mut self, selector: &str) -> Value {
        self.eval(&format!(
            "document.querySelector({})?.textContent ?? null",
            quote(selector)
        ))
    }

    /// Clicks the middle of the element `selector` matches, as a mouse does.
    pub fn click(&mut self, selector: &str) {
        let at = self.wait_for(
            &format!("{selector} to be visible"),
            &format!(
                "(() => {{ const e = document.querySelector({}); if (!e) return null; \
                 e.scrollIntoView({{block: 'center'}}); const r = e.getBoundingClientRect(); \
                 return r.width > 0 ? {{x: r.x + r.width / 2, y: r.y + r.height / 2}} : null; }})()",
                quote(selector)
            ),
        );
        let (x, y) = (at["x"].clone(), at["y"].clone());
        for kind in ["mouseMoved", "mousePressed", "mouseReleased"] {
            self.send(
                "Input.dispatchMouseEvent",
                json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}),
            );
        }
    }

    /// Replaces the text of the field `selector` matches with `text`, as typing does.
    pub fn type_into(&mut self, selector: &str, text: &str) {
        self.wait_for(
            &format!("{selector} to take the focus"),
            &format!(
                "(() => {{ const e = document.querySelector({}); if (!e) return false; \
                 e.focus(); e.select(); return document.activeElement === e; }})()",
                quote(selector)
            ),
        );
        self.send("Input.insertText", json!({"text": text}));
    }

    /// Saves a screenshot of the whole page as `name` in the artefacts directory.
    /// Changes param `param` (`operator.param`) through the page's console from `from` (what
    /// it shows first) to `to`, and returns the message that says the change applied.
    pub fn apply_in_console(&mut self, param: &str, from: &str, to: &str) -> Value {
        let current = format!("[data-current=\"{param}\"]");
        assert_eq!(
            self.wait_for(
                "the console",
                &format!("document.querySelector({})?.textContent", quote(&current))
            ),
            from
        );
        self.type_into(&format!("input[data-param=\"{param}\"]"), to);
        self.click(&format!("button[data-apply=\"{param}\"]"));
        let message = format!("[data-message=\"{param}\"] .ok");
        let applied = self.wait_for(
            "the change applied",
            &format!("document.querySelector({})?.textContent", quote(&message)),
        );
        assert!(
            applied
                .as_str()
                .is_some_and(|t| t.contains("applied at epoch")),
            "{applied}"
        );
        applied
    }

    pub fn screenshot(&mut self, name: &str) -> PathBuf {
        self.try_screenshot(name).unwrap_or_else(|e| panic!("{e}"))
    }

    fn try_screenshot(&mut self, name: &str) -> Result<PathBuf, String> {
        use base64::Engine;
        let metrics = self.try_call("Page.getLayoutMetrics", json!({}), true)?;
        let size = &metrics["cssContentSize"];
        let shot = self.try_call(
            "Page.captureScreenshot",
            json!({
                "format": "png",
                "captureBeyondViewport": true,
                "clip": {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1},
            }),
            true,
        )?;
        let png = base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().unwrap_or_default())
            .map_err(|e| format!("the screenshot is not base64: {e}"))?;
        let path = self.artefacts.join(name);
        std::fs::write(&path, png).map_err(|e| format!("writing {}: {e}", path.display()))?;
        Ok(path)
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if std::thread::panicking() {
            // What the page showed when the test failed; best effort, never a second panic.
            let _ = self.try_screenshot("failed.png");
        }
        // The browser and every helper process it started, by the group's id (its own).
        if let Ok(pid) = libc::pid_t::try_from(self.child.id()) {
            // SAFETY: kill has no memory preconditions; the group is the browser's own.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `s` as a JavaScript string literal.
pub fn quote(s: &str) -> String {
    serde_json::to_string(s).expect("a string serialises")
}
