// forewarn dashboard: one static page, no build step. It reads the control API with the
// token kept in sessionStorage (never a cookie), and follows /api/v1/stream (server-sent
// events read with fetch, which, unlike EventSource, can send the Authorization header).
"use strict";
(() => {
  const TOKEN_KEY = "forewarn-token";
  const HISTORY_SHOWN = 300;
  const $ = (selector) => document.querySelector(selector);
  const state = {
    // kinds: the roll-up (a row per region and scope kind: fleet.js); kindPages: the page of
    // scopes held of each; scopes: the scopes held; vms: the VMs of the pages asked for
    kinds: new Map(), kindPages: new Map(), scopes: new Map(), vmCount: 0, vms: new Map(), pages: new Map(), loading: new Map(),
    vmEls: new Map(), search: null, openVm: null, events: new Map(), history: [],
    catalogue: [], scenarios: null, virtual: false, timeScale: 1, now: 0,
    offset: 0, firstSeen: {}, verdicts: null, toggled: new Set(), resets: [],
  };
  let token = sessionStorage.getItem(TOKEN_KEY);
  let verdictTimer = null;
  let stripTimer = null;
  let retryTimer = null;
  let streamAbort = null;
  // "EVENTID:Status" -> Date.now() when first drawn so (bench/dashboard.py reads it)
  window.forewarnTimes = state.firstSeen;
  window.forewarnSpentMs = {};

  // ------------------------------------------------------------------ helpers
  const esc = (value) => String(value).replace(/[&<>"']/g, (c) => (
    { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
  const headers = (extra) => {
    const out = Object.assign({}, extra || {});
    if (token) out.Authorization = "Bearer " + token;
    return out;
  };
  const serverNow = () => (state.virtual ? state.now : Date.now() / 1000 + state.offset);
  const setNow = (now) => { state.now = now; state.offset = now - Date.now() / 1000; };
  const clockText = (t) => new Date(t * 1000).toISOString().slice(11, 19);
  const dateText = (t) => new Date(t * 1000).toISOString().slice(0, 19).replace("T", " ");
  const age = (seconds) => {
    if (seconds < 60) return Math.max(0, Math.floor(seconds)) + "s";
    if (seconds < 3600) return Math.floor(seconds / 60) + "m";
    if (seconds < 86400) return Math.floor(seconds / 3600) + "h";
    return Math.floor(seconds / 86400) + "d";
  };
  const countdown = (seconds) => {
    if (seconds <= 0) return "due";
    if (seconds < 10) return seconds.toFixed(1) + " s";
    const s = Math.floor(seconds);
    const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), r = s % 60;
    const two = (n) => String(n).padStart(2, "0");
    return h ? `${h}:${two(m)}:${two(r)}` : `${m}:${two(r)}`;
  };
  const say = (text, isError) => {
    const box = $("#message");
    box.textContent = text;
    box.className = "message" + (isError ? " error" : "");
  };

  async function api(method, path, body) {
    const init = { method, headers: headers(body === undefined ? {} : { "Content-Type": "application/json" }) };
    if (body !== undefined) init.body = JSON.stringify(body);
    const response = await fetch(path, init);
    if (response.status === 401) {
      showLogin("The control API refused the token.");
      throw new Error("the control API wants its token");
    }
    const text = await response.text();
    let data = text;
    try { data = text ? JSON.parse(text) : null; } catch (e) { /* not JSON */ }
    if (!response.ok) throw new Error((data && data.error) || `HTTP ${response.status}`);
    return data;
  }

  // -------------------------------------------------------------------- login
  function showLogin(message) {
    if (streamAbort) streamAbort.abort();
    $("#app").hidden = true;
    $("#login").hidden = false;
    $("#login-error").textContent = message || "";
    $("#logout").hidden = true;
    setLink(false, "needs token");
    $("#token").focus();
  }

  $("#login-form").addEventListener("submit", (event) => {
    event.preventDefault();
    token = $("#token").value.trim();
    sessionStorage.setItem(TOKEN_KEY, token);
    $("#token").value = "";
    $("#login").hidden = true;
    connect();
  });

  $("#logout").addEventListener("click", () => {
    sessionStorage.removeItem(TOKEN_KEY);
    token = null;
    showLogin("");
  });

  // ------------------------------------------------------------------- stream
  function setLink(up, text) {
    const link = $("#link");
    link.textContent = text;
    link.className = "link " + (up ? "link-up" : "link-down");
  }

  function retry() {
    setLink(false, "reconnecting…");
    clearTimeout(retryTimer);
    retryTimer = setTimeout(connect, 1000);
  }

  async function connect() {
    clearTimeout(retryTimer);
    if (streamAbort) streamAbort.abort();
    const abort = new AbortController();
    streamAbort = abort;
    let response;
    try {
      response = await fetch("/api/v1/stream", {
        headers: headers({ Accept: "text/event-stream" }), cache: "no-store", signal: abort.signal,
      });
    } catch (e) {
      if (!abort.signal.aborted) retry();
      return;
    }
    if (response.status === 401) { showLogin(token ? "The control API refused the token." : ""); return; }
    if (window.forewarnStreamAt === undefined) window.forewarnStreamAt = performance.now();
    if (!response.ok || !response.body) { retry(); return; }
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let cut;
        while ((cut = buffer.indexOf("\n\n")) >= 0) {
          const frame = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          handleFrame(frame);
        }
      }
    } catch (e) { /* the connection dropped */ }
    if (!abort.signal.aborted) retry();
  }

  function handleFrame(frame) {
    let kind = "message";
    let data = "";
    for (const line of frame.split("\n")) {
      if (line.startsWith("event:")) kind = line.slice(6).trim();
      else if (line.startsWith("data:")) data += line.slice(5).trim();
    }
    if (!data) return;
    const started = performance.now();
    const message = JSON.parse(data);
    if (kind === "snapshot") applySnapshot(message);
    else if (kind === "change") applyChange(message);
    else if (kind === "tick") applyTick(message);
    const spent = window.forewarnSpentMs;  // ms per message kind (bench/dashboard.py)
    (spent[kind] = spent[kind] || []).push(performance.now() - started);
    if (spent[kind].length > 200) spent[kind].shift();
  }

  // ------------------------------------------------------------------ updates
  function applySnapshot(snap) {
    state.virtual = snap.virtual;
    state.timeScale = snap.time_scale;
    setNow(snap.now);
    takeSnapshot(snap);
    state.vmCount = snap.vms;
    state.events = new Map(snap.events.map((e) => [e.id, e]));
    state.history = snap.history.slice();
    state.catalogue = snap.catalogue;
    state.scenarios = snap.scenarios;
    state.resets = (snap.resets || []).slice();
    renderDrills();
    $("#login").hidden = true;
    $("#app").hidden = false;
    $("#logout").hidden = !token;
    $("#mode").textContent = (snap.virtual ? "virtual clock" : "real clock")
      + (snap.time_scale !== 1 ? ` · time scale ${snap.time_scale}` : "")
      + (snap.leading ? "" : " · follower") + ` · forewarn ${snap.version}`;
    renderControls();
    renderFleet();
    renderEvents();
    renderHistory();
    tickClock();
    setLink(true, "live");
    refreshVerdicts();
    refreshFaults();
    if (!document.body.dataset.ready) {
      document.body.dataset.ready = "1";
      window.forewarnRenderedAt = performance.now();
    }
  }

  function applyChange(change) {
    if (change.now) setNow(change.now);
    for (const event of change.events) state.events.set(event.id, event);
    for (const id of change.removed) state.events.delete(id);
    for (const name of change.deleted) {
      const vm = state.vms.get(name);
      if (vm) { vm.status = "deleted"; paintVm(vm); }
    }
    for (const scope of change.scopes) {
      const known = state.scopes.get(scope.id);
      if (known) {
        Object.assign(known, scope);
        const head = document.querySelector(`[data-scope-head="${CSS.escape(scope.id)}"]`);
        if (head) head.textContent = scopeLine(known);
      }
    }
    if (change.events.length || change.removed.length || change.scopes.length) paintCounts(null);
    addHistory(change.history);
    const resets = change.history.filter((h) => h.kind === "fleet.reset").map((h) => h.at);
    if (resets.length) {  // a new drill: the "current drill" view moves on to it
      state.resets.push(...resets.filter((at) => !state.resets.includes(at)));
      renderDrills();
      renderStrip();
    }
    renderEvents();
    paintVmDetail();
    scheduleVerdicts();
  }

  function applyTick(tick) {
    setNow(tick.now);
    applyScopeTick(tick);  // per kind, never per scope or VM (fleet.js)
  }

  // ------------------------------------------------------------------ controls
  function renderControls() {
    const select = $("#op-kind");
    const chosen = select.value;
    select.innerHTML = state.catalogue.map((op) => `<option value="${esc(op.kind)}">${esc(op.kind)} (${esc(op.event_type)}, ${esc(countdown(op.notice_seconds))} notice)</option>`).join("");
    if (chosen) select.value = chosen;
    $("#advance-form").hidden = !state.virtual;
    const scenarios = state.scenarios;
    $("#scenarios").hidden = !scenarios || !scenarios.length;
    if (scenarios && scenarios.length) {
      $("#scenario-name").innerHTML = scenarios.map((n) => `<option>${esc(n)}</option>`).join("");
    }
  }

  // The target fields suggest names the server finds as the user types: targets.js.
  window.forewarnTargets({ $, esc, api });

  $("#trigger-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = { kind: $("#op-kind").value, target: $("#op-target").value.trim() };
    const notice = $("#op-notice").value;
    if (notice !== "") body.notice_seconds = Number(notice);
    try {
      const op = await api("POST", "/api/v1/operations", body);
      const count = op.event_ids.length;
      say(`${op.kind} on ${op.target}: operation ${op.id}, ${count} event${count === 1 ? "" : "s"}`
        + (op.unnotified.length ? `; no notice for ${op.unnotified.join(", ")}` : ""));
    } catch (e) { say(e.message, true); }
  });

  $("#advance-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const clock = await api("POST", "/api/v1/clock/advance", { seconds: Number($("#advance-seconds").value) });
      setNow(clock.now);
      say(`the clock is now ${dateText(clock.now)} UTC`);
    } catch (e) { say(e.message, true); }
  });

  // A scenario plays on the server, through this same API; its outcome is polled.
  $("#scenario-run").addEventListener("click", async () => {
    const name = $("#scenario-name").value;
    const status = $("#scenario-status");
    try {
      const run = await api("POST", "/api/v1/scenarios/runs", { name });
      status.textContent = `${name}: playing…`;
      $("#scenario-run").disabled = true;
      for (;;) {
        await new Promise((resolve) => setTimeout(resolve, 1000));
        const all = await api("GET", "/api/v1/scenarios");
        const mine = all.runs.find((r) => r.id === run.id && r.name === run.name);
        if (!mine) {  // a scaled-out fleet: the leader plays it (its events show here live)
          status.textContent = `${name}: playing on the fleet's leader`;
          break;
        }
        if (mine.status !== "running") {
          status.textContent = `${name}: ${mine.status}${mine.detail ? " (" + mine.detail + ")" : ""}`;
          status.dataset.status = mine.status;
          break;
        }
      }
    } catch (e) { say(e.message, true); }
    $("#scenario-run").disabled = false;
  });

  $("#open-report").addEventListener("click", async () => {
    const tab = window.open("about:blank", "_blank");
    try {
      const response = await fetch("/api/v1/report", { headers: headers() });
      if (!response.ok) throw new Error(`the report could not be made (HTTP ${response.status})`);
      const url = URL.createObjectURL(await response.blob());
      if (tab) tab.location.href = url; else window.location.href = url;
    } catch (e) {
      if (tab) tab.close();
      say(e.message, true);
    }
  });

  // --------------------------------------------------------------------- fleet
  // The fleet rolled up, a scope's VMs on demand, one VM alone: fleet.js.
  const { takeSnapshot, renderFleet, paintCounts, paintVm, paintAges, paintVmDetail, applyScopeTick, scopeLine } =
    window.forewarnFleet({ state, $, esc, api, say, age, clockText, serverNow, vmDid });

  // -------------------------------------------------------------------- events
  // The live events, a page at a time, filtered by text: events.js.
  const { renderEvents, paintCountdowns } =
    window.forewarnEvents({ state, $, esc, api, say, age, clockText, countdown, serverNow });

  // ------------------------------------------------------------------- history
  const historyKey = (h) => `${h.at}|${h.kind}|${h.event_id}|${h.operation_id}|${h.scope_id}`;

  // New entries go on top of the list; the strip is redrawn at most twice a second.
  function addHistory(entries) {
    if (!entries.length) return;
    const known = new Set(state.history.slice(-entries.length * 2 - 50).map(historyKey));
    const fresh = entries.filter((entry) => !known.has(historyKey(entry)));
    if (!fresh.length) return;
    state.history.push(...fresh);
    const list = $("#history");
    list.insertAdjacentHTML("afterbegin", fresh.slice().reverse().map(historyItem).join(""));
    const extra = state.history.length - HISTORY_SHOWN;
    if (extra > 0) {
      state.history.splice(0, extra);
      for (let i = 0; i < extra && list.lastElementChild; i++) list.lastElementChild.remove();
    }
    if (!stripTimer) stripTimer = setTimeout(() => { stripTimer = null; renderStrip(); }, 500);
  }

  const historyItem = (h) => `<li data-kind="${esc(h.kind)}">`
    + `<time>${esc(clockText(h.at))}</time><span class="kind">${esc(h.kind)}</span>${esc(describe(h))}</li>`;

  function describe(h) {
    const bits = [];
    const d = h.detail || {};
    if (d.kind) bits.push(d.kind);
    if (d.target) bits.push("on " + d.target);
    if (d.type) bits.push(d.type);
    if (d.by) bits.push("by " + (d.by === "control" ? "the operator" : d.by));
    if (d.via) bits.push("via " + d.via);
    if (d.reason) bits.push("(" + d.reason + ")");
    if (d.vm) bits.push(d.vm);
    if (h.event_id) bits.push("event " + h.event_id.slice(0, 8));
    else if (h.operation_id) bits.push(h.operation_id);
    if (h.scope_id) bits.push("scope " + h.scope_id);
    return bits.join(" ");
  }

  function renderHistory() {
    $("#history").innerHTML = state.history.slice().reverse().map(historyItem).join("");
    renderStrip();
  }

  function renderStrip() {
    const svg = $("#history-strip");
    const width = svg.clientWidth || 800;
    const entries = state.history;
    if (!entries.length) { svg.innerHTML = ""; return; }
    const first = entries[0].at;
    const last = Math.max(entries[entries.length - 1].at, first + 1);
    const x = (t) => 6 + (width - 12) * (t - first) / (last - first);
    const group = (kind) => {
      const head = kind.split(".")[0];
      return ["event", "operation", "scope", "vm"].includes(head) ? head : "other";
    };
    const dots = entries.map((h) => `<circle class="k-${group(h.kind)}" cx="${x(h.at).toFixed(1)}" cy="10" r="3.5">`
      + `<title>${esc(clockText(h.at))} ${esc(h.kind)} ${esc(describe(h))}</title></circle>`);
    const resets = state.resets.filter((at) => at >= first && at <= last).map((at) =>
      `<line class="reset" x1="${x(at).toFixed(1)}" x2="${x(at).toFixed(1)}" y1="1" y2="19">`
      + `<title>${esc(clockText(at))} fleet reset: a new drill</title></line>`);
    svg.innerHTML = resets.join("") + dots.join("")
      + `<text x="4" y="25">${esc(clockText(first))}</text>`
      + `<text x="${width - 4}" y="25" text-anchor="end">${esc(clockText(last))}</text>`;
  }

  // -------------------------------------------------------------------- drills
  // After `forewarn fleet reset` the verdicts shown are the current drill's (GET
  // /api/v1/reactions?since=<the last reset>, as `forewarn report --since`); the select
  // looks back from an earlier reset on, or at every drill at once.
  const lastReset = () => (state.resets.length ? state.resets[state.resets.length - 1] : null);

  function drillSince() {
    const want = $("#drill-filter").value;
    if (want === "all") return null;
    if (want === "current" || want === "") return lastReset();
    return Number(want);
  }

  function renderDrills() {
    const select = $("#drill-filter");
    const chosen = select.value;
    const resets = state.resets;
    select.hidden = !resets.length;
    const options = [];
    if (resets.length) {
      options.push(`<option value="current">this drill (since the reset at ${esc(clockText(lastReset()))})</option>`);
      for (let i = resets.length - 2; i >= 0; i--) {
        options.push(`<option value="${resets[i]}">since the reset at ${esc(clockText(resets[i]))}</option>`);
      }
    }
    options.push(`<option value="all">every drill${resets.length ? " (before the resets too)" : ""}</option>`);
    select.innerHTML = options.join("");
    select.value = [...select.options].some((o) => o.value === chosen) ? chosen : select.options[0].value;
  }

  function paintDrillNote(report) {
    const note = $("#drill-note");
    const reset = lastReset();
    note.hidden = reset === null;
    if (reset === null) return;
    const since = report.since;
    note.textContent = since === reset
      ? `Fleet reset at ${clockText(reset)}: showing the drill since then (the select looks back).`
      : since == null
        ? `Showing every drill: operations created before the last reset (${clockText(reset)}) are marked "earlier drill".`
        : `Looking back: the drills since the reset at ${clockText(since)}; the current one began at ${clockText(reset)}.`;
  }

  $("#drill-filter").addEventListener("change", () => { verdictTag = null; refreshVerdicts(); });

  // ------------------------------------------------------------------ verdicts
  function scheduleVerdicts() {
    if (verdictTimer) return;
    verdictTimer = setTimeout(() => { verdictTimer = null; refreshVerdicts(); }, 800);
  }

  // Rows drawn per table at most; the rest are counted ("showing N of M"), never
  // dropped silently, and the filters reach every one.
  const CAP = 100;

  function matches(verdict, texts) {
    const want = $("#verdict-filter").value;
    const text = $("#op-filter").value.trim().toLowerCase();
    if (want && verdict !== want) return false;
    return !text || texts.some((t) => (t || "").toLowerCase().includes(text));
  }

  // The whole length of a list of the verdict (GET /api/v1/reactions is rolled up: a
  // big drill's lists come cut short, their lengths in ``trimmed``).
  const whole = (report, name) => {
    const cut = (report.trimmed || {})[name];
    return cut === undefined ? (report[name] || []).length : cut;
  };

  function shownLine(shown, total, what) {
    if (!total) return "";
    const word = total === 1 ? what.replace(/s\b/, "") : what;
    return shown < total ? `showing ${shown} of ${total} ${word} (filter to find the rest)`
                         : `${total} ${word}`;
  }

  // Operations unfolded to their scopes and events; kept across repaints.
  const openOperations = new Set();

  function operationDetails(o, byId) {
    const scopes = o.scopes.map((sc) => `<li><span class="badge v-${esc(sc.verdict)}">${esc(sc.verdict)}</span> `
      + `${esc(sc.scope)} (${sc.vms} VMs): ${esc(sc.summary)}</li>`).join("");
    const events = o.events.slice(0, CAP).map((id) => {
      const e = byId.get(id);
      return e ? `<li data-event="${esc(id)}"><span class="badge v-${esc(e.verdict)}">${esc(e.verdict)}</span> `
        + `<code title="${esc(id)}">${esc(id.slice(0, 8))}</code> ${esc(e.type || "")} · ${esc(e.scope || "")}: `
        + `${esc(e.summary)}</li>` : `<li data-event="${esc(id)}"><code>${esc(id.slice(0, 8))}</code></li>`;
    }).join("");
    const count = (o.trimmed || {}).events === undefined ? o.events.length : o.trimmed.events;
    const shown = Math.min(o.events.length, CAP);
    const more = count > shown ? `<li>and ${count - shown} more events (filter the events table)</li>` : "";
    const scopeCount = (o.trimmed || {}).scopes;
    const moreScopes = scopeCount === undefined ? "" : `<li>and ${scopeCount - o.scopes.length} more scopes (the VMs card lists each)</li>`;
    return `<tr class="op-more" data-more="${esc(o.id)}" data-verdict="${esc(o.verdict)}"><td></td><td colspan="4">`
      + `<ul class="op-scopes">${scopes}${moreScopes}</ul>`
      + `<p>${count} event${count === 1 ? "" : "s"}:</p><ul class="op-events">${events}${more}</ul></td></tr>`;
  }

  $("#operations tbody").addEventListener("click", (ev) => {
    const row = ev.target.closest("tr.op");
    if (!row) return;
    const id = row.dataset.operation;
    if (openOperations.has(id)) openOperations.delete(id); else openOperations.add(id);
    paintVerdicts();
  });

  function paintVerdicts() {
    const report = state.verdicts;
    if (!report) return;
    const ops = (report.operations || []).filter((o) => matches(o.verdict,
      [o.kind, o.target, o.progress, ...o.scopes.map((s) => s.scope)]));
    const byId = new Map(report.events.map((e) => [e.id, e]));
    const reset = lastReset();
    $("#operations tbody").innerHTML = ops.slice(0, CAP).map((o) => {
      const open = openOperations.has(o.id);
      const earlier = reset !== null && o.created_at != null && o.created_at < reset;
      const row = `<tr class="op${earlier ? " earlier-drill" : ""}" data-operation="${esc(o.id)}" data-verdict="${esc(o.verdict)}"`
        + ` aria-expanded="${open}" title="Click to ${open ? "fold" : "show"} its scopes and events">`
        + `<td><span class="badge v-${esc(o.verdict)}">${esc(o.verdict)}</span></td>`
        + `<td class="created">${o.created_at ? esc(clockText(o.created_at)) : "—"}`
        + `${earlier ? ' <span class="tag">earlier drill</span>' : ""}</td>`
        + `<td>${esc(o.kind || "?")}</td><td>${esc(o.target || "")}</td>`
        + `<td class="progress">${esc(o.progress)}</td></tr>`;
      return open ? row + operationDetails(o, byId) : row;
    }).join("");
    const opTotal = whole(report, "operations");
    $("#op-shown").textContent = shownLine(Math.min(ops.length, CAP), ops.length === (report.operations || []).length ? opTotal : ops.length,
      (report.operations || []).length === ops.length ? "operations" : `operations matching (of ${opTotal})`);
    const ot = report.operation_totals || {};
    $("#op-totals").textContent = (report.operations || []).length
      ? ["no-notice", "fail", "warn", "pending", "ok", "info"].map((k) => `${ot[k] || 0} ${k}`).join(" · ") : "";
    const hit = report.no_notice || [];
    const hitCount = whole(report, "no_notice");
    $("#no-notice").hidden = !hit.length;
    $("#no-notice").textContent = hit.length
      ? `Hit with no notice (Scheduled Events off in their scope): ${hitCount} VM${hitCount === 1 ? "" : "s"}: `
        + hit.slice(0, 30).join(", ") + (hitCount > 30 ? ` and ${hitCount - Math.min(30, hit.length)} more` : "")
      : "";
    const events = report.events.slice().reverse().filter((e) => matches(e.verdict,
      [e.kind, e.scope, e.type, e.id, e.summary, ...e.resources]));
    const rows = events.slice(0, CAP).map((e) => `<tr data-event="${esc(e.id)}" data-verdict="${esc(e.verdict)}">`
      + `<td><span class="badge v-${esc(e.verdict)}">${esc(e.verdict)}</span></td>`
      + `<td><code title="${esc(e.id)}">${esc(e.id.slice(0, 8))}</code> ${esc(e.type || "")} · ${esc(e.scope || "")}</td>`
      + `<td>${e.created_at ? esc(clockText(e.created_at)) : "—"}</td>`
      + `<td class="summary">${esc(e.summary)}</td></tr>`);
    $("#verdicts tbody").innerHTML = rows.join("");
    const eventTotal = whole(report, "events");
    $("#verdicts-shown").textContent = eventTotal > report.events.length
      ? `showing ${Math.min(events.length, CAP)} of the newest ${report.events.length} of ${eventTotal} events `
        + `(each scope's in the VMs card; every one: forewarn report --json --all)`
      : shownLine(Math.min(events.length, CAP), events.length, "events");
    $("#no-verdicts").hidden = report.events.length > 0;
    const t = report.totals;
    $("#verdict-totals").textContent = report.events.length
      ? `${t.ok} ok · ${t.warn} warn · ${t.fail} fail · ${t.pending} pending · ${t.info} info` : "";
    const silent = report.stopped_polling;
    const never = report.never_polled || [];
    const neverCount = whole(report, "never_polled"), silentCount = whole(report, "stopped_polling");
    const parts = [];
    if (never.length) parts.push(`Never polled (${neverCount}): ${never.slice(0, 20).join(", ")}`
      + (neverCount > 20 ? ` and ${neverCount - Math.min(20, never.length)} more` : ""));
    if (silent.length) parts.push(`Stopped polling (silent > ${report.stale_after} s, ${silentCount}): `
      + silent.slice(0, 20).map((p) => p.vm).join(", ") + (silentCount > 20 ? ` and ${silentCount - Math.min(20, silent.length)} more` : ""));
    $("#silent").textContent = parts.join(" · ");
  }

  // The verdict is megabytes at 10,000 VMs. It is asked for with the tag of the one held
  // (a 304 while that holds: nothing downloaded, parsed or redrawn), one request at a
  // time (a change meanwhile asks again once it is answered), and not while the tab is
  // hidden (it asks when shown again).
  let verdictTag = null;
  let verdictBusy = false;
  let verdictAgain = false;
  let verdictWhenShown = false;

  let verdictSince;  // the ``since`` of the verdict held (its tag holds for that one only)

  async function refreshVerdicts() {
    if ($("#app").hidden) return;
    if (document.hidden) { verdictWhenShown = true; return; }
    if (verdictBusy) { verdictAgain = true; return; }
    verdictBusy = true;
    try {
      const since = drillSince();
      if (since !== verdictSince) verdictTag = null;
      const query = since === null ? "" : `?since=${encodeURIComponent(since)}`;
      const response = await fetch("/api/v1/reactions" + query, {
        headers: headers(verdictTag ? { "If-None-Match": verdictTag } : {}), cache: "no-store",
      });
      if (response.status === 401) { showLogin("The control API refused the token."); return; }
      if (!response.ok) return;  // 304: the verdict drawn is still the verdict
      const report = await response.json();
      const cut = (report.trimmed || {}).vms;
      if (cut !== undefined && cut <= FLAT) {  // a few hundred VMs: every row, in one page
        const query = new URLSearchParams({ vms: "all", limit: String(FLAT) });
        if (since !== null) query.set("since", String(since));
        const page = await api("GET", "/api/v1/reactions?" + query);
        report.vms = page.vms;
        report.flatVms = true;
      }
      verdictTag = response.headers.get("ETag");
      verdictSince = since;
      state.verdicts = report;
      scopeVms.clear();  // a new verdict: the scopes' pages are asked for again
      paintDrillNote(report);
      paintVerdicts();
      orderVms(report);
      paintVms();
      paintCounts((report.by_scope || []).map((t) => t.scope));
      paintVmDetail();
      for (const scope of openVmScopes) loadScopeVms(scope);
    } catch (e) {
      return;  // the next change or the next 10 s ask again
    } finally {
      verdictBusy = false;
      if (verdictAgain) { verdictAgain = false; scheduleVerdicts(); }
    }
  }
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden && verdictWhenShown) { verdictWhenShown = false; refreshVerdicts(); }
  });
  $("#verdict-filter").addEventListener("change", paintVerdicts);
  $("#op-filter").addEventListener("input", paintVerdicts);

  // ---------------------------------------------------------------------- by VM
  // The report's roll-up by VM (report.vms of GET /api/v1/reactions, fetched with the
  // verdicts above: after a change and every 10 s, never with a tick): the VMs that did
  // not react, named, worst verdict first; within a verdict the report's own order (the
  // VMs that failed first, then by name). Rows past CAP are counted, never dropped.
  // Worst first, as forewarn.rehearsal.rollups.VM_VERDICTS ("none": only not polling).
  const VM_VERDICTS = ["no-notice", "missed", "unlisted", "detected", "waiting", "approved",
    "created-started", "unseen", "none"];
  const VM_ATTENTION = new Set(["no-notice", "missed", "unlisted", "detected"]);  // rollups.VM_ATTENTION
  const LINES_SHOWN = 4;
  const needsAttention = (v) => VM_ATTENTION.has(v.verdict) || v.polling !== "polling";
  let vmOrder = [];  // [rollup, lower-cased text the filter searches], worst first

  // A big drill's verdict comes rolled up (more VMs than it names: ``trimmed.vms``):
  // then the card lists the scopes (their events, graded, and the VMs needing
  // attention, counted), and a scope's VMs come when it is opened, as the page asks
  // (GET /api/v1/reactions?scope=...&vms=...: the filter's VMs of that scope, a page).
  // Up to FLAT VMs the card asks for every one's row once a verdict (a page of FLAT) and
  // lists them, filtered here, as for a small drill.
  const FLAT = 1000;
  const rolledUp = (report) => (report.trimmed || {}).vms !== undefined && !report.flatVms;
  const openVmScopes = new Set();
  const scopeVms = new Map();  // scope -> {want, rows, total} or "loading"
  window.forewarnScopeVms = scopeVms;  // the VM detail (fleet.js) looks up its verdict there
  let scopeOrder = [];

  function vmsParam(want) { return want === "" ? "all" : want; }

  async function loadScopeVms(scope) {
    const want = $("#vm-verdict-filter").value;
    scopeVms.set(scope, "loading");
    const since = verdictSince;
    const query = new URLSearchParams({ scope, vms: vmsParam(want), limit: String(CAP) });
    if (since !== null && since !== undefined) query.set("since", String(since));
    let page;
    try { page = await api("GET", "/api/v1/reactions?" + query); } catch (e) { scopeVms.delete(scope); return; }
    if (!openVmScopes.has(scope)) { scopeVms.delete(scope); return; }
    scopeVms.set(scope, { want, rows: page.vms, total: page.vm_page.total });
    paintVms();
    paintVmDetail();
  }

  // A row a scope out of its events graded (event_scopes) and its VMs needing attention
  // (by_scope), the most needing attention first.
  function scopeRows(eventScopes, byScope) {
    const rows = new Map();
    for (const t of eventScopes || []) {
      rows.set(t.scope, { scope: t.scope, kind: t.kind, verdict: t.verdict, events: t.events, vms: t.vms, summary: t.summary, attention: null });
    }
    for (const t of byScope || []) {
      const row = rows.get(t.scope) || { scope: t.scope, kind: t.kind, verdict: "none", events: 0, vms: t.vms, summary: "" };
      row.attention = t;
      rows.set(t.scope, row);
    }
    const need = (r) => (r.attention ? r.attention.vms : 0);
    return [...rows.values()].sort((a, b) => need(b) - need(a) || a.scope.localeCompare(b.scope, undefined, { numeric: true }));
  }

  function orderScopes(report) {
    scopeOrder = scopeRows(report.event_scopes, report.by_scope);
    scopeFound = null;  // a new verdict: the filter asks again
    // Both lists come cut to the worst 50 of each region and kind (``trimmed`` says how
    // long each was); by_kind sums every scope's VMs needing attention.
    const attention = (report.by_kind || []).reduce((n, k) => n + k.vms, 0);
    const cut = scopesCut(report);
    const scopes = cut ? `events in ${plural(whole(report, "event_scopes"), "scope")}, `
      + `VMs needing attention in ${plural(whole(report, "by_scope"), "scope")}`
      : `in ${scopeOrder.length} scopes`;
    $("#vm-totals").textContent = `${whole(report, "vms")} in events or not polling, ${scopes}`
      + ` · ${attention} needing attention (each scope's VMs when opened)`;
  }

  // Whether the verdict holds only the worst scopes of each kind (GET /api/v1/reactions
  // cuts by_scope and event_scopes; ?scopes=... pages every row).
  const scopesCut = (report) => ["by_scope", "event_scopes"].some((k) => (report.trimmed || {})[k] !== undefined);
  const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;

  function attentionText(t) {
    if (!t) return "none needing attention";
    const parts = [["failed", t.failed], ["missed", t.missed], ["no notice", t.no_notice],
      ["never polled", t.never_polled], ["stopped polling", t.stopped_polling]].filter(([, n]) => n);
    return `${t.vms} needing attention: ` + parts.map(([k, n]) => `${n} ${k}`).join(", ");
  }

  // The verdict holds the worst scopes of each kind only: the filter asks the server for
  // the scopes whose name holds its text (GET /api/v1/reactions?scopes=...&q=...), the
  // first CAP of each list.
  let scopeFound = null;  // {text, rows, more} or {text, loading: true}
  async function findScopes(text) {
    scopeFound = { text, loading: true };
    const ask = (which) => {
      const query = new URLSearchParams({ scopes: which, q: text, limit: String(CAP) });
      if (verdictSince !== null && verdictSince !== undefined) query.set("since", String(verdictSince));
      return api("GET", "/api/v1/reactions?" + query);
    };
    let pages;
    try { pages = await Promise.all([ask("event_scopes"), ask("by_scope")]); } catch (e) { scopeFound = null; return; }
    if (!scopeFound || scopeFound.text !== text) return;  // typed on meanwhile
    const [events, attention] = pages;
    const more = [events, attention].some((p) => p.scope_page.total > CAP);
    scopeFound = { text, rows: scopeRows(events.event_scopes, attention.by_scope), more };
    paintVms();
  }
  let findTimer = null;

  function paintScopes() {
    const text = $("#vm-rollup-filter").value.trim().toLowerCase();
    const report = state.verdicts;
    let found = scopeOrder.filter((r) => !text || r.scope.toLowerCase().includes(text));
    const asked = text && scopesCut(report);  // every scope is the server's to search
    if (asked && (!scopeFound || scopeFound.text !== text)) {
      scopeFound = { text, loading: true };
      clearTimeout(findTimer);
      findTimer = setTimeout(() => findScopes(text), 200);
    }
    if (asked && !scopeFound.loading) found = scopeFound.rows;
    const label = vmLabel($("#vm-verdict-filter").value);
    $("#vm-rollup tbody").innerHTML = found.slice(0, CAP).map((r) => {
      const open = openVmScopes.has(r.scope);
      const head = `<tr class="vm-scope" data-vm-scope="${esc(r.scope)}" aria-expanded="${open}" title="Click to ${open ? "fold" : "list"} its VMs">`
        + `<td><span class="badge v-${esc(r.verdict)}">${esc(r.verdict)}</span></td>`
        + `<td><b>${esc(r.vms)} VMs</b> (${open ? "fold" : "open"})</td><td>${esc(r.scope)} <span class="muted">${esc(r.kind)}</span></td>`
        + `<td>—</td><td>${esc(attentionText(r.attention))}</td><td class="saw">${r.events} event${r.events === 1 ? "" : "s"}</td>`
        + `<td>${esc(r.summary)}</td></tr>`;
      if (!open) return head;
      const page = scopeVms.get(r.scope);
      if (!page || page === "loading") return head + `<tr class="vm-scope-more"><td></td><td colspan="6" class="muted">loading its VMs…</td></tr>`;
      const more = page.total > page.rows.length
        ? `<tr class="vm-scope-more"><td></td><td colspan="6" class="muted">showing ${page.rows.length} of ${page.total} ${esc(label)} of ${esc(r.scope)}</td></tr>`
        : page.total ? "" : `<tr class="vm-scope-more"><td></td><td colspan="6" class="muted">No ${esc(label.replace(/^VMs/, "VM"))} in ${esc(r.scope)}.</td></tr>`;
      return head + page.rows.map(vmRow).join("") + more;
    }).join("");
    const kept = scopesCut(report)
      ? ` (the worst of each kind of ${whole(report, "event_scopes")} with events and `
        + `${whole(report, "by_scope")} needing attention; forewarn report --all lists every one)` : "";
    $("#vm-shown").textContent = !asked ? shownLine(Math.min(found.length, CAP), found.length, "scopes") + kept
      : scopeFound.loading ? `finding the scopes named "${text}"…`
      : `${plural(found.length, "scope")} named "${text}"`
        + (scopeFound.more ? ` (the first ${CAP} of each list: type more to narrow it)` : "");
  }

  $("#vm-rollup tbody").addEventListener("click", (ev) => {
    const row = ev.target.closest("tr.vm-scope");
    if (!row) return;
    const scope = row.dataset.vmScope;
    if (openVmScopes.has(scope)) { openVmScopes.delete(scope); scopeVms.delete(scope); }
    else { openVmScopes.add(scope); loadScopeVms(scope); }
    paintVms();
  });

  function orderVms(report) {
    if (rolledUp(report)) { vmOrder = []; orderScopes(report); return; }
    const rank = (v) => { const i = VM_VERDICTS.indexOf(v.verdict); return i < 0 ? VM_VERDICTS.length : i; };
    vmOrder = (report.vms || []).map((v) => [v, [v.vm, v.scope, v.verdict, v.polling, ...v.lines]
      .join("\n").toLowerCase()]);
    vmOrder.sort((a, b) => rank(a[0]) - rank(b[0]));  // stable: keeps the report's order
    const counts = new Map();
    let attention = 0, silent = 0;
    for (const [v] of vmOrder) {
      counts.set(v.verdict, (counts.get(v.verdict) || 0) + 1);
      if (needsAttention(v)) attention += 1;
      if (v.polling !== "polling") silent += 1;
    }
    $("#vm-totals").textContent = vmOrder.length
      ? [`${vmOrder.length} in events or not polling, ${attention} needing attention`,
        ...VM_VERDICTS.filter((k) => counts.get(k)).map((k) => `${counts.get(k)} ${k}`),
        ...(silent ? [`${silent} not polling`] : [])].join(" · ") : "";
  }

  function vmLabel(want) {
    if (want === "attention") return "VMs needing attention";
    if (want === "not-polling") return "VMs not polling";
    return want ? `VMs with verdict ${want}` : "VMs";
  }

  function vmDid(v) {
    const out = [];
    if (v.events) {
      out.push(`${v.events} event${v.events === 1 ? "" : "s"}: saw ${v.saw}, approved ${v.approved}`
        + (v.missed ? `, missed ${v.missed}` : ""));
    }
    if (v.no_notice) out.push(`${v.no_notice} operation${v.no_notice === 1 ? "" : "s"} with no notice`);
    return out.join("; ") || "in no event";
  }

  function vmRow(v) {
    const lines = v.lines.slice(0, LINES_SHOWN).map((l) => `<li>${esc(l)}</li>`);
    if (v.lines.length > LINES_SHOWN) lines.push(`<li>and ${v.lines.length - LINES_SHOWN} more (the report lists each)</li>`);
    return `<tr data-vm="${esc(v.vm)}" data-verdict="${esc(v.verdict)}">`
      + `<td><span class="badge v-${esc(v.verdict)}">${esc(v.verdict)}</span></td>`
      + `<td><b>${esc(v.vm)}</b></td><td>${esc(v.scope || "-")}</td>`
      + `<td>${v.first_failed_at ? esc(clockText(v.first_failed_at)) : "—"}</td>`
      + `<td>${esc(v.polling)}</td><td class="saw">${esc(vmDid(v))}</td>`
      + `<td><ul>${lines.join("")}</ul></td></tr>`;
  }

  function paintVms() {
    const report = state.verdicts;
    if (!report) return;
    if (rolledUp(report)) { paintScopes(); return; }
    const want = $("#vm-verdict-filter").value;
    const text = $("#vm-rollup-filter").value.trim().toLowerCase();
    const found = vmOrder.filter(([v, hay]) => {
      if (want === "attention" ? !needsAttention(v)
        : want === "not-polling" ? v.polling === "polling" : want && v.verdict !== want) return false;
      return !text || hay.includes(text);
    });
    $("#vm-rollup tbody").innerHTML = found.slice(0, CAP).map(([v]) => vmRow(v)).join("");
    const label = vmLabel(want) + (text ? ` matching "${$("#vm-rollup-filter").value.trim()}"` : "");
    $("#vm-shown").textContent = found.length ? shownLine(Math.min(found.length, CAP), found.length, label)
      : vmOrder.length ? `No ${label.replace(/^VMs/, "VM")} (of ${vmOrder.length} VMs in events or not polling).`
      : "No VM was in an event yet.";
  }
  $("#vm-verdict-filter").addEventListener("change", () => {
    scopeVms.clear();
    for (const scope of openVmScopes) loadScopeVms(scope);
    paintVms();
  });
  $("#vm-rollup-filter").addEventListener("input", paintVms);

  // ------------------------------------------------------ Event Grid deliveries
  async function refreshDeliveries() {
    if ($("#app").hidden) return;
    let rows;
    try { rows = await api("GET", "/api/v1/eventgrid/deliveries?limit=20"); } catch (e) { return; }
    if (!rows.length) return;
    $("#deliveries-card").hidden = false;
    $("#delivery-count").textContent = `last ${rows.length}`;
    const list = $("#deliveries");
    list.replaceChildren(...rows.slice().reverse().map((d) => {
      const item = document.createElement("li");
      const retry = d.retry_in == null ? "" : `, retry in ${d.retry_in.toFixed(1)} s`;
      item.textContent = `${d.subscription}: ${d.event_status} ${d.event_id} attempt ${d.attempt}`
        + ` -> ${d.answer} (${d.outcome}${retry})`;
      return item;
    }));
  }

  // ------------------------------------------------------------ endpoint faults
  // Injected faults (/api/v1/faults): listed, added and cleared through the same JSON
  // API as every other control; the server checks each input and says what is wrong.
  function faultWhat(f) {
    if (f.kind === "status") return `HTTP ${f.status}`;
    if (f.kind === "latency") return `+${f.latency_seconds} s`;
    if (f.kind === "cotenant") return `co-tenant ${f.rate} req/s`;
    return f.kind === "timeout" ? "never answered" : "connection reset";
  }

  function paintFaults(faults) {
    $("#fault-count").textContent = faults.length ? String(faults.length) : "";
    $("#no-faults").hidden = faults.length > 0;
    $("#faults tbody").innerHTML = faults.map((f) => {
      const on = f.vm || f.scope || "fleet";
      const lasts = f.duration_seconds != null ? f.duration_seconds
        : f.ends_at == null ? null : (f.ends_at - f.starts_at);  // platform time
      const span = lasts == null ? "until cleared" : `${Number(lasts.toFixed(1))} s`;
      return `<tr data-fault="${esc(f.id)}"><td><code>${esc(f.id)}</code></td><td>${esc(f.kind)}</td>`
        + `<td>${esc(on)}</td><td>${esc(faultWhat(f))}</td><td>${esc(span)}</td>`
        + `<td>${esc(f.share)}</td><td class="hits">${esc(f.hits)}</td>`
        + `<td><button type="button" class="quiet fault-remove" data-fault="${esc(f.id)}">clear</button></td></tr>`;
    }).join("");
  }

  async function refreshFaults() {
    if ($("#app").hidden) return;
    let faults;
    try { faults = await api("GET", "/api/v1/faults"); } catch (e) { return; }
    paintFaults(faults);
  }

  function syncFaultForm() {
    const kind = $("#fault-kind").value;
    $("#fault-status").parentElement.hidden = kind !== "status";
    $("#fault-latency").parentElement.hidden = kind !== "latency";
    $("#fault-rate").parentElement.hidden = kind !== "cotenant";
  }
  $("#fault-kind").addEventListener("change", syncFaultForm);
  syncFaultForm();

  $("#fault-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const kind = $("#fault-kind").value;
    const body = { kind };
    const on = $("#fault-target").value.trim();
    if (on) body[await isScope(on) ? "scope" : "vm"] = on;
    if (kind === "status") body.status = Number($("#fault-status").value);
    if (kind === "latency") body.latency_seconds = Number($("#fault-latency").value);
    if (kind === "cotenant") body.rate = Number($("#fault-rate").value);
    // 70, 70s, 5m, PT5M: the server reads it (a number only as one: "1.2" is, "1.2.3"
    // is text the server refuses, never NaN, which JSON sends as null: until cleared)
    const lasts = $("#fault-for").value.trim();
    if (lasts !== "") body.duration_seconds = /^[0-9]+(\.[0-9]+)?$/.test(lasts) ? Number(lasts) : lasts;
    try {
      const f = await api("POST", "/api/v1/faults", body);
      say(`${f.id}: ${faultWhat(f)} on ${f.vm || f.scope || "the fleet"}`);
    } catch (e) { say(e.message, true); }
    refreshFaults();
  });

  // Whether the fault form's target names a scope (the server knows every one: the page
  // holds only the scopes it shows).
  async function isScope(name) {
    if (state.scopes.has(name)) return true;
    const query = new URLSearchParams({ q: name, kinds: "scope", limit: "100" });
    try {
      const found = await api("GET", "/api/v1/dashboard/targets?" + query);
      return found.targets.some((t) => t.name === name);
    } catch (e) { return false; }
  }

  $("#fault-clear").addEventListener("click", async () => {
    try {
      const gone = await api("DELETE", "/api/v1/faults", {});
      say(`cleared ${gone.length} fault${gone.length === 1 ? "" : "s"}`);
    } catch (e) { say(e.message, true); }
    refreshFaults();
  });

  $("#faults").addEventListener("click", async (event) => {
    const button = event.target.closest("button.fault-remove");
    if (!button) return;
    try {
      const f = await api("DELETE", "/api/v1/faults/" + encodeURIComponent(button.dataset.fault), {});
      say(`cleared ${f.id}`);
    } catch (e) { say(e.message, true); }
    refreshFaults();
  });

  // --------------------------------------------------------------------- clock
  function tickClock() {
    const now = serverNow();
    if (now) $("#clock").textContent = clockText(now) + " UTC";
  }

  setInterval(() => { tickClock(); paintCountdowns(); }, 200);
  setInterval(paintAges, 1000);
  setInterval(refreshVerdicts, 10000);
  setInterval(refreshDeliveries, 3000);
  setInterval(refreshFaults, 3000);
  connect();
})();
