"""A real ``forewarn serve`` with its ARM listener on a virtual clock, and the unmodified
azure-mgmt-compute client pointed at it."""

from __future__ import annotations

import re
import ssl
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from azure.core.credentials import AccessToken
from azure.mgmt.compute import ComputeManagementClient

from tests.support.serverproc import ServerProcess, free_port

SUBSCRIPTION = "11111111-2222-3333-4444-555555555555"
GROUP = "rg-arm"

FLEET = f"""
subscription: {SUBSCRIPTION}
resource_group: {GROUP}
scopes:
  - kind: standalone
    name: solo
  - kind: standalone
    name: solo2
  - kind: standalone
    name: solo3
  - kind: availability_set
    name: web
    vms: 3
  - kind: scale_set
    name: pool
    terminate_notification: {{enabled: true, timeout_minutes: 5}}
    vms:
      - {{name: pool_0, host: h-pool, update_domain: 0}}
      - {{name: pool_1, host: h-pool, update_domain: 0}}
      - {{name: pool_2, host: h-pool3, update_domain: 1}}
      - {{name: pool_3, host: h-pool2, update_domain: 1}}
  - kind: scale_set
    name: quiet
    vms: 2
  - kind: scale_set
    name: spots
    spot: true
    vms: 2
"""


class AnyToken:
    """A TokenCredential: forewarn accepts any bearer token by default."""

    def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        return AccessToken("forewarn", int(time.time()) + 3600)


class ArmServer:
    """The server, its ARM URL and CA, and helpers over its control API."""

    def __init__(self, server: ServerProcess, url: str, ca: str) -> None:
        self.server = server
        self.url = url
        self.ca = ca

    def compute(self, **kwargs: Any) -> ComputeManagementClient:
        return ComputeManagementClient(
            AnyToken(), SUBSCRIPTION, base_url=self.url, connection_verify=self.ca, **kwargs
        )

    def https(self) -> httpx.Client:
        context = ssl.create_default_context(cafile=self.ca)
        return httpx.Client(base_url=self.url, verify=context, timeout=10, trust_env=False)

    def advance(self, seconds: float) -> None:
        r = self.server.control("POST", "/api/v1/clock/advance", json={"seconds": seconds})
        assert r.status_code == 200, r.text

    def events(self, vm: str | None = None) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = self.server.control("GET", "/api/v1/events").json()
        if vm is None:
            return events
        return [e for e in events if vm in (e.get("resources") or e.get("Resources") or [])]

    def history(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = self.server.control("GET", "/api/v1/history").json()
        return out

    def address(self, vm: str) -> str:
        vms = self.server.control("GET", "/api/v1/vms").json()
        rows = vms if isinstance(vms, list) else vms.get("vms", [])
        return str(next(v["address"] for v in rows if v["name"] == vm))

    def document(self, vm: str) -> dict[str, Any]:
        """What the VM itself sees on the metadata endpoint."""
        r = self.server.imds(vm_address=self.address(vm))
        assert r.status_code == 200, r.text
        out: dict[str, Any] = r.json()
        return out


def start_arm_server(
    tmp: Path, fleet: str | None = FLEET, extra: tuple[str, ...] = (), clock: str = "virtual"
) -> ArmServer:
    """A server with ARM over ``fleet`` (None: the built-in demo fleet, as ``serve`` alone)."""
    fleet_args: list[str] = []
    if fleet is not None:
        (tmp / "fleet.yaml").write_text(fleet)
        fleet_args = ["--fleet", str(tmp / "fleet.yaml")]
    port = free_port()
    server = ServerProcess(
        tmp / "forewarn.db",
        [
            *fleet_args, "--clock", clock, "--enablement", "always",
            "--rate-limit", "0", "--arm-bind", f"127.0.0.1:{port}",
            "--arm-ca-dir", str(tmp / "ca"), *extra,
        ],
    ).start(timeout=60)  # fmt: skip
    line = next(line for line in server.banner if "ARM on" in line)
    match = re.search(r"ARM on (https://\S+) .* trust (\S+) ", line)
    assert match, line
    return ArmServer(server, match.group(1), match.group(2))


@pytest.fixture(scope="module")
def arm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ArmServer]:
    server = start_arm_server(tmp_path_factory.mktemp("arm"))
    yield server
    server.server.stop()
