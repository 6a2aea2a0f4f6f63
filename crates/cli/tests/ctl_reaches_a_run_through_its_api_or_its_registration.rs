//! `anduin ctl` against an API served in this test's process (a fake query): its tables,
//! `--json`, errors with the server's message and a non-zero exit, finding the run through
//! the runtime directory, and tokens.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;

use anduin_api::fake::FakeQuery;
use anduin_api::registration::{Registration, RegistrationGuard, RuntimeDir};
use anduin_api::{ApiConfig, ApiServer, QueryControl, Registry};
use common::stdout_ok;

/// `anduin ctl ARGS` with `runtime` as XDG_RUNTIME_DIR, no token in the environment unless
/// `token` is given, and a fixed user name.
fn ctl(runtime: &Path, token: Option<&str>, args: &[&str]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_anduin"));
    c.arg("ctl")
        .args(args)
        .env("XDG_RUNTIME_DIR", runtime)
        .env("USER", "tester")
        .env_remove("ANDUIN_API_TOKEN")
        .env_remove("RUST_LOG");
    if let Some(t) = token {
        c.env("ANDUIN_API_TOKEN", t);
    }
    c.output().expect("the anduin binary runs")
}

fn failed(out: &Output) -> String {
    assert_ne!(
        out.status.code(),
        Some(0),
        "stdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

struct Served {
    server: ApiServer,
    sensors: Arc<FakeQuery>,
}

fn serve(token: Option<&str>) -> Served {
    let registry = Registry::new();
    let sensors = Arc::new(FakeQuery::new("sensors"));
    registry
        .add(Arc::clone(&sensors) as Arc<dyn QueryControl>)
        .expect("a new name");
    let config = ApiConfig {
        token: token.map(str::to_string),
        ..ApiConfig::loopback()
    };
    let server = ApiServer::start(config, registry).expect("binds 127.0.0.1:0");
    Served { server, sensors }
}

fn register(
    runtime: &Path,
    name: &str,
    pid: u32,
    served: &Served,
    token: bool,
) -> RegistrationGuard {
    RuntimeDir::open(runtime.join("anduin"))
        .expect("the runtime directory")
        .register(&Registration {
            name: name.into(),
            pid,
            api: served.server.url(),
            token,
        })
        .expect("registered")
}

#[test]
fn ctl_with_an_address_prints_tables_json_and_the_epoch_of_a_change() {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let s = serve(None);
    let url = s.server.url();
    let api = ["--api", url.as_str()];
    let run = |args: &[&str]| ctl(tmp.path(), None, &[&api[..], args].concat());

    let out = stdout_ok(&run(&["queries"]));
    assert_eq!(
        out,
        format!("NAME     STATE    STARTED                  CHECKPOINTS  API\nsensors  running  2026-01-01 00:00:00 UTC  yes          {url}\n")
    );
    assert_eq!(
        stdout_ok(&run(&["params", "sensors", "low"])),
        "PARAM      TYPE        VALUE       DOC\ncondition  expression  value < 40  The rows that pass.\n"
    );
    assert_eq!(
        stdout_ok(&run(&["params", "sensors", "source"])),
        "operator \"source\" of \"sensors\" has no params that can change while it runs\n"
    );
    assert_eq!(
        stdout_ok(&run(&["history", "sensors"])),
        "no changes made to \"sensors\"\n"
    );
    assert_eq!(
        stdout_ok(&run(&["set", "sensors", "low", "condition", "value < 30"])),
        "applied at epoch 1: low.condition = value < 30 (was value < 40)\n"
    );
    let json: serde_json::Value = serde_json::from_str(&stdout_ok(&run(&[
        "set",
        "sensors",
        "low",
        "condition",
        "value < 20",
        "--json",
        "--from",
        "ops",
    ])))
    .expect("--json prints JSON");
    assert_eq!(
        (json["epoch"].as_u64(), json["from"].as_str()),
        (Some(2), Some("ops"))
    );
    assert_eq!(
        stdout_ok(&run(&["history", "sensors"])),
        "SEQ  TIME                     EPOCH  OPERATOR  PARAM      OLD         NEW         FROM\n\
         1    2026-01-01 00:00:01 UTC  1      low       condition  value < 40  value < 30  ctl:tester\n\
         2    2026-01-01 00:00:02 UTC  2      low       condition  value < 30  value < 20  ops\n"
    );
    assert_eq!(
        stdout_ok(&run(&["checkpoint", "sensors"])),
        "checkpoint 3 of \"sensors\" is complete\n"
    );
    let json: serde_json::Value =
        serde_json::from_str(&stdout_ok(&run(&["--json", "queries"]))).expect("JSON");
    assert_eq!(json[0]["name"], "sensors");
    assert_eq!(json[0]["api"], url.as_str());
    assert_eq!(
        stdout_ok(&run(&["stop", "sensors"])),
        "\"sensors\" is stopping (after a last checkpoint, when it takes them)\n"
    );
    assert_eq!(
        s.sensors.state(),
        anduin_runtime::control::QueryState::Stopping
    );
}

#[test]
fn ctl_prints_the_server_s_refusal_and_exits_non_zero() {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let s = serve(None);
    let url = s.server.url();
    let run = |args: &[&str]| {
        ctl(
            tmp.path(),
            None,
            &[&["--api", url.as_str()][..], args].concat(),
        )
    };
    assert_eq!(
        failed(&run(&["params", "nope", "low"])),
        "error: no query named \"nope\" (served: sensors)\n"
    );
    assert_eq!(
        failed(&run(&["set", "sensors", "low", "condition", "thirty"])),
        "error: <value>:1:1: expected a condition such as `value < 30`, found `thirty`\n"
    );
    assert_eq!(
        failed(&run(&["params", "sensors", "high"])),
        "error: query \"sensors\" has no operator \"high\" (its operators: source, low, out)\n"
    );
    // A value that starts with `-` is a value, not an option.
    assert_eq!(
        failed(&run(&["set", "sensors", "low", "condition", "-1"])),
        "error: <value>:1:1: expected a condition such as `value < 30`, found `-1`\n"
    );
    assert!(s.sensors.history().is_empty());
    drop(s);
    let e = failed(&run(&["queries"]));
    assert!(
        e.starts_with(&format!(
            "error: cannot reach the API at {url}/api/v1/queries"
        )),
        "{e}"
    );
}

#[test]
fn ctl_finds_a_local_run_by_its_registration_and_the_query_name_picks_among_several() {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let e = failed(&ctl(tmp.path(), None, &["params", "sensors", "low"]));
    assert!(
        e.contains("no anduin run is registered on this machine") && e.contains("--api ADDR"),
        "{e}"
    );

    let a = serve(None);
    let b = serve(None);
    let me = std::process::id();
    // This process's pid for a live run, and its parent's for another (both alive).
    let parent = std::os::unix::process::parent_id();
    let _sensors = register(tmp.path(), "sensors", me, &a, false);
    let out = stdout_ok(&ctl(tmp.path(), None, &["params", "sensors", "low"]));
    assert!(out.contains("value < 40"), "{out}");
    assert_eq!(
        stdout_ok(&ctl(
            tmp.path(),
            None,
            &["set", "sensors", "low", "condition", "value < 1"]
        )),
        "applied at epoch 1: low.condition = value < 1 (was value < 40)\n"
    );
    assert_eq!(a.sensors.history().len(), 1);
    let e = failed(&ctl(tmp.path(), None, &["history", "other"]));
    assert!(
        e.contains("no run of a query named \"other\"") && e.contains("running: \"sensors\""),
        "{e}"
    );

    let _twin = register(tmp.path(), "sensors", parent, &b, false);
    let e = failed(&ctl(tmp.path(), None, &["history", "sensors"]));
    assert!(
        e.contains("2 runs of a query named \"sensors\"") && e.contains(&b.server.url()),
        "{e}"
    );
    // `queries` lists every local run's queries.
    let out = stdout_ok(&ctl(tmp.path(), None, &["queries"]));
    assert_eq!(out.lines().count(), 3, "{out}");
    assert!(
        out.contains(&a.server.url()) && out.contains(&b.server.url()),
        "{out}"
    );
}

#[test]
fn ctl_sends_the_token_from_the_environment_or_a_file_and_says_when_one_is_missing() {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let s = serve(Some("tok-123"));
    let _reg = register(tmp.path(), "sensors", std::process::id(), &s, true);
    let e = failed(&ctl(tmp.path(), None, &["history", "sensors"]));
    assert!(
        e.contains("needs a token") && e.contains("ANDUIN_API_TOKEN"),
        "{e}"
    );
    assert_eq!(
        stdout_ok(&ctl(tmp.path(), Some("tok-123"), &["history", "sensors"])),
        "no changes made to \"sensors\"\n"
    );
    let file = tmp.path().join("token");
    std::fs::write(&file, "wrong\n").expect("written");
    let file = file.to_str().expect("a UTF-8 path");
    let e = failed(&ctl(
        tmp.path(),
        None,
        &["history", "sensors", "--api-token-file", file],
    ));
    assert!(e.contains("the bearer token is wrong"), "{e}");
    // Through --api, the server's own 401 says what to send.
    let url = s.server.url();
    let e = failed(&ctl(tmp.path(), None, &["--api", &url, "queries"]));
    assert!(e.contains("this API needs a bearer token"), "{e}");
}

#[test]
fn ctl_shows_control_characters_of_values_escaped_refuses_them_in_from_and_json_keeps_them() {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let s = serve(None);
    let url = s.server.url();
    let api = ["--api", url.as_str()];
    let run = |args: &[&str]| ctl(tmp.path(), None, &[&api[..], args].concat());
    let value = "value < 7 -- \u{1b}]0;pwned\u{7}";
    let from = "x\u{1b}[31my\r\nfake";
    let raw = |out: &str| out.chars().any(|c| c.is_control() && c != '\n');

    // A `from` with control characters is refused, and the refusal shows it escaped.
    let refused = run(&["set", "sensors", "low", "condition", value, "--from", from]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_ne!(refused.status.code(), Some(0), "{stderr}");
    assert!(!raw(&stderr), "{stderr:?}");
    assert!(stderr.contains("`from` names who asks"), "{stderr}");
    let set = stdout_ok(&run(&[
        "set",
        "sensors",
        "low",
        "condition",
        value,
        "--from",
        "alice",
    ]));
    assert!(!raw(&set), "{set:?}");
    assert!(set.contains(r"value < 7 -- \u{1b}]0;pwned\u{7}"), "{set}");
    // A NUL cannot be an argument; through the API it can.
    anduin_api::Client::new(&url, None)
        .expect("a URL")
        .set("sensors", "low", "condition", "value < 2 -- a\u{0}b", "api")
        .expect("applied");
    let history = stdout_ok(&run(&["history", "sensors"]));
    assert!(!raw(&history), "{history:?}");
    assert_eq!(history.lines().count(), 3, "{history}");
    assert!(history.contains(r"a\u{0}b"), "{history}");
    let params = stdout_ok(&run(&["params", "sensors", "low"]));
    assert!(!raw(&params), "{params:?}");

    let json: serde_json::Value =
        serde_json::from_str(&stdout_ok(&run(&["--json", "history", "sensors"]))).expect("JSON");
    assert_eq!(json[0]["new"], value);
    assert_eq!(json[0]["from"], "alice");
}
