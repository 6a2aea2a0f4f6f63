// The live figures of a query, from two successive samples of GET …/metrics: rates per
// instance and per operator, and which operator holds the query back. Pure functions.

/** At or above this share of time busy, an operator is working flat out. */
export const BUSY = 0.5;
/** At or above this share of time blocked on a full output, an operator is held back. */
export const BACKPRESSURED = 0.3;

const key = (m) => m.operator + "#" + m.instance;

/** A sample: the figures and when they were read (ms, performance clock). */
export function sample(metrics, at) {
  const instances = new Map();
  for (const m of metrics.instances || []) instances.set(key(m), m);
  return { at, instances, metrics };
}

/** Per instance: rows/s in and out, busy and backpressured ratios, between two samples. */
export function instanceRates(previous, current) {
  const out = new Map();
  const seconds = previous ? (current.at - previous.at) / 1000 : 0;
  for (const [k, m] of current.instances) {
    const p = previous && previous.instances.get(k);
    const r = { ...m, rowsInRate: null, rowsOutRate: null, busy: null, blocked: null };
    if (p && seconds > 0) {
      const d = (a, b) => (a === null || a === undefined || b === null || b === undefined ? null : Math.max(0, a - b));
      r.rowsInRate = d(m.rows_in, p.rows_in) / seconds;
      r.rowsOutRate = d(m.rows_out, p.rows_out) / seconds;
      const busy = d(m.busy_ns, p.busy_ns);
      const blocked = d(m.blocked_ns, p.blocked_ns);
      r.busy = busy === null ? null : Math.min(1, busy / (seconds * 1e9));
      r.blocked = blocked === null ? null : Math.min(1, blocked / (seconds * 1e9));
    }
    out.set(k, r);
  }
  return out;
}

const sum = (xs) => (xs.length === 0 ? null : xs.reduce((a, b) => a + b, 0));
const max = (xs) => (xs.length === 0 ? null : Math.max(...xs));
const min = (xs) => (xs.length === 0 ? null : Math.min(...xs));
const present = (xs) => xs.filter((x) => x !== null && x !== undefined);

/**
 * Per operator: its instances' figures summed (rows, rates, queues, late rows), the largest
 * busy and backpressured ratios, the lowest watermark and its lag behind `nowMs`.
 */
export function operatorFigures(rates, nowMs) {
  const by = new Map();
  for (const r of rates.values()) {
    if (!by.has(r.operator)) by.set(r.operator, []);
    by.get(r.operator).push(r);
  }
  const out = new Map();
  for (const [name, rs] of by) {
    const watermark = min(present(rs.map((r) => r.watermark_ms)));
    out.set(name, {
      operator: name,
      instances: rs.sort((a, b) => a.instance - b.instance),
      rowsIn: sum(rs.map((r) => r.rows_in)),
      rowsOut: sum(rs.map((r) => r.rows_out)),
      rowsInRate: sum(present(rs.map((r) => r.rowsInRate))),
      rowsOutRate: sum(present(rs.map((r) => r.rowsOutRate))),
      busy: max(present(rs.map((r) => r.busy))),
      blocked: max(present(rs.map((r) => r.blocked))),
      queue: sum(present(rs.map((r) => r.queue_len))),
      watermark,
      watermarkLag: watermark === null ? null : Math.max(0, nowMs - watermark),
      lateRows: sum(present(rs.map((r) => r.late_rows))),
      stateBytes: sum(present(rs.map((r) => r.state_bytes))),
    });
  }
  return out;
}

/**
 * How each operator stands: `bottleneck` (the busiest operator working flat out that is not
 * itself held back: the one to make faster or give more instances), `busy` (flat out too),
 * `backpressured` (held back by a slower operator downstream), `idle`, or `unknown` (not
 * measured yet).
 */
export function classify(figures) {
  const state = new Map();
  let hottest = null;
  for (const f of figures.values()) {
    let s = "unknown";
    if (f.blocked !== null && f.blocked >= BACKPRESSURED) s = "backpressured";
    else if (f.busy !== null && f.busy >= BUSY) s = "busy";
    else if (f.busy !== null || f.blocked !== null) s = "idle";
    state.set(f.operator, s);
    if (s === "busy" && (hottest === null || f.busy > hottest.busy)) hottest = f;
  }
  if (hottest) state.set(hottest.operator, "bottleneck");
  return state;
}

/** The state of one instance, by the same thresholds. */
export function instanceState(r) {
  if (r.blocked !== null && r.blocked >= BACKPRESSURED) return "backpressured";
  if (r.busy !== null && r.busy >= BUSY) return "busy";
  if (r.busy !== null || r.blocked !== null) return "idle";
  return "unknown";
}
