"""The rules a run checks by asking (sections 1, 3 and 6): GETs, and POSTs that approve
nothing (every EventId they name is malformed or one no endpoint knows).

``run_probes`` sends them in a fixed order: the instance metadata first (which VM are we?),
the document at every api-version, the plain rules of the table, then the rules that
compare answers; the document rules run last, over every document received.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable
from typing import Any

from forewarn.conformance.documents import CHECKS as DOCUMENT_CHECKS
from forewarn.conformance.documents import problems_text
from forewarn.conformance.results import failed, passed, skipped
from forewarn.conformance.rules import (
    INSTANCE,
    INSTANCE_VERSION,
    RULES,
    Expect,
    Send,
    rule,
)
from forewarn.conformance.session import Session
from forewarn.conformance.wire import NOT_JSON, Exchange
from forewarn.contract import SUPPORTED_VERSIONS, TOO_MANY_REQUESTS

__all__ = ["EndpointDown", "judge", "run_probes"]

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_JSON_TYPE = "application/json; charset=utf-8"
#: compute fields a VM reads (CONTRACT section 6), all strings as IMDS sends them.
_COMPUTE = ("name", "vmId", "vmScaleSetName", "platformUpdateDomain", "platformFaultDomain",
            "zone", "location")  # fmt: skip
_BURST = 8


class EndpointDown(Exception):
    """The endpoint did not answer the run's first request: nothing can be checked."""


def _same(a: str, b: str) -> bool:
    """Header values equal ignoring case and spaces; comma lists in any order."""

    def norm(text: str) -> list[str]:
        return sorted(part.strip().lower() for part in text.split(","))

    return (
        norm(a) == norm(b)
        if "," in a + b
        else a.replace(" ", "").lower() == b.replace(" ", "").lower()
    )


def judge(expect: Expect, exchange: Exchange) -> str | None:
    """None when ``exchange`` got what ``expect`` says, else what it got instead."""
    answer = exchange.answer
    if answer is None or answer.status != expect.status:
        return exchange.seen()
    body = answer.json()
    if expect.kind == "document" and not (
        isinstance(body, dict) and ("DocumentIncarnation" in body or "Events" in body)
    ):
        return answer.short()
    if expect.kind == "empty" and answer.body.strip():
        return answer.short()
    if expect.kind == "error" and not (isinstance(body, dict) and isinstance(body.get("error"),
                                                                             str)):  # fmt: skip
        return answer.short()
    if expect.kind == "json" and body != expect.json:
        return answer.short()
    if (
        isinstance(body, dict)
        and expect.not_error is not None
        and (body.get("error") == expect.not_error)
    ):
        return answer.short()
    for name, value in expect.headers:
        got = answer.header(name)
        if got is None or not _same(got, value):
            return f"{answer.short(120)} with {name}: {got}"
    return None


def _verdict(session: Session, rule_id: str, problem: str | None, note: str = "") -> None:
    r = rule(rule_id)
    session.results.append(failed(r, problem) if problem is not None else passed(r, note))


def run_plain(session: Session, rule_id: str) -> None:
    """A rule that is all data: send it, judge the answer."""
    r = rule(rule_id)
    assert isinstance(r.sends, Send) and isinstance(r.expects, Expect)
    _verdict(session, rule_id, judge(r.expects, session.send(rule_id, r.sends)))


# ---- section 6: who are we?


def _versions(session: Session) -> list[str]:
    exchange = session.send("6.versions", Send(path="/metadata/versions", version=None))
    answer = exchange.answer
    body = answer.json() if answer is not None else NOT_JSON
    listed = body.get("apiVersions") if isinstance(body, dict) else None
    good = (
        answer is not None and answer.status == 200 and isinstance(listed, list)
        and bool(listed) and all(isinstance(v, str) and _DATE.match(v) for v in listed)
    )  # fmt: skip
    _verdict(session, "6.versions", None if good else exchange.seen(),
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


def _instance(session: Session, listed: list[str]) -> None:
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
    _verdict(session, "6.instance", problems_text(problems) if problems else None,
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
        _verdict(session, "6.compute-name", exchange.seen())
    else:
        _verdict(session, "6.compute-name", None)


# ---- the document at every version


def _fetch_each(session: Session) -> list[str]:
    """The document at every version, newest first: the newest shows all the others do,
    so a replay of the recording can render every version from its first document."""
    problems = []
    for version in reversed(SUPPORTED_VERSIONS):
        exchange = session.send("R3.versions", Send(version=version), each=True)
        if judge(Expect(200, "document"), exchange) is not None:
            problems.append(f"{version}: {exchange.seen()}")
    return problems


def _versions_accepted(session: Session) -> None:
    problems = _fetch_each(session)
    each = [s for s in session.samples if s.each]
    if len({repr(s.incarnation()) for s in each}) > 1:  # changed in between: once more
        session.samples = [s for s in session.samples if not s.each] + each
        problems = _fetch_each(session)
    _verdict(session, "R3.versions", problems_text(problems) if problems else None,
             f"{len(SUPPORTED_VERSIONS)} versions")  # fmt: skip


# ---- rules that compare answers


def _same_answer(session: Session, rule_id: str, sends: list[Send]) -> None:
    reference = session.answers.get("P4.unknown-id")
    if reference is None or reference.answer is None:
        session.results.append(skipped(rule(rule_id), "P4.unknown-id got no answer"))
        return
    for send in sends:
        exchange = session.send(rule_id, send)
        got = exchange.answer
        if got is None or (got.status, got.json()) != (reference.answer.status,
                                                       reference.answer.json()):  # fmt: skip
            _verdict(session, rule_id, f"{exchange.seen()} (P4.unknown-id got "
                     f"{reference.seen()})")  # fmt: skip
            return
    _verdict(session, rule_id, None)


def _post(body: str, content_type: str | None) -> Send:
    headers: tuple[tuple[str, str], ...] = (("Metadata", "true"),)
    if content_type is not None:
        headers += (("Content-Type", content_type),)
    return Send("POST", headers=headers, body=body)


def _keep_alive(session: Session) -> None:
    first = session.send("R10.keep-alive", Send())
    second = session.send("R10.keep-alive", Send())
    if first.answer is None or second.answer is None or first.answer.status != 200:
        _verdict(session, "R10.keep-alive", (first if first.answer is None else second).seen())
    elif not second.reused:
        closing = first.answer.header("Connection") or "no Connection header"
        _verdict(session, "R10.keep-alive", f"the connection was closed after a 200 ({closing})")
    else:
        _verdict(session, "R10.keep-alive", None, "second request on the same connection")


def _current_incarnation(session: Session) -> int | None:
    for sample in reversed(session.samples):
        value = sample.incarnation()
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _conditional(session: Session, rule_id: str, tag: Callable[[int], str]) -> None:
    for _ in range(2):  # once more if the document changed in between
        incarnation = _current_incarnation(session)
        if incarnation is None:
            session.results.append(skipped(rule(rule_id), "no document with an incarnation"))
            return
        send = Send(headers=(("Metadata", "true"), ("If-None-Match", tag(incarnation))))
        exchange = session.send(rule_id, send)
        problem = judge(Expect(304, "empty"), exchange)
        if problem is None or _current_incarnation(session) == incarnation:
            _verdict(session, rule_id, problem)
            return
    _verdict(session, rule_id, problem)


def _unparseable(session: Session) -> None:
    for value in ("0", "null"):
        send = Send(headers=(("Metadata", "true"), ("If-None-Match", value)))
        problem = judge(Expect(200, "document"), session.send("R12.unparseable", send))
        if problem is not None:
            _verdict(session, "R12.unparseable", f"If-None-Match {value}: {problem}")
            return
    _verdict(session, "R12.unparseable", None)


def _burst(session: Session) -> None:
    """R8: eight GETs back to back, then a pause so the budget refills."""
    statuses = []
    for _ in range(_BURST):
        exchange = session.wire.send("R8.rate-limit", "GET", Send().target(),
                                     Send().headers, paced=False, retry=False)  # fmt: skip
        session.note(exchange)
        statuses.append(exchange)
    time.sleep(1.5)
    limited = [e for e in statuses if e.answer is not None and e.answer.status == 429]
    if not limited:
        got = ", ".join(str(e.answer.status) if e.answer else "none" for e in statuses)
        _verdict(session, "R8.rate-limit", f"statuses {got}")
        return
    answer = limited[0].answer
    assert answer is not None
    good = answer.json() == {"error": TOO_MANY_REQUESTS}
    _verdict(session, "R8.rate-limit", None if good else answer.short(),
             f"{len(limited)} of {_BURST} refused")  # fmt: skip


# ---- over the whole run


def _finals(session: Session) -> None:
    problems = []
    for exchange in session.wire.exchanges:
        answer = exchange.answer
        if answer is None or not answer.body or answer.json() is NOT_JSON:
            continue
        if "format=text" in exchange.target:
            continue
        content_type = answer.header("Content-Type") or "none"
        if not _same(content_type, _JSON_TYPE):
            problems.append(f"{exchange.method} {exchange.target}: {content_type}")
    _verdict(session, "R10.content-type", problems_text(problems) if problems else None)
    compact = []
    for sample in (s for s in session.samples if s.each):
        text = sample.body.decode("utf-8", "replace")
        again = [
            json.dumps(sample.raw, separators=(",", ":"), ensure_ascii=a) for a in (True, False)
        ]
        if text not in again:
            compact.append(f"{sample.version}: {text[:60]}")
    _verdict(session, "R10.compact", problems_text(compact) if compact else None)
    etags = []
    for sample in session.samples:
        tag = (sample.etag or "").strip().removeprefix("W/").strip('"')
        if tag != str(sample.incarnation()):
            etags.append(f"{sample.version}: ETag {sample.etag!r}, incarnation "
                         f"{sample.incarnation()!r}")  # fmt: skip
    _verdict(session, "R12.etag", problems_text(etags) if etags else None)


def run_probes(session: Session, *, burst: bool = False, skip: bool = False) -> None:
    """Every rule but the lifecycle's and the documents', in a fixed order; results land
    in ``session``. ``skip``: only section 6 (who the VM is); the others are SKIP."""
    listed = _versions(session)
    first = session.wire.exchanges[0]
    if first.answer is None:
        raise EndpointDown(f"{session.wire.base} did not answer: {first.error}")
    _instance(session, listed)
    if skip:
        done = {r.rule.id for r in session.results}
        session.results += [skipped(r, "not asked (--skip-probes)") for r in RULES
                            if r.when != "follow" and r.id not in done
                            and r.id not in DOCUMENT_CHECKS]  # fmt: skip
        return
    _versions_accepted(session)
    for r in RULES:
        if r.plain and r.when == "always":
            run_plain(session, r.id)
    body = rule("P4.unknown-id").sends
    assert isinstance(body, Send) and body.body is not None
    _same_answer(session, "P1.content-type", [
        _post(body.body, "application/x-www-form-urlencoded"), _post(body.body, None)])  # fmt: skip
    with_key = body.body.replace("{", '{"DocumentIncarnation": "1", ', 1)
    _same_answer(session, "P2.incarnation-key", [_post(with_key, "application/json")])
    _keep_alive(session)
    _conditional(session, "R12.not-modified", lambda n: f'"{n}"')
    _conditional(session, "R12.weak", lambda n: f'W/"{n}"')
    _unparseable(session)
    if burst:
        _burst(session)
    else:
        session.results.append(skipped(rule("R8.rate-limit"), "spends the VM's request "
                                       "budget on purpose: run with --burst"))  # fmt: skip
    _finals(session)
