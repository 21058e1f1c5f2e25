"""What the dashboard downloads: the verdict is not sent again while it holds (ETag,
If-None-Match, 304), large answers are gzipped for a client that asks and for no other,
and the live stream is never compressed. A real ``forewarn serve``, raw httpx."""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import httpx
import msgspec
import pytest

from forewarn.control.compression import accepts_gzip
from tests.support.serverproc import VIRTUAL, ServerProcess, trigger
from tests.support.waiting import wait_until

REACTIONS = "/api/v1/reactions"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    process = ServerProcess(tmp_path / "forewarn.db", VIRTUAL).start()
    yield process
    process.stop()


class Answer(NamedTuple):
    status_code: int
    headers: httpx.Headers
    content: bytes  # as sent: never decoded


def _get(server: ServerProcess, path: str, **headers: str) -> Answer:
    """``path`` with exactly ``headers`` besides the host (no Accept-Encoding unless
    given), the body as it came over the wire (never decoded)."""
    with httpx.Client(base_url=server.control_url, timeout=30, trust_env=False) as client:
        request = client.build_request("GET", path)
        for name in ("accept-encoding", "accept", "user-agent", "connection"):
            request.headers.pop(name, None)
        request.headers.update(headers)
        response = client.send(request, stream=True)
        try:
            raw = b"".join(response.iter_raw())
        finally:
            response.close()
        return Answer(response.status_code, response.headers, raw)


def _verdict(response: Answer) -> dict[str, Any]:
    body = response.content
    if response.headers.get("content-encoding") == "gzip":
        body = gzip.decompress(body)
    decoded: dict[str, Any] = msgspec.json.decode(body)
    return decoded


def _vm_verdict(report: dict[str, Any], event_id: str, vm: str) -> str:
    (event,) = [e for e in report["events"] if e["id"] == event_id]
    (verdict,) = [v["verdict"] for v in event["vms"] if v["vm"] == vm]
    return str(verdict)


def test_the_verdict_held_is_not_sent_again_until_it_changes(server: ServerProcess) -> None:
    trigger(server, "user-reboot", "web-0")
    first = _get(server, REACTIONS)
    tag = first.headers["etag"]
    assert first.status_code == 200 and tag.startswith('W/"')
    assert first.headers["cache-control"] == "no-cache"
    again = _get(server, REACTIONS, **{"If-None-Match": tag})
    assert (again.status_code, again.content, again.headers["etag"]) == (304, b"", tag)
    listed = _get(server, REACTIONS, **{"If-None-Match": f'W/"other", {tag}'})
    assert listed.status_code == 304
    stale = _get(server, REACTIONS, **{"If-None-Match": 'W/"json-0"'})
    assert stale.status_code == 200 and stale.headers["etag"] == tag

    trigger(server, "user-reboot", "web-1")  # a change: a new verdict, a new tag
    changed = _get(server, REACTIONS, **{"If-None-Match": tag})
    assert changed.status_code == 200 and changed.headers["etag"] != tag
    assert len(_verdict(changed)["events"]) == 2

    page = _get(server, "/api/v1/report")  # the HTML page has its own tag, and its 304
    assert page.status_code == 200 and page.headers["etag"] != changed.headers["etag"]
    held = _get(server, "/api/v1/report", **{"If-None-Match": page.headers["etag"]})
    assert (held.status_code, held.content) == (304, b"")


def test_the_clock_passing_notbefore_changes_the_verdict_and_its_tag(
    server: ServerProcess,
) -> None:
    event_id = trigger(server, "user-reboot", "web-0")  # web-0 never polls
    before = _get(server, REACTIONS)
    assert _vm_verdict(_verdict(before), event_id, "web-0") == "waiting"
    tag = before.headers["etag"]
    event = server.control("GET", f"/api/v1/events/{event_id}").json()
    now = server.control("GET", "/api/v1/clock").json()["now"]
    advanced = server.control("POST", "/api/v1/clock/advance",
                              json={"seconds": event["not_before"] - now + 1})  # fmt: skip
    assert advanced.status_code == 200, advanced.text

    def graded_again() -> Answer | None:
        response = _get(server, REACTIONS, **{"If-None-Match": tag})
        return response if response.status_code == 200 else None

    after = wait_until(graded_again, 20, "a new verdict once NotBefore passed")
    assert after.headers["etag"] != tag
    assert _vm_verdict(_verdict(after), event_id, "web-0") == "missed"
    assert _get(server, REACTIONS, **{"If-None-Match": after.headers["etag"]}).status_code == 304


def test_on_a_real_clock_the_tag_holds_until_time_changes_the_grade(tmp_path: Path) -> None:
    """``generated_at`` moves with every request and is not part of the tag; a VM falling
    silent past ``stale_after`` is."""
    real = ServerProcess(tmp_path / "real.db", ["--enablement", "always", "--rate-limit", "0"])
    server = real.start()
    try:
        address = "127.1.0.1"  # web-0
        assert server.imds(vm_address=address).status_code == 200
        path = REACTIONS + "?stale_after=2"
        first = _get(server, path)
        assert [p["vm"] for p in _verdict(first)["stopped_polling"]] == []
        tag = first.headers["etag"]
        held = _get(server, path, **{"If-None-Match": tag})
        assert held.status_code == 304  # graded at another instant, the same verdict

        def silent() -> Answer | None:
            response = _get(server, path, **{"If-None-Match": tag})
            return response if response.status_code == 200 else None

        later = wait_until(silent, 20, "web-0 said to have stopped polling")
        assert [p["vm"] for p in _verdict(later)["stopped_polling"]] == ["web-0"]
        assert _verdict(later)["generated_at"] > _verdict(first)["generated_at"]
    finally:
        server.stop()


def test_large_answers_are_gzipped_only_for_a_client_that_asks(server: ServerProcess) -> None:
    plain = _get(server, "/openapi.json")
    assert "content-encoding" not in plain.headers
    assert "vary" not in plain.headers  # exactly the answer of before
    assert int(plain.headers["content-length"]) == len(plain.content) > 1024
    for asked in ("gzip", "br, gzip;q=0.5", "*", "deflate, GZIP"):
        packed = _get(server, "/openapi.json", **{"Accept-Encoding": asked})
        assert packed.headers["content-encoding"] == "gzip", asked
        assert "accept-encoding" in packed.headers["vary"].lower()
        assert int(packed.headers["content-length"]) == len(packed.content) < len(plain.content)
        assert gzip.decompress(packed.content) == plain.content
    for refused in ("identity", "gzip;q=0", "br", "*;q=0"):
        same = _get(server, "/openapi.json", **{"Accept-Encoding": refused})
        assert "content-encoding" not in same.headers and same.content == plain.content, refused
    small = _get(server, "/healthz", **{"Accept-Encoding": "gzip"})
    assert "content-encoding" not in small.headers  # not worth it


def test_the_verdict_is_gzipped_and_its_304_has_no_body(server: ServerProcess) -> None:
    for vm in ("web-0", "web-1", "web-2"):
        trigger(server, "user-reboot", vm)
    plain = _get(server, REACTIONS)
    packed = _get(server, REACTIONS, **{"Accept-Encoding": "gzip"})
    assert packed.headers["content-encoding"] == "gzip"
    assert packed.headers["etag"] == plain.headers["etag"]
    assert gzip.decompress(packed.content) == plain.content
    held = _get(server, REACTIONS, **{"Accept-Encoding": "gzip",
                                      "If-None-Match": packed.headers["etag"]})  # fmt: skip
    assert (held.status_code, held.content) == (304, b"")
    assert "content-encoding" not in held.headers


def test_the_live_stream_is_never_compressed(server: ServerProcess) -> None:
    headers = {"Accept-Encoding": "gzip", "Accept": "text/event-stream"}
    with (
        httpx.Client(base_url=server.control_url, timeout=30, trust_env=False) as client,
        client.stream("GET", "/api/v1/stream", headers=headers) as response,
    ):
        assert response.status_code == 200
        assert "content-encoding" not in response.headers
        assert response.headers["content-type"].startswith("text/event-stream")
        received = b""
        for part in response.iter_raw():
            received += part
            if b"event: tick" in received:
                break
    assert received.startswith(b"retry: 1000\n\nevent: snapshot\n")


def test_accept_encoding_is_read_with_its_q_values() -> None:
    assert accepts_gzip("gzip") and accepts_gzip("deflate, gzip;q=0.1") and accepts_gzip("*")
    assert accepts_gzip("x-gzip")
    assert not accepts_gzip("") and not accepts_gzip("gzip;q=0") and not accepts_gzip("br")
    assert not accepts_gzip("*, gzip;q=0") and not accepts_gzip("gzip;q=zero")
