//! The web UI in a real browser (Debian's headless Chromium, driven over the DevTools
//! protocol): `anduin run` serves it at `/`; the page draws every operator of the query's
//! graph, its figures move as rows flow, a new condition typed into the console changes
//! what the filter lets through (seen in the output), an invalid one is refused with the
//! server's error shown under the field, pointing at its place in the value, a checkpoint
//! taken from the page shows in its timeline, and the stop button ends the run. The test
//! asserts on the page's structure and text, never on pixels; its screenshots are kept in
//! `$CARGO_TARGET_TMPDIR/web-ui/` as artefacts.

use crate::common;
use crate::common::browser;

use std::process::Command;

use browser::{quote, Browser};

fn value_of(row: &str) -> i64 {
    row.rsplit(',')
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("a value at the end of {row:?}"))
}

#[test]
fn the_web_ui_draws_a_running_query_and_changes_its_filter_in_a_real_browser() {
    let chromium = browser::chromium(); // fails, saying to run scripts/test.sh, when absent
    let artefacts = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("web-ui");
    let _ = std::fs::remove_dir_all(&artefacts);
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    std::fs::write(
        d.join("q.flow"),
        common::generated_filtered(200, "value < 42"),
    )
    .expect("writes");
    std::fs::create_dir(d.join("rt")).expect("a runtime dir");
    let mut c = Command::new(env!("CARGO_BIN_EXE_anduin"));
    c.args(["run", "q.flow", "-q", "--checkpoint-dir", "ck"])
        .args(["--checkpoint-interval", "1s"])
        .current_dir(d)
        .env("XDG_RUNTIME_DIR", d.join("rt"))
        .env_remove("RUST_LOG");
    let (mut run, api, _stderr) = common::start_with_api(c);

    let mut page = Browser::launch(&artefacts, 1440, 1000);
    eprintln!(
        "browser: {}; screenshots in {}",
        chromium.display(),
        artefacts.display()
    );
    page.navigate(&format!("http://{api}/"));

    // The query is listed, and every operator of its graph is drawn, in its task.
    page.wait_for(
        "the query in the list",
        "document.querySelector('#queries [data-query=\"q\"]') !== null",
    );
    let drawn = page.wait_for(
        "the operators drawn",
        "(() => { const n = [...document.querySelectorAll('#graph g.node')]\
         .map(g => g.dataset.operator).sort(); return n.length === 3 ? n : null; })()",
    );
    assert_eq!(drawn, serde_json::json!(["gen", "low", "out"]));
    let edges = page.eval(
        "[...document.querySelectorAll('#graph g.edge')].map(e => e.dataset.from + '>' + e.dataset.to).sort()",
    );
    assert_eq!(edges, serde_json::json!(["gen>low", "low>out"]));
    // No rule reshaped it: the query as written is the graph, not drawn twice.
    assert_eq!(
        page.eval("document.querySelector('#written-details').hidden"),
        serde_json::json!(true)
    );
    assert!(
        page.eval("document.querySelectorAll('#graph g.task').length")
            .as_u64()
            .is_some_and(|n| n >= 1),
        "the tasks are drawn"
    );

    // A figure moves: the generator's rows out.
    let gen = "#graph g.node[data-operator=\"gen\"] [data-figure=\"rates\"]";
    let first = page.wait_for(
        "the generator's figures",
        &format!(
            "(() => {{ const t = document.querySelector({})?.textContent ?? ''; \
             return /\\d( [kMG])? rows out$/.test(t) ? t : null; }})()",
            quote(gen)
        ),
    );
    page.wait_for(
        "the generator's figures to change",
        &format!(
            "document.querySelector({}).textContent !== {}",
            quote(gen),
            first
        ),
    );
    page.wait_for(
        "a rate of rows on the edge out of the generator",
        "parseFloat(document.querySelector('#graph g.edge[data-from=\"gen\"] [data-figure=\"rate\"]').textContent) > 0",
    );
    page.screenshot("1-graph.png");

    // The console shows the filter's condition; a new one applies, and the output follows.
    let input = "input[data-param=\"low.condition\"]";
    let current = "[data-current=\"low.condition\"]";
    page.apply_in_console("low.condition", "value < 42", "value >= 42");
    // The change is an event too, as it applies.
    let changed = page.wait_for(
        "the change among the events",
        "document.querySelector('#events li[data-kind=\"param_changed\"]')?.textContent",
    );
    assert!(
        changed
            .as_str()
            .is_some_and(|t| t.contains("param changed") && t.contains("value >= 42")),
        "{changed}"
    );
    assert_eq!(page.text(current), "value >= 42");
    page.wait_for(
        "the change in the history",
        "[...document.querySelectorAll('#history tbody tr td code')].some(c => c.textContent === 'value >= 42')",
    );
    common::wait_until("rows of the new condition in the output", || {
        let out = d.join("out.csv");
        out.exists()
            && common::rows_in_order(&out)
                .iter()
                .any(|r| value_of(r) >= 42)
    });
    page.screenshot("2-changed.png");

    // An invalid condition is refused: the server's message under the field, a caret at the
    // place it names, and nothing changed.
    page.type_into(input, "value <");
    page.click("button[data-apply=\"low.condition\"]");
    let error = page.wait_for(
        "the refusal under the field",
        "document.querySelector('[data-message=\"low.condition\"] [role=alert]')?.textContent",
    );
    let error = error.as_str().expect("text");
    assert!(error.contains("low.condition:1:"), "{error}");
    let caret = page
        .eval("document.querySelector('[data-message=\"low.condition\"] pre.caret')?.textContent");
    assert!(
        caret
            .as_str()
            .is_some_and(|t| t.starts_with("value <") && t.ends_with('^')),
        "{caret}"
    );
    assert_eq!(
        page.eval(&format!(
            "document.querySelector({}).getAttribute('aria-invalid')",
            quote(input)
        )),
        "true"
    );
    assert_eq!(
        page.text(current),
        "value >= 42",
        "a refused change changes nothing"
    );
    page.screenshot("3-refused.png");

    // A checkpoint taken from the page shows in its timeline; the events came live.
    page.click("#checkpoint-now");
    let taken = page.wait_for(
        "the checkpoint taken",
        "(() => { const t = document.querySelector('#action-result')?.textContent ?? ''; \
         return /checkpoint \\d+ is complete/.test(t) ? t : null; })()",
    );
    let epoch: u64 = taken
        .as_str()
        .and_then(|t| t.split_whitespace().nth(1))
        .and_then(|e| e.parse().ok())
        .unwrap_or_else(|| panic!("an epoch in {taken}"));
    page.wait_for(
        "the checkpoint in the timeline",
        &format!("document.querySelector('#checkpoint-timeline g.checkpoint.complete[data-epoch=\"{epoch}\"]') !== null"),
    );
    page.wait_for(
        "a checkpoint event",
        "document.querySelector('#events li[data-kind=\"checkpoint_completed\"]') !== null",
    );
    assert_eq!(
        page.eval("window.__anduinProblems.length"),
        0,
        "the page hit errors: {}",
        page.eval("window.__anduinProblems.join(' | ')")
    );
    page.screenshot("4-page.png");

    // Stop: two clicks (one is not enough), then the run ends by itself, successfully.
    page.click("#stop");
    assert!(run.0.try_wait().expect("a status").is_none());
    page.click("#stop");
    page.wait_for(
        "the stop accepted",
        "document.querySelector('#action-result')?.textContent.startsWith('stopping')",
    );
    let mut status = None;
    common::wait_until("the run to end after the stop", || {
        status = run.0.try_wait().expect("a status");
        status.is_some()
    });
    assert_eq!(status.and_then(|s| s.code()), Some(0));
}
