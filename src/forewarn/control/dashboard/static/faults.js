// forewarn dashboard: the endpoint faults card. Injected faults (/api/v1/faults):
// listed, added and cleared through the same JSON API as every other control; the
// server checks each input and says what is wrong. app.js calls window.forewarnFaults
// once with the page's state and helpers, and refreshes the list every 3 s.
"use strict";
window.forewarnFaults = ({ state, $, esc, api, say }) => {
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

  return { refreshFaults };
};
