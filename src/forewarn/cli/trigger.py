"""``forewarn trigger``: start an operation through the control API.

Its own module because it names the platform's operations (``forewarn.fabric``), which
the other control-API commands never load.
"""

from __future__ import annotations

from typing import Any

import click

from forewarn.cli.api import control_client
from forewarn.cli.durations import DURATION
from forewarn.cli.output import print_json, when
from forewarn.fabric import DEFAULT_WAVE_HOSTS, MAX_WAVE_HOSTS, OperationKind

__all__ = ["trigger"]


def _started_at_once(op: dict[str, Any]) -> bool:
    """True when the operation's events were created Started (a VM sees NotBefore "")."""
    return bool(op["state"] != "scheduled" and op["started_at"] == op["created_at"])


def _when_line(op: dict[str, Any]) -> str:
    """When the operation happens, as its VMs see it."""
    if _started_at_once(op):
        return "Started at once (no NotBefore)"
    if op["state"] == "scheduled":
        return f"NotBefore {when(op['not_before'])} UTC"
    return f"{op['state']} at {when(op['started_at'] or op['not_before'])} UTC"


@click.command(
    help="Start OPERATION on TARGET (a VM, a host, or a scope to walk its update domains), "
    "or with --region over the whole fleet.\n\n"
    "OPERATION is one of: " + ", ".join(k.value for k in OperationKind) + ". "
    "User operations (user-reboot, user-redeploy, scale-in) take a VM; only host-update, "
    "platform-reboot and platform-redeploy take a scope or --region."
)
@click.argument(
    "operation", metavar="OPERATION", type=click.Choice([k.value for k in OperationKind])
)
@click.argument("target", required=False)
@click.option(
    "--region",
    is_flag=True,
    help="Roll OPERATION over every VM (no TARGET): update domain by update domain, host by "
    "host, in waves of --wave-hosts hosts.",
)
@click.option(
    "--wave-hosts",
    type=click.IntRange(1, MAX_WAVE_HOSTS),
    default=None,
    help=f"With --region: hosts a wave updates at once (default {DEFAULT_WAVE_HOSTS}).",
)
@click.option(
    "--notice",
    type=DURATION,
    default=None,
    help="Notice in the server's clock (90, 90s, 5m, PT5M), already divided by its --time-scale "
    "(at scale 60, 15 is 15 min of platform time); its minimum and maximum scale alike. "
    "Default: the operation's usual notice.",
)
@click.option("--description", default=None, help="Description shown in the event.")
@click.option(
    "--duration",
    type=int,
    default=None,
    help="DurationInSeconds announced in the event, in platform seconds (never scaled).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the operation as JSON.")
@click.pass_context
def trigger(
    ctx: click.Context,
    operation: str,
    target: str | None,
    region: bool,
    wave_hosts: int | None,
    notice: float | None,
    description: str | None,
    duration: int | None,
    as_json: bool,
) -> None:
    """Start OPERATION on TARGET (a VM, a host, or a scope to walk its update domains)."""
    if region == (target is not None):
        raise click.UsageError("name a TARGET or give --region (the whole fleet), not both")
    if wave_hosts is not None and not region:
        raise click.UsageError("--wave-hosts is for a region rollout (--region)")
    api = control_client(ctx)
    if region:
        op = api.roll_out_region(
            operation, wave_hosts, notice=notice, description=description, duration=duration
        )
    else:
        assert target is not None
        op = api.trigger(
            operation, target, notice=notice, description=description, duration=duration
        )
    if as_json:
        print_json(op)
        return
    if region:
        (rollout,) = [r for r in api.rollouts() if r["id"] == op["rollout_id"]]
        click.echo(
            f"{rollout['id']}: {operation} over the region in {rollout['batches']} waves of "
            f"up to {rollout['wave_hosts']} hosts; wave {rollout['batch']}:"
        )
    click.echo(
        f"{op['id']}: {op['kind']} on {op['target']} ({op['state']}), {_when_line(op)}, "
        f"events {', '.join(op['event_ids']) or 'none'}"
    )
    if op["unnotified"]:
        click.echo(
            f"  no notice for {', '.join(op['unnotified'])}: Scheduled Events are off in their "
            "scope (no request from it yet, or terminate notifications disabled)"
        )
