"""History paging parameters are range-checked, never a 500."""

from __future__ import annotations

import pytest

from tests.control.conftest import API, TestClient


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"after": str(2**64)}, "query parameter after is out of range"),
        ({"after": "-1"}, "query parameter after is out of range"),
        ({"limit": "10001"}, "limit must be 0 to 10000"),
        ({"last": "-5"}, "query parameter last is out of range"),
        ({"last": "10001"}, "last must be 0 to 10000"),
        # limit is checked even when last, which overrides it, is given
        ({"last": "5", "limit": "true"}, "query parameter limit must be an integer"),
        ({"last": "5", "limit": "10001"}, "limit must be 0 to 10000"),
    ],
)
def test_out_of_range_paging_is_a_400(
    client: TestClient, params: dict[str, str], message: str
) -> None:
    response = client.get(f"{API}/history", params=params)
    assert (response.status_code, response.json()) == (400, {"error": message})


def test_last_gives_the_newest_entries_oldest_first(client: TestClient) -> None:
    client.post(f"{API}/operations", json={"kind": "user-reboot", "target": "web-0"})
    everything = client.get(f"{API}/history").json()
    newest = client.get(f"{API}/history", params={"last": 2}).json()
    assert newest == everything[-2:]
