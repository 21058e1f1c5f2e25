// forewarn dashboard, the fleet: rolled up by region, scope kind and scope (GET
// /api/v1/dashboard holds one row per scope, counted), a scope's VMs asked for when it is
// opened, one VM shown alone with its live events. Loaded before app.js, which calls
// window.forewarnFleet once with the page's state and helpers.
"use strict";
window.forewarnFleet = ({ state, $, esc, api, say, age, clockText, serverNow, vmDid }) => {
  // The fleet rolled up: region, then scope kind, then scope (GET /api/v1/dashboard gives
  // one row per scope, counted); a scope's VMs are asked for when it is opened, a page at
  // a time (GET /api/v1/dashboard/scopes/{scope}), and asked for again when a tick says
  // one of its VMs moved. A click on a VM shows it alone, with its live events.
  const OPEN_UP_TO = 300;  // fleets up to this many VMs show every scope open
  const SCOPES_SHOWN = 50;  // scopes listed per kind (worst first); the filter finds the rest
  const VM_PAGE = 200;
  const big = () => state.vmCount > OPEN_UP_TO;
  const plural = (n, word) => `${n.toLocaleString("en-US")} ${word}${n === 1 ? "" : "s"}`;
  const scopeLine = (scope) => `${scope.kind.replace("_", " ")} · incarnation ${scope.incarnation}`
    + (scope.enabled ? "" : " · Scheduled Events off until a VM asks");
  const isOpen = (key, byDefault) => (state.toggled.has(key) ? !byDefault : byDefault);
  const defaultOpen = (key) => (key.startsWith("r:") || !big());

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
    for (const k of state.verdicts.by_kind) out.set(`${k.region}|${k.kind}`, k.vms);
    return out;
  }

  // The counts of ``scopes``; of a whole kind or region (``kinds``: [region, kind] pairs)
  // the VMs needing attention are by_kind's.
  function tallyOf(scopes, live, needs, kinds) {
    const c = { scopes: 0, vms: 0, states: {}, polled: 0, silent: 0, events: 0, attention: 0 };
    for (const s of scopes) {
      c.scopes += 1; c.vms += s.vms; c.polled += s.polled; c.silent += s.silent;
      c.events += live.get(s.id) || 0; c.attention += needs.get(s.id) || 0;
      for (const [k, n] of Object.entries(s.states)) c.states[k] = (c.states[k] || 0) + n;
    }
    if (kinds && state.verdicts && state.verdicts.by_kind) {
      const byKind = kindAttention();
      c.attention = kinds.reduce((n, [region, kind]) => n + (byKind.get(`${region}|${kind}`) || 0), 0);
    }
    return c;
  }
  const kindsOf = (region, kinds) => [...kinds.keys()].map((kind) => [region, kind]);

  function countsText(c, withScopes) {
    const bits = [withScopes ? `${plural(c.vms, "VM")} in ${plural(c.scopes, "scope")}` : plural(c.vms, "VM")];
    for (const [status, n] of Object.entries(c.states)) bits.push(`${n.toLocaleString("en-US")} ${status}`);
    if (c.events) bits.push(plural(c.events, "live event"));
    if (c.attention) bits.push(`${c.attention.toLocaleString("en-US")} needing attention`);
    if (c.silent) bits.push(`${c.silent.toLocaleString("en-US")} silent for a minute or more`);
    if (c.vms - c.polled) bits.push(`${(c.vms - c.polled).toLocaleString("en-US")} never polled`);
    return bits.join(" · ");
  }

  // Worst first: live events, VMs not running, needing attention, silent; then by name.
  function worstFirst(scopes, live, needs) {
    const weight = (s) => [live.get(s.id) || 0, Object.values(s.states).reduce((a, b) => a + b, 0),
      needs.get(s.id) || 0, s.silent];
    const keyed = scopes.map((s) => [weight(s), s]);
    keyed.sort((a, b) => {
      for (let i = 0; i < 4; i++) if (a[0][i] !== b[0][i]) return b[0][i] - a[0][i];
      return a[1].id.localeCompare(b[1].id, "en", { numeric: true });
    });
    return keyed.map(([, s]) => s);
  }

  function groups() {  // region -> kind -> [scope]
    const out = new Map();
    for (const s of state.scopes.values()) {
      if (!out.has(s.region)) out.set(s.region, new Map());
      const kinds = out.get(s.region);
      if (!kinds.has(s.kind)) kinds.set(s.kind, []);
      kinds.get(s.kind).push(s);
    }
    return out;
  }

  function renderFleet() {
    if (state.search) { renderSearch(); return; }
    const live = liveEvents(), needs = attention();
    const parts = [];
    for (const [region, kinds] of groups()) {
      const rkey = `r:${region}`;
      const all = [...kinds.values()].flat();
      parts.push(`<details class="group region" data-key="${esc(rkey)}"${isOpen(rkey, defaultOpen(rkey)) ? " open" : ""}>`
        + `<summary class="scope-head"><b>${esc(region)}</b>`
        + `<span class="scope-counts" data-counts="${esc(rkey)}">${esc(countsText(tallyOf(all, live, needs, kindsOf(region, kinds)), true))}</span></summary>`);
      for (const [kind, scopes] of kinds) {
        const kkey = `k:${region}|${kind}`;
        const open = isOpen(kkey, defaultOpen(kkey));
        parts.push(`<details class="group kind" data-key="${esc(kkey)}"${open ? " open" : ""}>`
          + `<summary class="scope-head"><b>${esc(kind.replace("_", " "))}</b>`
          + `<span class="scope-counts" data-counts="${esc(kkey)}">${esc(countsText(tallyOf(scopes, live, needs, [[region, kind]]), true))}</span></summary>`
          + `<div class="scope-list" data-scopes-of="${esc(kkey)}">${open ? scopeList(scopes, live, needs) : ""}</div></details>`);
      }
      parts.push("</details>");
    }
    const fleet = $("#fleet");
    fleet.innerHTML = parts.join("");
    $("#fleet-count").textContent = `${plural(state.vmCount, "VM")} in ${plural(state.scopes.size, "scope")}`
      + (big() ? " (open a scope to see its VMs)" : "");
    fillScopes();
  }

  function scopeList(scopes, live, needs) {
    const shown = worstFirst(scopes, live, needs).slice(0, SCOPES_SHOWN);
    const rows = shown.map((s) => {
      const key = `s:${s.id}`;
      return `<details class="scope" data-scope="${esc(s.id)}" data-key="${esc(key)}"${isOpen(key, !big()) ? " open" : ""}>`
        + `<summary class="scope-head"><b>${esc(s.id)}</b>`
        + `<span data-scope-head="${esc(s.id)}">${esc(scopeLine(s))}</span>`
        + `<span class="scope-counts" data-scope-counts="${esc(s.id)}">${esc(countsText(tallyOf([s], live, needs), false))}</span></summary>`
        + `<div class="scope-vms" data-vms-of="${esc(s.id)}"></div></details>`;
    });
    if (scopes.length > shown.length) {
      rows.push(`<p class="muted more-scopes">showing ${shown.length} of ${plural(scopes.length, "scope")}, worst first (filter to find the rest)</p>`);
    }
    return rows.join("");
  }

  // Every open scope drawn shows its VMs: from the page held, or asked for now.
  function fillScopes() {
    state.vmEls = new Map();
    for (const section of document.querySelectorAll("#fleet details.scope[open]")) {
      const id = section.dataset.scope;
      const held = state.pages.get(id);
      if (held) drawPage(id, held);
      loadScope(id, held ? held.offset : 0);
    }
    paintAges();
  }

  async function loadScope(id, offset) {
    const slot = state.loading.get(id) || {};
    if (slot.busy) { slot.again = offset; state.loading.set(id, slot); return; }
    slot.busy = true;
    state.loading.set(id, slot);
    try {
      const path = id.split("/").map(encodeURIComponent).join("/");  // a placement group: big/pg3
      const page = await api("GET", `/api/v1/dashboard/scopes/${path}?offset=${offset}&limit=${VM_PAGE}`);
      state.pages.set(id, page);
      for (const vm of page.vms) state.vms.set(vm.name, vm);
      const section = document.querySelector(`#fleet details.scope[data-scope="${CSS.escape(id)}"]`);
      if (section && section.open && !state.search) drawPage(id, page);
      paintVmDetail();
    } catch (e) {
      const box = document.querySelector(`[data-vms-of="${CSS.escape(id)}"]`);
      if (box) box.textContent = e.message;
    } finally {
      slot.busy = false;
      if (slot.again !== undefined) { const again = slot.again; slot.again = undefined; loadScope(id, again); }
      else markFleetReady();
    }
  }

  function markFleetReady() {
    if ([...state.loading.values()].some((s) => s.busy)) return;
    document.body.dataset.fleetReady = "1";
  }

  function vmChips(vms) {
    const uds = new Map();
    for (const vm of vms) {
      if (!uds.has(vm.ud)) uds.set(vm.ud, new Map());
      const hosts = uds.get(vm.ud);
      if (!hosts.has(vm.host)) hosts.set(vm.host, []);
      hosts.get(vm.host).push(vm);
    }
    const parts = [];
    for (const ud of [...uds.keys()].sort((a, b) => a - b)) {
      parts.push(`<div class="ud"><div class="ud-label">UD ${ud}</div><div class="hosts">`);
      for (const [host, on] of uds.get(ud)) {
        parts.push(`<div class="host"><div class="host-label">${esc(host)}</div><div class="vms">`);
        for (const vm of on) {
          parts.push(`<span class="vm st-${esc(vm.status)}${vm.name === state.openVm ? " chosen" : ""}" data-vm="${esc(vm.name)}" tabindex="0">`
            + `<b>${esc(vm.name)}</b><i class="age never">never</i></span>`);
        }
        parts.push("</div></div>");
      }
      parts.push("</div></div>");
    }
    return parts.join("");
  }

  function pager(page) {
    if (page.total <= page.vms.length && !page.offset) return "";
    const last = page.offset + page.vms.length;
    return `<p class="pager muted">VMs ${(page.offset + 1).toLocaleString("en-US")} to ${last.toLocaleString("en-US")} of ${page.total.toLocaleString("en-US")}`
      + ` <button type="button" class="quiet" data-page="${Math.max(0, page.offset - page.limit)}"${page.offset ? "" : " disabled"}>previous</button>`
      + ` <button type="button" class="quiet" data-page="${page.next === null ? "" : page.next}"${page.next === null ? " disabled" : ""}>next</button></p>`;
  }

  function drawPage(id, page) {
    const box = document.querySelector(`[data-vms-of="${CSS.escape(id)}"]`);
    if (!box) return;
    box.innerHTML = pager(page) + vmChips(page.vms);
    registerChips(box);
  }

  function registerChips(box) {
    for (const el of box.querySelectorAll(".vm")) {
      state.vmEls.set(el.dataset.vm, { el, age: el.lastElementChild, text: "never", status: null });
    }
    for (const el of box.querySelectorAll(".vm")) paintVm(state.vms.get(el.dataset.vm));
    paintAges();
  }

  // A group the user opened or closed stays so across snapshots; a kind draws its scopes
  // and a scope asks for its VMs when opened.
  $("#fleet").addEventListener("toggle", (event) => {
    const section = event.target;
    if (!(section instanceof HTMLDetailsElement) || state.search) return;
    const key = section.dataset.key;
    if (!key) return;
    if (section.open === defaultOpen(key)) state.toggled.delete(key);
    else state.toggled.add(key);
    if (!section.open) return;
    if (key.startsWith("k:")) {
      const [region, kind] = key.slice(2).split("|");
      const scopes = [...state.scopes.values()].filter((s) => s.region === region && s.kind === kind);
      const box = section.querySelector(".scope-list");
      if (box.firstChild) return;  // drawn open already
      box.innerHTML = scopeList(scopes, liveEvents(), attention());
      fillScopes();
    } else if (key.startsWith("s:")) {
      const id = section.dataset.scope;
      const slot = state.loading.get(id);
      if (slot && slot.busy) return;  // asked for already (drawn open)
      const held = state.pages.get(id);
      if (held) drawPage(id, held);
      loadScope(id, held ? held.offset : 0);
    }
  }, true);

  $("#fleet").addEventListener("click", (event) => {
    const button = event.target.closest("button[data-page]");
    if (button) {
      const section = button.closest("details.scope");
      if (section && button.dataset.page !== "") loadScope(section.dataset.scope, Number(button.dataset.page));
      return;
    }
    const chip = event.target.closest(".vm[data-vm]");
    if (chip) openVm(chip.dataset.vm);
  });

  // The fleet filter: VMs by name or host, searched by the server (a million are not
  // here); scopes by name, from the roll-up.
  let searchTimer = null;
  $("#vm-filter").addEventListener("input", () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(runSearch, 200);
  });

  async function runSearch() {
    const q = $("#vm-filter").value.trim();
    if (!q) { state.search = null; renderFleet(); return; }
    try {
      const page = await api("GET", `/api/v1/dashboard/vms?q=${encodeURIComponent(q)}&limit=${VM_PAGE}`);
      if ($("#vm-filter").value.trim() !== q) return;  // typed on meanwhile
      for (const vm of page.vms) state.vms.set(vm.name, vm);
      state.search = page;
      renderSearch();
    } catch (e) { say(e.message, true); }
  }

  function renderSearch() {
    const page = state.search;
    const q = page.q.toLowerCase();
    const byScope = new Map();
    for (const vm of page.vms) {
      if (!byScope.has(vm.scope)) byScope.set(vm.scope, []);
      byScope.get(vm.scope).push(vm);
    }
    const named = [...state.scopes.values()].filter((s) => s.id.toLowerCase().includes(q) && !byScope.has(s.id));
    const live = liveEvents(), needs = attention();
    const parts = [];
    for (const [id, vms] of byScope) {
      const s = state.scopes.get(id);
      parts.push(`<details class="scope" data-scope="${esc(id)}" open><summary class="scope-head"><b>${esc(id)}</b>`
        + `<span>${esc(s ? scopeLine(s) : "")}</span><span class="scope-counts">${vms.length} matching</span></summary>`
        + `<div class="scope-vms">${vmChips(vms)}</div></details>`);
    }
    for (const s of named.slice(0, SCOPES_SHOWN)) {
      parts.push(`<details class="scope" data-scope="${esc(s.id)}" data-key="s:${esc(s.id)}"><summary class="scope-head"><b>${esc(s.id)}</b>`
        + `<span>${esc(scopeLine(s))}</span><span class="scope-counts">${esc(countsText(tallyOf([s], live, needs), false))}</span></summary>`
        + `<div class="scope-vms" data-vms-of="${esc(s.id)}"></div></details>`);
    }
    const fleet = $("#fleet");
    fleet.innerHTML = parts.join("") || `<p class="muted">No VM, host or scope holds "${esc(page.q)}".</p>`;
    state.vmEls = new Map();
    registerChips(fleet);
    $("#fleet-count").textContent = `${plural(page.total, "VM")} matching "${page.q}"`
      + (page.total > page.vms.length ? ` (showing ${page.vms.length}: type more to narrow it)` : "")
      + (named.length ? ` · ${plural(named.length, "scope")} named so` : "");
  }

  // A searched scope opened by hand asks for its VMs like any other.
  $("#fleet").addEventListener("toggle", (event) => {
    const section = event.target;
    if (state.search && section instanceof HTMLDetailsElement && section.open && section.dataset.key) {
      loadScope(section.dataset.scope, 0);
    }
  }, true);

  // The counts of the scopes ``changed`` (null: every scope drawn), then every kind's and
  // region's (sums of at most a few thousand rows).
  function paintCounts(changed) {
    const live = liveEvents(), needs = attention();
    const ids = changed || [...document.querySelectorAll("#fleet [data-scope-counts]")].map((el) => el.dataset.scopeCounts);
    for (const id of ids) {
      const s = state.scopes.get(id);
      const el = document.querySelector(`[data-scope-counts="${CSS.escape(id)}"]`);
      if (s && el) el.textContent = countsText(tallyOf([s], live, needs), false);
    }
    for (const [region, kinds] of groups()) {
      const all = [];
      for (const [kind, scopes] of kinds) {
        all.push(...scopes);
        const el = document.querySelector(`[data-counts="${CSS.escape(`k:${region}|${kind}`)}"]`);
        if (el) el.textContent = countsText(tallyOf(scopes, live, needs, [[region, kind]]), true);
      }
      const el = document.querySelector(`[data-counts="${CSS.escape(`r:${region}`)}"]`);
      if (el) el.textContent = countsText(tallyOf(all, live, needs, kindsOf(region, kinds)), true);
    }
  }

  function paintVm(vm) {
    const slot = vm && state.vmEls.get(vm.name);
    if (!slot || slot.status === vm.status) return;
    slot.status = vm.status;
    slot.el.className = "vm st-" + vm.status + (vm.name === state.openVm ? " chosen" : "");
  }

  // A VM's exact state and last poll are in its tooltip, written when the pointer reaches
  // it: keeping 1,000 tooltips current would rewrite the page every second.
  $("#fleet").addEventListener("mouseover", (event) => {
    const el = event.target.closest(".vm");
    const vm = el && state.vms.get(el.dataset.vm);
    if (!vm) return;
    const polled = vm.polled
      ? `last poll ${clockText(vm.polled)} UTC (${age(serverNow() - vm.polled)} ago)` : "never polled";
    el.title = `${vm.name} · ${vm.status} · ${vm.host} · update domain ${vm.ud} · ${polled}`;
  });

  // Ages in steps (now, 5s, 10s, 30s, 1m, 2m...): a fleet that polls every second keeps
  // showing "now", so a tick that moves every VM's poll time changes nothing on screen.
  const STEPS = [5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400];
  function ageStep(seconds) {
    if (seconds < 3) return "now";
    let step = 3;
    for (const s of STEPS) if (seconds >= s) step = s;
    return age(step);
  }

  function pollAge(vm) {
    if (!vm.polled) return ["never", "never"];
    const seconds = serverNow() - vm.polled;
    return [ageStep(seconds), seconds < 10 ? "fresh" : seconds < 60 ? "late" : "stale"];
  }

  function paintAges() {
    for (const [name, slot] of state.vmEls) {
      const vm = state.vms.get(name);
      if (!vm) continue;
      const [text, kind] = pollAge(vm);
      if (slot.text !== text) {
        slot.text = text;
        slot.age.textContent = text;
        slot.age.className = "age " + kind;
      }
    }
    paintVmAge();
  }

  // ------------------------------------------------------------------ one VM
  // The VM clicked: where it runs, its state and last poll (its scope's page, asked for
  // again as it moves), the live events that list it (from the stream) and its verdict.
  function openVm(name) {
    state.openVm = name;
    for (const el of document.querySelectorAll("#fleet .vm.chosen")) el.classList.remove("chosen");
    const chip = state.vmEls.get(name);
    if (chip) chip.el.classList.add("chosen");
    paintVmDetail();
  }

  $("#vm-detail-close").addEventListener("click", () => { state.openVm = null; paintVmDetail(); });

  function paintVmDetail() {
    const box = $("#vm-detail");
    const vm = state.openVm && state.vms.get(state.openVm);
    box.hidden = !vm;
    if (!vm) return;
    $("#vm-detail-name").textContent = vm.name;
    $("#vm-detail-where").textContent = `scope ${vm.scope} · host ${vm.host} · update domain ${vm.ud}`;
    const status = $("#vm-detail-status");
    status.textContent = vm.status;
    status.className = "vm st-" + vm.status;
    paintVmAge();
    const events = [...state.events.values()].filter((e) => e.resources.includes(vm.name))
      .sort((a, b) => a.created_at - b.created_at);
    $("#vm-detail-events").innerHTML = events.map((e) => `<li data-event="${esc(e.id)}" data-status="${esc(e.status)}">`
      + `<span class="badge b-${esc(e.status)}">${esc(e.status)}</span> ${esc(e.type)} `
      + `<code title="${esc(e.id)}">${esc(e.id.slice(0, 8))}</code>`
      + (e.approved_by ? ` · approved by ${esc(e.approved_by === "control" ? "the operator" : e.approved_by)}` : "")
      + ` · NotBefore ${esc(clockText(e.not_before))} UTC</li>`).join("")
      || `<li class="muted">No live event lists ${esc(vm.name)}.</li>`;
    // a big drill's verdict names a few VMs: the others are in their scope's page of the
    // VMs card, once opened there
    const pages = [...(window.forewarnScopeVms ? window.forewarnScopeVms.values() : [])].filter((p) => p.rows);
    const verdict = state.verdicts && [...(state.verdicts.vms || []), ...pages.flatMap((p) => p.rows)]
      .find((v) => v.vm === vm.name);
    $("#vm-detail-verdict").textContent = verdict
      ? `verdict ${verdict.verdict} · ${verdict.polling} · ${vmDid(verdict)}${verdict.lines.length ? ": " + verdict.lines.join("; ") : ""}`
      : state.verdicts && (state.verdicts.trimmed || {}).vms !== undefined
        ? `Its verdict: open its scope (${vm.scope}) in the VMs card.`
        : "Not in any graded event yet.";
  }

  function paintVmAge() {
    const vm = state.openVm && state.vms.get(state.openVm);
    if (!vm) return;
    const [text, kind] = pollAge(vm);
    const el = $("#vm-detail-polled");
    el.textContent = vm.polled ? `last poll ${clockText(vm.polled)} UTC (${text})` : "never polled";
    el.className = "age " + kind;
  }

  // A tick, per scope: the counts that changed, and the scopes where a VM's poll or state
  // moved (the pages shown of those are asked for again).
  function applyScopeTick(tick) {
    const changed = Object.keys(tick.scopes);
    for (const id of changed) {
      const known = state.scopes.get(id);
      if (known) Object.assign(known, tick.scopes[id]);
    }
    if (changed.length) paintCounts(changed);
    const moved = new Set(tick.moved);
    if (state.search) {
      if (state.search.vms.some((vm) => moved.has(vm.scope))) runSearch();
    } else {
      for (const id of moved) {
        const page = state.pages.get(id);
        const section = page && document.querySelector(`#fleet details.scope[data-scope="${CSS.escape(id)}"]`);
        if (section && section.open) loadScope(id, page.offset);
      }
    }
    paintAges();
  }

  return { renderFleet, paintCounts, paintVm, paintAges, paintVmDetail, applyScopeTick, scopeLine };
};
