"""R12 ETags and conditional GETs, and the rendered-document cache (never stale)."""

from __future__ import annotations

import pytest

from tests.imds.conftest import (
    EMPTY_WEB,
    GPU_SCOPE,
    NEWEST,
    Imds,
    ImdsFactory,
    assert_json_reply,
    reboot_document,
)
from tests.support.fabrics import fleet
from tests.support.wire import VERSIONS


@pytest.mark.parametrize("version", VERSIONS)
async def test_every_200_get_carries_the_incarnation_as_etag(imds: Imds, version: str) -> None:
    response = await imds.get(version=version)
    assert response.status_code == 200
    assert response.headers["etag"] == '"1"'
    imds.submit("platform-reboot", "web-0")
    response = await imds.get(version=version)
    assert response.headers["etag"] == '"2"'
    assert response.json()["DocumentIncarnation"] == 2


@pytest.mark.parametrize(
    "header",
    ['"3"', 'W/"3"', 'w/"3"', "3", '"1", "3"', '"1","3"', ' "3" ', 'W/"9", W/"3"', '"3", *'],
)
async def test_matching_if_none_match_is_304(imds: Imds, header: str) -> None:
    imds.submit("platform-reboot", "web-0")
    imds.submit("platform-reboot", "web-1")
    assert imds.incarnation() == 3
    response = await imds.get(headers={"If-None-Match": header})
    assert response.status_code == 304
    assert response.content == b""
    assert response.headers["etag"] == '"3"'
    assert "content-length" not in response.headers


async def test_304_via_raw_asgi_sends_an_empty_body(imds: Imds) -> None:
    response = await imds.raw(headers=[(b"metadata", b"true"), (b"if-none-match", b'"1"')])
    assert (response.status, response.body) == (304, b"")
    assert response.header("etag") == '"1"'
    assert response.header("content-length") is None


@pytest.mark.parametrize(
    "header", ["0", "null", "*garbage*", '"2"', '"13"', '"31"', "W/", "", '"1", "2"', "3 3"]
)
async def test_other_if_none_match_values_get_the_document(imds: Imds, header: str) -> None:
    imds.submit("platform-reboot", "web-0")
    imds.submit("platform-reboot", "web-1")
    response = await imds.get(headers={"If-None-Match": header})
    assert response.status_code == 200
    assert response.headers["etag"] == '"3"'
    assert response.json()["DocumentIncarnation"] == 3


async def test_old_tag_after_a_change_gets_the_new_document(imds: Imds) -> None:
    first = await imds.get()
    tag = first.headers["etag"]
    assert (await imds.get(headers={"If-None-Match": tag})).status_code == 304
    imds.submit("platform-reboot", "web-0")
    response = await imds.get(headers={"If-None-Match": tag})
    assert_json_reply(response, 200, reboot_document(NEWEST))
    assert response.headers["etag"] == '"2"'
    again = await imds.get(headers={"If-None-Match": response.headers["etag"]})
    assert (again.status_code, again.content) == (304, b"")


async def test_if_none_match_is_ignored_on_post(imds: Imds, reboot_web0: str) -> None:
    response = await imds.post("web-1", reboot_web0, headers={"If-None-Match": '"2"'})
    assert_json_reply(response, 200, b"")


async def test_if_none_match_does_not_skip_the_header_check(imds: Imds) -> None:
    response = await imds.get(metadata=None, headers={"If-None-Match": '"1"'})
    assert response.status_code == 400


# --------------------------------------------------------------------- the cache


@pytest.mark.parametrize("version", VERSIONS)
async def test_same_version_gives_identical_bytes(
    imds: Imds, reboot_web0: str, version: str
) -> None:
    first = await imds.get("web-1", version=version)
    second = await imds.get("web-1", version=version)
    other_vm = await imds.get("web-5", version=version)
    assert first.content == second.content == other_vm.content == reboot_document(version)


async def test_cache_keeps_versions_apart(imds: Imds, reboot_web0: str) -> None:
    bodies = {v: (await imds.get(version=v)).content for v in VERSIONS}
    again = {v: (await imds.get(version=v)).content for v in reversed(VERSIONS)}
    assert bodies == again == {v: reboot_document(v) for v in VERSIONS}


async def test_document_is_never_stale(imds: Imds) -> None:
    assert (await imds.get()).content == EMPTY_WEB
    op = imds.submit("platform-reboot", "web-0")
    assert (await imds.get()).content == reboot_document(NEWEST)
    event = imds.only_event(op)
    imds.fabric.cancel_event(event.id)
    assert (await imds.get()).content == b'{"DocumentIncarnation":3,"Events":[]}'
    imds.submit("platform-reboot", "web-0")
    body = (await imds.get()).json()
    assert body["DocumentIncarnation"] == 4
    assert [e["EventId"] for e in body["Events"]] == ["00000002-AAAA-4BBB-8CCC-DDDDEEEEFFFF"]


async def test_started_status_is_served_after_time_passes(imds: Imds, reboot_web0: str) -> None:
    assert (await imds.get()).content == reboot_document(NEWEST)
    imds.fabric.advance(15 * 60)
    body = (await imds.get()).json()
    assert body["DocumentIncarnation"] == 3
    assert [(e["EventStatus"], e["NotBefore"]) for e in body["Events"]] == [("Started", "")]
    imds.fabric.advance(10 * 60)
    assert (await imds.get()).content == b'{"DocumentIncarnation":4,"Events":[]}'


async def test_scopes_are_cached_apart(imds: Imds, reboot_web0: str) -> None:
    web = await imds.get("web-1")
    workers = await imds.get("workers_1")
    assert web.content == reboot_document(NEWEST)
    assert workers.content == b'{"DocumentIncarnation":1,"Events":[]}'


# Regression: per-VM (GPU) cache entries were keyed by bare VM name, scope entries by bare
# scope id, so a GPU VM named like another scope was served that scope's document.
async def test_per_vm_cache_entries_do_not_collide_with_scope_entries(
    make_imds: ImdsFactory,
) -> None:
    spec = fleet(
        {"kind": "availability_set", "name": "web", "vms": 2},
        {
            "kind": "scale_set",
            "name": "gpu",
            "gpu": True,
            "fault_domains": 1,
            "vms": [{"name": "web"}, {"name": "gpu_1"}],
        },
    )
    imds = make_imds(spec)
    imds.submit("platform-reboot", "web-0")
    imds.submit("platform-reboot", "gpu_1")
    assert imds.incarnation("web") == imds.incarnation("gpu") == 2
    web_scope_doc = await imds.document("web-1")
    assert [e["Resources"] for e in web_scope_doc["Events"]] == [["web-0"]]
    gpu_vm_doc = await imds.document("web")
    assert gpu_vm_doc["Events"] == []


async def test_gpu_vms_are_cached_apart(make_imds: ImdsFactory) -> None:
    imds = make_imds(fleet(GPU_SCOPE))
    imds.submit("platform-reboot", "gpu_0")
    first = await imds.document("gpu_0")
    second = await imds.document("gpu_1")
    assert [e["Resources"] for e in first["Events"]] == [["gpu_0"]]
    assert second == {"DocumentIncarnation": 2, "Events": []}
    assert await imds.document("gpu_0") == first
