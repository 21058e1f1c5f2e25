"""``forewarn conformance [URL]``: run the contract's rules against a metadata endpoint.

VM side (the plain install): the contract, the client's endpoint rule, the standard
library's HTTP; nothing of the emulator. Its options are ``forewarn.vm.parser``'s.
"""

from __future__ import annotations

import sys
import textwrap

from forewarn.client import ClientError, resolve_endpoint
from forewarn.conformance.documents import check_documents
from forewarn.conformance.follow import Follower
from forewarn.conformance.lifecycle import judge_lifecycle, timeline
from forewarn.conformance.output import (
    report_json,
    report_lines,
    rules_lines,
    rules_markdown,
    write_junit,
)
from forewarn.conformance.probes import EndpointDown, run_probes
from forewarn.conformance.recording import Recorder
from forewarn.conformance.results import Report
from forewarn.conformance.session import Session
from forewarn.conformance.wire import Wire, WireError
from forewarn.vm.exits import CommandError, UsageProblem

__all__ = ["conformance"]


def conformance(
    url: str | None, source_address: str | None, as_json: bool, junit_path: str | None,
    record_path: str | None, follow: bool, approve: bool, timeout: float, interval: float,
    time_scale: float, slack: float | None, rate: float, skip_probes: bool, burst: bool,
    list_rules: bool, markdown: bool,
) -> None:  # fmt: skip
    """``forewarn conformance`` (its options: ``forewarn.vm.parser``): probe, follow if
    asked, report; exit 1 when a rule fails."""
    if list_rules:
        print(
            rules_markdown() if markdown else "\n".join(rules_lines()), end="" if markdown else "\n"
        )
        return
    if (approve or skip_probes) and not follow:
        raise UsageProblem("--approve and --skip-probes need --follow")
    try:
        base = resolve_endpoint(url)
    except (ClientError, ValueError) as exc:
        raise UsageProblem(str(exc)) from None
    try:
        wire = Wire(base, source_address=source_address, rate=rate)
    except WireError as exc:
        raise UsageProblem(str(exc)) from None
    session = Session(wire)
    recorder = None
    if record_path is not None:
        try:
            recorder = Recorder(record_path, lambda: session.vm)
        except OSError as exc:
            raise UsageProblem(f"--record {record_path}: {exc.strerror or exc}") from None
        wire.on_exchange = recorder
    try:
        run_probes(session, burst=burst, skip=skip_probes)
        follower = _follow(session, follow, approve, timeout, interval, as_json)
    except EndpointDown as exc:
        raise CommandError(str(exc)) from None
    finally:
        wire.close()
        if recorder is not None:
            recorder.close()
    sightings = list(follower.sightings.values())
    spare = 2.0 + interval if slack is None else slack
    lifecycle = judge_lifecycle(
        sightings, follower.approvals, follower.steps, follower.replaced, followed=follow,
        approve=approve, time_scale=time_scale, slack=spare,
    )  # fmt: skip
    results = session.results + check_documents(session.samples, session.vm) + lifecycle
    events, event_lines = timeline(sightings, time_scale)
    report = Report(base, session.vm, results, events, event_lines, recording=record_path)
    if recorder is not None and recorder.error:
        print(f"forewarn: warning: {recorder.error}", file=sys.stderr)
    if junit_path is not None:
        try:
            write_junit(report, junit_path)
        except OSError as exc:
            raise UsageProblem(f"--junit {junit_path}: {exc.strerror or exc}") from None
    print(report_json(report) if as_json else "\n".join(report_lines(report)))
    if not report.ok:
        sys.exit(1)


def _follow(
    session: Session, follow: bool, approve: bool, timeout: float, interval: float,
    as_json: bool,
) -> Follower:  # fmt: skip
    """The follower, run when ``follow`` (else it saw nothing)."""

    def tell(line: str) -> None:
        for part in textwrap.wrap(line, 80, subsequent_indent="  ", break_on_hyphens=False):
            print(part, file=sys.stderr if as_json else sys.stdout)
        (sys.stderr if as_json else sys.stdout).flush()

    follower = Follower(session, interval=interval, timeout=timeout, approve=approve, tell=tell)
    if follow:
        try:
            follower.run()
        except KeyboardInterrupt:
            tell("stopped (Ctrl-C): reporting what was seen")
    return follower
