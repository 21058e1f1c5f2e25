// forewarn dashboard: the history card, the newest entry on top (a list of the last 300)
// over a strip of dots, one an entry, and a line at each fleet reset (a new drill).
// app.js calls window.forewarnHistory once with the page's state and helpers.
"use strict";
window.forewarnHistory = ({ state, $, esc, clockText }) => {
  const HISTORY_SHOWN = 300;
  let stripTimer = null;

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

  return { addHistory, renderHistory, renderStrip };
};
