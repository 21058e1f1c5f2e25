"""How the CLI prints: times, JSON, and tables that fit the terminal (``termtable``,
shared with the VM commands)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import click

from forewarn.termtable import Column, layout, table

__all__ = ["Column", "layout", "print_json", "table", "when"]


def when(epoch: float | None) -> str:
    """An epoch as a UTC timestamp, ``-`` for none."""
    if epoch is None:
        return "-"
    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")


def print_json(data: Any) -> None:
    """Indented JSON on stdout."""
    click.echo(json.dumps(data, indent=2))
