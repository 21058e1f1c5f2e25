"""The rules a run checks by asking (sections 1, 3 and 6): GETs, and POSTs that approve
nothing (every EventId they name is malformed or one no endpoint knows).

``run_probes`` sends them in a fixed order: the instance metadata first (which VM are we?),
the document at every api-version, the plain rules of the table, then the rules that
compare answers; the document rules run last, over every document received.
"""

from __future__ import annotations

import json

from forewarn.conformance import answers
from forewarn.conformance.documents import CHECKS as DOCUMENT_CHECKS
from forewarn.conformance.documents import problems_text
from forewarn.conformance.instance import check_instance, check_versions
from forewarn.conformance.judging import judge, same_header
from forewarn.conformance.results import skipped
from forewarn.conformance.rules import (
    RULES,
    Expect,
    Send,
    rule,
)
from forewarn.conformance.session import Session
from forewarn.conformance.wire import NOT_JSON
from forewarn.contract import SUPPORTED_VERSIONS

__all__ = ["EndpointDown", "run_probes"]

_JSON_TYPE = "application/json; charset=utf-8"


class EndpointDown(Exception):
    """The endpoint did not answer the run's first request: nothing can be checked."""


def run_plain(session: Session, rule_id: str) -> None:
    """A rule that is all data: send it, judge the answer."""
    r = rule(rule_id)
    assert isinstance(r.sends, Send) and isinstance(r.expects, Expect)
    session.verdict(rule_id, judge(r.expects, session.send(rule_id, r.sends)))


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
    session.verdict("R3.versions", problems_text(problems) if problems else None,
             f"{len(SUPPORTED_VERSIONS)} versions")  # fmt: skip


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
        if not same_header(content_type, _JSON_TYPE):
            problems.append(f"{exchange.method} {exchange.target}: {content_type}")
    session.verdict("R10.content-type", problems_text(problems) if problems else None)
    compact = []
    for sample in (s for s in session.samples if s.each):
        text = sample.body.decode("utf-8", "replace")
        again = [
            json.dumps(sample.raw, separators=(",", ":"), ensure_ascii=a) for a in (True, False)
        ]
        if text not in again:
            compact.append(f"{sample.version}: {text[:60]}")
    session.verdict("R10.compact", problems_text(compact) if compact else None)
    etags = []
    for sample in session.samples:
        tag = (sample.etag or "").strip().removeprefix("W/").strip('"')
        if tag != str(sample.incarnation()):
            etags.append(f"{sample.version}: ETag {sample.etag!r}, incarnation "
                         f"{sample.incarnation()!r}")  # fmt: skip
    session.verdict("R12.etag", problems_text(etags) if etags else None)


def run_probes(session: Session, *, burst: bool = False, skip: bool = False) -> None:
    """Every rule but the lifecycle's and the documents', in a fixed order; results land
    in ``session``. ``skip``: only section 6 (who the VM is); the others are SKIP."""
    listed = check_versions(session)
    first = session.wire.exchanges[0]
    if first.answer is None:
        raise EndpointDown(f"{session.wire.base} did not answer: {first.error}")
    check_instance(session, listed)
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
    form = answers.post(body.body, "application/x-www-form-urlencoded")
    answers.same_answer(session, "P1.content-type", [form, answers.post(body.body, None)])
    with_key = body.body.replace("{", '{"DocumentIncarnation": "1", ', 1)
    answers.same_answer(session, "P2.incarnation-key", [answers.post(with_key, "application/json")])
    answers.keep_alive(session)
    answers.conditional(session, "R12.not-modified", lambda n: f'"{n}"')
    answers.conditional(session, "R12.weak", lambda n: f'W/"{n}"')
    answers.unparseable(session)
    if burst:
        answers.burst(session)
    else:
        session.results.append(skipped(rule("R8.rate-limit"), "spends the VM's request "
                                       "budget on purpose: run with --burst"))  # fmt: skip
    _finals(session)
