"""The dashboard of the 1,000-VM example fleet in Chromium: what a user sees first.

A real ``forewarn serve`` on a virtual clock; every VM of ``api`` but api-5 and api-10
polls (so its Scheduled Events are on), ``cache`` never asks. A rolling reboot of
``cache`` hits its 48 VMs with no notice; one of ``api`` is missed by api-5 and api-10.
The page must lead with the operations, no-notice first, naming VMs, filter them, and
say how many rows it shows.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import msgspec

from forewarn.fleet import build_topology, load_fleet_file
from forewarn.rehearsal.rollups import VM_VERDICTS, VmRollup, needs_attention
from tests.dashboard.browser import needs_chromium
from tests.support.serverproc import ServerProcess

pytestmark = needs_chromium
THOUSAND = Path(__file__).resolve().parents[2] / "src/forewarn/fleet/fleets/thousand.yaml"
JSON = {"Content-Type": "application/json"}


def _poll_all(server: ServerProcess, addresses: list[str]) -> None:
    for address in addresses:
        assert server.imds(vm_address=address).status_code == 200


def test_operations_lead_no_notice_first_named_and_filtered(
    browser: object, start_server: Callable[..., ServerProcess]
) -> None:
    server = start_server(["--fleet", str(THOUSAND), "--clock", "virtual", "--rate-limit", "0"])
    topology = build_topology(load_fleet_file(THOUSAND))
    pollers = [vm.address for name, vm in topology.vms.items()
               if vm.scope_id == "api" and name not in ("api-5", "api-10")]  # fmt: skip
    _poll_all(server, pollers)

    def control(path: str, body: dict[str, object]) -> dict[str, object]:
        response = server.control("POST", path, headers=JSON, json=body)
        assert response.status_code in (200, 201), response.text
        out: dict[str, object] = response.json()
        return out

    control("/api/v1/operations", {"kind": "platform-reboot", "scope": "cache"})
    control("/api/v1/operations", {"kind": "platform-reboot", "scope": "api"})
    control("/api/v1/clock/advance", {"seconds": 2})
    _poll_all(server, pollers[:40])
    control("/api/v1/clock/advance", {"seconds": 20 * 60})

    page = browser.new_page(viewport={"width": 1280, "height": 800})  # type: ignore[attr-defined]
    page.goto(server.control_url + "/")
    page.wait_for_selector("body[data-ready]", timeout=30_000)
    page.wait_for_selector("#operations tbody tr", timeout=30_000)
    rows = page.locator("#operations tbody tr")
    first = rows.nth(0)
    assert first.get_attribute("data-verdict") == "no-notice"
    assert "cache" in first.inner_text()
    # Three of its four update domains so far (one every 10 min), each VM named.
    assert re.search(
        r"update domain 3 of 4, 0 of 36 approved, 36 got no notice: cache-0, cache-1, "
        r"cache-2, cache-4, cache-5 and 31 more",
        first.inner_text(),
    )
    api = page.locator("#operations tbody tr[data-verdict=fail]")
    assert "never saw it: api-5, api-10" in api.first.inner_text()
    banner = page.locator("#no-notice")
    assert banner.is_visible() and "36 VMs: cache-0, cache-1" in banner.inner_text()
    # It leads: the operations sit above the fleet, within the first screen.
    top = page.evaluate("document.querySelector('#operations').getBoundingClientRect().top")
    fleet = page.evaluate("document.querySelector('#fleet').getBoundingClientRect().top")
    assert top < 800 and top < fleet
    # Never capped silently: the events table says how many it shows.
    total = int(page.evaluate("document.querySelectorAll('#verdicts tbody tr').length"))
    assert total > 0 and str(total) in page.inner_text("#verdicts-shown")
    # Filters: by verdict, then by text.
    page.select_option("#verdict-filter", "fail")
    page.wait_for_function(
        "[...document.querySelectorAll('#operations tbody tr')].every("
        "r => r.dataset.verdict === 'fail')"
    )
    assert page.locator("#operations tbody tr").count() >= 1
    page.select_option("#verdict-filter", "")
    page.fill("#op-filter", "cache")
    page.wait_for_function("document.querySelectorAll('#operations tbody tr').length === 1")
    assert "of 2" in page.inner_text("#op-shown")
    page.fill("#op-filter", "")
    page.wait_for_function("document.querySelectorAll('#operations tbody tr').length === 2")
    # An operation unfolds to its scopes and events (as in the HTML report), stays open
    # across repaints, and folds again.
    report = server.control("GET", "/api/v1/reactions", params={"full": "true"}).json()
    (rollout,) = [o for o in report["operations"] if o["verdict"] == "fail"]
    verdicts = {e["id"]: e["verdict"] for e in report["events"]}
    assert rollout["events"]
    page.locator(f"#operations tbody tr.op[data-operation='{rollout['id']}']").click()
    more = page.locator(f"#operations tbody tr.op-more[data-more='{rollout['id']}']")
    more.wait_for(timeout=10_000)
    listed = more.locator(".op-events li[data-event]")
    assert [listed.nth(k).get_attribute("data-event") for k in range(listed.count())] == (
        rollout["events"][:100]
    )
    first_event = rollout["events"][0]
    assert verdicts[first_event] in listed.first.inner_text()
    assert f"{len(rollout['events'])} events" in more.inner_text()
    assert "api" in more.locator(".op-scopes").inner_text()
    page.fill("#op-filter", "api")  # a repaint keeps it open
    page.wait_for_function("document.querySelectorAll('#operations tbody tr.op').length === 1")
    assert more.is_visible()
    page.locator(f"#operations tbody tr.op[data-operation='{rollout['id']}']").click()
    page.wait_for_function("!document.querySelector('#operations tbody tr.op-more')")


def _approve(server: ServerProcess, address: str, event_ids: list[str]) -> None:
    response = server.imds(
        "POST",
        vm_address=address,
        json={"StartRequests": [{"EventId": event_id} for event_id in event_ids]},
    )
    assert response.status_code == 200, response.text


def _documents(server: ServerProcess, addresses: dict[str, str]) -> dict[str, list[str]]:
    """Each VM polls once: the ids of the events listing it."""
    out = {}
    for name, address in addresses.items():
        response = server.imds(vm_address=address)
        assert response.status_code == 200
        out[name] = [e["EventId"] for e in response.json()["Events"] if name in e["Resources"]]
    return out


def test_the_vms_panel_names_who_did_not_react_worst_first_filtered_and_counted(
    browser: object, start_server: Callable[..., ServerProcess]
) -> None:
    server = start_server(["--fleet", str(THOUSAND), "--clock", "virtual", "--rate-limit", "0"])
    topology = build_topology(load_fleet_file(THOUSAND))
    pollers = {name: vm.address for name, vm in topology.vms.items()
               if vm.scope_id == "api" and name not in ("api-5", "api-10")}  # fmt: skip
    _documents(server, pollers)  # Scheduled Events on for api; cache and spot never ask

    def control(path: str, body: dict[str, object]) -> None:
        response = server.control("POST", path, headers=JSON, json=body)
        assert response.status_code in (200, 201), response.text

    control("/api/v1/operations", {"kind": "platform-reboot", "scope": "cache"})
    control("/api/v1/operations", {"kind": "platform-reboot", "scope": "spot"})
    control("/api/v1/operations", {"kind": "platform-reboot", "scope": "api"})
    control("/api/v1/clock/advance", {"seconds": 2})
    seen = _documents(server, pollers)
    for n, (name, ids) in enumerate(seen.items()):
        if ids and n % 2 == 0:  # every other VM that got an event approves it
            _approve(server, pollers[name], ids)
    control("/api/v1/clock/advance", {"seconds": 20 * 60})
    _documents(server, pollers)  # still polling

    # What the page must show, from the report's own roll-up and its own definitions.
    report = server.control("GET", "/api/v1/reactions", params={"full": "true"}).json()
    rollups = [msgspec.convert(v, VmRollup) for v in report["vms"]]
    rank = {v: k for k, v in enumerate((*VM_VERDICTS, "none"))}
    worst_first = sorted(rollups, key=lambda v: rank[v.verdict])  # stable: the report's order
    attention = [v.vm for v in worst_first if needs_attention(v)]
    verdict_of = {v.vm: v.verdict for v in rollups}
    assert verdict_of["cache-0"] == "no-notice" and verdict_of["api-5"] == "missed"
    assert any(v == "approved" for v in verdict_of.values())
    assert 100 < len(attention) < len(rollups)

    page = browser.new_page(viewport={"width": 1280, "height": 800})  # type: ignore[attr-defined]
    page.goto(server.control_url + "/")
    page.wait_for_selector("#vm-rollup tbody tr", timeout=30_000)

    def shown() -> list[str]:
        return list(
            page.eval_on_selector_all("#vm-rollup tbody tr", "rs => rs.map(r => r.dataset.vm)")
        )

    # Needing attention, by name, worst first: the VMs hit with no notice lead (the ones
    # that failed first first); capped at 100 rows, and it says so.
    assert shown() == attention[:100]
    verdicts = [verdict_of[name] for name in shown()]
    assert verdicts == sorted(verdicts, key=rank.__getitem__) and verdicts[0] == "no-notice"
    assert page.inner_text("#vm-shown") == (
        f"showing 100 of {len(attention)} VMs needing attention (filter to find the rest)"
    )
    assert f"{len(rollups)} in events or not polling, {len(attention)} needing attention" in (
        page.inner_text("#vm-totals")
    )
    # Every VM, approved ones too, also capped and counted.
    page.select_option("#vm-verdict-filter", "")
    page.wait_for_function("document.querySelectorAll('#vm-rollup tbody tr').length === 100")
    assert shown() == [v.vm for v in worst_first][:100]
    assert page.inner_text("#vm-shown") == (
        f"showing 100 of {len(rollups)} VMs (filter to find the rest)"
    )
    # By verdict, then by scope or operation as text.
    missed = [v.vm for v in worst_first if v.verdict == "missed"]
    page.select_option("#vm-verdict-filter", "missed")
    page.wait_for_function(
        f"document.querySelectorAll('#vm-rollup tbody tr').length === {len(missed)}"
    )
    assert shown() == missed and {"api-5", "api-10"} <= set(missed)
    # The rest of the VMs needing attention, by scope: api's never saw their event (api-5
    # and api-10 never polled), then those that saw it and did not approve.
    page.select_option("#vm-verdict-filter", "attention")
    page.fill("#vm-rollup-filter", "api")
    api = [v.vm for v in worst_first if needs_attention(v) and v.scope == "api"]
    page.wait_for_function(
        f"document.querySelectorAll('#vm-rollup tbody tr').length === {len(api)}"
    )
    assert shown() == api and api[:2] == ["api-5", "api-10"]
    assert {verdict_of[name] for name in api[2:]} == {"detected"}
    row = page.locator("#vm-rollup tbody tr[data-vm='api-5']")
    assert "never polled" in row.inner_text() and "never saw it" in row.inner_text()
    assert page.inner_text("#vm-shown") == f'{len(api)} VMs needing attention matching "api"'
    page.fill("#vm-rollup-filter", "cache")
    cache = [name for name in attention if name.startswith("cache-")]
    page.wait_for_function(
        f"document.querySelectorAll('#vm-rollup tbody tr').length === {len(cache)}"
    )
    assert shown() == cache
    assert page.inner_text("#vm-shown") == f'{len(cache)} VMs needing attention matching "cache"'
    page.fill("#vm-rollup-filter", "no such vm")
    page.wait_for_function("document.querySelectorAll('#vm-rollup tbody tr').length === 0")
    assert page.inner_text("#vm-shown").startswith('No VM needing attention matching "no such vm"')
