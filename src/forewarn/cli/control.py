"""The commands that drive a running server through its control API.

They need an HTTP client and nothing of the emulator: ``forewarn events`` and
``forewarn approve`` also serve a VM (with ``--url``), where only the VM install is.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from forewarn.cli.api import control_client
from forewarn.cli.durations import DURATION
from forewarn.cli.output import Column, print_json, table, when
from forewarn.contract import SUPPORTED_VERSIONS

__all__ = [
    "advance", "approve", "cancel", "complete", "events", "history", "rollouts", "start",
    "topology",
]  # fmt: skip

#: The most history entries one request may return (the control API's own bound).
MAX_HISTORY = 10_000

_wide = click.option(
    "--wide", is_flag=True, help="Every column at full width, whatever the terminal's width."
)


@click.command()
@click.option("--as", "as_vm", default=None, help="Show the document this VM gets.")
@click.option("--api-version", default=None, help=f"With --as (default {SUPPORTED_VERSIONS[-1]}).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@_wide
@click.pass_context
def events(
    ctx: click.Context, as_vm: str | None, api_version: str | None, as_json: bool, wide: bool
) -> None:
    """List live events (or, with --as, the document one VM sees).

    With --url, the document this VM gets from a metadata endpoint (`forewarn events --url`)."""
    if api_version is not None and as_vm is None:
        raise click.UsageError("--api-version needs --as VM (it picks how that VM sees events)")
    api = control_client(ctx)
    if as_vm is not None:
        document = api.document(as_vm, api_version or SUPPORTED_VERSIONS[-1])
        if as_json:
            print_json(document)
            return
        table(
            f"{as_vm}: DocumentIncarnation {document['DocumentIncarnation']}",
            [
                Column("EventId", "key"),
                Column("Event", "phrase"),
                Column("NotBefore", "phrase"),
                Column("Resources", "list"),
                Column("Source", optional=1),
            ],
            [
                [
                    e["EventId"],
                    f"{e['EventType']} {e['EventStatus']}",
                    e["NotBefore"] or "-",
                    ", ".join(e["Resources"]),
                    e.get("EventSource", "-"),
                ]
                for e in document["Events"]
            ],
            wide=wide,
        )
        return
    listing = api.events()
    if as_json:
        print_json(listing)
        return
    table(
        "Live events",
        [
            Column("Id", "key"),
            Column("Event", "phrase"),
            Column("NotBefore (UTC)", "phrase"),
            Column("Resources", "list"),
            Column("Scope", optional=1),
            Column("Approved", optional=2),
        ],
        [
            [
                e["id"],
                f"{e['type']} {e['status']}",
                when(e["not_before"]),
                ", ".join(e["resources"]),
                e["scope"],
                e["approved_by"] or "-",
            ]
            for e in listing
        ],
        wide=wide,
    )


def _event_command(action: str, help_text: str) -> click.Command:
    @click.argument("event_id")
    @click.pass_context
    def command(ctx: click.Context, event_id: str) -> None:
        result = control_client(ctx).event_action(event_id, action)
        click.echo(f"{result['id']}: {result['status']}")

    command.__doc__ = help_text
    return click.command(name=action)(command)


@click.command()
@click.argument("event_ids", nargs=-1, required=True, metavar="EVENT_ID...")
@click.pass_context
def approve(ctx: click.Context, event_ids: tuple[str, ...]) -> None:
    """Approve EVENT_ID... as the operator (each starts when all its VMs are approved).

    With --url, as this VM on a metadata endpoint instead (`forewarn approve --url`)."""
    api = control_client(ctx)
    for event_id in event_ids:
        result = api.event_action(event_id, "approve")
        click.echo(f"{result['id']}: {result['status']}")


start = _event_command("start", "Start EVENT_ID's operation now.")
cancel = _event_command("cancel", "Cancel a Scheduled EVENT_ID (no impact).")
complete = _event_command("complete", "End a Started EVENT_ID now.")


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("seconds", type=DURATION)
@click.pass_context
def advance(ctx: click.Context, seconds: float) -> None:
    """Advance a virtual clock by SECONDS of its own (90, 90s, 5m, 1h, PT5M), firing
    every timer that comes due."""
    clock = control_client(ctx).advance(seconds)
    click.echo(f"clock: {clock['iso']}")


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@_wide
@click.pass_context
def topology(ctx: click.Context, as_json: bool, wide: bool) -> None:
    """Scopes and VMs of the running server."""
    if as_json:  # streamed as it comes: a million VMs are never one document here
        control_client(ctx).copy("/topology", sys.stdout.buffer)
        return
    data = control_client(ctx).topology()
    rows = [
        [
            vm["name"],
            s["id"],
            s["kind"],
            vm["host"],
            str(vm["update_domain"]),
            str(vm["fault_domain"]),
            vm["address"],
            vm["status"],
        ]
        for s in data["scopes"]
        for vm in s["vms"]
    ]
    columns = ["VM", "Scope", "Kind", "Host", "UD", "FD", "Address", "Status"]
    table(
        "Fleet",
        [Column(name, optional=1 if name == "Kind" else 0) for name in columns],
        rows,
        wide=wide,
    )


def _limit(ctx: click.Context, param: click.Parameter, value: int) -> int:
    if not 1 <= value <= MAX_HISTORY:
        raise click.BadParameter(
            f"{value} is not a number of entries from 1 to {MAX_HISTORY}", ctx, param
        )
    return value


#: Sources the table leaves unsaid (``by`` tells an endpoint approval); ``--json`` has all.
_PLAIN_VIA = ("control", "endpoint")


def _detail(entry: dict[str, Any]) -> str:
    """An entry's detail as ``key=value`` words that wrap at their spaces."""
    words = []
    for key, value in entry["detail"].items():
        if value in (None, [], {}, "") or (key == "id" and value == _subject(entry)):
            continue
        if key == "via" and value in _PLAIN_VIA:  # the usual source: 80 columns spared
            continue
        if isinstance(value, list):
            value = ",".join(str(v) for v in value)
        elif isinstance(value, float) and (key.endswith("_at") or key == "not_before"):
            value = when(value)
        words.append(f"{key}={value}")
    return " ".join(words) or "-"


def _subject(entry: dict[str, Any]) -> str:
    """The id an entry is about: its event, else its operation, else its rollout."""
    rollout = entry["detail"].get("id") if entry["kind"].startswith("rollout.") else None
    return str(entry["event_id"] or entry["operation_id"] or rollout or "-")


@click.command()
@click.option(
    "--limit",
    type=int,
    default=50,
    callback=_limit,
    help=f"How many of the newest entries to show (1 to {MAX_HISTORY}).",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@_wide
@click.pass_context
def history(ctx: click.Context, limit: int, as_json: bool, wide: bool) -> None:
    """The append-only history of every transition, newest last."""
    entries = control_client(ctx).history(last=limit)
    if as_json:
        print_json(entries)
        return
    table(
        "History",
        [
            Column("#"),
            Column("At (UTC)", "phrase"),
            Column("Kind"),
            Column("Id", "key", shortest=15),
            Column("Detail", "list"),
            Column("Scope", optional=1),
        ],
        [
            [
                str(h["seq"]),
                when(h["at"]),
                h["kind"],
                _subject(h),
                _detail(h),
                h["scope_id"] or "-",
            ]
            for h in entries
        ],
        wide=wide,
    )


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@_wide
@click.pass_context
def rollouts(ctx: click.Context, as_json: bool, wide: bool) -> None:
    """Rollouts (a scope's or the region's update-domain walk), where each stands."""
    listed = control_client(ctx).rollouts()
    if as_json:
        print_json(listed)
        return
    table(
        "Rollouts",
        [
            Column("Id", "key"),
            Column("Kind"),
            Column("Target"),
            Column("Batch"),
            Column("State"),
            Column("Operation", "key", optional=1),
        ],
        [
            [
                r["id"],
                r["kind"],
                r["target"] + (f" ({r['wave_hosts']} hosts a wave)" if r["region"] else ""),
                f"{r['batch']} of {r['batches']}",
                "done" if r["done"] else "rolling",
                r["current_operation"] or "-",
            ]
            for r in listed
        ],
        wide=wide,
    )
