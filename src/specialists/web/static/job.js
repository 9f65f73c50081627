// specialists web, job page: the job's feed live (SSE), its timeline, its result when done.
"use strict";
const token = new URLSearchParams(location.search).get("token") || "";
const q = "?token=" + encodeURIComponent(token);
const jobId = document.body.dataset.job;
const feed = document.getElementById("feed");
const conn = document.getElementById("conn");

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}
function compact(n) {
  if (n < 1000) return String(n);
  if (n < 1e6) return (n / 1000).toFixed(1) + "k";
  return (n / 1e6).toFixed(1) + "M";
}
function showRow(r) {
  const parts = [r.title, r.status];
  if (r.model) parts.push(r.model);
  if (r.tokens_in || r.tokens_out) parts.push(`tokens ${compact(r.tokens_in)} / ${compact(r.tokens_out)}`);
  if (r.cost_usd) parts.push("$" + r.cost_usd.toFixed(4));
  if (r.rollup) {
    const t = r.rollup.tokens;
    parts.push(`with its ${r.rollup.jobs - 1} children: tokens ${compact(t.input + t.cache_read + t.cache_write)} / ` +
      `${compact(t.output)}` + (r.rollup.cost_usd ? " · $" + r.rollup.cost_usd.toFixed(4) : ""));
  }
  if (r.activity) parts.push(r.activity);
  if (r.flags.length) parts.push("⚠ " + r.flags.join(", "));
  const s = document.getElementById("summary");
  s.textContent = parts.join(" · ");
  s.className = "st-" + r.status;
  document.getElementById("status").textContent = r.status;
}
async function refreshTimeline() {
  const res = await fetch("/api/job/" + jobId + "/timeline.svg" + q);
  if (res.ok) document.getElementById("timeline").innerHTML = await res.text();  // server-escaped SVG
  const graph = document.getElementById("graph");
  if (!graph) return;  // not a workflow
  const stages = await fetch("/api/job/" + jobId + "/graph.svg" + q);
  if (stages.ok) graph.innerHTML = await stages.text();  // server-escaped SVG
}
async function loadResult() {
  const res = await fetch("/api/job/" + jobId + "/result" + q);
  if (!res.ok) return;
  document.getElementById("result").textContent = await res.text();
  document.getElementById("result-box").hidden = false;
}
const es = new EventSource("/api/job/" + jobId + "/feed" + q);
es.addEventListener("row", (e) => showRow(JSON.parse(e.data)));
es.addEventListener("ev", (e) => {
  const ev = JSON.parse(e.data);
  const line = el("div", "line");
  const kind = "k k-" + String(ev.event || "").replace(/[^a-z_]/g, "") + (ev.kind === "tool failed" ? " k-error" : "");
  line.append(el("span", "t", ev.clock + " "), el("span", kind, ev.kind), " " + ev.detail);
  const atEnd = feed.scrollTop + feed.clientHeight >= feed.scrollHeight - 4;
  feed.append(line);
  while (feed.childElementCount > 2000) feed.firstElementChild.remove();
  if (atEnd) feed.scrollTop = feed.scrollHeight;
});
es.addEventListener("end", () => {
  es.close();
  conn.className = ""; conn.textContent = "finished";
  refreshTimeline(); loadResult();
});
es.onopen = () => { conn.className = "live"; conn.textContent = "live"; };
es.onerror = () => { if (es.readyState !== 2) { conn.className = "down"; conn.textContent = "reconnecting"; } };
const timer = setInterval(() => { if (es.readyState === 2) clearInterval(timer); else refreshTimeline(); }, 2000);
loadResult();
