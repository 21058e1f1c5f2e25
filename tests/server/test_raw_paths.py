"""A name is never decoded into a path: every listener of a real ``forewarn serve`` splits
the path as sent and decodes each segment after, so an encoded ``/`` (or ``\\``, a control
character, ``..``) in a name is refused as a name (ARM's 400 ``InvalidResourceName``, the
control API's and the metadata endpoint's 404), never taken for another route. Through the
real azure-mgmt-compute client and raw requests with the exact bytes; nothing changes."""

from __future__ import annotations

import json
import socket
import ssl
from collections.abc import Iterator
from typing import Any

import pytest
from azure.core.exceptions import HttpResponseError

from tests.arm.conftest import GROUP, SUBSCRIPTION, ArmServer, start_arm_server
from tests.support.serverproc import event_status, trigger

GROUP_PATH = f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{GROUP}"
VMS = f"{GROUP_PATH}/providers/Microsoft.Compute/virtualMachines"
VERSION = "api-version=2024-07-01"
INSTANCE = "api-version=2021-02-01"


@pytest.fixture(scope="module")
def arm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ArmServer]:
    server = start_arm_server(tmp_path_factory.mktemp("rawpaths"))
    yield server
    server.server.stop()


def _raw(
    host: str, port: int, request: bytes, tls: ssl.SSLContext | None = None
) -> tuple[int, dict[str, str], bytes]:
    """``request``, byte for byte, on a fresh connection: status, headers, body."""
    sock = socket.create_connection((host, port), timeout=20)
    if tls is not None:
        sock = tls.wrap_socket(sock, server_hostname=host)
    with sock:
        sock.sendall(request)
        data = b""
        try:
            while chunk := sock.recv(65536):
                data += chunk
        except ssl.SSLEOFError:
            pass
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    return int(status_line.split()[1]), headers, body


def _arm(arm: ArmServer, method: str, target: str) -> tuple[int, dict[str, Any]]:
    host, port = arm.url.removeprefix("https://").rsplit(":", 1)
    request = (
        f"{method} {target} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer x\r\n"
        "Content-Length: 0\r\nConnection: close\r\n\r\n"
    ).encode()
    status, _, body = _raw(host, int(port), request, ssl.create_default_context(cafile=arm.ca))
    return status, json.loads(body) if body else {}


def _state(arm: ArmServer) -> Any:
    return arm.history(), arm.events(), arm.server.control("GET", "/api/v1/operations").json()


@pytest.mark.parametrize("name", ["/", "solo/instanceView", "solo/restart", "solo\\x", "a\x01b"])
def test_the_sdk_gets_no_other_route_for_a_name_that_holds_a_path(
    arm: ArmServer, name: str
) -> None:
    """(``.`` and ``..`` the client itself resolves before sending: the raw tests send them.)"""
    compute = arm.compute()
    with pytest.raises(HttpResponseError) as caught:
        compute.virtual_machines.get(GROUP, name)
    error = caught.value
    assert error.status_code in (400, 404), error
    if error.status_code == 400:
        assert error.error is not None and error.error.code == "InvalidResourceName"
    assert [vm.name for vm in compute.virtual_machines.list(GROUP)]  # the list, still there


@pytest.mark.parametrize(
    "segment", ["%2f", "%2F", "solo%2finstanceView", "solo%5cx", "a%01b", "%2e%2e", "%2E", "%ff"]
)
def test_arm_answers_invalid_resource_name_for_an_encoded_separator(
    arm: ArmServer, segment: str
) -> None:
    status, body = _arm(arm, "GET", f"{VMS}/{segment}?{VERSION}")
    assert status == 400, body
    assert body["error"]["code"] == "InvalidResourceName"
    assert segment in body["error"]["message"]


def test_an_encoded_action_is_not_an_action_and_changes_nothing(arm: ArmServer) -> None:
    before = _state(arm)
    status, body = _arm(arm, "POST", f"{VMS}/solo%2frestart?{VERSION}")
    assert (status, body["error"]["code"]) == (400, "InvalidResourceName")
    group_as_name = f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{GROUP}%2fproviders?{VERSION}"
    assert _arm(arm, "GET", group_as_name)[1]["error"]["code"] == "InvalidResourceName"
    assert _state(arm) == before


def test_arm_still_decodes_each_segment(arm: ArmServer) -> None:
    status, body = _arm(arm, "GET", f"{VMS}/%73olo?{VERSION}")  # %73: s
    assert (status, body["name"]) == (200, "solo")
    status, body = _arm(
        arm, "GET", f"{VMS.replace('virtualMachines', 'virtual%4Dachines')}?{VERSION}"
    )
    assert status == 200 and {"solo", "solo2"} <= {vm["name"] for vm in body["value"]}


def _control(arm: ArmServer, method: str, target: str) -> tuple[int, dict[str, Any]]:
    request = (
        f"{method} {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        "Content-Length: 0\r\nConnection: close\r\n\r\n"
    ).encode()
    status, _, body = _raw("127.0.0.1", arm.server.control_port, request)
    return status, json.loads(body)


def test_the_control_api_takes_no_encoded_slash_for_an_action(arm: ArmServer) -> None:
    event = trigger(arm.server, "user-reboot", "solo3")
    before = _state(arm)
    for target in (
        f"/api/v1/events/{event}%2fapprove",
        f"/api/v1/events/{event}%2Fapprove",
        f"/api/v1/events/{event}%5capprove",
        "/api/v1/events/%2e%2e/approve",
    ):
        status, body = _control(arm, "POST", target)
        assert status == 404, (target, body)
        assert "no such route" in body["error"]
    assert _control(arm, "GET", "/api/v1/documents/solo%2f..")[0] == 404
    assert event_status(arm.server, event) == "Scheduled"
    assert _state(arm) == before
    status, body = _control(
        arm, "GET", f"/api/v1/events/{event[:4]}%{ord(event[4]):02x}{event[5:]}"
    )
    assert (status, body["id"]) == (200, event)  # a segment is still decoded


def _imds(arm: ArmServer, target: str) -> tuple[int, bytes]:
    request = (
        f"GET {target} HTTP/1.1\r\nHost: 169.254.169.254\r\nMetadata: true\r\n"
        "Connection: close\r\n\r\n"
    ).encode()
    status, _, body = _raw("127.0.0.1", arm.server.imds_port, request)
    return status, body


@pytest.mark.parametrize(
    "target",
    [
        f"/metadata/instance/compute%2fname?{INSTANCE}&format=text",
        f"/metadata/instance/compute/%2e%2e/compute/name?{INSTANCE}&format=text",
        f"/metadata/instance%2fcompute?{INSTANCE}",
        f"/metadata/scheduledevents%2f?{VERSION.replace('2024-07-01', '2020-07-01')}",
        f"/metadata/scheduled%5cevents?{VERSION.replace('2024-07-01', '2020-07-01')}",
    ],
)
def test_the_metadata_endpoint_routes_no_encoded_separator(arm: ArmServer, target: str) -> None:
    status, body = _imds(arm, target)
    assert (status, json.loads(body)) == (404, {"error": "Not found"})


def test_the_metadata_endpoint_decodes_each_segment(arm: ArmServer) -> None:
    status, body = _imds(arm, f"/metadata/instance/compute/n%61me?{INSTANCE}&format=text")
    assert (status, body) == (200, b"solo")
    status, body = _imds(arm, "/metadata/scheduled%65vents?api-version=2020-07-01")
    assert status == 200 and b"DocumentIncarnation" in body
