"""Several real ``forewarn serve --store postgresql://...`` processes sharing one fleet.

Each process has its own loopback ports; the tests look at them only from outside: the
metadata endpoint (from each VM's own source address) and the control API.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from tests.support.serverproc import ServerProcess
from tests.support.waiting import wait_until

__all__ = ["Fleet"]


LATEST = "2020-07-01"


class Fleet:
    """``count`` processes on one PostgreSQL database."""

    def __init__(self, tmp: Path, url: str, count: int, args: Sequence[str]) -> None:
        self.url = url
        self.servers = [
            ServerProcess(tmp / f"unused-{i}.db", ["--store", url, *args]) for i in range(count)
        ]
        self._clients: dict[tuple[int, str | None], httpx.Client] = {}

    def start(self) -> Fleet:
        """Start every process at once; return when all of them serve."""
        with ThreadPoolExecutor(len(self.servers)) as pool:
            for started in [pool.submit(s.start, 90) for s in self.servers]:
                started.result()
        return self

    def stop(self) -> None:
        for client in self._clients.values():
            client.close()
        for server in self.servers:
            server.stop()

    def alive(self) -> list[int]:
        """Indices of the processes still running."""
        return [
            i for i, s in enumerate(self.servers) if s.proc is not None and s.proc.poll() is None
        ]

    # ------------------------------------------------------------- clients

    def _client(self, index: int, vm_address: str | None = None) -> httpx.Client:
        key = (index, vm_address)
        client = self._clients.get(key)
        if client is None:
            transport = httpx.HTTPTransport(local_address=vm_address) if vm_address else None
            client = httpx.Client(transport=transport, timeout=10, trust_env=False)
            self._clients[key] = client
        return client

    def control(self, index: int, method: str, path: str, **kw: Any) -> httpx.Response:
        server = self.servers[index]
        return self._client(index).request(method, server.control_url + path, **kw)

    def imds(
        self, index: int, vm_address: str, method: str = "GET", etag: int | None = None,
        **kw: Any,
    ) -> httpx.Response:  # fmt: skip
        headers = {"Metadata": "true"}
        if etag is not None:
            headers["If-None-Match"] = f'"{etag}"'
        url = self.servers[index].imds_url + "/metadata/scheduledevents"
        return self._client(index, vm_address).request(
            method, url, params={"api-version": LATEST}, headers=headers, **kw
        )

    def doc(self, index: int, vm_address: str) -> dict[str, Any]:
        response = self.imds(index, vm_address)
        assert response.status_code == 200, (index, response.status_code, response.text)
        body: dict[str, Any] = response.json()
        return body

    def history(self, index: int) -> list[dict[str, Any]]:
        """The whole history, as process ``index`` serves it."""
        response = self.control(index, "GET", "/api/v1/history", params={"limit": 10000})
        assert response.status_code == 200, response.text
        entries: list[dict[str, Any]] = response.json()
        return entries

    def wait_for_rollout(self, index: int, rollout: str, timeout: float = 60.0) -> None:
        """Until process ``index``'s history says ``rollout`` completed."""

        def done() -> bool:
            return any(
                h["kind"] == "rollout.completed" and h["detail"].get("id") == rollout
                for h in self.history(index)
            )

        wait_until(done, timeout, "the rollout to complete", interval=0.5)

    # ------------------------------------------------------------ the cluster

    def cluster(self, index: int) -> dict[str, Any]:
        response = self.control(index, "GET", "/api/v1/cluster")
        assert response.status_code == 200, response.text
        data: dict[str, Any] = response.json()
        return data

    def leader_index(self) -> int | None:
        """Which process leads now (None while nobody does)."""
        for index in self.alive():
            try:
                data = self.cluster(index)
            except httpx.HTTPError:
                continue
            if data["role"] == "leader":
                return index
        return None

    def wait_for_leader(self, timeout: float = 30.0) -> int:
        found: list[int] = []

        def probe() -> bool:
            index = self.leader_index()
            if index is not None:
                found.append(index)
            return index is not None

        wait_until(probe, timeout, "a leader")
        return found[-1]

    def followers(self) -> list[int]:
        leader = self.leader_index()
        return [i for i in self.alive() if i != leader]
