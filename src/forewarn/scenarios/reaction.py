"""How the fleet reacted to a run's operations, as the rehearsal report grades it.

A scenario's expectations judge what the platform did (the rollout walked one update
domain at a time, each VM was shown its event); whether the VMs *reacted* (polled in time,
approved) is the report's verdict (``GET /api/v1/reactions``). A run fetches that verdict
for the operations it created, so every surface of the drill (its summary, JSON, JUnit,
the dashboard) says what the report says, and that the expectations did not judge it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from forewarn.controlapi import ControlClient, ControlRefused

__all__ = ["NOT_JUDGED", "Reaction", "fleet_reactions", "reaction_line", "reaction_lines"]

#: What a run's summary says of the fleet's reaction: its expectations do not judge it.
NOT_JUDGED = "not judged by the expectations"


@dataclass(frozen=True, slots=True)
class Reaction:
    """The report's row for one operation of the run: ``name`` (the scenario's ``as:``
    name, else the operation's kind and target), its verdict and progress line."""

    name: str
    operation: str
    verdict: str
    progress: str

    @property
    def failed(self) -> bool:
        """Whether the report fails it (a VM with no notice, or one that missed its event)."""
        return self.verdict in ("no-notice", "fail")


def fleet_reactions(
    control: ControlClient, names: dict[str, str], created: list[str]
) -> list[Reaction] | None:
    """The report's verdict on each operation in ``created`` (a rollout once, its batches
    together), in the report's order (worst first); ``names``: operation id -> the
    scenario's name for it. None when the server keeps no report."""
    try:
        data: dict[str, Any] = control.call("GET", "/api/v1/reactions")
    except ControlRefused as exc:
        if exc.status == 404:
            return None
        raise
    mine = set(created)
    found = []
    for row in data.get("operations", []):
        ids = [op for op in row.get("operations", []) if op in mine]
        if not ids and row["id"] not in mine:
            continue
        name = next((names[op] for op in [row["id"], *ids] if op in names), None)
        if name is None:
            name = " ".join(filter(None, [row.get("kind"), row.get("target")])) or row["id"]
        found.append(Reaction(name, row["id"], row["verdict"], row["progress"]))
    return found


def reaction_line(reactions: list[Reaction] | None) -> str:
    """The fleet's reaction in one line (the dashboard's, JUnit's)."""
    head, rows = reaction_lines(reactions)
    return f"{head} {'; '.join(rows)}"


def reaction_lines(reactions: list[Reaction] | None) -> tuple[str, list[str]]:
    """The fleet's reaction as a heading and a line per operation, for a run's summary."""
    if reactions is None:
        return f"the fleet's reaction, {NOT_JUDGED}:", ["not graded (the server keeps no report)"]
    if not reactions:
        return f"the fleet's reaction, {NOT_JUDGED}:", ["no operation to react to"]
    head = f"the fleet's reaction, {NOT_JUDGED} (forewarn report):"
    return head, [f"{r.name}: {r.verdict}, {r.progress}" for r in reactions]
