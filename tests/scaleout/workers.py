"""Asking ``forewarn serve --workers``: the ports are shared, so the kernel picks a worker
per connection (``test_workers.py``, ``test_workers_killed.py``)."""

from __future__ import annotations

from typing import Any

import httpx

from tests.support.serverproc import ServerProcess

__all__ = ["fresh", "leading_pair", "listed_members"]


def fresh(url: str, **kw: Any) -> httpx.Response:
    """One request on a new connection (the kernel picks a worker per connection);
    ``vm``: the source address to ask from."""
    transport = httpx.HTTPTransport(local_address=kw.pop("vm")) if "vm" in kw else None
    with httpx.Client(timeout=10, trust_env=False, transport=transport) as client:
        return client.request(kw.pop("method", "GET"), url, **kw)


def listed_members(workers: ServerProcess) -> list[dict[str, Any]] | None:
    """The members ``GET /api/v1/cluster`` lists (None while it cannot be asked)."""
    try:
        response = fresh(workers.control_url + "/api/v1/cluster")
    except httpx.HTTPError:
        return None
    if response.status_code != 200:
        return None
    found: list[dict[str, Any]] = response.json()["members"]
    return found


def leading_pair(workers: ServerProcess) -> list[dict[str, Any]] | None:
    """The live workers, when one of two leads (None otherwise, or while unreachable)."""
    found = listed_members(workers)
    if found is None:
        return None
    roles = sorted(m["role"] for m in found)
    return found if roles == ["follower", "leader"] else None
