//! The web UI served by a cluster's coordinator (on its API's address, as `anduin run`
//! serves it), in headless Chromium: it lists the coordinator's two queries; the chosen one's
//! graph is drawn with every instance on the worker the coordinator placed it on (two
//! workers here), and the instances table names them; the live figures and dead letters the
//! executors send to the coordinator are shown and exported; the checkpoints the coordinator
//! completes fill the timeline and the events; a change through the console applies.
//! Switching between the queries quickly never mixes their pages; a query cancelled while the
//! page is open is shown as cancelled, its buttons disabled; one stopped from the page (a last
//! checkpoint, then the end) is shown as finished.
//! Screenshots in `$CARGO_TARGET_TMPDIR/web-ui-coordinator/`.

use crate::common;
use crate::common::browser;

use std::collections::BTreeSet;
use std::process::Command;

use browser::{quote, Browser};
use common::cluster::LocalCluster;
use common::wait_until;
use serde_json::json;

/// A generated stream, filtered, written: `gen`, `low`, `out`.
const ALPHA: &str = r#"
type name = "R" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param rate = 200
  output name = "raw", type = "R"
}
operator name = "low", type = "filter" {
  input name = "raw"
  param condition = "value < 42"
  output name = "kept", type = "R"
}
operator name = "out", type = "writer" {
  input name = "kept"
  param path = "alpha_out"
}
"#;

/// The same shape under other names: `src`, `keep`, `sink`.
const BETA: &str = r#"
type name = "R" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "src", type = "generator" {
  param profile = "events"
  param rate = 200
  output name = "raw", type = "R"
}
operator name = "keep", type = "filter" {
  input name = "raw"
  param condition = "value > 10"
  output name = "kept", type = "R"
}
operator name = "sink", type = "writer" {
  input name = "kept"
  param path = "beta_out"
}
"#;

/// The operators drawn, sorted.
const DRAWN: &str =
    "[...document.querySelectorAll('#graph g.node')].map(g => g.dataset.operator).sort()";

#[test]
fn the_web_ui_of_a_coordinator_lists_its_queries_and_shows_where_their_instances_run() {
    let chromium = browser::chromium(); // fails, saying to run scripts/test.sh, when absent
    let artefacts = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("web-ui-coordinator");
    let _ = std::fs::remove_dir_all(&artefacts);
    let work = tempfile::tempdir().expect("tempdir");
    let d = work.path();
    std::fs::write(d.join("alpha.flow"), ALPHA).expect("query");
    std::fs::write(d.join("beta.flow"), BETA).expect("query");
    let cluster = LocalCluster::start(2, 8);
    let api = std::fs::read_to_string(cluster.dir.path().join("coordinator/api.url"))
        .expect("the coordinator wrote its API's URL");
    // One task per operator: three tasks, placed over the two workers.
    let flags = ["--no-chaining", "--checkpoint-interval", "300ms"];
    let _alpha = cluster.submit(d, "alpha.flow", &flags);
    let _beta = cluster.submit(d, "beta.flow", &flags);
    for q in ["alpha", "beta"] {
        wait_until(&format!("{q} runs with a checkpoint"), || {
            cluster.status(q)["last_checkpoint"]
                .as_u64()
                .is_some_and(|e| e >= 1)
        });
    }

    // What the page reads, through the API: each instance on the worker it was placed on,
    // the checkpoints the coordinator completed, and why the instances' figures are absent.
    let client = anduin_api::Client::new(api.trim(), None).expect("an address");
    let topology = client.topology("alpha").expect("the topology");
    let placed: BTreeSet<u64> = topology
        .tasks
        .iter()
        .flat_map(|t| t.instances.iter().map(|i| u64::from(i.worker)))
        .collect();
    let workers: BTreeSet<u64> = cluster.all()["workers"]
        .as_array()
        .expect("workers")
        .iter()
        .filter_map(|w| w["id"].as_u64())
        .collect();
    assert_eq!(placed.len(), 2, "on both workers: {topology:?}");
    assert!(placed.is_subset(&workers), "{placed:?} among {workers:?}");
    wait_until("the instances' figures, gathered from the workers", || {
        client
            .metrics("alpha")
            .is_ok_and(|m| m.instances.len() == 3 && m.instances.iter().any(|i| i.rows_out > 0))
    });
    let metrics = client.metrics("alpha").expect("the metrics");
    assert_eq!(metrics.not_gathered, None, "{metrics:?}");
    let operators: BTreeSet<&str> = metrics
        .instances
        .iter()
        .map(|i| i.operator.as_str())
        .collect();
    assert_eq!(operators, BTreeSet::from(["gen", "low", "out"]));
    assert!(
        metrics.checkpoints.is_some_and(|c| c.completed >= 1),
        "the coordinator's checkpoints are counted"
    );
    assert!(
        !client.checkpoints("alpha").expect("listed").is_empty(),
        "the coordinator's checkpoints are listed"
    );
    let scrape = client.prometheus().expect("the scrape");
    assert!(
        scrape.contains("dead_letters"),
        "the dead letters gathered from the workers are exported: {scrape}"
    );

    let mut page = Browser::launch(&artefacts, 1440, 1100);
    eprintln!(
        "browser: {}; coordinator's UI at {api}; screenshots in {}",
        chromium.display(),
        artefacts.display()
    );
    page.navigate(&format!("{}/#q=alpha", api.trim()));

    // Both queries are listed; alpha's graph is drawn.
    page.wait_for(
        "both queries in the list",
        "document.querySelector('#queries [data-query=\"alpha\"]') !== null \
         && document.querySelector('#queries [data-query=\"beta\"]') !== null",
    );
    let drawn = page.wait_for(
        "alpha's operators drawn",
        &format!("(() => {{ const n = {DRAWN}; return n.length === 3 ? n : null; }})()"),
    );
    assert_eq!(drawn, json!(["gen", "low", "out"]));

    // Where the instances run: two workers, named on the chips and in the table.
    let workers = page.wait_for(
        "the two workers in the summary",
        "(() => { const t = document.querySelector('#workers')?.textContent ?? ''; \
         return /^w\\d+, w\\d+$/.test(t) ? t : null; })()",
    );
    let chips = page.eval(
        "[...new Set([...document.querySelectorAll('#graph g.chip')].map(c => c.dataset.worker))].sort()",
    );
    assert_eq!(
        chips.as_array().map(Vec::len),
        Some(2),
        "the instances are drawn on two workers ({workers}): {chips}"
    );
    let chip_text = page.eval("document.querySelector('#graph g.chip text')?.textContent");
    assert!(
        chip_text.as_str().is_some_and(|t| t.contains(" w")),
        "a chip names its worker: {chip_text}"
    );
    let rows = page.wait_for(
        "every instance in the table, with its worker",
        "(() => { const r = [...document.querySelectorAll('#instances tbody tr')]; \
         return r.length === 3 && r.every(tr => /^w\\d+$/.test(tr.children[3].textContent)) \
         ? r.length : null; })()",
    );
    assert_eq!(rows, 3, "one instance of each operator");

    // The live figures the executors send: shown, with no notice that they are missing.
    page.wait_for(
        "the dead-letter count gathered from the workers",
        "(() => { const e = document.querySelector('#not-gathered'); \
         return (!e || e.hidden) \
           && document.querySelector('[data-figure=\"dead-letters\"]') !== null \
           && document.querySelector('#rejects-not-gathered') === null ? true : null; })()",
    );

    // The checkpoints the coordinator completes: in the timeline and the events.
    page.wait_for(
        "a complete checkpoint in the timeline",
        "document.querySelector('#checkpoint-timeline g.checkpoint.complete') !== null",
    );
    page.wait_for(
        "a checkpoint event",
        "document.querySelector('#events li[data-kind=\"checkpoint_completed\"]') !== null",
    );
    page.screenshot("1-alpha.png");

    // The console: a change applies through the coordinator.
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
    page.screenshot("2-console.png");

    // A late answer for a query the page has left: beta's topology is held back (DevTools'
    // Fetch domain) while the page moves on to alpha; released, it must neither draw beta
    // over alpha nor leave beta's console and event stream in alpha's page.
    page.send(
        "Fetch.enable",
        json!({"patterns": [{"urlPattern": "*/api/v1/queries/beta/topology*"}]}),
    );
    page.eval("location.hash = '#q=beta'; true");
    let held = page.next_fetch_event("Fetch.requestPaused");
    page.eval("location.hash = '#q=alpha'; true");
    // Its keys in alphabetical order, as serde_json writes them: compared as text.
    let alpha_page = format!(
        "(() => {{ const p = {{fieldsets: [...document.querySelectorAll('#console fieldset')].map(f => f.dataset.operator), \
          nodes: {DRAWN}, title: document.querySelector('#summary h2')?.textContent}}; \
          return p; }})()"
    );
    let alpha = json!({"title": "alpha", "fieldsets": ["gen", "low", "out"], "nodes": ["gen", "low", "out"]});
    page.wait_for(
        "alpha shown again",
        &format!(
            "JSON.stringify({alpha_page}) === {}",
            quote(&alpha.to_string())
        ),
    );
    page.send(
        "Fetch.continueRequest",
        json!({"requestId": held["requestId"]}),
    );
    page.send("Fetch.disable", json!({}));
    // Two more rounds of figures: the late answer has long been handled.
    for round in 0..2 {
        let before = page.text("#connection");
        page.wait_for(
            &format!("round {round} of figures after the late answer"),
            &format!(
                "document.querySelector('#connection').textContent !== {}",
                before
            ),
        );
    }
    assert_eq!(
        page.eval(&alpha_page),
        alpha,
        "a late answer drew another query"
    );

    // Quick switches: the page ends on the last one chosen, with nothing of the others.
    page.eval(
        "location.hash = '#q=beta'; location.hash = '#q=alpha'; location.hash = '#q=beta'; true",
    );
    let drawn = page.wait_for(
        "beta's operators drawn",
        &format!(
            "(() => {{ const n = {DRAWN}; return n.length === 3 && n.includes('keep') ? n : null; }})()"
        ),
    );
    assert_eq!(drawn, json!(["keep", "sink", "src"]));
    page.wait_for(
        "beta's console",
        "document.querySelector('[data-current=\"keep.condition\"]')?.textContent === 'value > 10'",
    );
    page.wait_for(
        "a checkpoint event of beta",
        "document.querySelector('#events li[data-kind=\"checkpoint_completed\"]') !== null",
    );
    let mixed = page.eval(&format!(
        "({{title: document.querySelector('#summary h2').textContent, \
          fieldsets: [...document.querySelectorAll('#console fieldset')].map(f => f.dataset.operator), \
          nodes: {DRAWN}}})"
    ));
    assert_eq!(
        mixed,
        json!({"title": "beta", "fieldsets": ["src", "keep", "sink"], "nodes": ["keep", "sink", "src"]})
    );

    // beta cancelled while the page shows it: shown as ended, nothing left to press.
    let cancel = Command::new(env!("CARGO_BIN_EXE_anduin"))
        .args(["cancel", "beta", "--coordinator", &cluster.addr])
        .output()
        .expect("cancel runs");
    assert!(
        cancel.status.success(),
        "{}",
        String::from_utf8_lossy(&cancel.stderr)
    );
    let ended = page.wait_for(
        "beta shown as ended",
        "document.querySelector('#query-ended')?.textContent",
    );
    assert!(
        ended
            .as_str()
            .is_some_and(|t| t.starts_with("The query has been cancelled")),
        "{ended}"
    );
    assert_eq!(
        page.eval(&format!(
            "[{}, {}].map(s => document.querySelector(s).disabled)",
            quote("#stop"),
            quote("button[data-apply=\"keep.condition\"]")
        )),
        json!([true, true])
    );
    page.screenshot("3-beta-ended.png");

    // alpha stopped from the page: a last checkpoint, then it ends, shown as finished.
    page.eval("location.hash = '#q=alpha'; true");
    page.wait_for(
        "alpha shown again to stop it",
        "document.querySelector('#summary h2')?.textContent === 'alpha' && document.querySelector('#stop') && !document.querySelector('#stop').disabled",
    );
    page.click("#stop");
    page.click("#stop");
    let stopping = page.wait_for(
        "the stop accepted",
        "document.querySelector('#action-result .ok')?.textContent",
    );
    assert!(
        stopping.as_str().is_some_and(|t| t.starts_with("stopping")),
        "{stopping}"
    );
    let finished = page.wait_for(
        "alpha shown as finished",
        "document.querySelector('#query-ended')?.textContent",
    );
    assert!(
        finished
            .as_str()
            .is_some_and(|t| t.starts_with("The query has finished")),
        "{finished}"
    );
    assert_eq!(
        page.eval("window.__anduinProblems.length"),
        0,
        "the page hit errors: {}",
        page.eval("window.__anduinProblems.join(' | ')")
    );
}
