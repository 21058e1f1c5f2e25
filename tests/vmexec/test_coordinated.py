"""forewarn's own agent, unmodified and with no endpoint configured, on two VMs of one
event, coordinating over the real Redis that ``--forward 6379`` brings into each VM: the
event is approved by exactly one POST."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
import uuid
from collections import Counter
from pathlib import Path

from tests.support.serverproc import ServerProcess
from tests.support.waiting import wait_until
from tests.vmexec.conftest import SCALE_SET, Exec, event


def _two_on_one_host(server: ServerProcess) -> tuple[str, list[str]]:
    rows = server.control("GET", "/api/v1/vms").json()
    by_host = Counter(r["host"] for r in rows if r["scope"] == SCALE_SET)
    host = next(h for h, n in by_host.most_common() if n >= 2)
    return host, sorted(r["name"] for r in rows if r["scope"] == SCALE_SET and r["host"] == host)


def _ended(agents: dict[str, subprocess.Popen[str]]) -> str | None:
    """What wait_until stops on when an agent ended before the approval (its VM's name)."""
    return next((f"ended: {vm}" for vm, proc in agents.items() if proc.poll() is not None), None)


def test_coordinated_over_forwarded_redis_one_post_per_event(
    vmexec: Exec, server: ServerProcess, shared_dir: Path
) -> None:
    # The interpreter the user runs loads the agent's Redis driver (the `test` extra brings
    # async-timeout, which redis.asyncio needs before Python 3.11.3): never a skip.
    probe = subprocess.run([*vmexec.python(), "-c", "import redis.asyncio"], capture_output=True)
    assert probe.returncode == 0, f"{vmexec.user} cannot load redis: {probe.stderr[-300:]!r}"
    host, group = _two_on_one_host(server)
    namespace = f"vmexec-{uuid.uuid4().hex}"
    agents = {}
    for vm in group:
        state = shared_dir / vm
        state.mkdir()
        state.chmod(0o777)
        config = state / "agent.toml"
        config.write_text(
            textwrap.dedent(f"""
            state_path = "{state / "state.db"}"
            poll_interval = 0.2
            safety_margin = 1

            [coordination]
            backend = "redis"
            url = "redis://127.0.0.1:6379/0"
            namespace = "{namespace}"

            [handlers.prep]
            type = "exec"
            argv = ["true"]

            [[rules]]
            name = "group"
            event_types = ["Reboot"]
            this_vm = true
            handlers = ["prep"]
            approval = "coordinated"
        """)
        )
        agents[vm] = vmexec.start(
            vm, *vmexec.python(), "-m", "forewarn", "agent", "run", "-c", str(config),
            options=["--forward", "6379"], env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )  # fmt: skip
    response = server.control("POST", "/api/v1/operations",
                              json={"kind": "platform-reboot", "target": host})  # fmt: skip
    assert response.status_code == 201, response.text
    events = [event(server, e) for e in response.json()["event_ids"]]
    [ours] = [e for e in events if e["scope"] == SCALE_SET]
    assert sorted(ours["resources"]) == group
    approver = wait_until(
        lambda: event(server, ours["id"])["approved_by"] or _ended(agents), 120, "approval"
    )
    for proc in agents.values():
        proc.terminate()
    logs = {vm: proc.communicate(timeout=60)[1] for vm, proc in agents.items()}
    assert approver in group, logs
    lines = [json.loads(line) for text in logs.values() for line in text.splitlines()
             if line.startswith("{")]  # fmt: skip
    posts = [line for line in lines if line.get("event") == "approved"]
    assert len(posts) == 1, [line for line in lines if "approv" in str(line.get("event"))]
    assert any(line.get("event") == "vote recorded" for line in lines)
