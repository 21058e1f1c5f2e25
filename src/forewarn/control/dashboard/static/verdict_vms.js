// forewarn dashboard: the VMs card, the verdict of GET /api/v1/reactions rolled up by
// VM (a small drill: every VM that did not react, named and filtered here) or by scope
// (a big drill: the worst scopes of each kind, a scope's VMs a page at a time when
// opened, the filter asking the server for the scopes it names). verdicts.js calls
// window.forewarnVerdictVms once with the page's state and helpers and its own.
"use strict";
window.forewarnVerdictVms = ({ state, $, esc, api, clockText, paintVmDetail, CAP, whole, shownLine, heldSince }) => {
  // The report's roll-up by VM (report.vms of GET /api/v1/reactions, fetched with the
  // verdicts by verdicts.js after a change and every 10 s, never with a tick): the VMs
  // that did not react, named, worst verdict first; within a verdict the report's own
  // order (the VMs that failed first, then by name). Rows past CAP are counted, never
  // dropped.
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

  // A verdict cut short of its VMs, up to FLAT: every one's row, asked for in one page.
  async function takeEveryVm(report, since) {
    const cut = (report.trimmed || {}).vms;
    if (cut === undefined || cut > FLAT) return;
    const query = new URLSearchParams({ vms: "all", limit: String(FLAT) });
    if (since !== null) query.set("since", String(since));
    const page = await api("GET", "/api/v1/reactions?" + query);
    report.vms = page.vms;
    report.flatVms = true;
  }

  // A new verdict drawn: the scopes' pages are asked for again (reloadOpenScopes).
  function showVerdict(report) {
    scopeVms.clear();
    orderVms(report);
    paintVms();
  }

  function reloadOpenScopes() {
    for (const scope of openVmScopes) loadScopeVms(scope);
  }

  function vmsParam(want) { return want === "" ? "all" : want; }

  async function loadScopeVms(scope) {
    const want = $("#vm-verdict-filter").value;
    scopeVms.set(scope, "loading");
    const since = heldSince();
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
      const since = heldSince();
      if (since !== null && since !== undefined) query.set("since", String(since));
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

  return { takeEveryVm, showVerdict, reloadOpenScopes, vmDid };
};
