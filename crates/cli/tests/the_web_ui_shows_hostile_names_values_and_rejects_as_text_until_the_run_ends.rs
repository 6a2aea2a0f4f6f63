//! The web UI against a hostile query, in headless Chromium: its name, its operators' names,
//! a filter's condition, a value set through the console, a refused value and the malformed
//! input records behind its dead letters all carry markup meant to run script
//! (`<img src=x onerror=…>`, `<svg onload=…>`). The page shows every one of them as text,
//! exactly as written, and no script of theirs runs. The run takes a token with `+`, `/` and
//! `=` in it, handed over in the address (`#token=`): taken as written, then removed from the
//! address. A browser left open as the run ends (the reader's throttle lifted from the
//! console, the input then runs out) says the server is gone, and hit no script error.
//! Screenshots in `$CARGO_TARGET_TMPDIR/web-ui-hostile/`.

use crate::common;
use crate::common::browser;

use std::fmt::Write as _;
use std::process::Command;

use browser::{quote, Browser};
use common::{start_with_api, wait_until};

const NAME: &str = "<img src=x onerror=window.__pwned='name'>";
const READER: &str = "<svg onload=window.__pwned='reader'>";
const FILTER: &str = "<b>keep</b><script>window.__pwned='filter'</script>";
const CONDITION: &str = "v < 1000 OR '<img src=x onerror=window.__pwned=1>' = 'x'";
const SET: &str = "v < 2000 OR '</code><img src=x onerror=window.__pwned=2>' = 'y'";
const BAD: &str = "v < '<img src=x onerror=window.__pwned=3>";
const RECORD: &str = "<img src=x onerror=window.__pwned='record'>";
const TOKEN: &str = "tok+en/with=chars~1";

fn query() -> String {
    format!(
        r#"
type name = "R" {{
  column name = "id", type = "int"
  column name = "v", type = "int"
}}
operator name = "{READER}", type = "reader" {{
  param path = "in.csv"
  param rate = 20
  output name = "rows", type = "R"
}}
operator name = "{FILTER}", type = "filter" {{
  input name = "rows"
  param condition = "{CONDITION}"
  output name = "kept", type = "R"
}}
operator name = "out", type = "writer" {{
  input name = "kept"
  param path = "out.csv"
}}
"#
    )
}

/// Whether any markup of the query ran or was inserted as markup.
const PWNED: &str = "window.__pwned ?? (document.querySelectorAll('img, script:not([src]), b').length \
     ? 'markup inserted: ' + [...document.querySelectorAll('img, script:not([src]), b')].map(e => e.outerHTML).join(' ') \
     : null)";

#[test]
fn the_web_ui_shows_hostile_names_values_and_rejects_as_text_until_the_run_ends() {
    let chromium = browser::chromium(); // fails, saying to run scripts/test.sh, when absent
    let artefacts = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("web-ui-hostile");
    let _ = std::fs::remove_dir_all(&artefacts);
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    std::fs::write(d.join("q.flow"), query()).expect("writes");
    let mut input = String::from("id,v\n");
    for i in 0..400 {
        if i % 4 == 3 {
            writeln!(input, "{i},{RECORD}").expect("formats");
        } else {
            writeln!(input, "{i},{}", i % 7).expect("formats");
        }
    }
    std::fs::write(d.join("in.csv"), &input).expect("writes");
    std::fs::write(d.join("token"), format!("{TOKEN}\n")).expect("writes");
    std::fs::create_dir(d.join("rt")).expect("a runtime dir");
    let mut c = Command::new(env!("CARGO_BIN_EXE_anduin"));
    c.args([
        "run",
        "q.flow",
        "-q",
        "--api-token-file",
        "token",
        "--name",
        NAME,
    ])
    .current_dir(d)
    .env("XDG_RUNTIME_DIR", d.join("rt"))
    .env_remove("ANDUIN_API_TOKEN")
    .env_remove("RUST_LOG");
    let (mut run, api, _stderr) = start_with_api(c);

    let mut page = Browser::launch(&artefacts, 1440, 1000);
    eprintln!(
        "browser: {}; screenshots in {}",
        chromium.display(),
        artefacts.display()
    );
    // The token as a user pastes it: `+` and `/` and `=` as they are.
    page.navigate(&format!("http://{api}/#token={TOKEN}"));

    // The token was taken as written, and left the address.
    page.wait_for(
        "the query in the list",
        "document.querySelector('#queries [data-query]') !== null",
    );
    assert_eq!(
        page.eval("[document.querySelector('#login').hidden, location.hash.includes('token'), sessionStorage.getItem('anduin-api-token')]"),
        serde_json::json!([true, false, TOKEN])
    );

    // The names, as text.
    assert_eq!(
        page.eval("document.querySelector('#queries [data-query]').dataset.query"),
        NAME
    );
    page.wait_for(
        "the summary",
        &format!(
            "document.querySelector('#summary h2')?.textContent === {}",
            quote(NAME)
        ),
    );
    let names = page.wait_for(
        "the operators drawn",
        "(() => { const n = [...document.querySelectorAll('#graph .node-name')].map(t => t.textContent).sort(); \
         return n.length === 3 ? n : null; })()",
    );
    let mut expected = vec![READER, FILTER, "out"];
    expected.sort_unstable();
    assert_eq!(names, serde_json::json!(expected));

    // The condition, as text, in the console.
    let field = format!("{FILTER}.condition");
    let input_sel = format!("input[data-param={}]", quote(&field));
    let current_sel = format!("[data-current={}]", quote(&field));
    assert_eq!(
        page.wait_for(
            "the condition in the console",
            &format!(
                "document.querySelector({})?.textContent",
                quote(&current_sel)
            )
        ),
        CONDITION
    );
    assert_eq!(
        page.eval(&format!(
            "document.querySelector({}).value",
            quote(&input_sel)
        )),
        CONDITION
    );

    // The malformed records' reasons, as text.
    let reasons = page.wait_for(
        "the rejects with their reasons",
        "(() => { const r = [...document.querySelectorAll('#recent-rejects li')].map(l => l.textContent); \
         return r.length ? r : null; })()",
    );
    eprintln!("rejects shown: {reasons}");
    assert!(
        reasons.to_string().contains("in.csv"),
        "the rejects say where they came from: {reasons}"
    );
    assert_eq!(page.eval(PWNED), serde_json::Value::Null);
    page.screenshot("1-hostile.png");

    // The events list keeps the last 200, and says how many earlier ones it let go.
    let kept = page.eval(
        "import('/ui/panels.js').then(m => { const ol = document.createElement('ol'); \
         for (let i = 0; i <= 205; i++) m.addEvent(ol, 'checkpoint_started', { epoch: i }); \
         return [ol.children.length, ol.firstChild.textContent.includes('epoch 205'), \
         ol.lastChild.textContent]; })",
    );
    assert_eq!(kept[0], 201, "200 events and the notice: {kept}");
    assert_eq!(kept[1], true, "the newest on top: {kept}");
    assert!(
        kept[2]
            .as_str()
            .is_some_and(|t| t.contains("6 earlier event(s) not shown")),
        "{kept}"
    );

    // A hostile value set through the console applies, and shows as text in the history.
    page.type_into(&input_sel, SET);
    page.click(&format!("button[data-apply={}]", quote(&field)));
    page.wait_for(
        "the change applied",
        &format!(
            "document.querySelector({})?.textContent === {}",
            quote(&current_sel),
            quote(SET)
        ),
    );
    page.wait_for(
        "the change in the history, as text",
        &format!(
            "[...document.querySelectorAll('#history code.new')].some(c => c.textContent === {})",
            quote(SET)
        ),
    );
    // A refused one: its message and the value under the caret, as text.
    page.type_into(&input_sel, BAD);
    page.click(&format!("button[data-apply={}]", quote(&field)));
    let caret = page.wait_for(
        "the refusal under the field",
        &format!(
            "document.querySelector({})?.textContent",
            quote(&format!("[data-message={}] pre.caret", quote(&field)))
        ),
    );
    assert!(
        caret
            .as_str()
            .is_some_and(|t| t.starts_with(BAD) && t.ends_with('^')),
        "{caret}"
    );
    assert_eq!(page.eval(PWNED), serde_json::Value::Null);
    page.screenshot("2-console.png");

    // The throttle lifted from the console: the input runs out and the run ends; the page,
    // left open, says the server is gone.
    let rate = format!("{READER}.rate");
    page.type_into(&format!("input[data-param={}]", quote(&rate)), "1000000");
    page.click(&format!("button[data-apply={}]", quote(&rate)));
    let mut status = None;
    wait_until("the run to end at the new rate", || {
        status = run.0.try_wait().expect("a status");
        status.is_some()
    });
    assert_eq!(status.and_then(|s| s.code()), Some(0));
    page.wait_for(
        "the page to say the server is gone",
        "document.querySelector('#connection')?.textContent.includes('does not answer')",
    );
    page.screenshot("3-ended.png");
    assert_eq!(page.eval(PWNED), serde_json::Value::Null);
    assert_eq!(
        page.eval("window.__anduinProblems.length"),
        0,
        "the page hit errors: {}",
        page.eval("window.__anduinProblems.join(' | ')")
    );
}
