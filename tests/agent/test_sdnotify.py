"""Under systemd (Type=notify, WatchdogSec) the agent says READY, pings, says STOPPING."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.agent.agentproc import AgentProcess
from tests.agent.faultserver import FaultServer


def test_the_agent_speaks_systemds_notify_protocol(
    start_agent: Callable[..., AgentProcess], tmp_path: Path
) -> None:
    endpoint = FaultServer()
    path = str(tmp_path / "notify.sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    sock.settimeout(30)
    try:
        env = {"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "400000"}
        agent = start_agent("web-0", 'vm_name = "web-0"\npoll_interval = 0.2\n', endpoint.url, env)
        messages: list[str] = []
        deadline = time.monotonic() + 30
        while messages.count("WATCHDOG=1") < 4 and time.monotonic() < deadline:
            messages.append(sock.recv(4096).decode())
        ready = [m for m in messages if m.startswith("READY=1")]
        assert ready and "STATUS=watching the endpoint for web-0" in ready[0]
        assert messages.count("WATCHDOG=1") >= 4
        assert agent.stop() == 0
        rest: list[str] = []
        sock.settimeout(1)
        while "STOPPING=1" not in rest:
            rest.append(sock.recv(4096).decode())
    finally:
        sock.close()
        endpoint.close()


def test_without_notify_socket_nothing_is_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    from forewarn.agent.sdnotify import notify, watchdog_interval

    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    monkeypatch.delenv("WATCHDOG_USEC", raising=False)
    assert notify("READY=1") is False
    assert watchdog_interval() is None
