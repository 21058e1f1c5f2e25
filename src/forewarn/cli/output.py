"""How the CLI prints: times, JSON, and tables that fit the terminal (``forewarn.vm.table``,
the VM commands' printer)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import click

from forewarn.vm.table import Column, table

__all__ = ["Column", "print_json", "table", "when"]


def when(epoch: float | None) -> str:
    """An epoch as a UTC timestamp, ``-`` for none."""
    if epoch is None:
        return "-"
    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")


def print_json(data: Any) -> None:
    """Indented JSON on stdout."""
    click.echo(json.dumps(data, indent=2))
