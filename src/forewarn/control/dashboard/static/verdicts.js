// forewarn dashboard: the verdicts of GET /api/v1/reactions, asked for after a change
// and every 10 s: the operations card (graded, unfolded to their scopes and events) and
// the reactions card (each event's verdict, the VMs that never or no longer poll), over
// the drill the select picks (since the last fleet reset by default). The VMs card
// rolls the same verdict up by VM (verdict_vms.js, loaded before this file). app.js
// calls window.forewarnVerdicts once with the page's state and helpers.
"use strict";
window.forewarnVerdicts = ({ state, $, esc, api, headers, showLogin, clockText, paintCounts, paintVmDetail }) => {
  let verdictTimer = null;

  // ------------------------------------------------------------------ drills
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

  // ---------------------------------------------------------------- verdicts
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
      await vms.takeEveryVm(report, since);  // a few hundred VMs: every row, in one page
      verdictTag = response.headers.get("ETag");
      verdictSince = since;
      state.verdicts = report;
      paintDrillNote(report);
      paintVerdicts();
      vms.showVerdict(report);  // the VMs card (its scopes' pages are asked for again)
      paintCounts((report.by_scope || []).map((t) => t.scope));
      paintVmDetail();
      vms.reloadOpenScopes();
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

  // The VMs card: the same verdict rolled up by VM, or by scope for a big drill.
  const vms = window.forewarnVerdictVms({ state, $, esc, api, clockText, paintVmDetail, CAP, whole, shownLine,
    heldSince: () => verdictSince });

  return { renderDrills, refreshVerdicts, scheduleVerdicts, vmDid: vms.vmDid };
};
