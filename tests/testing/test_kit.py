"""``forewarn.testing.Forewarn``: a real endpoint on loopback (a port per VM) and a control
handle, on a virtual clock, called the way users' code calls it."""

from __future__ import annotations

import json
import re
import socket
import urllib.error
import urllib.request
from typing import Any

import pytest

from forewarn.client import EventStatus
from forewarn.testing import Forewarn, ForewarnError
from forewarn.testing import server as kit_server
from tests.support.serverproc import free_port

FLEET_YAML = """\
scopes:
  - kind: availability_set
    name: web
    vms: 3
    update_domains: 3
  - kind: standalone
    name: db
"""
NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def fetch(url: str, path: str) -> Any:
    """What plain urllib code gets from the endpoint."""
    request = urllib.request.Request(url + path, headers={"Metadata": "true"})
    with NO_PROXY.open(request, timeout=10) as response:
        return json.load(response)


def test_each_vm_has_its_own_url() -> None:
    with Forewarn(FLEET_YAML) as forewarn:
        assert forewarn.vms == ("web-0", "web-1", "web-2", "db")
        assert forewarn.default_vm == "web-0"
        urls = {vm: forewarn.url(vm) for vm in forewarn.vms}
        assert len(set(urls.values())) == 4
        assert all(u.startswith("http://127.0.0.1:") for u in urls.values())
        for vm, url in urls.items():
            instance = fetch(url, "/metadata/instance?api-version=2021-02-01")
            assert instance["compute"]["name"] == vm
        assert forewarn.url() == urls["web-0"]


def test_control_handle_drives_a_lifecycle() -> None:
    with Forewarn(FLEET_YAML, start=1_700_000_000.0) as forewarn:
        assert forewarn.now() == 1_700_000_000.0
        op = forewarn.trigger("user-reboot", "web-1", description="drill")
        (event_id,) = op["event_ids"]
        assert op["not_before"] == 1_700_000_000.0 + 15 * 60
        seen = fetch(forewarn.url("web-2"), "/metadata/scheduledevents?api-version=2020-07-01")
        assert [(e["EventId"], e["Description"]) for e in seen["Events"]] == [(event_id, "drill")]
        assert (
            fetch(forewarn.url("db"), "/metadata/scheduledevents?api-version=2020-07-01")["Events"]
            == []
        )
        assert [e["id"] for e in forewarn.events()] == [event_id]
        assert forewarn.document("web-1")["Events"][0]["EventId"] == event_id

        assert forewarn.advance(15 * 60) == 1_700_000_000.0 + 15 * 60  # NotBefore: it starts
        assert forewarn.event(event_id)["status"] == "Started"
        with forewarn.client("web-1") as client:
            (event,) = client.get().events
            assert event.status is EventStatus.STARTED
        forewarn.complete(event_id)
        assert forewarn.events() == []
        kinds = [h["kind"] for h in forewarn.history()]
        assert "event.scheduled" in kinds and "event.started" in kinds


def test_approve_and_cancel_as_the_operator() -> None:
    with Forewarn(FLEET_YAML) as forewarn:
        (first,) = forewarn.trigger("user-reboot", "web-0")["event_ids"]
        (second,) = forewarn.trigger("user-reboot", "db")["event_ids"]
        assert forewarn.approve(first)["status"] == "Started"
        forewarn.cancel(second)
        assert [e["id"] for e in forewarn.events()] == [first]


def test_settings_pass_through() -> None:
    # faithful enablement: a scope nobody asked about gets no notice
    with Forewarn(FLEET_YAML, enablement="on-first-request") as forewarn:
        op = forewarn.trigger("user-reboot", "db")
        assert op["event_ids"] == [] and op["unnotified"] == ["db"]


def test_a_given_port_base_is_kept() -> None:
    base = free_port()
    fleet = {"port_base": base, "scopes": [{"kind": "standalone", "name": "solo"}]}
    with Forewarn(fleet) as forewarn:
        assert forewarn.url("solo") == f"http://127.0.0.1:{base}"


def test_mistakes_are_clear() -> None:
    with pytest.raises(ForewarnError, match="invalid fleet"):
        Forewarn({"scopes": [{"kind": "nonsense", "name": "x"}]}).start()
    with pytest.raises(ForewarnError, match="YAML mapping"):
        Forewarn("- just a list").start()
    with Forewarn(FLEET_YAML) as forewarn:
        with pytest.raises(ForewarnError, match="no VM 'web-9'"):
            forewarn.url("web-9")
        with pytest.raises(ForewarnError, match="HTTP 4"):
            forewarn.trigger("user-reboot", "nobody")
        with pytest.raises(ForewarnError, match="HTTP 4"):
            forewarn.advance(-5)


def test_ports_that_stay_taken_fail_the_start_with_the_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every block of per-VM ports taken in turn: the kit tries others, then says why the
    last one failed, and is left stopped."""
    runtimes: list[Any] = []

    def taken(runtime: Any) -> Any:
        runtimes.append(runtime)
        raise OSError("cannot listen on 127.0.0.1:30001: Address already in use")

    monkeypatch.setattr(kit_server, "open_listeners", taken)
    forewarn = Forewarn(FLEET_YAML)
    message = re.escape(f"in {kit_server.START_ATTEMPTS} attempts (the last: cannot listen on "
                        "127.0.0.1:30001: Address already in use)")  # fmt: skip
    with pytest.raises(ForewarnError, match=message):
        forewarn.start()
    assert len(runtimes) == kit_server.START_ATTEMPTS
    with pytest.raises(ForewarnError, match="not running"):
        forewarn.events()


def test_stop_releases_the_ports() -> None:
    forewarn = Forewarn(FLEET_YAML).start()
    url = forewarn.url("db")
    port = int(url.rsplit(":", 1)[1])
    forewarn.stop()
    forewarn.stop()  # twice is harmless
    with pytest.raises(urllib.error.URLError):
        fetch(url, "/metadata/scheduledevents?api-version=2020-07-01")
    with socket.socket() as sock:  # and the port can be bound again
        sock.bind(("127.0.0.1", port))
    with pytest.raises(ForewarnError, match="not running"):
        forewarn.events()


def test_a_refused_body_is_read_by_a_script_that_sends_it_whole() -> None:
    """The kit's control API lingers after a 413 as ``forewarn serve``'s does: urllib,
    which writes the whole body before it reads, gets the 413 (not a reset)."""
    with Forewarn(FLEET_YAML) as forewarn:
        for _ in range(5):
            request = urllib.request.Request(
                forewarn.control_url + "/api/v1/operations",
                data=b"x" * (5 * 1024 * 1024),
                headers={"Content-Type": "application/json"},
            )
            with pytest.raises(urllib.error.HTTPError) as caught:
                NO_PROXY.open(request, timeout=30)
            assert caught.value.code == 413
        assert forewarn.events() == []
