"""``forewarn status``: which process leads the fleet, and how far behind each one is.

Any process of a scaled-out fleet answers (``GET /api/v1/cluster``): the leader of record
(epoch, since when, its control URL, the change log's head) and every process heard from
in the last seconds, with its role, the last change its views hold and its replication
lag (commit to view). A server on an SQLite database is one process and says so.
"""

from __future__ import annotations

from typing import Any

import click

from forewarn.cli.api import control_client
from forewarn.cli.output import Column, print_json, table, when
from forewarn.controlapi import read_answer

__all__ = ["status"]


def _lag(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return f"{seconds * 1000:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--wide", is_flag=True, help="Every column at full width.")
@click.pass_context
def status(ctx: click.Context, as_json: bool, wide: bool) -> None:
    """Who leads a scaled-out fleet, and each process's replication lag."""
    api = control_client(ctx)
    response = api.response("GET", "/api/v1/cluster")
    if response.status_code == 404:
        health = api.call("GET", "/healthz")
        if as_json:
            print_json({"role": "single", "health": health})
            return
        click.echo(
            f"{api.base}: a single process on its own SQLite database "
            f"(not scaled out); health: {health.get('status', '?')}"
        )
        return
    data: dict[str, Any] = read_answer(response, api.base)
    if as_json:
        print_json(data)
        return
    leader = data["leader"]
    if leader.get("member"):
        click.echo(
            f"leader: {leader['member']} (epoch {leader['epoch']}, since "
            f"{when(leader['since'])} UTC) at {leader['control_url']}; "
            f"change log at {leader['head']}"
        )
    else:
        click.echo("leader: none elected yet")
    rows = [
        [
            m["id"] + (" (this)" if m["id"] == data["member"] else ""),
            m["role"],
            str(m["applied_seq"]),
            _lag(m["lag_seconds"]),
            f"{m['seen_seconds_ago']:.1f} s ago",
            m["control_url"] or "-",
        ]
        for m in data["members"]
    ]
    columns = [
        Column("Process", "key"),
        Column("Role"),
        Column("Applied"),
        Column("Lag"),
        Column("Seen", optional=1),
        Column("Control URL", "key", optional=2),
    ]
    table("Processes", columns, rows, wide=wide)
