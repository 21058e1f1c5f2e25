"""POST StartRequests (CONTRACT section 3): approve all of a request, or nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.imds.conftest import (
    GPU_SCOPE,
    JSON_TYPE,
    NEWEST,
    Imds,
    ImdsFactory,
    assert_json_reply,
    compact,
    reboot_document,
)
from tests.support.fabrics import fleet


def start_requests(*ids: str, **extra: Any) -> bytes:
    return json.dumps({"StartRequests": [{"EventId": i} for i in ids], **extra}).encode()


def assert_error_reply(status: int, body: bytes, content_type: str | None) -> str:
    """A 400 with a compact ``{"error": "..."}`` body; returns the message."""
    assert status == 400, body
    assert content_type == JSON_TYPE
    parsed = json.loads(body)
    assert list(parsed) == ["error"]
    assert isinstance(parsed["error"], str)
    assert parsed["error"]
    assert compact(body) == body
    return str(parsed["error"])


@pytest.fixture
def two_event_op(imds: Imds) -> tuple[str, str]:
    """A platform reboot of web-0 and web-4: same host, two update domains, two events."""
    op = imds.submit("platform-reboot", "web-0", "web-4")
    events = imds.events_of(op)
    assert [e.resources for e in events] == [("web-0",), ("web-4",)]
    return events[0].id, events[1].id


async def test_approval_starts_a_one_event_operation(imds: Imds, reboot_web0: str) -> None:
    before = await imds.get("web-0")
    assert before.content == reboot_document(NEWEST)
    response = await imds.post("web-0", reboot_web0)
    assert_json_reply(response, 200, b"")
    event = imds.event(reboot_web0)
    assert (event.approved_by, event.status) == ("web-0", "Started")
    after = await imds.get("web-0")
    assert after.headers["etag"] == '"3"'
    assert [(e["EventId"], e["EventStatus"], e["NotBefore"]) for e in after.json()["Events"]] == [
        (reboot_web0, "Started", "")
    ]


async def test_another_vm_of_the_scope_can_approve(imds: Imds, reboot_web0: str) -> None:
    response = await imds.post("web-3", reboot_web0)
    assert_json_reply(response, 200, b"")
    event = imds.event(reboot_web0)
    assert (event.approved_by, event.status) == ("web-3", "Started")
    document = await imds.document("web-5")
    assert document["DocumentIncarnation"] == 3
    assert [(e["EventStatus"], e["NotBefore"]) for e in document["Events"]] == [("Started", "")]


async def test_several_ids_in_one_request(imds: Imds, two_event_op: tuple[str, str]) -> None:
    response = await imds.post("web-2", *two_event_op)
    assert_json_reply(response, 200, b"")
    assert [imds.event(i).status for i in two_event_op] == ["Started", "Started"]
    assert [imds.event(i).approved_by for i in two_event_op] == ["web-2", "web-2"]
    assert imds.incarnation() == 3


async def test_cross_scope_operation_starts_when_every_scope_approved(imds: Imds) -> None:
    op = imds.submit("platform-reboot", host="host-2")
    by_scope: dict[str, list[str]] = {}
    for event in imds.events_of(op):
        by_scope.setdefault(event.scope_id, []).append(event.id)
    # One event per scope: a host holds one update domain of a scope (web-1, web-4: UD 1).
    assert {s: len(ids) for s, ids in by_scope.items()} == {"web": 1, "workers": 1, "shop": 1}
    assert {e.scope_id: e.resources for e in imds.events_of(op)} == {
        "web": ("web-1", "web-4"),
        "workers": ("workers_2",),
        "shop": ("FrontEnd_IN_1",),
    }
    before = {s: imds.incarnation(s) for s in by_scope}
    for vm, scope in (("web-5", "web"), ("workers_0", "workers")):
        assert_json_reply(await imds.post(vm, *by_scope[scope]), 200, b"")
    assert {s: imds.incarnation(s) for s in by_scope} == before
    assert {e.status for e in imds.events_of(op)} == {"Scheduled"}
    assert_json_reply(await imds.post("BackEnd_IN_0", *by_scope["shop"]), 200, b"")
    assert {e.status for e in imds.events_of(op)} == {"Started"}
    assert {s: imds.incarnation(s) for s in by_scope} == {s: i + 1 for s, i in before.items()}
    for vm in ("web-0", "workers_3", "FrontEnd_IN_0"):
        events = (await imds.document(vm))["Events"]
        assert {(e["EventStatus"], e["NotBefore"]) for e in events} == {("Started", "")}


async def test_ids_of_several_operations(imds: Imds, reboot_web0: str) -> None:
    other = imds.only_event(imds.submit("platform-redeploy", "web-1")).id
    response = await imds.post("web-1", other, reboot_web0, reboot_web0)
    assert_json_reply(response, 200, b"")
    assert {imds.event(i).status for i in (reboot_web0, other)} == {"Started"}


@pytest.mark.parametrize("transform", [str.lower, str.upper, lambda s: f"  {s.lower()} "])
async def test_event_id_case_does_not_matter(imds: Imds, reboot_web0: str, transform: Any) -> None:
    assert reboot_web0 != reboot_web0.lower()
    response = await imds.post("web-1", transform(reboot_web0))
    assert_json_reply(response, 200, b"")
    assert imds.event(reboot_web0).approved_by == "web-1"


@pytest.mark.parametrize(
    "content_type",
    [None, "application/json", "application/x-www-form-urlencoded", "text/plain"],
)
async def test_body_is_json_whatever_the_content_type(
    imds: Imds, reboot_web0: str, content_type: str | None
) -> None:
    headers = {"Content-Type": content_type} if content_type else {}
    response = await imds.request(
        "POST", vm="web-1", content=start_requests(reboot_web0), headers=headers
    )
    assert_json_reply(response, 200, b"")
    assert imds.event(reboot_web0).approved_by == "web-1"


async def test_body_without_content_type_via_raw_asgi(imds: Imds, reboot_web0: str) -> None:
    response = await imds.raw(
        method="POST", headers=[(b"metadata", b"true")], body=start_requests(reboot_web0)
    )
    assert (response.status, response.body) == (200, b"")
    assert imds.event(reboot_web0).approved_by == "web-1"


async def test_body_in_several_chunks(imds: Imds, reboot_web0: str) -> None:
    body = start_requests(reboot_web0)
    chunks = [body[:5], b"", body[5:20], body[20:]]
    response = await imds.raw(method="POST", body=chunks)
    assert (response.status, response.body) == (200, b"")
    assert imds.event(reboot_web0).approved_by == "web-1"


@pytest.mark.parametrize("incarnation", [2, "2", 99, "7", "junk"])
async def test_document_incarnation_is_ignored(
    imds: Imds, reboot_web0: str, incarnation: object
) -> None:
    body = start_requests(reboot_web0, DocumentIncarnation=incarnation)
    response = await imds.request("POST", vm="web-1", content=body)
    assert_json_reply(response, 200, b"")
    assert imds.event(reboot_web0).status == "Started"


async def test_incarnation_before_start_requests(imds: Imds, reboot_web0: str) -> None:
    body = b'{"DocumentIncarnation":"2","StartRequests":[{"EventId":"%s"}]}' % reboot_web0.encode()
    response = await imds.request("POST", vm="web-1", content=body)
    assert_json_reply(response, 200, b"")


async def test_approving_again_or_after_start_is_fine(imds: Imds, reboot_web0: str) -> None:
    assert (await imds.post("web-1", reboot_web0)).status_code == 200
    started = imds.event(reboot_web0)
    incarnation = imds.incarnation()
    for vm in ("web-1", "web-2"):
        assert_json_reply(await imds.post(vm, reboot_web0), 200, b"")
    assert imds.event(reboot_web0) == started
    assert imds.incarnation() == incarnation


async def test_approval_without_status_change_keeps_the_incarnation(
    imds: Imds, two_event_op: tuple[str, str]
) -> None:
    first, second = two_event_op
    before = await imds.get()
    assert_json_reply(await imds.post("web-0", first), 200, b"")
    assert (imds.event(first).approved_by, imds.event(first).status) == ("web-0", "Scheduled")
    assert imds.incarnation() == 2
    after = await imds.get()
    assert (after.content, after.headers["etag"]) == (before.content, '"2"')
    assert_json_reply(await imds.post("web-1", first), 200, b"")
    assert imds.event(first).approved_by == "web-0"
    assert imds.incarnation() == 2
    assert_json_reply(await imds.post("web-4", second), 200, b"")
    assert [imds.event(i).status for i in two_event_op] == ["Started", "Started"]
    assert imds.incarnation() == 3
    assert (await imds.get()).headers["etag"] == '"3"'


# ----------------------------------------------------------------- rejected


BAD_BODIES = [
    b"",
    b"   ",
    b"{",
    b"not json",
    b"StartRequests=x",
    b"[]",
    b'"StartRequests"',
    b"null",
    b"{}",
    b'{"DocumentIncarnation":2}',
    b'{"StartRequests":null}',
    b'{"StartRequests":[]}',
    b'{"StartRequests":{}}',
    b'{"StartRequests":"ID"}',
    b'{"StartRequests":[{}]}',
    b'{"StartRequests":[{"EventId":5}]}',
    b'{"StartRequests":[{"EventId":null}]}',
    b'{"StartRequests":[{"EventId":""}]}',
    b'{"StartRequests":[{"EventId":"   "}]}',
    b'{"StartRequests":[{"EventId":["x"]}]}',
    b'{"StartRequests":["ID"]}',
    b'{"StartRequests":[null]}',
]


@pytest.mark.parametrize("body", BAD_BODIES)
async def test_malformed_body_is_400_and_approves_nothing(
    imds: Imds, reboot_web0: str, body: bytes
) -> None:
    response = await imds.request("POST", vm="web-1", content=body)
    assert_error_reply(response.status_code, response.content, response.headers.get("content-type"))
    assert response.headers["content-length"] == str(len(response.content))
    assert imds.event(reboot_web0).approved_by is None
    assert imds.event(reboot_web0).status == "Scheduled"


@pytest.mark.parametrize(
    "entries",
    [
        [{"EventId": "VALID"}, {"EventId": 5}],
        [{"EventId": 5}, {"EventId": "VALID"}],
        [{"EventId": "VALID"}, {}],
        [{"EventId": "VALID"}, {"EventId": "11111111-2222-4333-8444-555555555555"}],
        [{"EventId": "11111111-2222-4333-8444-555555555555"}, {"EventId": "VALID"}],
        [{"EventId": "VALID"}, {"EventId": "OTHER-SCOPE"}],
        [{"EventId": "OTHER-SCOPE"}, {"EventId": "VALID"}],
    ],
)
async def test_valid_id_mixed_with_a_bad_one_approves_nothing(
    imds: Imds, reboot_web0: str, entries: list[dict[str, object]]
) -> None:
    other = imds.only_event(imds.submit("platform-reboot", "workers_1")).id
    names = {"VALID": reboot_web0, "OTHER-SCOPE": other}
    for entry in entries:
        if isinstance(entry.get("EventId"), str):
            entry["EventId"] = names.get(str(entry["EventId"]), entry["EventId"])
    body = json.dumps({"StartRequests": entries}).encode()
    incarnations = (imds.incarnation("web"), imds.incarnation("workers"))
    response = await imds.request("POST", vm="web-1", content=body)
    assert_error_reply(response.status_code, response.content, response.headers.get("content-type"))
    for eid in (reboot_web0, other):
        assert (imds.event(eid).approved_by, imds.event(eid).status) == (None, "Scheduled")
    assert (imds.incarnation("web"), imds.incarnation("workers")) == incarnations


async def test_unknown_id_is_400_naming_it(imds: Imds, reboot_web0: str) -> None:
    unknown = "11111111-2222-4333-8444-555555555555"
    response = await imds.post("web-1", unknown)
    message = assert_error_reply(
        response.status_code, response.content, response.headers.get("content-type")
    )
    assert unknown in message
    assert imds.event(reboot_web0).approved_by is None


async def test_event_of_another_scope_cannot_be_approved(imds: Imds) -> None:
    other = imds.only_event(imds.submit("platform-reboot", "workers_1")).id
    for vm in ("web-1", "jumpbox", "FrontEnd_IN_0"):
        response = await imds.post(vm, other)
        assert_error_reply(
            response.status_code, response.content, response.headers.get("content-type")
        )
    assert imds.event(other).approved_by is None
    assert_json_reply(await imds.post("workers_3", other), 200, b"")
    assert imds.event(other).approved_by == "workers_3"


async def test_finished_event_is_unknown(imds: Imds, reboot_web0: str) -> None:
    imds.fabric.advance(15 * 60 + 10 * 60)
    assert imds.fabric.events() == []
    response = await imds.post("web-1", reboot_web0)
    assert response.status_code == 400


async def test_gpu_vm_cannot_approve_a_neighbours_event(make_imds: ImdsFactory) -> None:
    imds = make_imds(fleet(GPU_SCOPE))
    mine = imds.only_event(imds.submit("platform-reboot", "gpu_0")).id
    response = await imds.post("gpu_1", mine)
    assert_error_reply(response.status_code, response.content, response.headers.get("content-type"))
    assert imds.event(mine).approved_by is None
    assert_json_reply(await imds.post("gpu_0", mine), 200, b"")
    assert imds.event(mine).status == "Started"


async def test_too_large_body_is_refused(imds: Imds, reboot_web0: str) -> None:
    padding = " " * (64 * 1024)
    body = start_requests(reboot_web0).replace(b"{", b"{" + padding.encode(), 1)
    response = await imds.raw(method="POST", body=[body[:1000], body[1000:]])
    assert (response.status, response.body) == (413, b'{"error":"Request body too large"}')
    assert response.header("content-type") == JSON_TYPE
    assert imds.event(reboot_web0).approved_by is None
