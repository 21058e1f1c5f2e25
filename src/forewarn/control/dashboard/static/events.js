// forewarn dashboard: the live events table, a page at a time (issue 39). A region
// rollout has 10,000 live events at once: the table draws one page of them (the events
// underway first, then the soonest NotBefore), says how many there are in all, pages on,
// and filters by text (event id, type, scope, VM, status); the count badge keeps the
// whole number. app.js calls window.forewarnEvents once with the page's state and helpers.
"use strict";
window.forewarnEvents = ({ state, $, esc, api, say, age, clockText, countdown, serverNow }) => {
  const PAGE = 100;
  let offset = 0;  // the first row drawn, among the events the filter keeps
  const hays = new WeakMap();  // event -> the lower-cased text the filter searches
  const whole = (n) => n.toLocaleString("en-US");

  function hay(e) {
    let text = hays.get(e);
    if (text === undefined) {
      text = [e.id, e.type, e.source, e.scope, e.status, ...e.resources].join("\n").toLowerCase();
      hays.set(e, text);
    }
    return text;
  }

  // Underway first (longest running first), then the soonest NotBefore, then the oldest.
  function order(a, b) {
    const waiting = (e) => (e.status === "Scheduled" ? 1 : 0);
    return waiting(a) - waiting(b)
      || (waiting(a) ? a.not_before - b.not_before : a.started_at - b.started_at)
      || a.created_at - b.created_at || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
  }

  function row(e) {
    const seenKey = `${e.id}:${e.status}`;
    if (!(seenKey in state.firstSeen)) state.firstSeen[seenKey] = Date.now();
    const scheduled = e.status === "Scheduled";
    const approved = e.approved_by
      ? `${esc(e.approved_by === "control" ? "operator" : e.approved_by)} at ${esc(clockText(e.approved_at))}`
        + (e.approved_via ? ` <small class="muted via">via ${esc(e.approved_via)}</small>` : "")
      : "—";
    const buttons = scheduled
      ? (e.approved_by ? "" : `<button data-action="approve" data-event="${esc(e.id)}">Approve</button>`)
        + `<button data-action="start" data-event="${esc(e.id)}">Start</button>`
        + `<button data-action="cancel" data-event="${esc(e.id)}">Cancel</button>`
      : `<button data-action="complete" data-event="${esc(e.id)}">Complete</button>`;
    const when = scheduled ? `data-nb="${e.not_before}"` : `data-started="${e.started_at}"`;
    return `<tr data-event="${esc(e.id)}" data-status="${esc(e.status)}">`
      + `<td><code title="${esc(e.id)}">${esc(e.id.slice(0, 8))}</code></td>`
      + `<td>${esc(e.type)} <small class="muted">${esc(e.source)}</small></td>`
      + `<td>${esc(e.scope)}</td>`
      + `<td class="resources" title="${esc(e.resources.join(", "))}">${esc(e.resources.join(", "))}</td>`
      + `<td><span class="badge b-${esc(e.status)}">${esc(e.status)}</span></td>`
      + `<td class="countdown" ${when}></td>`
      + `<td class="approved">${approved}</td>`
      + `<td class="actions">${buttons}</td></tr>`;
  }

  function shownLine(first, last, found, all, text) {
    if (!found) return text ? `No live event matches "${esc(text)}" (of ${whole(all)}).` : "";
    const of = text ? `${whole(found)} matching "${esc(text)}" (of ${whole(all)} live)` : `${whole(found)}`;
    const line = `showing ${whole(first + 1)} to ${whole(last)} of ${of}`;
    if (found <= PAGE) return text ? line : "";
    return line
      + ` <button type="button" class="quiet" data-page="${Math.max(0, first - PAGE)}"${first ? "" : " disabled"}>previous</button>`
      + ` <button type="button" class="quiet" data-page="${last}"${last < found ? "" : " disabled"}>next</button>`;
  }

  // Redrawn on each change (a page at most: the sort and filter are of the live events,
  // the DOM work of 100 rows whatever their number).
  function renderEvents() {
    const all = state.events.size;
    const raw = $("#event-filter").value.trim();
    const text = raw.toLowerCase();
    let found = [...state.events.values()];
    if (text) found = found.filter((e) => hay(e).includes(text));
    found.sort(order);
    if (offset >= found.length) offset = Math.max(0, Math.floor((found.length - 1) / PAGE) * PAGE);
    const shown = found.slice(offset, offset + PAGE);
    $("#events tbody").innerHTML = shown.map(row).join("");
    $("#no-events").hidden = all > 0;
    $("#event-count").textContent = all ? whole(all) : "";
    const pager = $("#events-shown");
    pager.innerHTML = shownLine(offset, offset + shown.length, found.length, all, raw);
    pager.hidden = !pager.innerHTML;
    paintCountdowns();
  }

  function paintCountdowns() {
    const now = serverNow();
    for (const cell of document.querySelectorAll("#events .countdown")) {
      if (cell.dataset.nb) {
        const left = Number(cell.dataset.nb) - now;
        cell.textContent = countdown(left);
        cell.classList.toggle("due", left <= 0);
      } else if (cell.dataset.started) {
        cell.textContent = `started ${age(now - Number(cell.dataset.started))} ago`;
      }
    }
  }

  $("#events tbody").addEventListener("click", async (event) => {
    const button = event.target.closest("button[data-action]");
    if (!button) return;
    const { action, event: id } = button.dataset;
    button.disabled = true;
    try {
      await api("POST", `/api/v1/events/${encodeURIComponent(id)}/${action}`, {});
      say(`${action}: event ${id}`);
    } catch (e) {
      say(e.message, true);
      button.disabled = false;
    }
  });

  $("#events-shown").addEventListener("click", (event) => {
    const button = event.target.closest("button[data-page]");
    if (!button || button.disabled) return;
    offset = Number(button.dataset.page);
    renderEvents();
  });

  $("#event-filter").addEventListener("input", () => { offset = 0; renderEvents(); });

  return { renderEvents, paintCountdowns };
};
