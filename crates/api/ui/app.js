// The page: the queries served, and for the one chosen its graph with live figures, its
// checkpoints, the control console, its dead letters and its events. Everything comes from
// the API's routes; see docs/ui.md.

import { api, ApiError } from "./api.js";
import { h, fill } from "./dom.js";
import { sample, instanceRates, operatorFigures, classify } from "./figures.js";
import { draw, update } from "./graph.js";
import * as panels from "./panels.js";
import { Console } from "./console.js";

const $ = (id) => document.getElementById(id);

/** Every uncaught error is shown, not only logged: a page that broke says so. */
const problems = [];
window.__anduinProblems = problems;
function problem(text) {
  problems.push(text);
  $("problems").hidden = false;
  $("problems").textContent = "The page hit an error: " + problems.slice(-3).join(" | ");
}
window.addEventListener("error", (e) => problem(e.message));
window.addEventListener("unhandledrejection", (e) => problem(String(e.reason && e.reason.message ? e.reason.message : e.reason)));

const state = {
  name: null,
  info: null,
  topology: null,
  view: null,
  samples: [],
  events: null,
  console: null,
  timer: null,
  ticks: 0,
};

/** `#q=NAME&token=TOKEN`: the query chosen, and a token handed over in the address. */
function fromHash() {
  const params = new URLSearchParams(location.hash.slice(1));
  const token = params.get("token");
  if (token) {
    api.setToken(token);
    params.delete("token");
    history.replaceState(null, "", "#" + params.toString());
  }
  return params.get("q");
}

function needToken(error) {
  $("login").hidden = false;
  $("query").hidden = true;
  $("login-error").textContent = api.token ? error.message : "";
}

async function listQueries() {
  let queries;
  try {
    queries = await api.get("/api/v1/queries");
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) needToken(e);
    else $("connection").textContent = e.message;
    return null;
  }
  $("login").hidden = true;
  fill(
    $("queries"),
    queries.map((q) =>
      h(
        "a",
        { href: "#q=" + encodeURIComponent(q.name), class: "query-link" + (q.name === state.name ? " current" : ""), "data-query": q.name },
        h("span", { class: "dot state-" + q.state }),
        q.name,
        h("span", { class: "query-state", text: q.state }),
      ),
    ),
  );
  return queries;
}

async function choose(name) {
  if (state.events) state.events.abort();
  clearTimeout(state.timer);
  Object.assign(state, { name, info: null, topology: null, view: null, samples: [] });
  fill($("events"));
  if (!name) return;
  const info = await api.get(api.query(name));
  const topology = await api.get(api.query(name) + "/topology");
  state.info = info;
  state.topology = topology;
  $("query").hidden = false;
  $("empty").hidden = true;
  panels.summary($("summary"), info, topology);
  state.view = draw($("graph"), info, topology);
  state.console = new Console($("console"), $("history-panel"), $("actions"), () => tick(true));
  await state.console.show(info);
  const events = new AbortController();
  state.events = events;
  api.events(
    name,
    events.signal,
    (kind, data) => {
      panels.addEvent($("events"), kind, data);
      if (kind.startsWith("checkpoint") || kind.startsWith("task") || kind === "restore_chosen") tick(true);
    },
    (text, ok) => {
      $("events-state").textContent = text;
      $("events-state").className = "hint " + (ok ? "ok" : "warn");
    },
  );
  await tick(false);
}

let running = false;
let wantInfo = false;

/**
 * Reads the figures (and, every few ticks or when `now` asks, the query's state and
 * changes) and shows them; then again in a second. One tick at a time: a tick asked for
 * while one runs happens right after it.
 */
async function tick(now) {
  if (now) wantInfo = true;
  if (running) return;
  running = true;
  clearTimeout(state.timer);
  const name = state.name;
  let soon = false;
  try {
    if (!name) return;
    state.ticks += 1;
    if (wantInfo || state.ticks % 3 === 0) {
      wantInfo = false;
      const info = await api.get(api.query(name));
      const started = state.info && state.info.tasks.length === 0 && info.tasks.length > 0;
      state.info = info;
      if (started) {
        state.topology = await api.get(api.query(name) + "/topology");
        state.view = draw($("graph"), info, state.topology);
      }
      panels.summary($("summary"), info, state.topology);
      await listQueries();
      if (state.console) await state.console.refresh();
    }
    const metrics = await api.get(api.query(name) + "/metrics");
    if (name !== state.name) return;
    // Rates over the last second or more: against the newest sample at least a second old
    // (ticks come sooner after a change or an event), else the oldest kept.
    const current = sample(metrics, performance.now());
    const older = state.samples.filter((x) => current.at - x.at >= 1000);
    const base = older.length > 0 ? older[older.length - 1] : state.samples[0] || null;
    state.samples = state.samples.filter((x) => x === base || current.at - x.at < 1000);
    state.samples.push(current);
    const rates = instanceRates(base, current);
    const nowMs = Date.now();
    const figures = operatorFigures(rates, nowMs);
    update(state.view, figures, classify(figures));
    panels.instances($("instances"), rates, state.topology, state.info, nowMs);
    panels.checkpoints($("checkpoints"), state.info, metrics.checkpoints, nowMs);
    panels.rejects($("rejects"), metrics, figures);
    $("connection").textContent = "updated " + new Date().toLocaleTimeString([], { hour12: false });
    $("connection").className = "connection ok";
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) {
      needToken(e);
      return;
    }
    $("connection").textContent = e.message;
    $("connection").className = "connection warn";
  } finally {
    running = false;
    soon = wantInfo || name !== state.name;
    clearTimeout(state.timer);
    if (state.name && $("login").hidden) state.timer = setTimeout(() => tick(false), soon ? 0 : 1000);
  }
}

async function route() {
  const wanted = fromHash();
  const queries = await listQueries();
  if (!queries) return;
  if (queries.length === 0) {
    $("empty").hidden = false;
    $("query").hidden = true;
    setTimeout(route, 2000);
    return;
  }
  const name = queries.some((q) => q.name === wanted) ? wanted : queries[0].name;
  if (name !== state.name) await choose(name);
  await listQueries();
}

$("login-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  api.setToken($("token").value.trim());
  $("token").value = "";
  route();
});
window.addEventListener("hashchange", route);
route();
