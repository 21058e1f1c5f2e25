// forewarn dashboard: what the target fields suggest, asked of the server as a user
// types (issue 39). A million-VM fleet has 10,001 scopes, and more hosts and VMs than a
// page could list: each field's <datalist> holds only the few names that start with
// what was typed (GET /api/v1/dashboard/targets, a pause after the last keystroke), and
// a line under it says how many more matched. app.js calls window.forewarnTargets once.
"use strict";
window.forewarnTargets = ({ $, esc, api }) => {
  const LIMIT = 20;
  const PAUSE_MS = 150;
  const whole = (n) => n.toLocaleString("en-US");

  // input: the field; list: its <datalist>; note: the line saying how many matched;
  // kinds: what the field takes (the fault form: a VM or a scope, never a host).
  function suggest(input, list, note, kinds) {
    let timer = null;
    let asked = null;  // the query last sent: its answer is the one drawn
    async function ask() {
      const q = input.value.trim();
      if (q === asked) return;
      asked = q;
      const query = new URLSearchParams({ q, limit: String(LIMIT) });
      if (kinds) query.set("kinds", kinds);
      let found;
      try { found = await api("GET", "/api/v1/dashboard/targets?" + query); } catch (e) { asked = null; return; }
      if (asked !== q) return;  // the user typed on: a later answer is coming
      list.innerHTML = found.targets.map((t) =>
        `<option value="${esc(t.name)}" label="${esc(t.detail)}" data-kind="${esc(t.kind)}"></option>`).join("");
      const more = found.total - found.targets.length;
      note.textContent = more > 0 ? `${found.targets.length} of ${whole(found.total)} suggested: type more to narrow`
        : q && !found.total ? `nothing in the fleet starts with "${q}"` : "";
      note.dataset.total = String(found.total);
    }
    const soon = () => { clearTimeout(timer); timer = setTimeout(ask, PAUSE_MS); };
    input.addEventListener("input", soon);
    input.addEventListener("focus", soon);
  }

  suggest($("#op-target"), $("#targets"), $("#op-target-more"), null);
  suggest($("#fault-target"), $("#fault-targets"), $("#fault-target-more"), "vm,scope");
};
