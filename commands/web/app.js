// decode serve's page: plain DOM, no build step, no third-party code.
"use strict";

const $ = (sel) => document.querySelector(sel);
const state = { sessions: new Map(), current: null, stream: null, summary: null };

// el builds an element: el("li", {class: "x"}, child, "text", …).
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const k of kids.flat()) if (k !== null && k !== undefined) e.append(k instanceof Node ? k : String(k));
  return e;
}
const svg = (tag, attrs, ...kids) => {
  const e = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  for (const k of kids) e.append(k);
  return e;
};

async function api(path, opts) {
  const r = await fetch("/api/v1/" + path, opts);
  const body = await r.json().catch(() => ({ error: r.statusText }));
  if (!r.ok) throw Object.assign(new Error(body.error || r.statusText), { body });
  return body;
}

function ago(t) {
  const s = (Date.now() - new Date(t)) / 1000;
  if (s < 60) return "just now";
  if (s < 3600) return Math.round(s / 60) + " min ago";
  if (s < 86400) return Math.round(s / 3600) + " h ago";
  return Math.round(s / 86400) + " d ago";
}
const badge = (st) => el("span", { class: "badge st-" + st }, st);
const num = (n) => (n || 0).toLocaleString("en");
const plural = (n, word, words) => num(n) + " " + (n === 1 ? word : words || word + "s");

// ---- the list ----
function renderList() {
  const ul = $("#sessions");
  const want = $("#filter").value.split(",").filter(Boolean);
  ul.replaceChildren();
  const all = [...state.sessions.values()].sort((a, b) => new Date(b.created) - new Date(a.created));
  for (const s of all) {
    if (want.length && !want.includes(s.status)) continue;
    ul.append(el("li", {}, el("button", {
      type: "button", "aria-current": s.id === state.current ? "true" : "false", "data-id": s.id,
      onclick: () => select(s.id),
    }, el("span", { class: "t" }, s.title || "(no title)"),
      el("span", { class: "s" }, badge(s.status), " ", s.id, " · ", s.model || "–", " · ", ago(s.updated)))));
  }
}

function followList() {
  const es = new EventSource("/api/v1/events");
  es.addEventListener("open", () => { $("#live").textContent = "live"; $("#live").classList.add("on"); });
  es.addEventListener("error", () => { $("#live").textContent = "reconnecting…"; $("#live").classList.remove("on"); });
  es.addEventListener("session", (ev) => {
    const s = JSON.parse(ev.data);
    state.sessions.set(s.id, s);
    renderList();
    if (!state.current && !location.hash) select(s.id);
  });
  es.addEventListener("removed", (ev) => { state.sessions.delete(JSON.parse(ev.data).id); renderList(); });
}

// ---- one session ----
async function select(id) {
  if (state.stream) state.stream.close();
  state.current = id;
  history.replaceState(null, "", "#" + id);
  renderList();
  $("#empty").hidden = true;
  $("#transcript").replaceChildren();
  $("#pending").hidden = true;
  $("#code").open = false;
  $("#diff").replaceChildren();
  state.lastStatus = null;
  drawTree(id);
  loadStat(id);
  const es = new EventSource("/api/v1/sessions/" + encodeURIComponent(id) + "/events");
  state.stream = es;
  let first = true;
  es.addEventListener("entry", (ev) => {
    if (state.current !== id) return;
    addEntry(JSON.parse(ev.data), !first);
  });
  es.addEventListener("session", (ev) => {
    if (state.current !== id) return;
    const sum = JSON.parse(ev.data);
    state.summary = sum;
    state.sessions.set(sum.session.id, sum.session);
    renderHead(sum);
    renderPending(sum);
    if (!first) { loadStat(id); if (sum.session.status !== state.lastStatus) drawTree(id); }
    state.lastStatus = sum.session.status;
    first = false;
    renderList();
  });
}

function renderHead(sum) {
  const s = sum.session;
  $("#head").hidden = false;
  $("#title").replaceChildren(s.title || "(no title)", " ", badge(s.status));
  $("#meta").replaceChildren(s.id, " · ", s.model || "–", " · ", plural(s.turns, "turn"), " · ", plural(s.entries, "entry", "entries"), " · updated ", ago(s.updated),
    ...(sum.parent ? [" · forked from ", el("a", { href: "#" + sum.parent, onclick: (e) => { e.preventDefault(); select(sum.parent); } }, sum.parent), "@" + sum.at] : []));
  const box = $("#runActions");
  box.replaceChildren();
  const undecided = (sum.pending || []).filter((w) => !w.decision && w.kind !== "time");
  if (["paused", "crashed", "interrupted", "limit"].includes(s.status) && !undecided.length) {
    box.append(el("div", { class: "row" }, el("button", { type: "button", class: "primary", id: "resume", onclick: (e) => act(e.target, "resume", {}) }, "Resume run"),
      el("span", { class: "muted" }, "runs decode resume " + s.id)));
  }
  if (s.status === "running" || s.status === "paused") {
    const input = el("input", { type: "text", id: "steerText", "aria-label": "Message to steer the session", placeholder: "a message for the next step" });
    box.append(el("form", { class: "row", onsubmit: (e) => { e.preventDefault(); if (input.value.trim()) act(e.submitter, "steer", { message: input.value }).then(() => { input.value = ""; }); } },
      input, el("button", { type: "submit", class: "secondary" }, "Steer")));
  }
}

async function loadStat(id) {
  try {
    const st = await api("sessions/" + encodeURIComponent(id) + "/stat");
    if (state.current !== id) return;
    const fig = (label, v) => el("span", {}, label, " ", el("b", {}, v));
    $("#figures").replaceChildren(...[
      fig("requests", num(st.requests)), fig("tokens in", num(st.usage.input)), fig("out", num(st.usage.output)),
      st.cost_usd !== undefined ? fig("cost", "$" + st.cost_usd.toFixed(4)) : null,
      fig("tool calls", num(st.tool_calls)), fig("time", (st.wall_ms / 1000).toFixed(1) + " s"),
      st.compactions ? fig("compactions", st.compactions) : null].filter(Boolean));
    $("#codebox").hidden = !(st.code && st.code.length);
  } catch (e) { /* the stream shows the session; figures are a bonus */ }
}

$("#code").addEventListener("toggle", async () => {
  if (!$("#code").open || !state.current) return;
  try {
    const c = await api("sessions/" + encodeURIComponent(state.current) + "/code");
    $("#diff").replaceChildren(renderDiff(c.diff || "(no change)"));
  } catch (e) { $("#diff").replaceChildren(el("p", { class: "error" }, e.message)); }
});

function renderDiff(text) {
  const pre = el("pre", { class: "diff" });
  for (const line of text.replace(/\n$/, "").split("\n")) {
    let cls = "";
    if (line.startsWith("diff --git") || line.startsWith("+++") || line.startsWith("---")) cls = "file";
    else if (line.startsWith("@@")) cls = "hunk";
    else if (line.startsWith("+")) cls = "add";
    else if (line.startsWith("-")) cls = "del";
    pre.append(el("span", { class: cls }, line || " "));
  }
  return pre;
}

// ---- pending approvals ----
function renderPending(sum) {
  const box = $("#pending");
  const open = (sum.pending || []).filter((w) => !w.decision);
  const decided = (sum.pending || []).filter((w) => w.decision);
  box.hidden = !(open.length || decided.length);
  box.replaceChildren(el("h2", {}, open.length ? "Waiting for you" : "Decided, waiting for resume"));
  for (const w of sum.pending || []) {
    const what = el("pre", {}, w.name + " " + (w.args ? JSON.stringify(w.args, null, 1) : ""));
    const card = el("div", { class: "wait", "data-call": w.call_id }, el("div", {}, el("strong", {}, w.kind === "question" ? "Question" : "Tool call"), " ", el("code", {}, w.call_id)),
      w.question ? el("p", { class: "text" }, w.question) : what, w.reason ? el("p", { class: "muted" }, w.reason) : null);
    if (w.decision) {
      card.append(el("p", {}, "✓ ", w.decision.decision, w.decision.reason ? ": " + w.decision.reason : "", w.decision.answer ? ": " + w.decision.answer : ""));
    } else if (w.kind === "question") {
      const input = el("input", { type: "text", "aria-label": "Answer to " + w.call_id });
      card.append(el("form", { class: "row", onsubmit: (e) => { e.preventDefault(); act(e.submitter, "answer", { call: w.call_id, text: input.value }); } },
        input, el("button", { type: "submit", class: "primary" }, "Answer")));
    } else if (w.kind === "approval") {
      const reason = el("input", { type: "text", "aria-label": "Reason for denying " + w.call_id, placeholder: "reason (for deny)" });
      card.append(el("div", { class: "row" },
        el("button", { type: "button", class: "primary", "data-action": "approve", onclick: (e) => act(e.target, "approve", { call: w.call_id }) }, "Approve"),
        reason,
        el("button", { type: "button", class: "danger", "data-action": "deny", onclick: (e) => act(e.target, "deny", { call: w.call_id, reason: reason.value }) }, "Deny")));
    } else {
      card.append(el("p", { class: "muted" }, "waits until " + w.until));
    }
    box.append(card);
  }
  box.append(el("p", { class: "error", id: "actionError", role: "alert" }));
}

async function act(button, action, body) {
  if (button) button.disabled = true;
  const err = $("#actionError") || $("#runActions");
  try {
    await api("sessions/" + encodeURIComponent(state.current) + "/" + action, {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
    });
    if ($("#actionError")) $("#actionError").textContent = "";
  } catch (e) {
    if (err) err.textContent = e.message;
  } finally {
    if (button) button.disabled = false;
  }
}

// ---- the transcript ----
const calls = new Map(); // call id → the <details> of its call

function addEntry(e, isNew) {
  const d = e.data || {};
  let li;
  const step = (...parts) => el("span", { class: "step" }, parts.filter(Boolean).join(" · "));
  switch (e.type) {
    case "user":
      li = el("li", { class: "user" }, el("span", { class: "who" }, "you"), el("span", { class: "text" }, d.text));
      break;
    case "assistant": {
      const u = d.usage || {};
      li = el("li", { class: "assistant" }, el("span", { class: "who" }, "model"),
        step(num(u.input) + " in", num(u.output) + " out", d.cost ? "$" + d.cost.toFixed(4) : "", d.ms ? (d.ms / 1000).toFixed(1) + " s" : ""),
        d.message && d.message.text ? el("div", { class: "text" }, d.message.text) : null);
      break;
    }
    case "tool_call": {
      const args = d.args ? JSON.stringify(d.args) : "";
      const det = el("details", {}, el("summary", {}, el("code", {}, d.name), " ", args.length > 90 ? args.slice(0, 90) + "…" : args,
        d.decision === "deny" ? el("span", { class: "error" }, " denied: " + (d.reason || "")) : ""),
        el("pre", {}, JSON.stringify(d.args, null, 2)));
      calls.set(d.call_id, det);
      li = el("li", { class: "tool" }, det);
      break;
    }
    case "tool_result": {
      const det = calls.get(d.call_id);
      const out = el("div", {}, el("span", { class: "who" }, d.is_error ? "error" : "output"), step(d.ms ? d.ms + " ms" : ""), el("pre", {}, d.content || "(no output)"));
      if (det) { det.append(out); if (d.is_error) det.parentElement.classList.add("err"); return; }
      li = el("li", { class: d.is_error ? "err" : "" }, el("details", {}, el("summary", {}, "result of ", el("code", {}, d.name || d.call_id)), out));
      break;
    }
    case "approval_request":
      li = el("li", { class: "pause" }, el("strong", {}, "Paused"), " — waits for ", d.kind, ": ", el("code", {}, d.name), " ", d.question || "");
      break;
    case "approval":
      li = el("li", { class: "pause" }, d.decision === "deny" ? "✗ " : "✓ ", d.decision, " ", el("code", {}, d.call_id), d.reason ? " — " + d.reason : "", d.answer ? " — " + d.answer : "");
      break;
    case "end":
      li = el("li", { class: d.status === "done" ? "" : "pause" }, "■ run ended: ", badge(d.status), step("exit " + d.exit, d.ms ? (d.ms / 1000).toFixed(1) + " s" : ""));
      break;
    case "fork":
      li = el("li", {}, el("strong", {}, d.replay ? "Replay" : "Fork"), d.replay ? " of " : " of ", el("code", {}, d.from + "@" + d.at), d.model ? " on " + d.model : "");
      break;
    case "compaction":
      li = el("li", {}, "⇊ compaction (", d.trigger || "", ", ", d.strategy || "", ")");
      break;
    case "error": case "limit": case "interrupted":
      li = el("li", { class: "err" }, e.type, ": ", d.message || d.reason || (d.limit ? d.limit + " " + d.value : ""));
      break;
    case "steer":
      li = el("li", { class: "user" }, el("span", { class: "who" }, "steer"), el("span", { class: "text" }, d.text || JSON.stringify(d)));
      break;
    case "snapshot": case "start":
      return; // the figures and the code section show these
    default:
      li = el("li", {}, el("details", {}, el("summary", {}, e.type), el("pre", {}, JSON.stringify(d, null, 2))));
  }
  li.id = "e" + e.id;
  li.dataset.type = e.type;
  if (isNew) li.classList.add("new");
  $("#transcript").append(li);
}

// ---- the tree ----
async function drawTree(id) {
  let t;
  try { t = await api("sessions/" + encodeURIComponent(id) + "/tree"); } catch (e) { return; }
  if (state.current !== id) return;
  const box = $("#tree");
  $("#treebox").hidden = false;
  const kids = new Map();
  for (const n of t.nodes) if (n.parent) (kids.get(n.parent) || kids.set(n.parent, []).get(n.parent)).push(n);
  // depth-first layout: each leaf gets a row, a parent sits on its first child's row.
  const pos = new Map();
  let row = 0;
  const place = (n, depth) => {
    const cs = kids.get(n.id) || [];
    pos.set(n.id, { x: depth, y: row });
    if (!cs.length) { row++; return; }
    for (const c of cs) place(c, depth + 1);
  };
  const root = t.nodes.find((n) => n.id === t.root) || t.nodes[0];
  place(root, 0);
  const W = 230, H = 58, gx = 40, gy = 14;
  const width = (Math.max(...[...pos.values()].map((p) => p.x)) + 1) * (W + gx);
  const height = row * (H + gy);
  const g = svg("svg", { viewBox: `0 0 ${width} ${height}`, width, height, role: "img", "aria-label": "Tree of forks and replays: " + t.nodes.length + " sessions" });
  const xy = (id) => { const p = pos.get(id); return [p.x * (W + gx), p.y * (H + gy)]; };
  for (const n of t.nodes) {
    if (!n.parent || !pos.has(n.parent)) continue;
    const [px, py] = xy(n.parent), [cx, cy] = xy(n.id);
    g.append(svg("path", { class: n.replay ? "replay" : "", d: `M${px + W} ${py + H / 2} C${px + W + gx / 2} ${py + H / 2} ${cx - gx / 2} ${cy + H / 2} ${cx} ${cy + H / 2}` }));
  }
  for (const n of t.nodes) {
    if (!pos.has(n.id)) continue;
    const [x, y] = xy(n.id);
    const label = (n.title || "(no title)").slice(0, 30);
    const marks = [n.replay ? "replay" : n.parent ? "fork @" + n.at : "root", n.status, n.compactions ? plural(n.compactions, "compaction") : "", n.pauses ? plural(n.pauses, "pause") : ""].filter(Boolean).join(" · ");
    const a = svg("a", { class: n.id === id ? "cur" : "", tabindex: "0", role: "link", "aria-label": `${n.id} ${n.title} (${marks})`, "data-id": n.id },
      svg("rect", { x, y, width: W, height: H, rx: 8 }),
      svg("text", { x: x + 10, y: y + 20 }, document.createTextNode(label)),
      svg("text", { x: x + 10, y: y + 38, class: "sub" }, document.createTextNode(n.id + " · " + n.status)),
      svg("text", { x: x + 10, y: y + 52, class: "sub" }, document.createTextNode(marks.replace(n.status + " · ", "").replace(" · " + n.status, ""))));
    a.addEventListener("click", () => select(n.id));
    a.addEventListener("keydown", (ev) => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); select(n.id); } });
    g.append(a);
  }
  box.replaceChildren(g);
}

$("#filter").addEventListener("change", renderList);
window.addEventListener("hashchange", () => { const id = location.hash.slice(1); if (id && id !== state.current) select(id); });
followList();
if (location.hash.length > 1) select(location.hash.slice(1));
