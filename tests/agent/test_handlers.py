"""Handlers, each run for real: processes, an HTTP receiver, imported functions.

The kubernetes handler has tests of its own (test_kubernetes.py)."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from forewarn.agent.clock import AgentClock
from forewarn.agent.config_schema import ExecSpec, PythonSpec, WebhookSpec
from forewarn.agent.handlers import (
    ExecHandler,
    HandlerContext,
    HandlerFailed,
    PythonHandler,
    WebhookHandler,
)
from tests.agent.helpers import event, recording_webhook

HERE = Path(__file__).parent
NOT_BEFORE = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
EVENT = event(
    "E1",
    event_type="Reboot",
    resources=("web-0", "web-3"),
    not_before=NOT_BEFORE.timestamp(),
    description='Host "update" $HOME',
    duration=30,
)


def context(phase: str = "prepare", seconds: float = 30.0) -> HandlerContext:
    clock = AgentClock()
    return HandlerContext(
        event=EVENT,
        vm_name="web-0",
        phase=phase,
        deadline=NOT_BEFORE - timedelta(seconds=10),
        expires=clock.monotonic() + seconds,
        clock=clock,
    )


# ---------------------------------------------------------------- exec

RECORDER = """
import json, os, sys
out = {"env": {k: v for k, v in os.environ.items() if k.startswith(("FOREWARN_", "EXTRA"))},
       "stdin": json.load(sys.stdin), "argv": sys.argv[1:]}
open(sys.argv[1], "w").write(json.dumps(out))
print("recorded")
"""


async def test_exec_gets_event_fields_as_env_and_the_event_as_json_on_stdin(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out.json"
    spec = ExecSpec(argv=[sys.executable, "-c", RECORDER, str(out)], env={"EXTRA": "1"})
    detail = await ExecHandler("rec", spec).run(context())
    assert detail == "recorded"
    got = json.loads(out.read_text())
    assert got["stdin"] == {
        "EventId": "E1",
        "EventStatus": "Scheduled",
        "EventType": "Reboot",
        "ResourceType": "VirtualMachine",
        "Resources": ["web-0", "web-3"],
        "NotBefore": "Wed, 02 Jan 2030 03:04:05 GMT",
        "Description": 'Host "update" $HOME',
        "EventSource": "Platform",
        "DurationInSeconds": 30,
    }
    env = got["env"]
    assert env["FOREWARN_EVENT_ID"] == "E1"
    assert env["FOREWARN_EVENT_TYPE"] == "Reboot"
    assert env["FOREWARN_RESOURCES"] == "web-0,web-3"
    assert env["FOREWARN_NOT_BEFORE"] == "Wed, 02 Jan 2030 03:04:05 GMT"
    assert env["FOREWARN_NOT_BEFORE_EPOCH"] == str(int(NOT_BEFORE.timestamp()))
    assert env["FOREWARN_DURATION_SECONDS"] == "30"
    assert env["FOREWARN_VM_NAME"] == "web-0"
    assert env["FOREWARN_PHASE"] == "prepare"
    assert env["FOREWARN_HANDLER"] == "rec"
    assert float(env["FOREWARN_DEADLINE_EPOCH"]) == NOT_BEFORE.timestamp() - 10
    assert env["EXTRA"] == "1"


async def test_exec_failure_carries_status_and_stderr() -> None:
    spec = ExecSpec(argv=["sh", "-c", "echo draining; echo 'pods stuck' >&2; exit 3"])
    with pytest.raises(HandlerFailed, match="exit status 3: pods stuck"):
        await ExecHandler("x", spec).run(context())
    with pytest.raises(HandlerFailed, match="cannot run '/nonexistent/drain'"):
        await ExecHandler("x", ExecSpec(argv=["/nonexistent/drain"])).run(context())


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


async def test_a_cancelled_exec_handler_ends_its_whole_process_tree(tmp_path: Path) -> None:
    import asyncio

    pidfile = tmp_path / "pid"
    spec = ExecSpec(argv=["sh", "-c", f"sleep 60 & echo $! > {pidfile}; wait"])
    task = asyncio.create_task(ExecHandler("slow", spec).run(context()))
    for _ in range(200):
        if pidfile.exists() and pidfile.read_text().strip():
            break
        await asyncio.sleep(0.02)
    grandchild = int(pidfile.read_text())
    assert _alive(grandchild)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    deadline = time.monotonic() + 5
    while _alive(grandchild) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert not _alive(grandchild)


# ---------------------------------------------------------------- webhook


async def test_webhook_posts_the_templated_body_and_retries_5xx_and_429() -> None:
    with recording_webhook([500, 429, 200]) as hook:
        spec = WebhookSpec(
            url=hook.url,
            retries=3,
            backoff=0.01,
            headers={"Authorization": "Bearer t"},
            body={
                "text": "${EventType} of ${vm_name}: ${Description}",
                "vms": "${Resources}",
                "seconds": "${DurationInSeconds}",
                "nested": [{"id": "${EventId}", "phase": "${phase}"}],
                "literal": 5,
            },
        )
        detail = await WebhookHandler("hook", spec).run(context())
    assert detail == "HTTP 200 after 3 attempt(s)"
    assert len(hook.requests) == 3
    path, headers, body = hook.requests[-1]
    assert path == "/hook"
    assert headers["Authorization"] == "Bearer t"
    assert body == {
        "text": 'Reboot of web-0: Host "update" $HOME',
        "vms": ["web-0", "web-3"],
        "seconds": 30,
        "nested": [{"id": "E1", "phase": "prepare"}],
        "literal": 5,
    }


async def test_webhook_default_body_and_no_retry_on_4xx() -> None:
    with recording_webhook([404]) as hook:
        spec = WebhookSpec(url=hook.url, retries=3, backoff=0.01)
        with pytest.raises(HandlerFailed, match="HTTP 404"):
            await WebhookHandler("hook", spec).run(context("recover"))
    assert len(hook.requests) == 1
    body = hook.requests[0][2]
    assert body["vm"] == "web-0" and body["phase"] == "recover"
    assert body["event"]["EventId"] == "E1"


async def test_webhook_gives_up_after_its_retries_on_a_dead_receiver() -> None:
    spec = WebhookSpec(url="http://127.0.0.1:9/hook", retries=2, backoff=0.01)
    with pytest.raises(HandlerFailed, match=r"POST http://127\.0\.0\.1:9/hook: ConnectError"):
        await WebhookHandler("hook", spec).run(context())


async def test_webhook_over_https_verifies_the_receiver(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """https:// goes over the standard library's ssl: the receiver's certificate is
    checked against the trusted CAs (``SSL_CERT_FILE``); one not trusted is no answer."""
    from forewarn.arm.tls import ensure_certificates

    tls = ensure_certificates(tmp_path / "trusted", "127.0.0.1")
    with recording_webhook([200], tls=(tls.certificate, tls.key)) as hook:
        spec = WebhookSpec(url=hook.url, retries=0, use_proxy_env=False)
        monkeypatch.setenv("SSL_CERT_FILE", str(tls.ca))
        assert await WebhookHandler("hook", spec).run(context()) == "HTTP 200 after 1 attempt(s)"
        assert len(hook.requests) == 1 and hook.requests[0][2]["vm"] == "web-0"
        other = ensure_certificates(tmp_path / "other", "127.0.0.1")
        monkeypatch.setenv("SSL_CERT_FILE", str(other.ca))
        with pytest.raises(HandlerFailed, match=r"POST https://.*: ConnectError: .*CERTIFICATE"):
            await WebhookHandler("hook", spec).run(context())
    assert len(hook.requests) == 1


# ---------------------------------------------------------------- python


@pytest.fixture
def user_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    name = f"user_handlers_{os.getpid()}_{time.monotonic_ns()}"
    (tmp_path / f"{name}.py").write_text(
        "import asyncio\n"
        "calls = []\n"
        "def sync_ok(ctx):\n"
        "    calls.append(('sync', ctx.event.event_id, ctx.phase, dict(ctx.options)))\n"
        "    return 'synced'\n"
        "async def async_ok(ctx):\n"
        "    await asyncio.sleep(0)\n"
        "    calls.append(('async', ctx.vm_name, ctx.event_json['EventType']))\n"
        "def refuses(ctx):\n"
        "    return False\n"
        "def breaks(ctx):\n"
        "    raise RuntimeError('disk full')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


async def test_python_handlers_sync_and_async(user_module: str) -> None:
    sync = PythonHandler("s", PythonSpec(target=f"{user_module}:sync_ok", options={"n": 1}))
    assert await sync.run(context()) == "synced"
    assert (
        await PythonHandler("a", PythonSpec(target=f"{user_module}:async_ok")).run(context()) == ""
    )
    calls = sys.modules[user_module].calls
    assert calls == [("sync", "E1", "prepare", {"n": 1}), ("async", "web-0", "Reboot")]


async def test_python_handler_failures_say_why(user_module: str) -> None:
    with pytest.raises(HandlerFailed, match="refuses returned False"):
        await PythonHandler("r", PythonSpec(target=f"{user_module}:refuses")).run(context())
    with pytest.raises(HandlerFailed, match="breaks raised RuntimeError: disk full"):
        await PythonHandler("b", PythonSpec(target=f"{user_module}:breaks")).run(context())
    with pytest.raises(HandlerFailed, match="has no function missing"):
        PythonHandler("m", PythonSpec(target=f"{user_module}:missing")).function()
    with pytest.raises(HandlerFailed, match="cannot import no_such_module_xyz"):
        PythonHandler("m", PythonSpec(target="no_such_module_xyz:f")).function()
