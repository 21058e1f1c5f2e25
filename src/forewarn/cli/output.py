"""How the CLI prints: times, JSON and tables."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import click
from rich.console import Console
from rich.table import Table

__all__ = ["print_json", "table", "when"]


def when(epoch: float | None) -> str:
    """An epoch as a UTC timestamp, ``-`` for none."""
    if epoch is None:
        return "-"
    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")


def print_json(data: Any) -> None:
    """Indented JSON on stdout."""
    click.echo(json.dumps(data, indent=2))


def table(title: str, columns: list[str], rows: list[list[str]]) -> None:
    """Print ``rows`` as a table titled ``title``."""
    out = Table(title=title)
    for column in columns:
        if column.lower() in ("id", "eventid", "event"):
            out.add_column(column, no_wrap=True, min_width=36)  # ids must stay copyable
        elif column.lower() in ("resources", "detail", "vm"):
            out.add_column(column, overflow="fold")
        else:
            out.add_column(column, no_wrap=True)  # short words stay whole
    for row in rows:
        out.add_row(*[str(c) for c in row])
    Console().print(out)
