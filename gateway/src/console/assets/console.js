// The operator's console: plain JavaScript over the admin API (/api/v1/, docs/api.md).
// Every string from the server goes into the page as text (textContent), never as markup.
"use strict";

const state = { token: sessionStorage.getItem("rc-token") || "", tab: "cluster", stream: null,
  frame: null, statics: null, follow: "", selected: null, role: "" };

function $(id) { return document.getElementById(id); }

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

function row(cells, cls) {
  const tr = el("tr", null, cls);
  for (const c of cells) tr.appendChild(c instanceof Node ? c : el("td", c));
  return tr;
}

function fill(tbody, rows) {
  tbody.replaceChildren(...rows);
}

function when(ms) {
  return ms ? new Date(ms).toISOString().replace("T", " ").slice(0, 19) : "";
}

async function api(method, path, body) {
  const opts = { method, headers: { Authorization: "Bearer " + state.token } };
  if (body !== undefined) {
    opts.headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(body);
  }
  const r = await fetch("/api/v1" + path, opts);
  let data = null;
  try { data = await r.json(); } catch (_) { data = null; }
  if (!r.ok) {
    const msg = data && data.error ? data.error : r.status + " " + r.statusText;
    throw new Error(msg);
  }
  return data;
}

// ----- sign in and tabs -------------------------------------------------------------------

async function signIn(token) {
  state.token = token;
  const me = await api("GET", "/whoami");
  sessionStorage.setItem("rc-token", token);
  state.role = me.role;
  $("who").textContent = me.name + " (" + me.role + ")";
  $("login").hidden = true;
  $("tabs").hidden = false;
  show(state.tab);
}

function show(tab) {
  state.tab = tab;
  for (const b of document.querySelectorAll("nav button")) b.classList.toggle("active", b.dataset.tab === tab);
  for (const s of document.querySelectorAll("section.tab")) s.hidden = s.id !== tab;
  if (tab !== "map") stopStream();
  if (tab === "cluster") loadCluster();
  if (tab === "map") loadInstances();
  if (tab === "players") loadPlayers();
  if (tab === "chat") loadChat();
  if (tab === "audit") loadAudit();
  if (tab === "errors") loadErrors();
}

// ----- cluster ----------------------------------------------------------------------------

async function loadCluster() {
  try {
    const c = await api("GET", "/cluster");
    $("cluster-summary").textContent = c.nodes.length + " nodes, " + c.sessions.in_game +
      " players in game, " + c.sessions.connected + " connections" +
      (c.locked ? ", LOCKED: " + (c.lock_reason || "") : "") +
      (c.shutdown_at_ms ? ", SHUTDOWN at " + when(c.shutdown_at_ms) : "") +
      (c.unplaced.length ? ", " + c.unplaced.length + " instances unplaced" : "");
    const rows = [];
    for (const n of c.nodes) {
      const drain = el("button", n.draining ? "draining" : "drain");
      drain.disabled = n.draining;
      drain.dataset.node = n.id;
      drain.addEventListener("click", () => drainNode(n.id));
      const nodeCell = el("td", n.id + " (" + n.players + " players, heartbeat " + n.last_heartbeat_ms_ago + " ms ago) ");
      nodeCell.appendChild(drain);
      nodeCell.colSpan = 12;
      rows.push(row([nodeCell], "node-row"));
      for (const i of n.instances) {
        const open = el("button", "map");
        open.addEventListener("click", () => { state.pick = i.area + "#" + i.instance; show("map"); });
        const td = el("td"); td.appendChild(open);
        rows.push(row(["", i.area, i.instance, i.players, i.npcs, (i.tick_p50_ms || 0).toFixed(2),
          i.tick_p99_ms.toFixed(2), i.tick_age_ms, (i.handoffs || 0) + (i.handoffs_failed ? " (" + i.handoffs_failed + " failed)" : ""),
          i.errors || 0, i.stuck ? "STUCK" : "ok", td]));
      }
      if (!n.instances.length) rows.push(row(["", "", "", 0, 0, "", "", "", "", "", n.draining ? "draining" : "idle", ""]));
    }
    fill($("cluster-table").tBodies[0], rows);
  } catch (e) {
    $("cluster-summary").textContent = "error: " + e.message;
  }
  if (state.tab === "cluster") setTimeout(() => { if (state.tab === "cluster") loadCluster(); }, 2000);
}

async function drainNode(node) {
  const out = $("cluster-result");
  if (!window.confirm("Drain " + node + "? Its players move to the other nodes, and it takes nothing new until it restarts.")) return;
  try {
    const r = await api("POST", "/nodes/" + encodeURIComponent(node) + "/drain", {});
    out.className = "ok"; out.textContent = r.result;
  } catch (e) {
    out.className = "error"; out.textContent = e.message;
  }
}

// ----- live map ---------------------------------------------------------------------------

async function loadInstances() {
  const sel = $("map-instance");
  try {
    const list = await api("GET", "/instances");
    const keep = state.pick || sel.value;
    sel.replaceChildren(...list.map((i) => {
      const o = el("option", i.area + " #" + i.instance + " (" + i.players + " players, " + i.npcs + " NPCs)");
      o.value = i.area + "#" + i.instance;
      return o;
    }));
    if (keep) sel.value = keep;
    else if (list.length) {
      // The busiest instance first.
      const busiest = list.reduce((a, b) => (b.players > a.players ? b : a));
      sel.value = busiest.area + "#" + busiest.instance;
    }
    state.pick = null;
    if (sel.value) startStream(sel.value);
  } catch (e) {
    $("map-status").textContent = "error: " + e.message;
  }
}

function stopStream() {
  if (state.stream) state.stream.abort();
  state.stream = null;
}

// Server-sent events read through fetch (EventSource cannot send the token).
async function startStream(key) {
  stopStream();
  const cut = key.lastIndexOf("#");
  const area = key.slice(0, cut), instance = key.slice(cut + 1);
  const ctl = new AbortController();
  state.stream = ctl;
  state.statics = null;
  $("map-status").textContent = "connecting…";
  try {
    const r = await fetch("/api/v1/instances/" + encodeURIComponent(area) + "/" + instance + "/stream",
      { headers: { Authorization: "Bearer " + state.token }, signal: ctl.signal });
    if (!r.ok) { $("map-status").textContent = "error: " + r.status; return; }
    const reader = r.body.getReader();
    const dec = new TextDecoder();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      let at;
      while ((at = buf.indexOf("\n\n")) >= 0) {
        const block = buf.slice(0, at);
        buf = buf.slice(at + 2);
        let event = "message", data = "";
        for (const line of block.split("\n")) {
          if (line.startsWith("event:")) event = line.slice(6).trim();
          else if (line.startsWith("data:")) data += line.slice(5).trimStart();
        }
        onMapEvent(event, data);
      }
    }
  } catch (e) {
    if (e.name !== "AbortError") $("map-status").textContent = "stream ended: " + e.message;
  }
}

function onMapEvent(event, data) {
  if (event === "map") {
    const f = JSON.parse(data);
    if (f.statics) state.statics = f.statics;
    state.frame = f;
    $("map-status").textContent = f.actors.length + " actors, " + f.items.length + " items, " + when(f.at_ms);
    followPlayer();
    drawMap();
    listActors();
  } else if (event === "gone") {
    $("map-status").textContent = data;
    // The player may have moved on: look again.
    if (state.follow) setTimeout(followPlayer, 1000);
  } else if (event === "slow") {
    $("map-status").textContent = data;
  }
}

// Following a player across handoffs: when he is no longer in this instance, find where he is.
async function followPlayer() {
  const name = state.follow.trim().toLowerCase();
  if (!name) return;
  const here = state.frame && state.frame.actors.some((a) => a.kind === "player" && a.name.toLowerCase() === name);
  if (here) return;
  try {
    const c = await api("GET", "/characters/" + encodeURIComponent(state.follow.trim()));
    if (c.online) {
      const key = c.area + "#" + c.instance;
      if ($("map-instance").value !== key) {
        state.pick = key;
        loadInstances();
      }
    }
  } catch (_) { /* not found: keep the view */ }
}

function bounds(f) {
  const pts = [];
  for (const a of f.actors) pts.push([a.x, a.z]);
  for (const i of f.items) pts.push([i.x, i.z]);
  const s = state.statics || {};
  for (const k of ["portals", "triggers", "waypoints"]) for (const p of s[k] || []) pts.push([p.x, p.z]);
  if (!pts.length) pts.push([0, 0]);
  let [x0, z0, x1, z1] = [Infinity, Infinity, -Infinity, -Infinity];
  for (const [x, z] of pts) { x0 = Math.min(x0, x); x1 = Math.max(x1, x); z0 = Math.min(z0, z); z1 = Math.max(z1, z); }
  const pad = Math.max(20, (x1 - x0) * 0.05, (z1 - z0) * 0.05);
  return [x0 - pad, z0 - pad, x1 + pad, z1 + pad];
}

function drawMap() {
  const f = state.frame;
  const cv = $("map-canvas");
  const g = cv.getContext("2d");
  g.fillStyle = "#1e2b1e";
  g.fillRect(0, 0, cv.width, cv.height);
  if (!f) return;
  const [x0, z0, x1, z1] = bounds(f);
  const scale = Math.min(cv.width / (x1 - x0), cv.height / (z1 - z0));
  // The area's plane seen from above: x to the right, z up.
  const px = (x) => (x - x0) * scale;
  const pz = (z) => cv.height - (z - z0) * scale;
  state.project = { px, pz };
  const s = state.statics || {};
  g.strokeStyle = "#555";
  for (const w of s.waypoints || []) {
    for (const n of [w.next_a, w.next_b]) {
      const t = (s.waypoints || []).find((o) => o.index === n);
      if (t) { g.beginPath(); g.moveTo(px(w.x), pz(w.z)); g.lineTo(px(t.x), pz(t.z)); g.stroke(); }
    }
  }
  const dot = (x, z, r, color) => { g.fillStyle = color; g.beginPath(); g.arc(px(x), pz(z), r, 0, 7); g.fill(); };
  for (const w of s.waypoints || []) dot(w.x, w.z, 2, "#9e9e9e");
  for (const t of s.triggers || []) {
    g.strokeStyle = "#81c784"; g.beginPath(); g.arc(px(t.x), pz(t.z), Math.max(3, t.size * scale), 0, 7); g.stroke();
  }
  for (const p of s.portals || []) dot(p.x, p.z, 5, "#ba68c8");
  for (const i of f.items) dot(i.x, i.z, 3, "#ffd54f");
  const follow = state.follow.trim().toLowerCase();
  for (const a of f.actors) {
    const me = a.kind === "player" && a.name.toLowerCase() === follow;
    dot(a.x, a.z, me ? 6 : 4, a.kind === "player" ? "#4fc3f7" : "#ef5350");
    if (me) { g.strokeStyle = "#fff"; g.beginPath(); g.arc(px(a.x), pz(a.z), 9, 0, 7); g.stroke(); }
  }
}

function listActors() {
  const f = state.frame;
  // Players first (the ones an operator looks for), then NPCs; at most 500 rows (the map
  // draws them all).
  const shown = f.actors.filter((a) => a.kind === "player").concat(f.actors.filter((a) => a.kind !== "player")).slice(0, 500);
  const rows = shown.map((a) => row([a.runtime_id, a.name, a.kind, a.level,
    a.health + "/" + a.health_max, a.x.toFixed(1), a.y.toFixed(1), a.z.toFixed(1)]));
  fill($("map-actors").tBodies[0], rows);
}

function hover(ev) {
  const f = state.frame, tip = $("map-tip");
  if (!f || !state.project) return;
  const cv = $("map-canvas");
  const r = cv.getBoundingClientRect();
  const mx = (ev.clientX - r.left) * (cv.width / r.width), my = (ev.clientY - r.top) * (cv.height / r.height);
  let best = null, bd = 100;
  for (const a of f.actors) {
    const dx = state.project.px(a.x) - mx, dy = state.project.pz(a.z) - my;
    const d = dx * dx + dy * dy;
    if (d < bd) { bd = d; best = a; }
  }
  if (!best) { tip.hidden = true; return; }
  tip.textContent = best.name + " (" + best.kind + ", RuntimeID " + best.runtime_id + ")\nlevel " +
    best.level + ", health " + best.health + "/" + best.health_max + "\n" +
    best.x.toFixed(1) + ", " + best.y.toFixed(1) + ", " + best.z.toFixed(1);
  tip.style.left = (ev.clientX - r.left + 12) + "px";
  tip.style.top = (ev.clientY - r.top + 12) + "px";
  tip.hidden = false;
}

// ----- players ----------------------------------------------------------------------------

async function loadPlayers() {
  try {
    const list = await api("GET", "/players?q=" + encodeURIComponent($("players-q").value));
    fill($("players-table").tBodies[0], list.map((p) => {
      const status = [p.dm ? "DM" : "", p.banned ? "banned" + (p.ban_until_ms ? " until " + when(p.ban_until_ms) : "") : "",
        p.mute_until_ms > Date.now() ? "muted until " + when(p.mute_until_ms) : ""].filter(Boolean).join(", ");
      const tr = row([p.account, p.character, p.online ? "yes" : "", p.area + " #" + p.instance, p.level, status], "clickable");
      tr.addEventListener("click", () => openCharacter(p.character, p.account));
      return tr;
    }));
  } catch (e) {
    fill($("players-table").tBodies[0], [row(["error: " + e.message])]);
  }
}

async function openCharacter(name, account, keepResult) {
  state.selected = { name, account };
  $("character").hidden = false;
  $("character-name").textContent = (name || "(no character)") + " — account " + account;
  if (!keepResult) $("act-result").textContent = "";
  if (!name) { $("character-detail").replaceChildren(); return; }
  loadBackups();
  try {
    const c = await api("GET", "/characters/" + encodeURIComponent(name));
    renderCharacter(c);
  } catch (e) {
    $("character-detail").replaceChildren(el("p", "error: " + e.message, "error"));
  }
}

// A character's record as tables: where and what it is, then attributes, inventory,
// quests and effects. Every value goes in as text.
function renderCharacter(c) {
  const parts = [];
  const facts = [
    ["Online", c.online ? "yes" + (c.node ? " (node " + c.node + ")" : "") : "no"],
    ["Where", c.area + " #" + c.instance + " at " + [c.x, c.y, c.z].map((v) => Number(v).toFixed(1)).join(", ")],
    ["Level", c.level + " (" + c.xp + " XP)"],
    ["Gold", c.gold],
    ["Reputation", c.reputation],
    ["Health", c.live && c.live.health_max ? c.live.health + "/" + c.live.health_max : ""],
    ["RuntimeID", c.live && c.live.runtime_id !== undefined ? c.live.runtime_id : ""],
    ["Last login", when(c.last_login_ms)],
    ["DM", c.dm ? "yes" : "no"],
    ["Banned", c.banned ? (c.ban_until_ms ? "until " + when(c.ban_until_ms) : "for good") + (c.ban_reason ? ": " + c.ban_reason : "") : "no"],
    ["Muted", c.mute_until_ms > Date.now() ? "until " + when(c.mute_until_ms) + (c.mute_reason ? ": " + c.mute_reason : "") : "no"],
  ];
  parts.push(table(["", ""], facts.map(([k, v]) => [k, v]), "facts"));
  parts.push(el("h4", "Attributes"));
  parts.push(table(["Attribute", "Value", "Max"], (c.attributes || []).map((a) => [a.name, a.value, a.max])));
  parts.push(el("h4", "Inventory"));
  parts.push(table(["Slot", "Item", "Amount", "Health"], (c.inventory || []).map((i) => [i.slot, i.name + " (" + i.item + ")", i.amount, i.health])));
  parts.push(el("h4", "Quests"));
  parts.push(table(["Quest", "Status"], (c.quests || []).map((q) => [q.name, q.status])));
  parts.push(el("h4", "Effects"));
  parts.push(table(["Effect", "Remaining (s)"], (c.effects || []).map((e) => [e.name, (e.remaining_ms / 1000).toFixed(0)])));
  $("character-detail").replaceChildren(...parts);
}

function table(head, rows, cls) {
  const t = el("table", null, cls);
  if (head.some((h) => h)) {
    const th = el("thead");
    th.appendChild(row(head.map((h) => el("th", h))));
    t.appendChild(th);
  }
  const tb = el("tbody");
  tb.replaceChildren(...(rows.length ? rows.map((r) => row(r)) : [row(["(none)"])]));
  t.appendChild(tb);
  return t;
}

async function loadBackups() {
  try {
    const list = await api("GET", "/backups");
    $("restore-backup").replaceChildren(...list.map((b) => {
      const o = el("option", b.name + " (" + when(b.modified_ms) + ", " + Math.round(b.bytes / 1024) + " KiB)");
      o.value = b.name;
      return o;
    }));
  } catch (e) {
    $("act-result").className = "error"; $("act-result").textContent = e.message;
  }
}

async function restoreCharacter() {
  const s = state.selected, out = $("act-result");
  if (!s || !s.name) return;
  const backup = $("restore-backup").value;
  if (!backup) { out.className = "error"; out.textContent = "no backup chosen (make one under Maintenance)"; return; }
  if (!window.confirm("Restore " + s.name + " as " + backup + " holds it? What it has now is replaced.")) return;
  try {
    const r = await api("POST", "/characters/" + encodeURIComponent(s.name) + "/restore", { backup });
    out.className = "ok"; out.textContent = r.result;
  } catch (e) {
    out.className = "error"; out.textContent = e.message;
  }
  openCharacter(s.name, s.account, true);
}

async function act(verb) {
  const s = state.selected;
  if (!s) return;
  const reason = $("act-reason").value, minutes = Number($("act-minutes").value || 0);
  let path, body;
  switch (verb) {
    case "kick": path = "/players/" + encodeURIComponent(s.name) + "/kick"; body = { reason }; break;
    case "message": path = "/players/" + encodeURIComponent(s.name) + "/message"; body = { text: reason }; break;
    case "warp": path = "/players/" + encodeURIComponent(s.name) + "/warp";
      body = { area: $("act-area").value, instance: Number($("act-instance").value || 0) }; break;
    case "mute": path = "/accounts/" + encodeURIComponent(s.account) + "/mute"; body = { minutes, reason }; break;
    case "ban": path = "/accounts/" + encodeURIComponent(s.account) + "/ban"; body = { minutes, reason }; break;
    default: path = "/accounts/" + encodeURIComponent(s.account) + "/" + verb; body = {};
  }
  const out = $("act-result");
  try {
    const r = await api("POST", path, body);
    out.className = "ok"; out.textContent = r.result;
  } catch (e) {
    out.className = "error"; out.textContent = e.message;
  }
  openCharacter(s.name, s.account, true);
}

// ----- logs -------------------------------------------------------------------------------

async function loadChat() {
  const q = "?player=" + encodeURIComponent($("chat-player").value) + "&q=" + encodeURIComponent($("chat-q").value);
  try {
    const lines = await api("GET", "/chat" + q);
    fill($("chat-table").tBodies[0], lines.map((l) => row([when(l.at_ms), l.character,
      l.area + " #" + l.instance, (l.muted ? "[muted] " : "") + l.text])));
  } catch (e) {
    fill($("chat-table").tBodies[0], [row(["error: " + e.message])]);
  }
}

async function loadErrors() {
  try {
    const list = await api("GET", "/script-errors?q=" + encodeURIComponent($("errors-q").value));
    fill($("errors-table").tBodies[0], list.map((e) => row([when(e.at_ms), e.area + " #" + e.instance, e.node,
      e.script + "." + e.func, e.file + ":" + e.line, e.kind, e.message])));
  } catch (e) {
    fill($("errors-table").tBodies[0], [row(["error: " + e.message])]);
  }
}

async function loadAudit() {
  try {
    const list = await api("GET", "/audit?q=" + encodeURIComponent($("audit-q").value));
    fill($("audit-table").tBodies[0], list.map((a) => row([a.id, when(a.at_ms), a.operator, a.role,
      a.action, a.target, (a.ok ? "" : "FAILED: ") + a.result])));
  } catch (e) {
    fill($("audit-table").tBodies[0], [row(["error: " + e.message])]);
  }
}

async function maintenance(path, body) {
  const out = $("maintenance-result");
  try {
    const r = await api("POST", path, body);
    out.className = "ok"; out.textContent = r.result;
  } catch (e) {
    out.className = "error"; out.textContent = e.message;
  }
}

// ----- wiring -----------------------------------------------------------------------------

function on(id, event, f) { $(id).addEventListener(event, (e) => { e.preventDefault(); f(e); }); }

document.addEventListener("DOMContentLoaded", () => {
  on("login-form", "submit", async () => {
    try { await signIn($("token").value.trim()); $("login-error").textContent = ""; }
    catch (e) { $("login-error").textContent = e.message; }
  });
  for (const b of document.querySelectorAll("nav button")) b.addEventListener("click", () => show(b.dataset.tab));
  on("map-form", "submit", () => { state.follow = $("map-follow").value; followPlayer(); startStream($("map-instance").value); });
  $("map-instance").addEventListener("change", () => startStream($("map-instance").value));
  $("map-canvas").addEventListener("mousemove", hover);
  $("map-canvas").addEventListener("mouseleave", () => { $("map-tip").hidden = true; });
  on("players-form", "submit", loadPlayers);
  for (const b of document.querySelectorAll("#character-actions button")) b.addEventListener("click", () => act(b.dataset.act));
  on("chat-form", "submit", loadChat);
  on("audit-form", "submit", loadAudit);
  on("errors-form", "submit", loadErrors);
  on("broadcast-form", "submit", () => maintenance("/broadcast", { text: $("broadcast-text").value }));
  on("lock-form", "submit", () => maintenance("/lock", { reason: $("lock-reason").value }));
  on("unlock", "click", () => maintenance("/unlock", {}));
  on("reload-scripts", "click", () => maintenance("/reload-scripts", {}));
  on("shutdown-form", "submit", () => maintenance("/shutdown",
    { seconds: Math.round(Number($("shutdown-minutes").value || 0) * 60), message: $("shutdown-message").value }));
  on("cancel-shutdown", "click", () => maintenance("/cancel-shutdown", {}));
  on("make-backup", "click", () => maintenance("/backups", {}));
  on("restore", "click", restoreCharacter);
  if (state.token) signIn(state.token).catch(() => { state.token = ""; sessionStorage.removeItem("rc-token"); });
});
