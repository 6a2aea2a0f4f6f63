// Building the page without innerHTML: every text from the server goes in as text, never
// as markup. And the formats of figures.

const SVG = "http://www.w3.org/2000/svg";

function build(el, attrs, children) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "text") el.textContent = v;
    else if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

/** An HTML element: `h("td", {class: "n"}, "12")`. */
export function h(tag, attrs, ...children) {
  return build(document.createElement(tag), attrs, children);
}

/** An SVG element. */
export function s(tag, attrs, ...children) {
  return build(document.createElementNS(SVG, tag), attrs, children);
}

/** Replaces the children of `el`. */
export function fill(el, ...children) {
  el.replaceChildren();
  return build(el, {}, children);
}

/** 1234567 -> "1.23 M". */
export function count(n) {
  if (n === undefined || n === null || Number.isNaN(n)) return "—";
  const a = Math.abs(n);
  if (a >= 1e9) return (n / 1e9).toFixed(2) + " G";
  if (a >= 1e6) return (n / 1e6).toFixed(2) + " M";
  if (a >= 1e4) return (n / 1e3).toFixed(1) + " k";
  return String(Math.round(n));
}

/** Rows a second. */
export function rate(r) {
  if (r === undefined || r === null || Number.isNaN(r)) return "—";
  if (r > 0 && r < 10) return r.toFixed(1) + "/s";
  return count(r) + "/s";
}

/** A ratio 0..1 as a percentage. */
export function percent(x) {
  if (x === undefined || x === null || Number.isNaN(x)) return "—";
  return Math.round(x * 100) + "%";
}

/** Bytes. */
export function bytes(b) {
  if (b === undefined || b === null) return "—";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = b;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i += 1;
  }
  return (i === 0 ? String(v) : v.toFixed(1)) + " " + units[i];
}

/** Milliseconds as a short duration. */
export function duration(ms) {
  if (ms === undefined || ms === null || Number.isNaN(ms)) return "—";
  const a = Math.abs(ms);
  if (a < 1000) return Math.round(ms) + " ms";
  if (a < 60_000) return (ms / 1000).toFixed(1) + " s";
  if (a < 3_600_000) return Math.floor(ms / 60_000) + " min " + Math.round((a % 60_000) / 1000) + " s";
  if (a < 172_800_000) return (ms / 3_600_000).toFixed(1) + " h";
  return Math.round(ms / 86_400_000) + " d";
}

/** A time of day, from milliseconds since the Unix epoch. */
export function clock(ms) {
  if (!ms) return "—";
  return new Date(ms).toLocaleTimeString([], { hour12: false });
}
