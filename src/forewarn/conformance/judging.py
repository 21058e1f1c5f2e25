"""Whether an answer is what a rule expects (``Expect``), and what came instead."""

from __future__ import annotations

from forewarn.conformance.rules import Expect
from forewarn.conformance.wire import Exchange

__all__ = ["judge", "same_header"]


def same_header(a: str, b: str) -> bool:
    """Header values equal ignoring case and spaces; comma lists in any order."""

    def norm(text: str) -> list[str]:
        return sorted(part.replace(" ", "").lower() for part in text.split(","))

    return norm(a) == norm(b)


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
    has_error = isinstance(body, dict) and isinstance(body.get("error"), str)
    if expect.kind == "error" and not has_error:
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
        if got is None or not same_header(got, value):
            return f"{answer.short(120)} with {name}: {got}"
    return None
