// forewarn dashboard, the VMs of the fleet card: a scope's VMs, a page at a time (GET
// /api/v1/dashboard/scopes/{scope}), asked for when the scope is opened and again when a
// tick says one of its VMs moved; their poll ages; one VM shown alone with its live events
// and verdict. Loaded before fleet.js, which calls window.forewarnFleetVms once.
"use strict";
window.forewarnFleetVms = ({ state, $, esc, api, age, clockText, serverNow, vmDid }) => {
  const VM_PAGE = 200;

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
      if (section && section.open) drawPage(id, page);  // a scope the filter named, too
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

  // A scope drawn open shows its VMs: the page held at once, asked for again unless
  // ``held`` says the one held will do (a redraw of its kind's list).
  function showScope(id, keepHeld) {
    const held = state.pages.get(id);
    if (held) drawPage(id, held);
    if (!held || !keepHeld) loadScope(id, held ? held.offset : 0);
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

  return { VM_PAGE, loadScope, showScope, vmChips, registerChips, paintVm, paintAges, paintVmDetail };
};
