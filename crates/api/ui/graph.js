// The query's graph in SVG: its operators (the logical graph) in layers from the sources
// on, boxed by the task they run in (the physical plan), with a chip per instance naming
// its worker; live figures on every node and edge, coloured by how each operator stands.

import { s, count, rate, percent, duration } from "./dom.js";
import { BACKPRESSURED, instanceState } from "./figures.js";
import { placed } from "./panels.js";

const NODE_W = 230;
const NODE_H = 118;
const GAP_X = 170;
const GAP_Y = 46;
const MARGIN = 28;
const CHIP_W = 44;

/** The streams between operators: one edge per (producer, consumer input). */
export function edgesOf(operators) {
  const producer = new Map();
  for (const o of operators) for (const out of o.outputs) producer.set(out, o.name);
  const edges = [];
  for (const o of operators) {
    o.inputs.forEach((stream, input) => {
      const from = producer.get(stream);
      if (from !== undefined) edges.push({ from, to: o.name, stream, input });
    });
  }
  return edges;
}

/**
 * A layered layout: each operator in the layer after its furthest producer, the order
 * within a layer by the mean position of its neighbours (a few sweeps down and up), then
 * coordinates. `operators` are in topological order.
 */
export function layout(operators) {
  const edges = edgesOf(operators);
  const preds = new Map(operators.map((o) => [o.name, []]));
  const succs = new Map(operators.map((o) => [o.name, []]));
  for (const e of edges) {
    preds.get(e.to).push(e.from);
    succs.get(e.from).push(e.to);
  }
  const layer = new Map();
  // Longest path from the sources; iterate to a fixed point in case the order is not
  // topological (a server that lists operators otherwise).
  for (let pass = 0; pass <= operators.length; pass++) {
    let changed = false;
    for (const o of operators) {
      const l = Math.max(-1, ...preds.get(o.name).map((p) => layer.get(p) ?? -1)) + 1;
      if (layer.get(o.name) !== l) {
        layer.set(o.name, l);
        changed = true;
      }
    }
    if (!changed) break;
  }
  const layers = [];
  for (const o of operators) {
    const l = layer.get(o.name);
    while (layers.length <= l) layers.push([]);
    layers[l].push(o.name);
  }
  const position = new Map();
  const place = () => layers.forEach((names) => names.forEach((n, i) => position.set(n, i)));
  place();
  const mean = (names, fallback) =>
    names.length === 0 ? fallback : names.reduce((a, n) => a + position.get(n), 0) / names.length;
  for (let sweep = 0; sweep < 4; sweep++) {
    const down = sweep % 2 === 0;
    const order = down ? layers.slice(1) : layers.slice(0, -1).reverse();
    for (const names of order) {
      const weight = new Map(names.map((n) => [n, mean(down ? preds.get(n) : succs.get(n), position.get(n))]));
      names.sort((a, b) => weight.get(a) - weight.get(b) || position.get(a) - position.get(b));
      names.forEach((n, i) => position.set(n, i));
    }
  }
  const tallest = Math.max(1, ...layers.map((l) => l.length));
  const height = MARGIN * 2 + tallest * NODE_H + (tallest - 1) * GAP_Y + 24;
  const nodes = new Map();
  layers.forEach((names, l) => {
    const span = names.length * NODE_H + (names.length - 1) * GAP_Y;
    const top = (height - span) / 2;
    names.forEach((n, i) => {
      nodes.set(n, { x: MARGIN + l * (NODE_W + GAP_X), y: top + i * (NODE_H + GAP_Y) });
    });
  });
  const width = MARGIN * 2 + layers.length * NODE_W + Math.max(0, layers.length - 1) * GAP_X;
  return { nodes, edges, width, height };
}

function edgePath(a, b) {
  const x1 = a.x + NODE_W;
  const y1 = a.y + NODE_H / 2;
  const x2 = b.x;
  const y2 = b.y + NODE_H / 2;
  const dx = Math.max(30, (x2 - x1) / 2);
  return { d: `M${x1},${y1} C${x1 + dx},${y1} ${x2 - dx},${y2} ${x2},${y2}`, mx: (x1 + x2) / 2, my: (y1 + y2) / 2 };
}

/**
 * Draws `operators` (the query as written: QueryInfo.written) into `svg`: its operators and
 * the streams between them, without tasks or figures.
 */
export function drawWritten(svg, operators) {
  const g = layout(operators);
  svg.replaceChildren();
  svg.setAttribute("viewBox", `0 0 ${g.width} ${g.height}`);
  svg.style.width = "100%";
  svg.style.maxWidth = g.width + "px";
  svg.style.minWidth = Math.round(g.width * 0.6) + "px";
  svg.append(
    s(
      "defs",
      {},
      s(
        "marker",
        { id: "arrow-written", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" },
        s("path", { d: "M0,0 L10,5 L0,10 z", class: "arrowhead" }),
      ),
      s("clipPath", { id: "written-clip" }, s("rect", { x: 0, y: 0, width: NODE_W - 8, height: NODE_H })),
    ),
  );
  const edges = s("g", { class: "edges" });
  for (const e of g.edges) {
    const p = edgePath(g.nodes.get(e.from), g.nodes.get(e.to));
    edges.append(
      s(
        "g",
        { class: "edge", "data-from": e.from, "data-to": e.to, "data-stream": e.stream },
        s("title", { text: `${e.stream}: ${e.from} → ${e.to}` }),
        s("path", { d: p.d, class: "edge-line", "marker-end": "url(#arrow-written)" }),
        s("text", { x: p.mx, y: p.my - 8, class: "edge-detail", text: e.stream }),
      ),
    );
  }
  svg.append(edges);
  const nodes = s("g", { class: "nodes" });
  for (const o of operators) {
    const at = g.nodes.get(o.name);
    nodes.append(
      s(
        "g",
        { class: "node state-unknown", "data-operator": o.name, transform: `translate(${at.x}, ${at.y})` },
        s("title", { text: `${o.name} (${o.kind})` }),
        s("rect", { width: NODE_W, height: NODE_H, rx: 8, class: "node-box" }),
        s("text", { x: 12, y: 20, class: "node-name", "clip-path": "url(#written-clip)", text: o.name }),
        s("text", { x: 12, y: 34, class: "node-kind", "clip-path": "url(#written-clip)", text: o.kind }),
      ),
    );
  }
  svg.append(nodes);
}

/**
 * Draws the graph of `info` (QueryInfo) placed as `topology` (TopologyInfo) says into
 * `svg`; returns what `update` needs.
 */
export function draw(svg, info, topology) {
  const g = layout(info.operators);
  svg.replaceChildren();
  svg.setAttribute("viewBox", `0 0 ${g.width} ${g.height}`);
  // As wide as the panel, never larger than drawn, never smaller than 60 % (then it scrolls).
  svg.removeAttribute("width");
  svg.removeAttribute("height");
  svg.style.width = "100%";
  svg.style.maxWidth = g.width + "px";
  svg.style.minWidth = Math.round(g.width * 0.6) + "px";
  svg.append(
    s(
      "defs",
      {},
      s(
        "marker",
        { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" },
        s("path", { d: "M0,0 L10,5 L0,10 z", class: "arrowhead" }),
      ),
      // A node's texts stay within its box (a long name is cut on screen, whole in its
      // tooltip and in the page's text).
      s("clipPath", { id: "node-clip" }, s("rect", { x: 0, y: 0, width: NODE_W - 8, height: NODE_H })),
    ),
  );
  const operator = new Map(info.operators.map((o) => [o.name, o]));
  const placement = new Map((topology.tasks || []).map((t) => [t.id, t]));
  const multiWorker = placed(topology);

  // The tasks: a box around the operators each runs (fused operators share one).
  const tasks = s("g", { class: "tasks" });
  for (const t of info.tasks) {
    const boxes = t.operators.map((n) => g.nodes.get(n)).filter(Boolean);
    if (boxes.length === 0) continue;
    const x = Math.min(...boxes.map((b) => b.x)) - 12;
    const y = Math.min(...boxes.map((b) => b.y)) - 22;
    const x2 = Math.max(...boxes.map((b) => b.x + NODE_W)) + 12;
    const y2 = Math.max(...boxes.map((b) => b.y + NODE_H)) + 10;
    const label = `task ${t.id} · ${t.instances} instance${t.instances === 1 ? "" : "s"}`;
    tasks.append(
      s(
        "g",
        { class: "task", "data-task": t.id },
        s("rect", { x, y, width: x2 - x, height: y2 - y, rx: 10 }),
        s("text", { x: x + 10, y: y + 15, class: "task-label", text: label }),
      ),
    );
  }
  svg.append(tasks);

  // The edges: one per stream from an operator to another.
  const exchanges = topology.exchanges || [];
  const edges = s("g", { class: "edges" });
  const edgeViews = [];
  for (const e of g.edges) {
    const p = edgePath(g.nodes.get(e.from), g.nodes.get(e.to));
    const x = exchanges.find((x) => x.from_operator === e.from && x.to_operator === e.to && x.to_input === e.input);
    let how = "";
    let remote = "";
    if (x) {
      how = x.partitioning === "hash" ? `hash(${x.keys.join(", ")})` : x.partitioning;
      if (x.remote_channels > 0) remote = `${x.remote_channels}/${x.channels} channels remote`;
    } else if (operator.get(e.from).task === operator.get(e.to).task) {
      how = "fused";
    }
    const path = s("path", { d: p.d, class: "edge-line", "marker-end": "url(#arrow)" });
    const label = s("text", { x: p.mx, y: p.my - 8, class: "edge-label", "data-figure": "rate", text: "—" });
    const detail = s("text", { x: p.mx, y: p.my + 14, class: "edge-detail", text: how });
    const across = remote ? s("text", { x: p.mx, y: p.my + 26, class: "edge-detail", text: remote }) : null;
    const title = s("title", { text: `${e.stream}: ${e.from} → ${e.to}${how ? " (" + how + ")" : ""}${remote ? ", " + remote : ""}` });
    const view = s("g", { class: "edge", "data-from": e.from, "data-to": e.to, "data-stream": e.stream }, title, path, label, detail, across);
    edges.append(view);
    edgeViews.push({ edge: e, path, label, detail, how, fused: how === "fused" });
  }
  svg.append(edges);

  // The operators, with their figures and a chip per instance.
  const nodes = s("g", { class: "nodes" });
  const nodeViews = new Map();
  for (const o of info.operators) {
    const at = g.nodes.get(o.name);
    const figure = (name, y) => s("text", { x: 12, y, class: "figure", "clip-path": "url(#node-clip)", "data-figure": name, text: "" });
    const lines = [figure("rates", 50), figure("ratios", 68), figure("queue", 86)];
    const chips = s("g", { class: "chips", transform: `translate(10, ${NODE_H - 22})` });
    const task = placement.get(o.task);
    const instances = task ? task.instances : Array.from({ length: o.parallelism }, (_, i) => ({ instance: i, worker: 0 }));
    const chipViews = new Map();
    instances.slice(0, 4).forEach((inst, i) => {
      const text = multiWorker ? `#${inst.instance} w${inst.worker}` : `#${inst.instance}`;
      const rect = s("rect", { x: i * (CHIP_W + 4), y: 0, width: CHIP_W, height: 15, rx: 4 });
      const chip = s(
        "g",
        { class: "chip state-unknown", "data-instance": inst.instance, "data-worker": inst.worker },
        s("title", { text: `instance ${inst.instance} on worker ${inst.worker}` }),
        rect,
        s("text", { x: i * (CHIP_W + 4) + CHIP_W / 2, y: 11, text }),
      );
      chips.append(chip);
      chipViews.set(inst.instance, chip);
    });
    if (instances.length > 4) {
      chips.append(s("text", { x: 4 * (CHIP_W + 4) + 2, y: 11, class: "more", text: `+${instances.length - 4}` }));
    }
    const head = `${o.kind}${o.stateful ? " · stateful" : ""}${o.adjustable.length ? " · adjustable" : ""}`;
    const node = s(
      "g",
      { class: "node state-unknown", "data-operator": o.name, transform: `translate(${at.x}, ${at.y})` },
      s("title", { text: `${o.name} (${o.kind}), task ${o.task}, ${o.parallelism} instance(s)` }),
      s("rect", { width: NODE_W, height: NODE_H, rx: 8, class: "node-box" }),
      s("rect", { width: 6, height: NODE_H, rx: 3, class: "node-band" }),
      s("text", { x: 12, y: 20, class: "node-name", "clip-path": "url(#node-clip)", text: o.name }),
      s("text", { x: 12, y: 34, class: "node-kind", "clip-path": "url(#node-clip)", text: head }),
      ...lines,
      chips,
    );
    nodes.append(node);
    nodeViews.set(o.name, { node, lines, chipViews, source: o.inputs.length === 0, sink: o.outputs.length === 0 });
  }
  svg.append(nodes);
  return { nodeViews, edgeViews };
}

function setState(el, state) {
  for (const c of [...el.classList]) if (c.startsWith("state-")) el.classList.remove(c);
  el.classList.add("state-" + state);
}

/** Puts the figures of every operator (`figures`, `states`) on the drawing `view`. */
export function update(view, figures, states) {
  for (const [name, v] of view.nodeViews) {
    const f = figures.get(name);
    setState(v.node, states.get(name) || "unknown");
    if (!f) continue;
    const [rates, ratios, queue] = v.lines;
    // A source reads no stream; a sink's rows written are its rows in.
    if (v.source) rates.textContent = `out ${rate(f.rowsOutRate)} · ${count(f.rowsOut)} rows out`;
    else if (v.sink) rates.textContent = `in ${rate(f.rowsInRate)} · ${count(f.rowsIn)} rows written`;
    else rates.textContent = `in ${rate(f.rowsInRate)} · out ${rate(f.rowsOutRate)} · ${count(f.rowsOut)} out`;
    ratios.textContent = `busy ${percent(f.busy)} · backpressured ${percent(f.blocked)}`;
    const late = f.lateRows ? ` · late ${count(f.lateRows)}` : "";
    queue.textContent = `queue ${f.queue === null ? "—" : count(f.queue)} · wm lag ${f.watermarkLag === null ? "—" : duration(f.watermarkLag)}${late}`;
    for (const r of f.instances) {
      const chip = v.chipViews.get(r.instance);
      if (chip) setState(chip, instanceState(r));
    }
  }
  for (const e of view.edgeViews) {
    const from = figures.get(e.edge.from);
    const to = figures.get(e.edge.to);
    const r = from ? from.rowsOutRate : null;
    e.label.textContent = rate(r);
    // Fused operators call each other: no queue between them.
    const q = !e.fused && to && to.queue !== null ? `queue ${count(to.queue)}` : "";
    e.detail.textContent = [e.how, q].filter(Boolean).join(" · ");
    const width = r ? Math.min(7, 1.5 + Math.log10(1 + r)) : 1.5;
    e.path.setAttribute("stroke-width", width.toFixed(1));
    const held = from && from.blocked !== null && from.blocked >= BACKPRESSURED;
    e.path.classList.toggle("held", Boolean(held));
  }
}
