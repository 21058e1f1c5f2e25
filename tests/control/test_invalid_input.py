"""Every invalid request: a 4xx ``{"error": ...}`` that names the problem, and no change.

The fabric already holds a Scheduled event (user-reboot of web-0) and a Started one
(hardware-failure of jumpbox), so lifecycle conflicts can be tried on both.
"""

# ruff: noqa: E501  (tables of cases read best one case per line)

from __future__ import annotations

from typing import Any

import pytest

from forewarn.control import ControlApp
from forewarn.fabric import Fabric
from tests.control.conftest import API, JSON, TestClient, create, observe
from tests.support.liveserver import live_server, raw_request

SCHEDULED = "{scheduled}"
STARTED = "{started}"
OPS = f"{API}/operations"
ADVANCE = f"{API}/clock/advance"


def op(**body: Any) -> dict[str, Any]:
    return {"json": {"kind": "user-reboot", "target": "web-1", **body}}


#: id, method, path, request kwargs, status, a fragment the error must contain.
CASES: list[tuple[str, str, str, dict[str, Any], int, str]] = [
    # operations: what to do
    ("unknown-kind", "POST", OPS, op(kind="reboot-everything"), 400, "unknown operation 'reboot-everything'"),
    ("no-target", "POST", OPS, {"json": {"kind": "user-reboot"}}, 400, "exactly one target"),
    ("unknown-target", "POST", OPS, op(target="nowhere"), 404, "'nowhere' is neither a VM, a host nor a scope"),
    ("target-and-vms", "POST", OPS, op(vms=["web-2"]), 400, "either target or vms/host/scope, not both"),
    ("target-and-host", "POST", OPS, op(host="host-1"), 400, "not both"),
    ("target-and-scope", "POST", OPS, op(scope="web"), 400, "not both"),
    ("vms-and-host", "POST", OPS, {"json": {"kind": "host-update", "vms": ["web-0"], "host": "host-1"}}, 400, "exactly one target"),
    ("unknown-vm", "POST", OPS, {"json": {"kind": "user-reboot", "vms": ["web-9"]}}, 404, "no VM named 'web-9'"),
    ("unknown-host", "POST", OPS, {"json": {"kind": "host-update", "host": "host-9"}}, 404, "no host named 'host-9'"),
    ("unknown-scope", "POST", OPS, {"json": {"kind": "host-update", "scope": "db"}}, 404, "no scope named 'db'"),
    ("vm-twice", "POST", OPS, {"json": {"kind": "host-update", "vms": ["web-2", "web-2"]}}, 400, "named twice"),
    ("user-op-on-host", "POST", OPS, op(target="host-1"), 400, "name a VM, not a host"),
    ("user-op-on-scope", "POST", OPS, {"json": {"kind": "user-reboot", "scope": "jumpbox"}}, 400, "name a VM, not a scope"),
    ("spot-on-regular-vm", "POST", OPS, op(kind="spot-eviction"), 400, "needs Spot VMs; 'web-1' is not"),
    ("scale-in-outside-set", "POST", OPS, op(kind="scale-in"), 400, "scale-set instances; 'web-1'"),
    # operations: overrides
    ("notice-below-minimum", "POST", OPS, op(notice_seconds=899), 400, "notice 899 s is below the minimum of 900 s for user-reboot"),
    ("notice-negative", "POST", OPS, op(notice_seconds=-1), 400, "below the minimum"),
    ("notice-over-7-days", "POST", OPS, op(notice_seconds=8 * 86400), 400, "more than 7 days"),
    ("notice-on-immediate", "POST", OPS, op(kind="hardware-failure", notice_seconds=900), 400, "takes no notice"),
    ("duration-below-minus-1", "POST", OPS, op(duration_seconds=-2), 400, "duration_seconds must be -1"),
    # operations: the body itself
    ("unknown-field", "POST", OPS, op(priority="high"), 400, "unknown field `priority`"),
    ("kind-not-string", "POST", OPS, op(kind=5), 400, "Expected `str`, got `int` - at `$.kind`"),
    ("kind-missing", "POST", OPS, {"json": {"target": "web-0"}}, 400, "missing required field `kind`"),
    ("vms-not-list", "POST", OPS, {"json": {"kind": "user-reboot", "vms": "web-1"}}, 400, "at `$.vms`"),
    ("notice-not-number", "POST", OPS, op(notice_seconds="soon"), 400, "at `$.notice_seconds`"),
    ("duration-not-int", "POST", OPS, op(duration_seconds=1.5), 400, "at `$.duration_seconds`"),
    ("duration-bool", "POST", OPS, op(duration_seconds=True), 400, "at `$.duration_seconds`"),
    ("description-not-string", "POST", OPS, op(description=7), 400, "at `$.description`"),
    ("body-array", "POST", OPS, {"json": [{"kind": "user-reboot"}]}, 400, "Expected `object`, got `array`"),
    ("body-null", "POST", OPS, {"content": b"null"}, 400, "Expected `object`, got `null`"),
    ("empty-body", "POST", OPS, {}, 400, "request body is empty"),
    ("blank-body", "POST", OPS, {"content": b" \n"}, 400, "request body is empty"),
    ("invalid-json", "POST", OPS, {"content": b'{"kind": "user-reboot",'}, 400, "not valid JSON"),
    ("invalid-utf8-value", "POST", OPS, {"content": b'{"kind": "user-reboot", "target": "web-\xff"}'}, 400, "not valid UTF-8"),
    ("invalid-utf8-kind", "POST", OPS, {"content": b'{"kind": "\xff", "target": "web-0"}'}, 400, "not valid UTF-8"),
    ("invalid-utf8-key", "POST", OPS, {"content": b'{"kind": "user-reboot", "\xff": 1}'}, 400, "not valid UTF-8"),
    ("invalid-utf8-only-key", "POST", OPS, {"content": b'{"\xff": 1}'}, 400, "not valid UTF-8"),
    ("invalid-utf8-outside-strings", "POST", OPS, {"content": b'{"kind": "user-reboot"}\xff'}, 400, "not valid UTF-8"),
    ("deep-nesting", "POST", OPS, {"content": b'{"kind": "user-reboot", "target": ' + b"[" * 30000 + b"]" * 30000 + b"}"}, 400, "at `$.target`"),
    ("deep-nesting-top", "POST", OPS, {"content": b"[" * 30000 + b"]" * 30000}, 400, "Expected `object`, got `array`"),
    # events
    ("cancel-started", "POST", f"{API}/events/{STARTED}/cancel", {}, 409, "only a Scheduled event can be canceled"),
    ("complete-scheduled", "POST", f"{API}/events/{SCHEDULED}/complete", {}, 409, "only a Started event can be completed"),
    ("start-started", "POST", f"{API}/events/{STARTED}/start", {}, 409, "only a Scheduled event can start"),
    ("unknown-action", "POST", f"{API}/events/{SCHEDULED}/reschedule", {}, 404, "unknown action 'reschedule'"),
    ("action-with-options", "POST", f"{API}/events/{SCHEDULED}/approve", {"json": {"by": "me"}}, 400, "unknown field `by`"),
    ("action-invalid-json", "POST", f"{API}/events/{SCHEDULED}/approve", {"content": b"yes"}, 400, "not valid JSON"),
    ("action-invalid-utf8", "POST", f"{API}/events/{SCHEDULED}/approve", {"content": b'{"\xff": 1}'}, 400, "not valid UTF-8"),
    *[
        (f"{action}-unknown-id", "POST", f"{API}/events/NOPE/{action}", {}, 404, "no live event with id 'NOPE'")
        for action in ("approve", "start", "cancel", "complete")
    ],
    ("get-unknown-event", "GET", f"{API}/events/NOPE", {}, 404, "no live event with id 'NOPE'"),
    ("events-unknown-scope", "GET", f"{API}/events?scope=db", {}, 404, "no scope named 'db'"),
    ("events-unknown-vm", "GET", f"{API}/events?vm=db-0", {}, 404, "no VM named 'db-0'"),
    ("get-unknown-operation", "GET", f"{OPS}/op-nope", {}, 404, "no operation with id 'op-nope'"),
    # documents
    ("document-unknown-vm", "GET", f"{API}/documents/db-0", {}, 404, "no VM named 'db-0'"),
    ("document-unknown-version", "GET", f"{API}/documents/web-0?api-version=2099-01-01", {}, 400, "unknown api-version '2099-01-01'"),
    ("document-empty-version", "GET", f"{API}/documents/web-0?api-version=", {}, 400, "unknown api-version ''"),
    # clock
    ("advance-empty", "POST", ADVANCE, {}, 400, "request body is empty"),
    ("advance-invalid-json", "POST", ADVANCE, {"content": b"seconds=5"}, 400, "not valid JSON"),
    ("advance-missing-seconds", "POST", ADVANCE, {"json": {}}, 400, "missing required field `seconds`"),
    ("advance-seconds-string", "POST", ADVANCE, {"json": {"seconds": "60"}}, 400, "at `$.seconds`"),
    ("advance-unknown-field", "POST", ADVANCE, {"json": {"seconds": 1, "to": 5}}, 400, "unknown field `to`"),
    ("advance-negative", "POST", ADVANCE, {"json": {"seconds": -60}}, 409, "only moves forward"),
    ("advance-out-of-range", "POST", ADVANCE, {"content": b'{"seconds": 1e999}'}, 400, "Number out of range"),
    ("advance-invalid-utf8", "POST", ADVANCE, {"content": b'{"\xff": 1, "seconds": 1}'}, 400, "not valid UTF-8"),
]  # fmt: skip


@pytest.fixture
def ids(fabric: Fabric, client: TestClient) -> dict[str, str]:
    scheduled = create(client, kind="user-reboot", target="web-0")
    started = create(client, kind="hardware-failure", target="jumpbox")
    return {"scheduled": scheduled["event_ids"][0], "started": started["event_ids"][0]}


@pytest.mark.parametrize(
    ("method", "path", "kwargs", "status", "fragment"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_invalid_request_is_refused_with_a_clear_error_and_changes_nothing(
    fabric: Fabric,
    client: TestClient,
    ids: dict[str, str],
    method: str,
    path: str,
    kwargs: dict[str, Any],
    status: int,
    fragment: str,
) -> None:
    before = observe(fabric)
    headers = JSON if method == "POST" else {}
    response = client.request(method, path.format(**ids), headers=headers, **kwargs)
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert list(body) == ["error"]
    assert fragment in body["error"]
    assert observe(fabric) == before


@pytest.mark.parametrize("method", ["PUT", "DELETE", "PATCH"])
@pytest.mark.parametrize("path", [OPS, f"{API}/topology", ADVANCE])
def test_wrong_method_is_405_and_changes_nothing(
    fabric: Fabric, client: TestClient, method: str, path: str
) -> None:
    before = observe(fabric)
    assert client.request(method, path, json={"kind": "user-reboot"}).status_code == 405
    assert observe(fabric) == before


def test_a_real_0xff_byte_on_the_wire_is_a_400_and_changes_nothing(fabric: Fabric) -> None:
    before = observe(fabric)
    body = b'{"kind":"user-reboot","target":"web-\xff"}'
    with live_server(ControlApp(fabric)) as port:
        headers = [("Host", f"127.0.0.1:{port}"), ("Content-Type", "application/json")]
        response = raw_request(port, "POST", OPS, headers, body)
    assert response.status_code == 400
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {"error": "request body is not valid JSON: it is not valid UTF-8"}
    assert observe(fabric) == before
