"""The VM commands import only what they run (issue 31): no httpx (its import cost more
start-up than the rest of their work), no click (their parsers are argparse), and the
synchronous ones no asyncio either.

Each runs for real, against a real ``forewarn serve`` where it needs one, and its
output is checked, so a command that failed early cannot pass for one that loaded little.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from forewarn.agent.state import State
from tests.support.serverproc import ServerProcess, trigger
from tests.vmside.conftest import WEB0, Command, Ran

Start = Callable[..., Command]
#: What the client and the contract no longer load for these commands (the JSON decoder,
#: the date parser, the retry loop: see test_client_import_diet.py).
CLIENT_DIET = ("msgspec", "email", "tenacity")


def light(command: Command, *absent: str) -> Ran:
    ran = command.wait()
    assert ran.code == 0, ran.stderr
    assert ran.modules, "the wrapper wrote no module list"
    loaded = [name for name in absent if name in ran.modules]
    assert loaded == [], loaded
    return ran


def test_endpoint_commands_load_neither_httpx_nor_asyncio(
    forewarn: Start, server: ServerProcess, tmp_path: Path
) -> None:
    event_id = trigger(server, "user-reboot", "web-0")
    ran = light(forewarn("--version"), "httpx", "asyncio", "forewarn.client", "click")
    assert ran.stdout.startswith("forewarn, version ")
    lease = tmp_path / "dhclient.leases"
    lease.write_text("lease {\n  option unknown-245 a8:3f:81:10;\n}\n")
    ran = light(forewarn("discover", "--lease-file", str(lease), "--json"),
                "httpx", "asyncio", "click", *CLIENT_DIET)  # fmt: skip
    assert json.loads(ran.stdout)["url"] == "http://168.63.129.16"
    url = server.imds_url
    ran = light(forewarn("events", "--url", url, "--source-address", WEB0, "--json"),
                "httpx", "asyncio", "click", *CLIENT_DIET, "ipaddress")  # fmt: skip
    assert [e["EventId"] for e in json.loads(ran.stdout)["Events"]] == [event_id]
    ran = light(forewarn("approve", event_id, "--url", url, "--source-address", WEB0),
                "httpx", "asyncio", "click", *CLIENT_DIET, "ipaddress")  # fmt: skip
    assert ran.stdout.strip() == f"approved on {url}: {event_id}"


def test_agent_status_loads_no_daemon(forewarn: Start, tmp_path: Path) -> None:
    state = tmp_path / "state.db"
    State(str(state)).close()
    config = tmp_path / "agent.toml"
    config.write_text(f'state_path = "{state}"\nmetrics_bind = ""\n')
    ran = light(forewarn("agent", "status", "-c", str(config), "--json"),
                "httpx", "asyncio", "structlog", "forewarn.client", "click")  # fmt: skip
    assert json.loads(ran.stdout)["events"] == []
