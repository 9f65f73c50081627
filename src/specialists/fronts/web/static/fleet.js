// specialists web, fleet page: rows kept by key, patched from the server's diffs (SSE).
"use strict";
const token = new URLSearchParams(location.search).get("token") || "";
const q = "?token=" + encodeURIComponent(token);
const rows = new Map();   // key -> row
const trs = new Map();    // key -> <tr>
let order = [];           // [key, depth, prefix]
let skew = 0;             // server clock minus ours, ms
const tbody = document.querySelector("#fleet tbody");

function dur(s) {
  s = Math.max(0, Math.floor(s));
  if (s < 3600) return Math.floor(s / 60) + "m" + String(s % 60).padStart(2, "0") + "s";
  return Math.floor(s / 3600) + "h" + String(Math.floor((s % 3600) / 60)).padStart(2, "0") + "m";
}
function compact(n) {
  if (n < 1000) return String(n);
  if (n < 1e6) return (n / 1000).toFixed(1) + "k";
  return (n / 1e6).toFixed(1) + "M";
}
function money(x) { return x > 0 ? "$" + (x < 10 ? x.toFixed(4) : x.toFixed(2)) : ""; }
// What a row spent: a workflow's with its children's (`rollup`, marked Σ), else its own.
function spent(r) {
  if (!r.rollup) return [r.tokens_in, r.tokens_out, r.cost_usd, ""];
  const t = r.rollup.tokens;
  return [t.input + t.cache_read + t.cache_write, t.output, r.rollup.cost_usd, "Σ "];
}
// What the row is: a workflow child by its key; another job as its specialist and task.
function what(r) {
  const cell = el("td", "what", r.name);
  if (!r.workflow_key && r.task && r.task !== r.name) cell.append(el("span", "task", " " + r.task));
  return cell;
}
function elapsed(r) {
  if (r.active && r.started_at_ms) return (Date.now() + skew - r.started_at_ms) / 1000;
  return r.elapsed_s;
}
function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}
function draw(key, prefix) {
  const r = rows.get(key);
  let tr = trs.get(key);
  if (!tr) { tr = el("tr"); tr.dataset.key = key; trs.set(key, tr); }
  tr.replaceChildren();
  tr.className = r.active ? "active" : "finished";
  const job = el("td", "job");
  job.append(el("span", "guide", prefix));
  if (r.job_id) {
    const a = el("a", "", r.job_id);
    a.href = "/job/" + r.job_id + q;
    job.append(a);
  } else job.append(document.createTextNode(key.split(":").pop()));
  const flags = el("td");
  for (const f of r.flags) flags.append(el("span", "flag " + f, f));
  const [tin, tout, cost, mark] = spent(r);
  tr.append(job, what(r), el("td", "st st-" + r.status, r.status), flags,
    el("td", "num elapsed", r.started_at_ms || r.elapsed_s ? dur(elapsed(r)) : ""),
    el("td", "num", tin || tout ? mark + compact(tin) + " / " + compact(tout) : ""),
    el("td", "num", cost ? mark + money(cost) : ""), el("td", "activity", r.activity));
  return tr;
}
function apply(msg) {
  skew = msg.now_ms - Date.now();
  for (const r of msg.upsert) rows.set(r.key, r);
  for (const k of msg.remove) { rows.delete(k); const tr = trs.get(k); if (tr) tr.remove(); trs.delete(k); }
  if (msg.order) {
    order = msg.order;
    const frag = document.createDocumentFragment();
    for (const [key, , prefix] of order) frag.append(draw(key, prefix));
    tbody.replaceChildren(frag);
  } else {
    const prefixes = new Map(order.map(([k, , p]) => [k, p]));
    for (const r of msg.upsert) draw(r.key, prefixes.get(r.key) || "");
  }
  const t = msg.totals;
  document.getElementById("totals").textContent =
    `${t.active} active · ${t.finished} finished` + (t.damaged ? ` · ${t.damaged} damaged` : "") + (t.timers ? ` · ${t.timers} timers` : "") +
    (t.attention ? ` · ${t.attention} need attention` : "") +
    ` · tokens ${compact(t.tokens_in)} / ${compact(t.tokens_out)} · ${money(t.cost_usd) || "$0"}`;
  document.getElementById("empty").hidden = rows.size > 0;
}
setInterval(() => {
  for (const [key, r] of rows) {
    if (!r.active) continue;
    const cell = trs.get(key) && trs.get(key).querySelector(".elapsed");
    if (cell && r.started_at_ms) cell.textContent = dur(elapsed(r));
  }
}, 1000);
const conn = document.getElementById("conn");
const es = new EventSource("/api/fleet/stream" + q);
es.addEventListener("fleet", (e) => apply(JSON.parse(e.data)));
es.onopen = () => { conn.className = "live"; conn.textContent = "live"; };
es.addEventListener("problem", (e) => {  // the store cannot be read (or, with "", it can again)
  const text = JSON.parse(e.data).text;
  conn.className = text ? "down" : "live"; conn.textContent = text || "live";
});
es.onerror = () => { conn.className = "down"; conn.textContent = "reconnecting"; };
