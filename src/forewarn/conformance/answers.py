"""Rules that compare answers with each other, or need the current incarnation: the
Content-Type variants of an approval (P1, P2), keep-alive (R10), conditional GETs (R12),
and the rate limit (R8, only with --burst)."""

from __future__ import annotations

import time
from collections.abc import Callable

from forewarn.conformance.judging import judge
from forewarn.conformance.results import skipped
from forewarn.conformance.rules import Expect, Send, rule
from forewarn.conformance.session import Session
from forewarn.contract import TOO_MANY_REQUESTS

__all__ = ["BURST", "burst", "conditional", "keep_alive", "post", "same_answer", "unparseable"]

BURST = 8


def same_answer(session: Session, rule_id: str, sends: list[Send]) -> None:
    reference = session.answers.get("P4.unknown-id")
    if reference is None or reference.answer is None:
        session.results.append(skipped(rule(rule_id), "P4.unknown-id got no answer"))
        return
    for send in sends:
        exchange = session.send(rule_id, send)
        got = exchange.answer
        if got is None or (got.status, got.json()) != (reference.answer.status,
                                                       reference.answer.json()):  # fmt: skip
            session.verdict(rule_id, f"{exchange.seen()} (P4.unknown-id got "
                     f"{reference.seen()})")  # fmt: skip
            return
    session.verdict(rule_id, None)


def post(body: str, content_type: str | None) -> Send:
    headers: tuple[tuple[str, str], ...] = (("Metadata", "true"),)
    if content_type is not None:
        headers += (("Content-Type", content_type),)
    return Send("POST", headers=headers, body=body)


def keep_alive(session: Session) -> None:
    first = session.send("R10.keep-alive", Send())
    second = session.send("R10.keep-alive", Send())
    if first.answer is None or second.answer is None or first.answer.status != 200:
        session.verdict("R10.keep-alive", (first if first.answer is None else second).seen())
    elif not second.reused:
        closing = first.answer.header("Connection") or "no Connection header"
        session.verdict("R10.keep-alive", f"the connection was closed after a 200 ({closing})")
    else:
        session.verdict("R10.keep-alive", None, "second request on the same connection")


def _current_incarnation(session: Session) -> int | None:
    for sample in reversed(session.samples):
        value = sample.incarnation()
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def conditional(session: Session, rule_id: str, tag: Callable[[int], str]) -> None:
    for _ in range(2):  # once more if the document changed in between
        incarnation = _current_incarnation(session)
        if incarnation is None:
            session.results.append(skipped(rule(rule_id), "no document with an incarnation"))
            return
        send = Send(headers=(("Metadata", "true"), ("If-None-Match", tag(incarnation))))
        exchange = session.send(rule_id, send)
        problem = judge(Expect(304, "empty"), exchange)
        if problem is None or _current_incarnation(session) == incarnation:
            session.verdict(rule_id, problem)
            return
    session.verdict(rule_id, problem)


def unparseable(session: Session) -> None:
    for value in ("0", "null"):
        send = Send(headers=(("Metadata", "true"), ("If-None-Match", value)))
        problem = judge(Expect(200, "document"), session.send("R12.unparseable", send))
        if problem is not None:
            session.verdict("R12.unparseable", f"If-None-Match {value}: {problem}")
            return
    session.verdict("R12.unparseable", None)


def burst(session: Session) -> None:
    """R8: eight GETs back to back, then a pause so the budget refills."""
    statuses = []
    for _ in range(BURST):
        exchange = session.wire.send("R8.rate-limit", "GET", Send().target(),
                                     Send().headers, paced=False, retry=False)  # fmt: skip
        session.note(exchange)
        statuses.append(exchange)
    time.sleep(1.5)
    limited = [e for e in statuses if e.answer is not None and e.answer.status == 429]
    if not limited:
        got = ", ".join(str(e.answer.status) if e.answer else "none" for e in statuses)
        session.verdict("R8.rate-limit", f"statuses {got}")
        return
    answer = limited[0].answer
    assert answer is not None
    good = answer.json() == {"error": TOO_MANY_REQUESTS}
    session.verdict("R8.rate-limit", None if good else answer.short(),
             f"{len(limited)} of {BURST} refused")  # fmt: skip
