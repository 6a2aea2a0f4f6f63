// The control console: each operator's adjustable params with their current values, a
// change checked by the server (its refusal shown under the field, pointing at the place in
// the value it names), the changes applied, and the buttons to take a checkpoint and stop.

import { h, fill, clock } from "./dom.js";
import { api } from "./api.js";

/**
 * The located lines of a refusal for `field` (`operator.param`): `field:LINE:COL: text`
 * becomes `{line, col, text}`; other lines `{text}`.
 */
export function locate(message, field) {
  const prefix = field + ":";
  return message
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => {
      if (l.startsWith(prefix)) {
        const m = /^(\d+):(\d+): ([\s\S]*)$/.exec(l.slice(prefix.length));
        if (m) return { line: Number(m[1]), col: Number(m[2]), text: m[3] };
      }
      return { text: l };
    });
}

/** The refusal `message` of a change of `field` to `value`, with a caret under each place. */
function refusal(message, field, value) {
  const lines = value.split("\n");
  return h(
    "div",
    { class: "error", role: "alert" },
    locate(message, field).map((d) => {
      if (d.line === undefined) return h("p", { class: "error-text", text: d.text });
      const text = lines[d.line - 1] ?? "";
      const chars = [...text];
      const col = Math.max(1, Math.min(d.col, chars.length + 1));
      return h(
        "div",
        { class: "located" },
        h("p", { class: "error-text" }, h("span", { class: "position", text: `${field}:${d.line}:${d.col}` }), " ", d.text),
        h(
          "pre",
          { class: "caret", "aria-label": `the value, with a caret at line ${d.line}, column ${d.col}` },
          h("span", { text: chars.slice(0, col - 1).join("") }),
          h("mark", { text: chars[col - 1] ?? " " }),
          h("span", { text: chars.slice(col).join("") }),
          "\n" + " ".repeat(col - 1) + "^",
        ),
      );
    }),
  );
}

/** How many param fields were made (their element ids). */
let fieldIds = 0;

export class Console {
  constructor(el, history, actions, onChange) {
    this.el = el;
    this.historyEl = history;
    this.actionsEl = actions;
    this.onChange = onChange;
    this.fields = new Map();
    this.query = null;
    this.closed = false;
  }

  /** Another query is shown: this console writes nothing more into the page. */
  close() {
    this.closed = true;
  }

  /** Builds the console of query `info` (its params read from the server). */
  async show(info) {
    this.query = info.name;
    this.fields.clear();
    const adjustable = info.operators.filter((o) => o.adjustable.length > 0);
    this.buildActions(info);
    if (adjustable.length === 0) {
      fill(this.el, h("p", { class: "muted", text: "No operator of this query has a param that can change while it runs." }));
    } else {
      fill(this.el);
      for (const o of adjustable) {
        const set = h("fieldset", { class: "operator", "data-operator": o.name }, h("legend", {}, h("strong", { text: o.name }), ` (${o.kind})`));
        this.el.append(set);
        await this.loadParams(o.name, set);
        if (this.closed) return;
      }
    }
    this.showState(info);
    await this.refresh();
  }

  /** An ended query takes no change, checkpoint or stop: its buttons say so. */
  showState(info) {
    if (this.closed) return;
    const over = info.state === "finished" || info.state === "failed" || info.state === "cancelled";
    // A cluster's failed attempt, waiting for the next one: nothing to change until it runs.
    const idle = over || info.state === "recovering";
    for (const f of this.fields.values()) f.apply.disabled = idle || f.busy;
    if (this.checkpointButton) this.checkpointButton.disabled = idle || !info.checkpointing || this.checkpointBusy;
    if (this.stopButton) this.stopButton.disabled = idle || this.stopBusy;
    const ended = this.actionsEl.querySelector("#query-ended");
    if (over && !ended) {
      const how = info.state === "finished" ? "finished" : info.state === "cancelled" ? "been cancelled" : "failed";
      // Stopped from this page: it goes on from its last checkpoint when run again.
      const stopped = info.state === "finished" && this.stopBusy && info.checkpointing ? " (stopped after a last checkpoint, which a new run of it goes on from: `anduin submit --resume` on a cluster)" : "";
      this.actionsEl.append(h("p", { class: "muted", id: "query-ended", text: `The query has ${how}${stopped}: nothing can be changed any more.` }));
    }
  }

  async loadParams(operator, set) {
    let params;
    try {
      params = await api.get(api.query(this.query) + "/operators/" + encodeURIComponent(operator) + "/params");
    } catch (e) {
      set.append(h("p", { class: "error", text: e.message }));
      return;
    }
    if (this.closed) return;
    for (const p of params) this.addField(operator, p, set);
  }

  addField(operator, p, set) {
    const field = `${operator}.${p.name}`;
    // Numbered, not made of the names: two operators whose names differ only in characters
    // an id cannot hold ("a<b", "a>b") must not share one.
    fieldIds += 1;
    const id = "param-" + fieldIds;
    const input = h("input", { id, type: "text", value: p.value, spellcheck: "false", autocomplete: "off", "data-param": field, "aria-describedby": id + "-doc" });
    const current = h("code", { class: "current", "data-current": field, text: p.value });
    const message = h("div", { class: "message", "data-message": field, "aria-live": "polite" });
    const apply = h("button", { type: "submit", "data-apply": field, text: "Apply" });
    const form = h(
      "form",
      { class: "param", "data-field": field },
      h("label", { for: id }, h("strong", { text: p.name }), " ", h("span", { class: "type", text: p.type })),
      h("p", { class: "doc", id: id + "-doc", text: p.doc }),
      h("p", { class: "now" }, "now: ", current),
      h("div", { class: "row" }, input, apply),
      message,
    );
    const state = { operator, param: p.name, input, current, message, apply, dirty: false, busy: false };
    input.addEventListener("input", () => {
      state.dirty = true;
      input.removeAttribute("aria-invalid");
    });
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      this.submit(state);
    });
    set.append(form);
    this.fields.set(field, state);
  }

  async submit(f) {
    const field = `${f.operator}.${f.param}`;
    const value = f.input.value;
    f.apply.disabled = true;
    f.busy = true;
    fill(f.message, h("p", { class: "pending", text: "checking and applying at the next consistent point…" }));
    try {
      const record = await api.call(
        "PUT",
        api.query(this.query) + "/operators/" + encodeURIComponent(f.operator) + "/params/" + encodeURIComponent(f.param),
        { value, from: "ui" },
      );
      f.dirty = false;
      f.current.textContent = record.new;
      f.input.removeAttribute("aria-invalid");
      fill(f.message, h("p", { class: "ok", "data-applied": record.seq, text: `change #${record.seq} applied at epoch ${record.epoch}: ${record.old} → ${record.new}` }));
      this.onChange();
      await this.refresh();
    } catch (e) {
      f.input.setAttribute("aria-invalid", "true");
      fill(f.message, refusal(e.message, field, value));
    } finally {
      f.busy = false;
      f.apply.disabled = false;
    }
  }

  buildActions(info) {
    const result = h("p", { class: "action-result", id: "action-result", "aria-live": "polite" });
    const checkpoint = h("button", { type: "button", id: "checkpoint-now", disabled: !info.checkpointing, text: "Checkpoint now" });
    const stop = h("button", { type: "button", id: "stop", class: "danger", text: "Stop the query" });
    this.checkpointButton = checkpoint;
    this.stopButton = stop;
    checkpoint.addEventListener("click", async () => {
      checkpoint.disabled = true;
      this.checkpointBusy = true;
      fill(result, "taking a checkpoint…");
      try {
        const r = await api.call("POST", api.query(this.query) + "/checkpoints");
        fill(result, h("span", { class: "ok", text: `checkpoint ${r.epoch} is complete` }));
        this.onChange();
      } catch (e) {
        fill(result, h("span", { class: "error", text: e.message }));
      } finally {
        this.checkpointBusy = false;
        checkpoint.disabled = !info.checkpointing;
      }
    });
    // Two clicks: a stray one does not stop a query.
    let armed = null;
    stop.addEventListener("click", async () => {
      if (!armed) {
        stop.textContent = "Click again to stop" + (info.checkpointing ? " (after a last checkpoint)" : "");
        armed = setTimeout(() => {
          armed = null;
          stop.textContent = "Stop the query";
        }, 5000);
        return;
      }
      clearTimeout(armed);
      armed = null;
      stop.disabled = true;
      // Stays set once the stop is accepted: the query is on its way out.
      this.stopBusy = true;
      try {
        await api.call("POST", api.query(this.query) + "/stop");
        fill(result, h("span", { class: "ok", text: "stopping" + (info.checkpointing ? ": a last checkpoint, then the end" : "") }));
        this.onChange();
      } catch (e) {
        fill(result, h("span", { class: "error", text: e.message }));
        this.stopBusy = false;
        stop.disabled = false;
      }
      stop.textContent = "Stop the query";
    });
    fill(this.actionsEl, checkpoint, stop, result);
  }

  /** Reads the history and the params' current values again. */
  async refresh() {
    if (!this.query || this.closed) return;
    let history;
    try {
      history = await api.get(api.query(this.query) + "/history");
    } catch {
      return;
    }
    if (this.closed) return;
    this.renderHistory(history);
    const latest = new Map();
    for (const r of history) latest.set(`${r.operator}.${r.param}`, r.new);
    for (const [field, f] of this.fields) {
      if (!latest.has(field)) continue;
      f.current.textContent = latest.get(field);
      if (!f.dirty && document.activeElement !== f.input) f.input.value = latest.get(field);
    }
  }

  renderHistory(history) {
    if (history.length === 0) {
      fill(this.historyEl, h("p", { class: "muted", text: "No change applied yet." }));
      return;
    }
    fill(
      this.historyEl,
      h(
        "table",
        { class: "compact", id: "history" },
        h("thead", {}, h("tr", {}, ["#", "epoch", "time", "change", "from"].map((c) => h("th", { text: c })))),
        h(
          "tbody",
          {},
          history
            .slice(-50)
            .reverse()
            .map((r) =>
              h(
                "tr",
                { "data-seq": r.seq },
                h("td", { class: "n", text: String(r.seq) }),
                h("td", { class: "n", text: String(r.epoch) }),
                h("td", { text: clock(r.time_ms) }),
                h(
                  "td",
                  { class: "change" },
                  h("strong", { text: `${r.operator}.${r.param}` }),
                  " ",
                  h("code", { class: "old", text: r.old }),
                  " → ",
                  h("code", { class: "new", text: r.new }),
                ),
                h("td", { text: r.from }),
              ),
            ),
        ),
      ),
    );
  }
}
