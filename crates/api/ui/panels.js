// The panels beside the graph: the query's summary, its instances, its checkpoints, its
// dead letters and late rows, and its events as they happen.

import { h, s, fill, count, rate, percent, bytes, duration, clock } from "./dom.js";
import { instanceState } from "./figures.js";

/** How the workers of `topology` read: "one process" when everything runs in this one. */
export function workersText(topology) {
  const workers = (topology && topology.workers) || [];
  if (workers.length === 0) return "—";
  if (workers.length === 1 && workers[0] === 0) return "one process";
  return workers.map((w) => "w" + w).join(", ");
}

/** Whether the instances' workers are worth naming (several, or a cluster's). */
export function placed(topology) {
  const workers = (topology && topology.workers) || [];
  return workers.length > 1 || (workers.length === 1 && workers[0] !== 0);
}

/** Name, state, file, start and placement of the query. */
export function summary(el, info, topology) {
  fill(
    el,
    h("h2", { text: info.name }),
    h("span", { class: "badge state-" + info.state, id: "query-state", text: info.state }),
    h(
      "dl",
      { class: "facts" },
      h("dt", { text: "file" }),
      h("dd", { text: info.file || "—" }),
      h("dt", { text: "started" }),
      h("dd", { text: new Date(info.started_ms).toLocaleString() }),
      h("dt", { text: "operators" }),
      h("dd", { text: String(info.operators.length) }),
      h("dt", { text: "tasks" }),
      // Each name isolated: a right-to-left mark in one does not turn the rest around.
      h(
        "dd",
        {},
        info.tasks.map((t, i) => [
          i ? "; " : "",
          `${t.id}: `,
          t.operators.map((o, j) => [j ? " → " : "", h("bdi", { text: o })]),
          ` ×${t.instances}`,
        ]),
      ),
      h("dt", { text: "workers" }),
      h("dd", { id: "workers", text: workersText(topology) }),
      h("dt", { text: "checkpoints" }),
      h("dd", { text: info.checkpointing ? "taken" : "none (no --checkpoint-dir)" }),
    ),
  );
}

/** The physical view as a table: one row per operator instance. */
export function instances(table, rates, topology, info, nowMs) {
  const worker = new Map();
  for (const t of (topology && topology.tasks) || []) {
    for (const i of t.instances) for (const o of t.operators) worker.set(o + "#" + i.instance, i.worker);
  }
  const task = new Map(info.operators.map((o) => [o.name, o.task]));
  const order = new Map(info.operators.map((o, i) => [o.name, i]));
  // Every instance the topology places, with its figures where there are some (none where
  // they are not gathered: a cluster's coordinator), and any other measured one.
  const all = new Map(rates);
  for (const t of (topology && topology.tasks) || []) {
    for (const i of t.instances) {
      for (const o of t.operators) {
        const k = o + "#" + i.instance;
        if (!all.has(k)) all.set(k, { operator: o, instance: i.instance, busy: null, blocked: null });
      }
    }
  }
  const rows = [...all.values()].sort(
    (a, b) => (order.get(a.operator) ?? 0) - (order.get(b.operator) ?? 0) || a.instance - b.instance,
  );
  const head = ["operator", "instance", "task", "worker", "in", "out", "busy", "backpressured", "queue", "wm lag", "late", "state"];
  fill(
    table,
    h("thead", {}, h("tr", {}, head.map((c, i) => h("th", { class: i === 0 ? "" : "n", text: c })))),
    h(
      "tbody",
      {},
      rows.map((r) =>
        h(
          "tr",
          { class: "state-" + instanceState(r), "data-operator": r.operator, "data-instance": r.instance },
          h("td", { text: r.operator }),
          h("td", { class: "n", text: "#" + r.instance }),
          h("td", { class: "n", text: String(task.get(r.operator) ?? "—") }),
          h("td", { class: "n", text: worker.has(r.operator + "#" + r.instance) ? "w" + worker.get(r.operator + "#" + r.instance) : "—" }),
          h("td", { class: "n", text: rate(r.rowsInRate) }),
          h("td", { class: "n", text: rate(r.rowsOutRate) }),
          h("td", { class: "n", text: percent(r.busy) }),
          h("td", { class: "n", text: percent(r.blocked) }),
          h("td", { class: "n", text: r.queue_len === null || r.queue_len === undefined ? "—" : count(r.queue_len) }),
          h("td", { class: "n", text: r.watermark_ms === null || r.watermark_ms === undefined ? "—" : duration(Math.max(0, nowMs - r.watermark_ms)) }),
          h("td", { class: "n", text: r.late_rows === null || r.late_rows === undefined ? "—" : count(r.late_rows) }),
          h("td", { class: "n", text: r.state_bytes === null || r.state_bytes === undefined ? "—" : bytes(r.state_bytes) }),
        ),
      ),
    ),
  );
}

/** Checkpoints: the last complete one and its age, a timeline of durations, failures. */
export function checkpoints(el, info, live, nowMs) {
  if (!info.checkpointing) {
    fill(el, h("p", { class: "muted", text: "This query takes no checkpoints: start it with --checkpoint-dir to take them." }));
    return;
  }
  if (!live) {
    fill(el, h("p", { class: "muted", text: "No figures yet." }));
    return;
  }
  const recent = live.recent || [];
  const failures = recent.filter((r) => r.outcome && r.outcome.status === "failed");
  const age = live.last_completed_ms ? nowMs - live.last_completed_ms : null;
  const stats = h(
    "dl",
    { class: "facts", id: "checkpoint-stats" },
    h("dt", { text: "last complete" }),
    h("dd", { "data-figure": "last-epoch", text: live.last_epoch === null || live.last_epoch === undefined ? "none yet" : "epoch " + live.last_epoch }),
    h("dt", { text: "its age" }),
    h("dd", { "data-figure": "age", class: age !== null && age > 60_000 ? "warn" : "", text: age === null ? "—" : duration(age) }),
    h("dt", { text: "took" }),
    h("dd", { text: duration(live.last_duration_ms) }),
    h("dt", { text: "size" }),
    h("dd", { text: bytes(live.last_size_bytes) }),
    h("dt", { text: "begun / complete / failed" }),
    h("dd", { text: `${live.started} / ${live.completed} / ${live.failed}` }),
  );
  fill(el, stats, timeline(recent), failureList(failures));
}

function timeline(recent) {
  const shown = recent.slice(-40);
  const W = 460;
  const H = 120;
  const bar = Math.max(4, Math.min(22, Math.floor((W - 20) / Math.max(1, shown.length)) - 3));
  const longest = Math.max(1, ...shown.map((r) => (r.outcome ? r.outcome.duration_ms : 0)));
  const svg = s("svg", { id: "checkpoint-timeline", viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: "xMinYMid meet", role: "img" });
  svg.append(s("title", { text: "checkpoint durations, oldest on the left" }));
  svg.append(s("line", { x1: 10, y1: H - 20, x2: W - 10, y2: H - 20, class: "axis" }));
  shown.forEach((r, i) => {
    const x = 10 + i * (bar + 3);
    const status = r.outcome ? r.outcome.status : "running";
    const ms = r.outcome ? r.outcome.duration_ms : 0;
    const height = r.outcome ? Math.max(3, ((H - 34) * ms) / longest) : H - 34;
    const what = r.outcome
      ? status === "complete"
        ? `epoch ${r.epoch}: complete in ${duration(ms)}, ${bytes(r.outcome.size_bytes)}, at ${clock(r.started_ms)}`
        : `epoch ${r.epoch}: failed after ${duration(ms)}: ${r.outcome.reason}`
      : `epoch ${r.epoch}: on its way since ${clock(r.started_ms)}`;
    svg.append(
      s(
        "g",
        { class: "checkpoint " + status, "data-epoch": r.epoch },
        s("title", { text: what }),
        s("rect", { x, y: H - 20 - height, width: bar, height }),
        shown.length <= 20 || i % 5 === 0 ? s("text", { x: x + bar / 2, y: H - 6, text: String(r.epoch) }) : null,
      ),
    );
  });
  return h("figure", { class: "timeline" }, svg, h("figcaption", { text: `duration of the last ${shown.length} checkpoints (longest ${duration(longest)}); red: failed, grey: on its way` }));
}

function failureList(failures) {
  if (failures.length === 0) return h("p", { class: "muted", id: "checkpoint-failures", text: "No checkpoint failed in this run." });
  return h(
    "ul",
    { id: "checkpoint-failures", class: "failures" },
    failures
      .slice(-10)
      .reverse()
      .map((f) => h("li", {}, h("strong", { text: `epoch ${f.epoch}` }), ` failed at ${clock(f.started_ms)} after ${duration(f.outcome.duration_ms)}: `, h("span", { class: "reason", text: f.outcome.reason }))),
  );
}

/** Says why the live figures are missing where they are not gathered (a cluster's
 * coordinator), or nothing. */
export function notGathered(el, why) {
  el.hidden = !why;
  fill(el, why ? "Live figures are not shown here: " + why + "." : "");
}

/** Dead letters and late rows: counts per operator, the last rejects with their reasons. */
export function rejects(el, metrics, figures) {
  if (metrics.not_gathered) {
    // Unknown here, not zero.
    fill(el, h("p", { class: "muted", id: "rejects-not-gathered", text: "Not gathered here: the dead letters and late rows are counted on the workers." }));
    return;
  }
  const late = [...figures.values()].filter((f) => f.lateRows);
  const by = Object.entries(metrics.dead_letters_by_operator || {});
  // The last rejects, alike ones (same operator, reason and place) folded into one line.
  const alike = new Map();
  for (const r of metrics.recent_rejects || []) {
    const k = [r.operator, r.reason, r.at || "", r.source || ""].join("\u0000");
    const seen = alike.get(k);
    alike.set(k, { ...r, times: seen ? seen.times + 1 : 1 });
  }
  const recent = [...alike.values()].sort((a, b) => b.time_ms - a.time_ms);
  fill(
    el,
    h(
      "dl",
      { class: "facts" },
      h("dt", { text: "dead letters" }),
      h("dd", { "data-figure": "dead-letters", text: count(metrics.dead_letters) }),
      h("dt", { text: "late rows" }),
      h("dd", { "data-figure": "late-rows", text: count(late.reduce((a, f) => a + f.lateRows, 0)) }),
    ),
    by.length || late.length
      ? h(
          "table",
          { class: "compact" },
          h("thead", {}, h("tr", {}, h("th", { text: "operator" }), h("th", { text: "dead letters" }), h("th", { text: "late rows" }))),
          h(
            "tbody",
            {},
            [...new Set([...by.map(([o]) => o), ...late.map((f) => f.operator)])].map((o) =>
              h(
                "tr",
                {},
                h("td", { text: o }),
                h("td", { class: "n", text: count(new Map(by).get(o) || 0) }),
                h("td", { class: "n", text: count((figures.get(o) || {}).lateRows || 0) }),
              ),
            ),
          ),
        )
      : null,
    recent.length
      ? h(
          "ul",
          { class: "rejects", id: "recent-rejects", title: "the last 20 rejects, alike ones counted on one line" },
          recent.map((r) =>
            h(
              "li",
              {},
              h("time", { text: clock(r.time_ms) }),
              " ",
              h("strong", { text: r.operator }),
              ": ",
              h("span", { class: "reason", text: r.reason }),
              r.at ? h("span", { class: "where", text: ` (expression at ${r.at})` }) : null,
              r.source ? h("span", { class: "where", text: ` (${r.source}${r.line ? ":" + r.line : ""})` }) : null,
              r.times > 1 ? h("span", { class: "times", text: ` ×${r.times}` }) : null,
            ),
          ),
        )
      : h("p", { class: "muted", text: "Nothing rejected in this run." }),
  );
}

const EVENT_LABELS = {
  checkpoint_started: "checkpoint begun",
  checkpoint_completed: "checkpoint complete",
  checkpoint_failed: "checkpoint failed",
  checkpoint_stale: "checkpoint stale",
  restore_chosen: "restore",
  task_started: "task started",
  task_finished: "task finished",
  task_failed: "task failed",
  param_changed: "param changed",
  change_refused: "change refused",
  late_rows: "late rows",
  rejected: "rejected",
  lagged: "missed events",
};

/** What the events list calls event `kind`: a rescale and a live split by their names. */
function eventLabel(kind, data) {
  if (kind === "param_changed" && data && data.param === "parallelism") return "rescaled";
  if (kind === "param_changed" && data && data.param === "pipeline") return "task split";
  return Object.hasOwn(EVENT_LABELS, kind) ? EVENT_LABELS[kind] : String(kind);
}

const BAD = new Set(["checkpoint_failed", "task_failed", "lagged", "checkpoint_stale", "change_refused"]);

/** How many events the list keeps. */
const EVENTS_KEPT = 200;

/** Adds event `kind` (its JSON `data`) at the top of the list `ol`, keeping the last
 * [`EVENTS_KEPT`]; a last item says how many earlier ones it let go. */
export function addEvent(ol, kind, data) {
  const fields = data !== null && typeof data === "object" ? Object.entries(data) : [["data", data]];
  const details = fields
    .filter(([k]) => k !== "query" && k !== "event")
    .map(([k, v]) => `${k} ${typeof v === "string" ? v : JSON.stringify(v)}`)
    .join(", ");
  ol.prepend(
    h(
      "li",
      { class: BAD.has(kind) ? "bad" : kind === "checkpoint_completed" ? "good" : "", "data-kind": kind },
      h("time", { text: new Date().toLocaleTimeString([], { hour12: false }) }),
      " ",
      h("strong", { text: eventLabel(kind, data) }),
      details ? " " + details : "",
    ),
  );
  const note = ol.querySelector(":scope > li.dropped");
  if (ol.children.length - (note ? 1 : 0) <= EVENTS_KEPT) return;
  if (note) note.remove();
  let dropped = Number(ol.dataset.dropped || 0);
  while (ol.children.length > EVENTS_KEPT) {
    ol.lastChild.remove();
    dropped += 1;
  }
  ol.dataset.dropped = String(dropped);
  ol.append(
    h("li", {
      class: "dropped",
      text: `… and ${dropped} earlier event(s) not shown: the page keeps the last ${EVENTS_KEPT} (\`anduin run --events FILE\` keeps them all)`,
    }),
  );
}
