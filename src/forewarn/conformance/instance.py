"""Section 6 of the contract, asked first: which VM the endpoint takes the kit for.

``/metadata/versions`` lists api-versions; ``/metadata/instance`` at the version forewarn's
client reads, and at the newest listed, carries the compute fields agents filter
``Resources`` with, as strings; ``compute/name?format=text`` is the name as text.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

from forewarn.conformance.documents import problems_text
from forewarn.conformance.results import skipped
from forewarn.conformance.rules import INSTANCE, INSTANCE_VERSION, Send, rule
from forewarn.conformance.session import Session
from forewarn.conformance.wire import NOT_JSON, Exchange

__all__ = ["check_instance", "check_versions"]

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
#: compute fields a VM reads (CONTRACT section 6), all strings as IMDS sends them.
_COMPUTE = ("name", "vmId", "vmScaleSetName", "platformUpdateDomain", "platformFaultDomain",
            "zone", "location")  # fmt: skip


def check_versions(session: Session) -> list[str]:
    exchange = session.send("6.versions", Send(path="/metadata/versions", version=None))
    answer = exchange.answer
    body = answer.json() if answer is not None else NOT_JSON
    listed = body.get("apiVersions") if isinstance(body, dict) else None
    good = (
        answer is not None and answer.status == 200 and isinstance(listed, list)
        and bool(listed) and all(isinstance(v, str) and _DATE.match(v) for v in listed)
    )  # fmt: skip
    session.verdict("6.versions", None if good else exchange.seen(),
             f"{len(listed or [])} versions")  # fmt: skip
    return sorted(listed) if good and isinstance(listed, list) else []


def _compute_problems(version: str, exchange: Exchange) -> tuple[list[str], dict[str, Any]]:
    answer = exchange.answer
    if answer is None or answer.status != 200:
        return [f"{version}: {exchange.seen()}"], {}
    body = answer.json()
    compute = body.get("compute") if isinstance(body, dict) else None
    if not isinstance(compute, dict):
        return [f"{version}: no compute object: {answer.short(120)}"], {}
    problems = []
    for key in _COMPUTE:
        value = compute.get(key)
        if not isinstance(value, str):
            problems.append(f"{version}: compute.{key} {value!r}")
        elif key in ("platformUpdateDomain", "platformFaultDomain") and not value.isdigit():
            problems.append(f"{version}: compute.{key} {value!r} (not digits)")
    if not compute.get("name"):
        problems.append(f"{version}: compute.name is empty")
    try:
        uuid.UUID(str(compute.get("vmId")))
    except ValueError:
        problems.append(f"{version}: compute.vmId {compute.get('vmId')!r} (not a GUID)")
    return problems, compute


def check_instance(session: Session, listed: list[str]) -> None:
    versions = [INSTANCE_VERSION]
    if listed and listed[-1] != INSTANCE_VERSION:
        versions.append(listed[-1])
    problems: list[str] = []
    for version in versions:
        exchange = session.send("6.instance", Send(path=INSTANCE, version=version))
        found, compute = _compute_problems(version, exchange)
        problems += found
        if session.vm is None and isinstance(compute.get("name"), str) and compute["name"]:
            session.vm = compute["name"]
    session.verdict("6.instance", problems_text(problems) if problems else None,
             f"as VM {session.vm} ({', '.join(versions)})")  # fmt: skip
    send = Send(path=INSTANCE + "/compute/name", query=(("format", "text"),),
                version=INSTANCE_VERSION)  # fmt: skip
    exchange = session.send("6.compute-name", send)
    answer = exchange.answer
    if session.vm is None:
        session.results.append(skipped(rule("6.compute-name"), "compute.name is unknown"))
    elif (
        answer is None
        or answer.status != 200
        or answer.body.decode("utf-8", "replace") != (session.vm)
    ):
        session.verdict("6.compute-name", exchange.seen())
    else:
        session.verdict("6.compute-name", None)
