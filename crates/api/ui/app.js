// The page: the queries served, and for the one chosen its graph with live figures, its
// checkpoints, the control console, its dead letters and its events. Everything comes from
// the API's routes; see docs/ui.md.

import { api, ApiError } from "./api.js";
import { h, fill } from "./dom.js";
import { sample, instanceRates, operatorFigures, classify } from "./figures.js";
import { draw, drawWritten, update } from "./graph.js";
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

/** What a token may hold: printable ASCII (it travels in a header; a browser cannot send
 * anything else there, and the server refuses to start with anything else). */
const TOKEN_TEXT = /^[\x20-\x7e]+$/;

/** Takes `token` for this tab; false (and the login form saying why) if it cannot be sent. */
function useToken(token) {
  if (!TOKEN_TEXT.test(token)) {
    needToken(null, "This token cannot be sent: a token is printable ASCII (letters, digits, punctuation), as the run's token file holds it.");
    return false;
  }
  api.setToken(token);
  return true;
}

/**
 * `#q=NAME&token=TOKEN`: the query chosen, and a token handed over in the address. Read as
 * written, `+` included (`URLSearchParams` would turn a `+` of a base64 token into a
 * space); the token is taken out of the address at once.
 */
function fromHash() {
  const parts = location.hash
    .slice(1)
    .split("&")
    .filter((p) => p !== "")
    .map((p) => {
      const at = p.indexOf("=");
      const decode = (x) => {
        try {
          return decodeURIComponent(x);
        } catch {
          return null;
        }
      };
      return { raw: p, key: decode(at < 0 ? p : p.slice(0, at)), value: decode(at < 0 ? "" : p.slice(at + 1)) };
    });
  const token = parts.find((p) => p.key === "token");
  if (token) {
    const kept = parts.filter((p) => p.key !== "token").map((p) => p.raw);
    history.replaceState(null, "", kept.length ? "#" + kept.join("&") : location.pathname + location.search);
    if (!useToken((token.value ?? "").trim())) return null;
  }
  const q = parts.find((p) => p.key === "q");
  return q ? q.value : null;
}

function needToken(error, why) {
  $("login").hidden = false;
  $("query").hidden = true;
  $("login-error").textContent = why || (api.token && error ? error.message : "");
}

/** The query shown is not served any more (it ended on a server that goes on, or another
 * run took the address): say so, and show what is served now. */
function gone(name) {
  if (state.name !== name) return;
  choose(null);
  $("query").hidden = true;
  $("connection").textContent = `query "${name}" is not served here any more`;
  $("connection").className = "connection warn";
  routeSoon(1000);
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

/** Counts the choices of a query: an answer that arrives after another choice is dropped
 * (clicking two queries in quick succession never mixes their pages or event streams). */
let generation = 0;

async function choose(name) {
  const mine = ++generation;
  if (state.events) state.events.abort();
  if (state.console) state.console.close();
  clearTimeout(state.timer);
  Object.assign(state, { name, info: null, topology: null, view: null, samples: [], events: null, console: null });
  fill($("events"));
  delete $("events").dataset.dropped;
  if (!name) return;
  let info;
  let topology;
  try {
    info = await api.get(api.query(name));
    topology = await api.get(api.query(name) + "/topology");
  } catch (e) {
    if (mine !== generation) return;
    if (e instanceof ApiError && e.status === 401) needToken(e);
    else if (e instanceof ApiError && e.error === "unknown_query") gone(name);
    else {
      $("connection").textContent = e.message;
      $("connection").className = "connection warn";
      state.timer = setTimeout(() => mine === generation && choose(name), 2000);
    }
    return;
  }
  if (mine !== generation) return;
  state.info = info;
  state.topology = topology;
  $("query").hidden = false;
  $("empty").hidden = true;
  panels.summary($("summary"), info, topology);
  state.view = draw($("graph"), info, topology);
  showWritten(info);
  const console = new Console($("console"), $("history-panel"), $("actions"), () => tick(true));
  state.console = console;
  await console.show(info);
  if (mine !== generation) return;
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
  const mine = generation;
  // Whether another query was chosen (or this one again) while an answer was awaited.
  const stale = () => mine !== generation || name !== state.name;
  let soon = false;
  try {
    if (!name || !state.info) return;
    state.ticks += 1;
    if (wantInfo || state.ticks % 3 === 0) {
      wantInfo = false;
      const info = await api.get(api.query(name));
      const topology = await api.get(api.query(name) + "/topology");
      if (stale()) return;
      if (info.started_ms !== state.info.started_ms) {
        // Another run (or, on a cluster, another attempt) under this name: start afresh.
        choose(name);
        return;
      }
      if (JSON.stringify(topology) !== JSON.stringify(state.topology) || info.operators.length !== state.info.operators.length) {
        // It started, or its instances moved (a cluster placed them anew).
        state.topology = topology;
        state.view = draw($("graph"), info, topology);
        state.samples = [];
      }
      state.info = info;
      panels.summary($("summary"), info, state.topology);
      if (state.console) state.console.showState(info);
      await listQueries();
      if (stale()) return;
      if (state.console) await state.console.refresh();
      if (stale()) return;
    }
    const metrics = await api.get(api.query(name) + "/metrics");
    if (stale()) return;
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
    panels.notGathered($("not-gathered"), metrics.not_gathered);
    $("connection").textContent = "updated " + new Date().toLocaleTimeString([], { hour12: false });
    $("connection").className = "connection ok";
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) {
      needToken(e);
      return;
    }
    if (e instanceof ApiError && e.error === "unknown_query" && !stale()) {
      gone(name);
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

/** One pending look at the queries at a time, however many reasons ask for one. */
let routeTimer = null;
function routeSoon(ms) {
  clearTimeout(routeTimer);
  routeTimer = setTimeout(route, ms);
}

async function route() {
  clearTimeout(routeTimer);
  const wanted = fromHash();
  const queries = await listQueries();
  if (!queries) {
    // The server does not answer (yet, or any more): ask again, unless it wants a token.
    if ($("login").hidden) routeSoon(2000);
    return;
  }
  if (queries.length === 0) {
    $("empty").hidden = false;
    $("query").hidden = true;
    routeSoon(2000);
    return;
  }
  const served = queries.some((q) => q.name === wanted);
  const name = served ? wanted : queries[0].name;
  // A query the address names that is not served (yet: a cluster's query waiting for
  // workers): said, and looked for again until it is.
  $("not-served").hidden = !wanted || served;
  if (wanted && !served) {
    $("not-served").textContent = `Query "${wanted}" is not served here (yet): showing "${name}" until it is.`;
    routeSoon(2000);
  }
  if (name !== state.name) await choose(name);
  await listQueries();
}

$("login-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const token = $("token").value.trim();
  $("token").value = "";
  if (useToken(token)) {
    choose(null);
    route();
  }
});
window.addEventListener("hashchange", route);
route();

/** The query as written, beside the graph as it runs, when rules reshaped it. */
function showWritten(info) {
  const written = info.written || [];
  $("written-details").hidden = written.length === 0;
  if (written.length > 0) drawWritten($("written"), written);
}
