"""A fleet too big to draw a VM at a time, in Chromium (issue 39): the page opens on one
row per region and scope kind, counted by the server; a user drills region → kind (its
scopes worst first, 50 a page, the rest asked for) → scope (its VMs asked for then, a page
at a time) → one VM, and sees that VM's event live; the filter finds scopes by name.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from forewarn.fleet import build_topology, load_fleet_file
from tests.dashboard.browser import needs_chromium
from tests.support.serverproc import ServerProcess

pytestmark = needs_chromium
JSON = {"Content-Type": "application/json"}
SETS = 30

FLEET = "\n".join([
    "default_vm: big_0",
    "scopes:",
    "  - {kind: scale_set, name: big, vms: 6000, placement_groups: 60}",
    "  - {kind: availability_set, name: wide, vms: 450, update_domains: 5}",
    *(f"  - {{kind: availability_set, name: as{k}, vms: 100, update_domains: 5}}"
      for k in range(SETS)),
]) + "\n"  # fmt: skip


def test_the_fleet_rolls_up_and_drills_to_one_vm_whose_event_shows_live(
    browser: object, start_server: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_text(FLEET, encoding="utf-8")
    topology = build_topology(load_fleet_file(path))
    server = start_server(["--fleet", str(path), "--clock", "virtual", "--rate-limit", "0",
                           "--enablement", "always"])  # fmt: skip
    polled = server.imds(vm_address=topology.vms["as7-3"].address)
    assert polled.status_code == 200
    created = server.control("POST", "/api/v1/operations", headers=JSON,
                             json={"kind": "user-reboot", "target": "as7-3"})  # fmt: skip
    assert created.status_code == 201, created.text
    (event_id,) = created.json()["event_ids"]

    page = browser.new_page(viewport={"width": 1280, "height": 900})  # type: ignore[attr-defined]
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(server.control_url + "/")
    page.wait_for_selector("body[data-ready]", timeout=30_000)
    # One screen: the region open, its two kinds folded, not one VM drawn.
    vms, scopes = len(topology.vms), len(topology.scopes)
    assert page.inner_text("#fleet-count") == (
        f"{vms:,} VMs in {scopes} scopes (open a scope to see its VMs)"
    )
    assert page.locator("#fleet .vm").count() == 0
    assert page.locator("#fleet details.region[open]").count() == 1
    kinds = page.locator("#fleet details.kind")
    assert kinds.count() == 2 and page.locator("#fleet details.kind[open]").count() == 0
    sets = page.locator("#fleet details.kind[data-key='k:westeurope|availability_set']")
    head = sets.locator("summary").inner_text()
    assert f"{450 + 100 * SETS:,} VMs in {SETS + 1} scopes" in head and "1 live event" in head

    groups = page.locator("#fleet details.kind[data-key='k:westeurope|scale_set']")
    assert groups.locator("summary").inner_text() == (
        "scale set\n6,000 VMs in 60 scopes · 6,000 never polled"
    )
    # The scale set's 60 placement groups: 50 a page, worst first, the rest asked for.
    groups.locator("> summary").click()
    more = groups.locator(".more-scopes")
    assert more.inner_text().startswith("scopes 1 to 50 of 60, worst first")
    assert groups.locator("details.scope").count() == 50
    more.locator("button", has_text="next").click()
    groups.locator("details.scope[data-scope='big/pg59']").wait_for(timeout=10_000)
    assert [groups.locator("details.scope").nth(k).get_attribute("data-scope")
            for k in range(groups.locator("details.scope").count())] == [
        f"big/pg{k}" for k in range(50, 60)
    ]  # fmt: skip
    assert groups.locator(".more-scopes").inner_text().startswith("scopes 51 to 60 of 60")
    groups.locator(".more-scopes button", has_text="previous").click()
    groups.locator("details.scope[data-scope='big/pg0']").wait_for(timeout=10_000)
    groups.locator("> summary").click()  # folded again

    # Region → kind → scope: as7 leads (its live event), and its VMs come when opened.
    sets.locator("> summary").click()
    first = sets.locator("details.scope").first
    assert first.get_attribute("data-scope") == "as7"
    assert "1 live event" in first.locator(".scope-counts").inner_text()
    first.locator("> summary").click()
    page.wait_for_function(
        "() => document.querySelectorAll('#fleet details.scope[data-scope=as7] .vm').length === 100"
    )  # fmt: skip
    assert page.locator("#fleet .vm").count() == 100  # only the scope opened

    # → one VM: where it runs, its last poll, its event, live.
    page.click("#fleet .vm[data-vm='as7-3']")
    detail = page.locator("#vm-detail")
    assert detail.is_visible() and page.inner_text("#vm-detail-name") == "as7-3"
    assert "scope as7" in page.inner_text("#vm-detail-where")
    assert page.inner_text("#vm-detail-polled").startswith("last poll")
    detail.locator(f"li[data-event='{event_id}'][data-status=Scheduled]").wait_for(timeout=10_000)
    approved = server.control("POST", f"/api/v1/events/{event_id}/approve", json={}, headers=JSON)
    assert approved.status_code == 200
    detail.locator(f"li[data-event='{event_id}'][data-status=Started]").wait_for(timeout=10_000)
    assert "approved by the operator" in detail.inner_text()
    page.wait_for_selector("#fleet .vm.st-rebooting[data-vm='as7-3']", timeout=10_000)
    counts = "document.querySelector('[data-scope-counts=as7]').textContent"
    page.wait_for_function(f"() => {counts}.includes('1 rebooting')")  # per scope, by the tick

    # A scope bigger than a page: 200 VMs at a time.
    wide = sets.locator("details.scope[data-scope=wide]")
    wide.locator("> summary").click()
    pager = wide.locator(".pager")
    pager.wait_for(timeout=10_000)
    assert pager.inner_text().startswith("VMs 1 to 200 of 450")
    pager.locator("button", has_text="next").click()
    wide.locator(".vm[data-vm='wide-200']").wait_for(timeout=10_000)
    assert wide.locator(".pager").inner_text().startswith("VMs 201 to 400 of 450")
    assert wide.locator(".vm").count() == 200

    # The filter finds scopes by name in any kind (the server's, not the 50 held of each).
    page.fill("#vm-filter", "pg5")
    page.wait_for_function("() => document.querySelector('#fleet-count').textContent.match(/so/)")
    assert "11 scopes named so" in page.inner_text("#fleet-count")
    assert page.locator("#fleet details.scope[data-scope='big/pg57']").count() == 1
    assert errors == []
