"""What ``forewarn agent run | check-config | status`` do (their options are
``forewarn.vm.parser``'s).

A configuration error is one message naming the key, exit status 2, and nothing started.
"""

from __future__ import annotations

import json
import os
import signal
from datetime import UTC, datetime
from typing import Any, NoReturn

from forewarn.agent.config_layers import as_dict, load_config
from forewarn.agent.config_schema import AgentConfig, ConfigError, parse_bind
from forewarn.agent.programs import missing_program
from forewarn.agent.redact import redact
from forewarn.agent.state import EventRecord, State, StateError
from forewarn.vm.exits import USAGE, fail
from forewarn.vm.text import fit

__all__ = ["agent_fail", "check_config", "load", "run_agent", "show_status"]


def agent_fail(message: str, code: int = 1) -> NoReturn:
    """One ``forewarn agent: error:`` line and exit ``code``."""
    fail(message, code, prefix="forewarn agent")


def load(config_path: str | None, flags: dict[str, Any]) -> AgentConfig:
    """The layered configuration, or exit 2 naming what is wrong."""
    try:
        return load_config(config_path, os.environ, flags)
    except ConfigError as exc:
        agent_fail(str(exc), USAGE)


def run_agent(config_path: str | None, print_config: bool, **flags: Any) -> None:
    """Run the agent until SIGTERM or SIGINT (``--print-config``: print and exit);
    ``flags``: the command line's settings, None where not given."""
    config = load(config_path, flags)
    if print_config:
        print(json.dumps(redact(as_dict(config)), indent=2))
        return
    import asyncio  # the daemon's, loaded by ``run`` only (status and check-config need none)

    from forewarn.agent.daemon import Agent, AgentError
    from forewarn.agent.logs import configure_logging

    configure_logging(config.log_format, config.log_level)
    try:
        daemon = Agent(config)
    except AgentError as exc:
        agent_fail(str(exc))

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await daemon.run(stop)

    try:
        asyncio.run(main())
    except AgentError as exc:
        agent_fail(str(exc))


def check_config(config_path: str, quiet: bool, skip_programs: bool) -> None:
    """Validate ``config_path`` (and import python handlers, and find the programs of
    exec and kubernetes handlers unless ``skip_programs``); exit 2 when invalid."""
    from forewarn.agent.handlers import HandlerFailed, build_handlers

    config = load(config_path, {})
    try:
        build_handlers(config)
    except HandlerFailed as exc:
        agent_fail(f"{config_path}: handler: {exc}", USAGE)
    for name, spec in config.handlers.items():
        problem = "" if skip_programs else missing_program(spec)
        if problem:
            agent_fail(f"{config_path}: handlers.{name}.argv: {problem}", USAGE)
    if quiet:
        return
    lines = [f"{config_path}: valid"]
    kinds = [f"{name} ({spec.TAG})" for name, spec in config.handlers.items()]
    lines += [f"  handlers: {', '.join(kinds) or 'none'}", "  rules, first match wins:"]
    if config.ignore_freeze_under > 0:
        lines.append(f"    short-freeze: ignore Freeze under {config.ignore_freeze_under:g} s")
    for index, rule in enumerate(config.rules):
        name = config.rule_name(index)
        if rule.ignore:
            lines.append(f"    {name}: ignore")
            continue
        lines.append(
            f"    {name}: handlers [{', '.join(rule.handlers)}], approval {rule.approval.value}"
        )
    lines.append("    (anything else: ignore)")
    print(fit("\n".join(lines)))


def _when(epoch: float | None) -> str:
    if epoch is None:
        return "-"
    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")


def _readyz(host: str, port: int) -> str | None:
    """``/readyz`` of a running agent as "STATUS text", or None when it does not answer.

    One GET on a socket: the agent's listener closes every connection after its answer
    (``Content-Length`` set), and http.client (with email and ssl) would be a third of
    this command's start-up."""
    import socket

    where = f"[{host}]" if ":" in host else host
    request = f"GET /readyz HTTP/1.1\r\nHost: {where}:{port}\r\nConnection: close\r\n\r\n"
    answer = b""
    try:
        with socket.create_connection((host, port), timeout=2) as connection:
            connection.sendall(request.encode())
            while not _whole(answer) and (chunk := connection.recv(65536)):
                answer += chunk
    except OSError:
        return None
    head, _, body = answer.partition(b"\r\n\r\n")
    status = head.split(b"\r\n", 1)[0].split(b" ", 2)
    if len(status) < 2 or not status[0].startswith(b"HTTP/") or not status[1].isdigit():
        return None
    return f"{int(status[1])} {body.decode(errors='replace').strip()}"


def _whole(answer: bytes) -> bool:
    """Whether ``answer`` holds a head and the body its ``Content-Length`` announces."""
    head, found, body = answer.partition(b"\r\n\r\n")
    if not found:
        return False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length" and value.strip().isdigit():
            return len(body) >= int(value)
    return False


def show_status(config_path: str | None, state_path: str | None, as_json: bool) -> None:
    """What the agent has seen and done (from its state file), and whether it is ready."""
    config = load(config_path, {"state_path": state_path})
    if not os.path.exists(config.state_path):
        agent_fail(f"no state file at {config.state_path} (has the agent run?)")
    try:
        state = State(config.state_path)
        records = state.events()
        runs = {r.event_id: state.runs(r.event_id, "prepare") for r in records}
        state.close()
    except StateError as exc:
        agent_fail(str(exc))
    ready = _recorded(records, runs)
    if config.metrics_bind:
        host, port = parse_bind(config.metrics_bind)
        ready = _readyz(host, port) or f"not running (no answer on {config.metrics_bind})"
    events: list[dict[str, Any]] = [
        {
            "event_id": r.event_id,
            "type": r.event_type,
            "rule": r.rule,
            "ignored": r.ignored,
            "seen": _when(r.first_seen),
            "handled": _when(r.handled_at),
            "outcome": r.outcome,
            "approved": _when(r.approved_at),
            "approval": r.approval,
            "started": _when(r.started_seen_at),
            "missed": r.missed_at is not None,
            "gone": _when(r.gone_at),
            "recovered": _when(r.recovered_at),
            "handlers": {
                str(p): {"handler": run.handler, "result": run.result or "running"}
                for p, run in runs[r.event_id].items()
            },
        }
        for r in records
    ]
    if as_json:
        print(json.dumps({"ready": ready, "events": events}, indent=2))
        return
    print(fit("\n".join(_status_lines(ready, config.state_path, records, events))))


def _recorded(records: list[EventRecord], runs: dict[str, dict[int, Any]]) -> str:
    """What the state file says of the agent, where no ``metrics_bind`` can be asked:
    when it last recorded anything, and the events it has not seen end."""
    moments = [
        moment
        for r in records
        for moment in (r.first_seen, r.handled_at, r.approved_at, r.started_seen_at,
                       r.missed_at, r.gone_at, r.recovered_at)
        if moment is not None
    ]  # fmt: skip
    for done in runs.values():
        moments += [t for run in done.values() for t in (run.started_at, run.finished_at) if t]
    if not moments:
        return "not asked (no metrics_bind); its state file records no event yet"
    still = sum(1 for r in records if r.gone_at is None and not r.ignored)
    return (
        f"not asked (no metrics_bind); its state file last recorded {_when(max(moments))} "
        f"UTC, {still} event(s) not yet over"
    )


def _status_lines(
    ready: str, state_path: str, records: list[EventRecord], events: list[dict[str, Any]]
) -> list[str]:
    """``status`` as text: a few short lines an event, the id first and whole."""
    lines = [f"agent: {ready}", f"state: {state_path} ({len(events)} event(s))"]
    for r, e in zip(records, events, strict=True):
        if r.ignored:
            lines += [f"  {e['event_id']} {e['type']}: ignored ({e['rule']})",
                      f"    seen {e['seen']}"]  # fmt: skip
            continue
        waiting = f" ({r.approval})" if r.approval and r.approved_at is None else ""
        lines += [
            f"  {e['event_id']} {e['type']}, rule {e['rule']}",
            f"    seen {e['seen']}, handled {e['handled']} ({e['outcome'] or 'pending'})",
            f"    approved {e['approved']}{waiting}, started {e['started']}"
            f"{' MISSED' if r.missed_at else ''}",
            f"    gone {e['gone']}, recovered {e['recovered']}",
        ]
    return lines
