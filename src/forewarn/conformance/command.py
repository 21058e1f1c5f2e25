"""``forewarn conformance [URL]``: run the contract's rules against a metadata endpoint.

VM side (the plain install): the contract, the client's endpoint rule, the standard
library's HTTP; nothing of the emulator.
"""

from __future__ import annotations

import sys
import textwrap

import click

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

__all__ = ["conformance"]

_POSITIVE = click.FloatRange(min=0, min_open=True)


@click.command()
@click.argument("url", required=False)
@click.option(
    "--source-address",
    default=None,
    help="Bind this source address (speak as one VM of a forewarn fleet).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option(
    "--junit",
    "junit_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Also write the results as JUnit XML to FILE.",
)
@click.option(
    "--record",
    "record_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write every request and answer to FILE (JSON lines `forewarn replay` plays).",
)
@click.option(
    "--follow",
    is_flag=True,
    help="Then wait for an event and follow it to its end (lifecycle rules).",
)
@click.option(
    "--approve", is_flag=True, help="With --follow: approve the Scheduled events that list this VM."
)
@click.option(
    "--timeout",
    type=_POSITIVE,
    default=3600.0,
    help="With --follow: seconds to wait for events and follow them.",
)
@click.option(
    "--interval",
    type=click.FloatRange(min=0.2),
    default=1.0,
    help="With --follow: seconds between polls (the articles say 1).",
)
@click.option(
    "--time-scale",
    type=_POSITIVE,
    default=1.0,
    help="The endpoint is `forewarn serve --time-scale N`: divide the contract's durations by N.",
)
@click.option(
    "--slack",
    type=click.FloatRange(min=0),
    default=None,
    help="Seconds a lifecycle duration may fall short (default: 2 + --interval: "
    "polling, and NotBefore's whole seconds).",
)
@click.option(
    "--rate",
    type=click.FloatRange(min=0.5, max=100.0),
    default=4.0,
    help="Requests per second at most (the endpoint allows 5 per VM, shared with every "
    "agent on it; more only where there is no limit: `forewarn serve --rate-limit 0`).",
)
@click.option(
    "--skip-probes",
    is_flag=True,
    help="With --follow: only follow (of the request rules, only section 6's).",
)
@click.option(
    "--burst",
    is_flag=True,
    help="Also check the rate limit (R8): spends the VM's budget for a second.",
)
@click.option("--rules", "list_rules", is_flag=True, help="Print the rules and exit.")
@click.option("--markdown", is_flag=True, help="With --rules: as a Markdown table.")
def conformance(
    url: str | None, source_address: str | None, as_json: bool, junit_path: str | None,
    record_path: str | None, follow: bool, approve: bool, timeout: float, interval: float,
    time_scale: float, slack: float | None, rate: float, skip_probes: bool, burst: bool,
    list_rules: bool, markdown: bool,
) -> None:  # fmt: skip
    """Check a metadata endpoint against forewarn's wire contract, rule by rule.

    URL defaults to $FOREWARN_IMDS_URL, $SCHEDULEDEVENTSIP, then http://169.254.169.254.
    Non-destructive: GETs, and POSTs that approve nothing (unless --follow --approve).
    One line per rule (PASS, FAIL with what was expected and seen, SKIP with why);
    the exit status is 1 when a rule fails.
    """
    if list_rules:
        click.echo(rules_markdown() if markdown else "\n".join(rules_lines()), nl=not markdown)
        return
    if (approve or skip_probes) and not follow:
        raise click.UsageError("--approve and --skip-probes need --follow")
    try:
        base = resolve_endpoint(url)
    except (ClientError, ValueError) as exc:
        raise click.UsageError(str(exc)) from None
    try:
        wire = Wire(base, source_address=source_address, rate=rate)
    except WireError as exc:
        raise click.UsageError(str(exc)) from None
    session = Session(wire)
    recorder = None
    if record_path is not None:
        try:
            recorder = Recorder(record_path, lambda: session.vm)
        except OSError as exc:
            raise click.UsageError(f"--record {record_path}: {exc.strerror or exc}") from None
        wire.on_exchange = recorder
    try:
        run_probes(session, burst=burst, skip=skip_probes)
        follower = _follow(session, follow, approve, timeout, interval, as_json)
    except EndpointDown as exc:
        raise click.ClickException(str(exc)) from None
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
        click.echo(f"forewarn: warning: {recorder.error}", err=True)
    if junit_path is not None:
        try:
            write_junit(report, junit_path)
        except OSError as exc:
            raise click.UsageError(f"--junit {junit_path}: {exc.strerror or exc}") from None
    click.echo(report_json(report) if as_json else "\n".join(report_lines(report)))
    if not report.ok:
        sys.exit(1)


def _follow(
    session: Session, follow: bool, approve: bool, timeout: float, interval: float,
    as_json: bool,
) -> Follower:  # fmt: skip
    """The follower, run when ``follow`` (else it saw nothing)."""

    def tell(line: str) -> None:
        for part in textwrap.wrap(line, 80, subsequent_indent="  ", break_on_hyphens=False):
            click.echo(part, err=as_json)
        (sys.stderr if as_json else sys.stdout).flush()

    follower = Follower(session, interval=interval, timeout=timeout, approve=approve, tell=tell)
    if follow:
        try:
            follower.run()
        except KeyboardInterrupt:
            tell("stopped (Ctrl-C): reporting what was seen")
    return follower
