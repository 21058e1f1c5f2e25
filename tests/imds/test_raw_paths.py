"""The endpoint's ASGI app (what the pytest plugin serves) routes on the path as sent, as
``forewarn serve``'s listener does: an encoded ``/`` in a segment is no separator, and a
segment that decodes to ``/``, ``\\``, a control character or ``..`` routes nowhere (404),
never to another node of the instance document. Through httpx's ASGI transport, which
hands the app the decoded ``path`` and the ``raw_path`` as sent."""

from __future__ import annotations

import pytest

from tests.imds.conftest import INSTANCE_VERSION, Imds


@pytest.mark.parametrize(
    "path",
    [
        "/metadata/instance/compute%2Fname",
        "/metadata/instance/compute%2fname",
        "/metadata/instance/compute/%2E%2E/compute/name",
        "/metadata/instance/compute%5Cname",
        "/metadata/instance%2Fcompute/name",
    ],
)
async def test_an_encoded_separator_routes_nowhere(imds: Imds, path: str) -> None:
    response = await imds.request("GET", path, version=INSTANCE_VERSION, params={"format": "text"})
    assert (response.status_code, response.json()) == (404, {"error": "Not found"})


async def test_each_segment_is_still_decoded(imds: Imds) -> None:
    response = await imds.request(
        "GET", "/metadata/instance/compute/n%61me", version=INSTANCE_VERSION,
        params={"format": "text"},
    )  # fmt: skip
    assert (response.status_code, response.text) == (200, "web-1")
