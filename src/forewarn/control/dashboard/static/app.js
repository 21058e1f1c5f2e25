// forewarn dashboard: one static page, no build step. It reads the control API with the
// token kept in sessionStorage (never a cookie), and follows /api/v1/stream (server-sent
// events read with fetch, which, unlike EventSource, can send the Authorization header).
// This file holds the page's state and helpers, the login, the stream and what each of
// its messages changes, the controls; each card of its own is a script loaded before it
// (index.html), exposing one window.forewarnX function this file calls once with the
// state and helpers it needs: fleet.js (with fleet_vms.js), events.js, targets.js,
// history.js, verdicts.js (with verdict_vms.js), faults.js.
"use strict";
(() => {
  const TOKEN_KEY = "forewarn-token";
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
    window.forewarnFleet({ state, $, esc, api, say, age, clockText, serverNow, vmDid: (v) => vmDid(v) });

  // -------------------------------------------------------------------- events
  // The live events, a page at a time, filtered by text: events.js.
  const { renderEvents, paintCountdowns } =
    window.forewarnEvents({ state, $, esc, api, say, age, clockText, countdown, serverNow });

  // ------------------------------------------------------------------- history
  // The history list and its strip: history.js.
  const { addHistory, renderHistory, renderStrip } = window.forewarnHistory({ state, $, esc, clockText });

  // ------------------------------------------------------------------ verdicts
  // The drill picked, the operations and reactions cards, the VMs card (verdict_vms.js):
  // verdicts.js. The VM detail (fleet.js, above) says what its VM did in the verdict.
  const { renderDrills, refreshVerdicts, scheduleVerdicts, vmDid } = window.forewarnVerdicts(
    { state, $, esc, api, headers, showLogin, clockText, paintCounts, paintVmDetail });

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
  // Injected faults, listed, added and cleared: faults.js.
  const { refreshFaults } = window.forewarnFaults({ state, $, esc, api, say });

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
