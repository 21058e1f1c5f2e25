"""``forewarn replay``: serve one VM's recorded documents again, with their timing."""

from __future__ import annotations

import asyncio
import math
import sys

import click

from forewarn.cli.errors import fail
from forewarn.contract.addresses import DEFAULT_IMDS_BIND
from forewarn.replay import (
    CAPTURED,
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
    default=1.0,
    callback=_positive,
    help="Play this many times faster than recorded (60: an hour in a minute).",
)
@click.option(
    "--imds-bind",
    multiple=True,
    default=[DEFAULT_IMDS_BIND],
    help="HOST:PORT of the metadata endpoint (repeatable).",
)
@click.option(
    "--shift-times/--recorded-times",
    default=False,
    help="Move every NotBefore so it is as far ahead of now as it was when recorded "
    "(scaled); default: serve the recorded dates as they are.",
)
@click.option(
    "--start",
    type=click.Choice(["now", "first-request"]),
    default="now",
    help="When the recording's clock starts: at once, or with the VM's first request "
    "(a rehearsal then begins when the client under test does).",
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
    time_scale: float,
    imds_bind: tuple[str, ...],
    shift_times: bool,
    start: str,
    linger: float | None,
) -> None:
    """Serve a recorded (`forewarn serve --record`) or captured sequence of documents
    to one VM, on a metadata endpoint, with the original timing divided by --time-scale.

    Every request is answered as that VM; approvals are checked and printed, but do not
    change what is replayed.
    """
    if (file is None) == (example is None):
        raise click.UsageError("give a FILE to replay, or --example NAME (not both)")
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
    )
    try:
        sockets = bind(addresses)
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
