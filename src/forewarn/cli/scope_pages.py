"""Every row of a per-scope list of the verdict, when the rolled-up verdict cut it.

``GET /api/v1/reactions`` keeps the first 50 rows of ``by_scope`` and ``event_scopes``
of each region and scope kind (``trimmed`` says how long each was); a reader that owes
one line per scope (the JUnit file's case a scope) asks for the rest a page at a time
(``?scopes=...&offset=...&limit=...``), never making do with the rows kept. Each page
names the verdict the first answer was cut from (``pinned_params``: ``verdict=ID``), so
every page is of that one verdict however the drill moves on; a server that no longer
keeps it answers 410, and the pages are read again from the latest verdict.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from forewarn.cli.errors import fail
from forewarn.contract.control_wire import VERDICT_PARAM
from forewarn.controlapi import ControlRefused

if TYPE_CHECKING:
    from forewarn.controlapi import ControlClient

__all__ = ["PAGE", "every_scope_row", "pinned_params"]

#: Rows asked for a page (the server's most): 10,001 scopes come in two pages.
PAGE = 10_000
#: Times the pages are asked for again when the verdict moved while they were read.
TRIES = 3


def pinned_params(params: dict[str, Any], verdict_id: str | None) -> dict[str, Any]:
    """``params`` naming the kept verdict ``verdict_id`` (None: the server kept none)."""
    return params if verdict_id is None else {**params, VERDICT_PARAM: verdict_id}


def unpinned(params: dict[str, Any]) -> dict[str, Any]:
    """``params`` asking for the latest verdict, not a kept one."""
    return {k: v for k, v in params.items() if k != VERDICT_PARAM}


def _read_all(
    api: ControlClient, params: dict[str, Any], which: str
) -> list[dict[str, Any]] | None:
    """Every row, a page at a time (None: the verdict moved while they were read)."""
    rows: list[dict[str, Any]] = []
    total: int | None = None
    while total is None or len(rows) < total:
        query = {**params, "scopes": which, "offset": len(rows), "limit": PAGE}
        page = api.call("GET", "/api/v1/reactions", params=query)
        if total is not None and page["scope_page"]["total"] != total:
            return None
        total = page["scope_page"]["total"]
        if not page[which] and len(rows) < total:
            return None
        rows += page[which]
    return rows


def every_scope_row(
    api: ControlClient, params: dict[str, Any], data: dict[str, Any], which: str
) -> list[dict[str, Any]]:
    """Every row of ``data``'s list ``which`` (``by_scope`` or ``event_scopes``): the
    rows it holds, or, when the server cut them, every row asked for with ``params``
    (the verdict's window) a page at a time."""
    whole = data.get("trimmed", {}).get(which)
    if whole is None:
        return list(data.get(which) or [])
    for _ in range(TRIES):
        try:
            rows = _read_all(api, params, which)
        except ControlRefused as exc:
            if exc.status != 410 or VERDICT_PARAM not in params:
                raise
            params, rows = unpinned(params), None  # let go meanwhile: the latest, then
        if rows is not None and len({r["scope"] for r in rows}) == len(rows):
            return rows
    fail(f"the verdict changed while its {whole} rows of {which} were read, "
         f"{TRIES} times; run the report again once the drill is still")  # fmt: skip
