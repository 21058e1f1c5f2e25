// forewarn dashboard, the fleet card: rolled up by region and scope kind (the snapshot
// holds a row per kind, counted, and its worst 50 scopes), a kind's scopes a page at a
// time (GET /api/v1/dashboard/scopes?region=&kind=), a scope's VMs and one VM alone
// (fleet_vms.js). Loaded after fleet_vms.js and before app.js, which calls
// window.forewarnFleet once with the page's state and helpers.
"use strict";
window.forewarnFleet = ({ state, $, esc, api, say, age, clockText, serverNow, vmDid }) => {
  const OPEN_UP_TO = 300;  // fleets up to this many VMs show every kind and scope open
  const SCOPE_PAGE = 50;  // scopes listed per kind, worst first (the snapshot holds as many)
  const vms = window.forewarnFleetVms({ state, $, esc, api, age, clockText, serverNow, vmDid });
  const big = () => state.vmCount > OPEN_UP_TO;
  const whole = (n) => n.toLocaleString("en-US");
  const plural = (n, word) => `${whole(n)} ${word}${n === 1 ? "" : "s"}`;
  const scopeLine = (scope) => `${scope.kind.replace("_", " ")} · incarnation ${scope.incarnation}`
    + (scope.enabled ? "" : " · Scheduled Events off until a VM asks");
  const isOpen = (key, byDefault) => (state.toggled.has(key) ? !byDefault : byDefault);
  const defaultOpen = (key) => (key.startsWith("r:") || !big());
  const kindKey = (k) => `${k.region}|${k.kind}`;
  const kindSection = (key) => document.querySelector(`#fleet details.kind[data-key="${CSS.escape("k:" + key)}"]`);

  // The snapshot's roll-up: each kind's totals, and its worst scopes as its first page.
  function takeSnapshot(snap) {
    state.kinds = new Map();
    state.scopes = new Map();
    state.kindPages = new Map();
    for (const k of snap.kinds) {
      const { worst, ...totals } = k;
      state.kinds.set(kindKey(k), totals);
      takePage(kindKey(k), { offset: 0, limit: SCOPE_PAGE, total: k.scopes, scopes: worst });
    }
  }

  function takePage(key, page) {
    for (const s of page.scopes) state.scopes.set(s.id, s);
    state.kindPages.set(key, { offset: page.offset, limit: page.limit, total: page.total,
      ids: page.scopes.map((s) => s.id) });
  }

  function liveEvents() {  // scope id -> live events in it (drawn from the stream)
    const out = new Map();
    for (const e of state.events.values()) out.set(e.scope, (out.get(e.scope) || 0) + 1);
    return out;
  }

  // scope id -> VMs the verdict says need attention (report.by_scope: the worst 50 scopes
  // of each region and kind, the rolled-up verdict cuts the rest)
  function attention() {
    const out = new Map();
    for (const t of (state.verdicts && state.verdicts.by_scope) || []) out.set(t.scope, t.vms);
    return out;
  }

  // "region|kind" -> VMs needing attention in every scope of that kind (report.by_kind)
  function kindAttention() {
    const out = new Map();
    for (const k of (state.verdicts && state.verdicts.by_kind) || []) out.set(kindKey(k), k.vms);
    return out;
  }

  // The counts of some kinds' totals summed (a region's, or one kind's): the server's.
  function kindCounts(kinds, needs) {
    const c = { scopes: 0, vms: 0, states: {}, polled: 0, silent: 0, events: 0, attention: 0 };
    for (const k of kinds) {
      c.scopes += k.scopes; c.vms += k.vms; c.polled += k.polled; c.silent += k.silent;
      c.events += k.events; c.attention += needs.get(kindKey(k)) || 0;
      for (const [s, n] of Object.entries(k.states)) c.states[s] = (c.states[s] || 0) + n;
    }
    return c;
  }

  // One scope's counts: its row, its live events (from the stream) and the verdict's.
  const scopeCounts = (s, live, needs) => ({ scopes: 1, vms: s.vms, states: s.states, polled: s.polled,
    silent: s.silent, events: live.get(s.id) || 0, attention: needs.get(s.id) || 0 });

  function countsText(c, withScopes) {
    const bits = [withScopes ? `${plural(c.vms, "VM")} in ${plural(c.scopes, "scope")}` : plural(c.vms, "VM")];
    for (const [status, n] of Object.entries(c.states)) bits.push(`${whole(n)} ${status}`);
    if (c.events) bits.push(plural(c.events, "live event"));
    if (c.attention) bits.push(`${whole(c.attention)} needing attention`);
    if (c.silent) bits.push(`${whole(c.silent)} silent for a minute or more`);
    if (c.vms - c.polled) bits.push(`${whole(c.vms - c.polled)} never polled`);
    return bits.join(" · ");
  }

  function regions() {  // region -> [kind totals], in the server's order
    const out = new Map();
    for (const k of state.kinds.values()) {
      if (!out.has(k.region)) out.set(k.region, []);
      out.get(k.region).push(k);
    }
    return out;
  }

  function renderFleet() {
    if (state.search) { renderSearch(); return; }
    const needs = kindAttention();
    const parts = [];
    for (const [region, kinds] of regions()) {
      const rkey = `r:${region}`;
      parts.push(`<details class="group region" data-key="${esc(rkey)}"${isOpen(rkey, defaultOpen(rkey)) ? " open" : ""}>`
        + `<summary class="scope-head"><b>${esc(region)}</b>`
        + `<span class="scope-counts" data-counts="${esc(rkey)}">${esc(countsText(kindCounts(kinds, needs), true))}</span></summary>`);
      for (const k of kinds) {
        const kkey = `k:${kindKey(k)}`;
        const open = isOpen(kkey, defaultOpen(kkey));
        parts.push(`<details class="group kind" data-key="${esc(kkey)}"${open ? " open" : ""}>`
          + `<summary class="scope-head"><b>${esc(k.kind.replace("_", " "))}</b>`
          + `<span class="scope-counts" data-counts="${esc(kkey)}">${esc(countsText(kindCounts([k], needs), true))}</span></summary>`
          + `<div class="scope-list" data-scopes-of="${esc(kindKey(k))}">${open ? scopeList(kindKey(k)) : ""}</div></details>`);
      }
      parts.push("</details>");
    }
    $("#fleet").innerHTML = parts.join("");
    const scopes = [...state.kinds.values()].reduce((n, k) => n + k.scopes, 0);
    $("#fleet-count").textContent = `${plural(state.vmCount, "VM")} in ${plural(scopes, "scope")}`
      + (big() ? " (open a scope to see its VMs)" : "");
    fillScopes(document, false);
  }

  function scopeRow(s, live, needs) {
    const key = `s:${s.id}`;
    return `<details class="scope" data-scope="${esc(s.id)}" data-key="${esc(key)}"${isOpen(key, !big()) ? " open" : ""}>`
      + `<summary class="scope-head"><b>${esc(s.id)}</b>`
      + `<span data-scope-head="${esc(s.id)}">${esc(scopeLine(s))}</span>`
      + `<span class="scope-counts" data-scope-counts="${esc(s.id)}">${esc(countsText(scopeCounts(s, live, needs), false))}</span></summary>`
      + `<div class="scope-vms" data-vms-of="${esc(s.id)}"></div></details>`;
  }

  // A kind's page of scopes held (worst first), and where it is among them all.
  function scopeList(key) {
    const page = state.kindPages.get(key);
    if (!page) return `<p class="muted">asking for its scopes…</p>`;
    const box = document.querySelector(`[data-scopes-of="${CSS.escape(key)}"]`);
    if (box) box.dataset.drawn = `${page.offset} ${page.total} ${page.ids.join(" ")}`;
    const live = liveEvents(), needs = attention();
    const rows = page.ids.map((id) => state.scopes.get(id)).filter(Boolean).map((s) => scopeRow(s, live, needs));
    if (page.offset || page.total > page.ids.length) {
      const next = page.offset + page.ids.length < page.total ? page.offset + page.limit : "";
      rows.push(`<p class="muted more-scopes">scopes ${whole(page.offset + 1)} to ${whole(page.offset + page.ids.length)}`
        + ` of ${whole(page.total)}, worst first (the filter finds any by name)`
        + ` <button type="button" class="quiet" data-kind-page="${Math.max(0, page.offset - page.limit)}"${page.offset ? "" : " disabled"}>previous</button>`
        + ` <button type="button" class="quiet" data-kind-page="${next}"${next === "" ? " disabled" : ""}>next</button></p>`);
    }
    return rows.join("");
  }

  // Every open scope drawn under ``root`` shows its VMs (the page held will do when
  // ``keepHeld``: a kind's list redrawn, not opened).
  function fillScopes(root, keepHeld) {
    if (root === document) state.vmEls = new Map();
    for (const section of root.querySelectorAll("details.scope[open]")) vms.showScope(section.dataset.scope, keepHeld);
    vms.paintAges();
  }

  // A kind's list drawn again from the page held: its rows, or their counts only when
  // the same scopes are held in the same order.
  function drawKind(key) {
    const section = kindSection(key);
    const page = state.kindPages.get(key);
    if (!section || !section.open || state.search || !page) return;
    const box = section.querySelector(".scope-list");
    const drawn = `${page.offset} ${page.total} ${page.ids.join(" ")}`;
    if (box.dataset.drawn === drawn) { paintCounts(page.ids); return; }
    box.innerHTML = scopeList(key);
    fillScopes(box, true);
  }

  // A kind's page of scopes from ``offset``, asked of the server (one request at a time
  // per kind; the last one asked for meanwhile follows).
  const kindLoads = new Map();
  async function loadKind(key, offset) {
    const slot = kindLoads.get(key) || {};
    kindLoads.set(key, slot);
    if (slot.busy) { slot.again = offset; return; }
    slot.busy = true;
    try {
      const [region, kind] = key.split("|");
      const query = new URLSearchParams({ region, kind, offset: String(offset), limit: String(SCOPE_PAGE) });
      takePage(key, await api("GET", "/api/v1/dashboard/scopes?" + query));
      drawKind(key);
    } catch (e) { say(e.message, true); }
    finally {
      slot.busy = false;
      if (slot.again !== undefined) { const again = slot.again; slot.again = undefined; loadKind(key, again); }
    }
  }

  // A group the user opened or closed stays so across snapshots; a kind draws the scopes
  // held and asks for them afresh, a scope asks for its VMs, when opened.
  $("#fleet").addEventListener("toggle", (event) => {
    const section = event.target;
    if (!(section instanceof HTMLDetailsElement)) return;
    const key = section.dataset.key;
    if (!key) return;
    if (state.search) {  // a scope the filter named, opened by hand
      if (section.open) vms.loadScope(section.dataset.scope, 0);
      return;
    }
    if (section.open === defaultOpen(key)) state.toggled.delete(key);
    else state.toggled.add(key);
    if (!section.open) return;
    if (key.startsWith("k:")) {
      const box = section.querySelector(".scope-list");
      if (!box.firstChild) { box.innerHTML = scopeList(key.slice(2)); fillScopes(box, false); }
      const page = state.kindPages.get(key.slice(2));
      loadKind(key.slice(2), page ? page.offset : 0);
    } else if (key.startsWith("s:")) {
      const slot = state.loading.get(section.dataset.scope);
      if (!(slot && slot.busy)) vms.showScope(section.dataset.scope, false);
    }
  }, true);

  $("#fleet").addEventListener("click", (event) => {
    const button = event.target.closest("button[data-kind-page]");
    const section = button && button.closest("details.kind");
    if (section && button.dataset.kindPage !== "") loadKind(section.dataset.key.slice(2), Number(button.dataset.kindPage));
  });

  // The fleet filter: VMs by name or host and scopes by name, both found by the server
  // (a million VMs and 10,001 scopes are not here).
  let searchTimer = null;
  $("#vm-filter").addEventListener("input", () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(runSearch, 200);
  });

  async function runSearch() {
    const q = $("#vm-filter").value.trim();
    if (!q) { state.search = null; renderFleet(); return; }
    try {
      const query = `q=${encodeURIComponent(q)}`;
      const [page, named] = await Promise.all([
        api("GET", `/api/v1/dashboard/vms?${query}&limit=${vms.VM_PAGE}`),
        api("GET", `/api/v1/dashboard/scopes?${query}&limit=${SCOPE_PAGE}`)]);
      if ($("#vm-filter").value.trim() !== q) return;  // typed on meanwhile
      for (const vm of page.vms) state.vms.set(vm.name, vm);
      for (const s of named.scopes) state.scopes.set(s.id, s);
      state.search = { ...page, named };
      renderSearch();
    } catch (e) { say(e.message, true); }
  }

  function renderSearch() {
    const page = state.search;
    const byScope = new Map();
    for (const vm of page.vms) {
      if (!byScope.has(vm.scope)) byScope.set(vm.scope, []);
      byScope.get(vm.scope).push(vm);
    }
    const named = page.named.scopes.filter((s) => !byScope.has(s.id));
    const live = liveEvents(), needs = attention();
    const parts = [];
    for (const [id, on] of byScope) {
      const s = state.scopes.get(id);
      parts.push(`<details class="scope" data-scope="${esc(id)}" open><summary class="scope-head"><b>${esc(id)}</b>`
        + `<span>${esc(s ? scopeLine(s) : "")}</span><span class="scope-counts">${on.length} matching</span></summary>`
        + `<div class="scope-vms">${vms.vmChips(on)}</div></details>`);
    }
    for (const s of named) {
      parts.push(`<details class="scope" data-scope="${esc(s.id)}" data-key="s:${esc(s.id)}"><summary class="scope-head"><b>${esc(s.id)}</b>`
        + `<span>${esc(scopeLine(s))}</span><span class="scope-counts">${esc(countsText(scopeCounts(s, live, needs), false))}</span></summary>`
        + `<div class="scope-vms" data-vms-of="${esc(s.id)}"></div></details>`);
    }
    const fleet = $("#fleet");
    fleet.innerHTML = parts.join("") || `<p class="muted">No VM, host or scope holds "${esc(page.q)}".</p>`;
    state.vmEls = new Map();
    vms.registerChips(fleet);
    const scopes = page.named.total;
    $("#fleet-count").textContent = `${plural(page.total, "VM")} matching "${page.q}"`
      + (page.total > page.vms.length ? ` (showing ${page.vms.length}: type more to narrow it)` : "")
      + (scopes ? ` · ${plural(scopes, "scope")} named so` + (scopes > page.named.scopes.length ? ` (showing ${page.named.scopes.length})` : "") : "");
  }

  // The counts of the scopes ``changed`` (null: every scope drawn), then every kind's and
  // region's (from the kinds' totals: a few rows).
  function paintCounts(changed) {
    const live = liveEvents(), needs = attention(), byKind = kindAttention();
    const ids = changed || [...document.querySelectorAll("#fleet [data-scope-counts]")].map((el) => el.dataset.scopeCounts);
    for (const id of ids) {
      const s = state.scopes.get(id);
      const el = document.querySelector(`[data-scope-counts="${CSS.escape(id)}"]`);
      if (s && el) el.textContent = countsText(scopeCounts(s, live, needs), false);
    }
    for (const [region, kinds] of regions()) {
      for (const k of kinds) {
        const el = document.querySelector(`[data-counts="${CSS.escape("k:" + kindKey(k))}"]`);
        if (el) el.textContent = countsText(kindCounts([k], byKind), true);
      }
      const el = document.querySelector(`[data-counts="${CSS.escape("r:" + region)}"]`);
      if (el) el.textContent = countsText(kindCounts(kinds, byKind), true);
    }
  }

  // A tick: the totals of the kinds that changed (an open kind's page of scopes is asked
  // for again: its counts and order moved), and the scopes where a VM's poll or state
  // moved, the first 100 named (more than named: every page of VMs shown is asked again).
  function applyScopeTick(tick) {
    for (const k of tick.kinds) {
      const held = state.kinds.get(kindKey(k));
      if (held) Object.assign(held, k); else state.kinds.set(kindKey(k), k);
    }
    if (tick.kinds.length) paintCounts([]);
    const moved = new Set(tick.moved);
    const hit = (id) => tick.moved_total > tick.moved.length || moved.has(id);
    if (state.search) {
      if (state.search.vms.some((vm) => hit(vm.scope))) runSearch();
    } else {
      for (const k of tick.kinds) {
        const section = kindSection(kindKey(k));
        const page = state.kindPages.get(kindKey(k));
        if (section && section.open) loadKind(kindKey(k), page ? page.offset : 0);
      }
      for (const section of document.querySelectorAll("#fleet details.scope[open]")) {
        const page = state.pages.get(section.dataset.scope);
        if (page && hit(section.dataset.scope)) vms.loadScope(section.dataset.scope, page.offset);
      }
    }
    vms.paintAges();
  }

  const { paintVm, paintAges, paintVmDetail } = vms;
  return { takeSnapshot, renderFleet, paintCounts, paintVm, paintAges, paintVmDetail, applyScopeTick, scopeLine };
};
