"""``forewarn replay``: serve one VM's recorded documents again, with their timing."""

from __future__ import annotations

import asyncio
import math
import sys

import click

from forewarn.cli.errors import fail
from forewarn.contract.addresses import DEFAULT_IMDS_BIND
from forewarn.contract.limits import RATE_LIMIT
from forewarn.replay import (
    CAPTURED,
    CAPTURED_TIME_SCALE,
    Frame,
    RecordingError,
    ReplayEndpoint,
    bind,
    captured_text,
    describe,
    parse_recording,
    read_recording,
    run_replay,
)
from forewarn.server import ConfigError, parse_bind

__all__ = ["replay"]


def _positive(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    if value is not None and not (math.isfinite(value) and value > 0):
        raise click.BadParameter(f"{value} is not a positive number")
    return value


@click.command()
@click.argument("file", required=False, type=click.Path(dir_okay=False))
@click.option(
    "--example",
    type=click.Choice(list(CAPTURED)),
    default=None,
    help="Replay a capture shipped with forewarn instead of FILE. "
    + "; ".join(f"{name}: {what}" for name, what in CAPTURED.items())
    + ".",
)
@click.option("--vm", default=None, help="Whose documents to serve (needed when FILE has several).")
@click.option(
    "--time-scale",
    type=float,
    default=None,
    callback=_positive,
    help="Play this many times faster than recorded (60: an hour in a minute). Default: 1 "
    "for a FILE (a recording of `serve --time-scale N` plays at its pace with N), "
    + ", ".join(f"{s:g} for --example {n}" for n, s in CAPTURED_TIME_SCALE.items())
    + ".",
)
@click.option(
    "--imds-bind",
    multiple=True,
    default=[DEFAULT_IMDS_BIND],
    help="HOST:PORT of the metadata endpoint (repeatable).",
)
@click.option(
    "--shift-times/--recorded-times",
    default=True,
    help="Move every NotBefore so it is as far ahead of the client's clock as it was when "
    "recorded (scaled; the default), or serve the recorded dates as they are.",
)
@click.option(
    "--start",
    type=click.Choice(["first-request", "now"]),
    default="first-request",
    help="When the recording's clock starts: with the VM's first request (the default: a "
    "rehearsal begins when the client under test does), or at once.",
)
@click.option(
    "--rate-limit",
    type=float,
    default=RATE_LIMIT,
    help="Requests per second before 429, as `forewarn serve` (0: off).",
)
@click.option(
    "--linger",
    type=float,
    default=None,
    callback=_positive,
    help="Stop this many seconds after the last document (default: serve until Ctrl-C).",
)
def replay(
    file: str | None,
    example: str | None,
    vm: str | None,
    time_scale: float | None,
    imds_bind: tuple[str, ...],
    shift_times: bool,
    start: str,
    rate_limit: float,
    linger: float | None,
) -> None:
    """Serve a recorded (`forewarn serve --record`) or captured sequence of documents
    to one VM, on a metadata endpoint, with the original timing divided by --time-scale.

    Every request is answered as that VM, each api-version with its own rendering of what
    was recorded (or a 400 saying why it cannot be rendered); approvals are checked and
    printed, but do not change what is replayed.
    """
    if (file is None) == (example is None):
        raise click.UsageError("give a FILE to replay, or --example NAME (not both)")
    if not (math.isfinite(rate_limit) and rate_limit >= 0):
        raise click.BadParameter(
            f"{rate_limit} must be >= 0 (0 turns it off)", param_hint="--rate-limit"
        )
    if time_scale is None:
        time_scale = CAPTURED_TIME_SCALE.get(example or "", 1.0)
    try:
        if example is not None:
            recording = parse_recording(captured_text(example), f"capture {example}")
        else:
            assert file is not None
            recording = read_recording(file)
        name, frames = recording.for_vm(vm)
        addresses = [parse_bind(b) for b in imds_bind]
    except (RecordingError, ConfigError) as exc:
        fail(str(exc))
    origin = frames[0].t

    def approved(frame: Frame, ids: list[str]) -> None:
        click.echo(f"replay: {name} approved {', '.join(ids)} (incarnation {frame.incarnation})")
        sys.stdout.flush()

    endpoint = ReplayEndpoint(
        name,
        frames,
        time_scale=time_scale,
        shift_times=shift_times,
        on_first_request=start == "first-request",
        on_approve=approved,
        rate_limit=rate_limit or None,
    )
    try:
        endpoint.check_shift()
        sockets = bind(addresses)
    except RecordingError as exc:
        fail(f"{recording.source}, {exc}")
    except OSError as exc:
        fail(str(exc))
    span = frames[-1].t - origin
    for sock in sockets:
        host, port = sock.getsockname()[:2]
        click.echo(f"replay: metadata endpoint on http://{host}:{port} as VM {name!r}")
    click.echo(
        f"replay: {len(frames)} documents over {span:g} s of {recording.source}, "
        f"played in {span / time_scale:g} s (time scale {time_scale:g})"
        + ("; it starts with the first request" if start == "first-request" else "")
    )
    sys.stdout.flush()

    def tell(frame: Frame) -> None:
        click.echo(f"replay: {describe(frame, origin)}")
        if frame is frames[-1]:
            click.echo(
                "replay: the last document stays served" + ("" if linger else "; Ctrl-C stops")
            )
        sys.stdout.flush()

    asyncio.run(run_replay(endpoint, sockets, tell=tell, linger=linger))
