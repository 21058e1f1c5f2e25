"""The CLI's handle on a running server: the one control API client, built from the root
options (``--control``/``FOREWARN_CONTROL``, ``--token``/``FOREWARN_TOKEN``).

Every ``ControlError`` it raises (a malformed URL, nobody listening, an error answer) ends
as one error line that says what to fix: ``OneLineErrors`` prints it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from forewarn.controlapi import ControlClient

__all__ = ["control_client"]


def control_client(ctx: click.Context, timeout: float | None = None) -> ControlClient:
    """A client of the server the root options name (raises ControlSettingError);
    ``timeout``: seconds a call waits (None: the client's default)."""
    from forewarn.controlapi import DEFAULT_TIMEOUT, ControlClient  # httpx: only for commands

    obj = ctx.find_root().obj
    return ControlClient(
        obj["control"],
        obj["token"],
        origin=obj["control_origin"],
        token_origin=obj["token_origin"],
        timeout=DEFAULT_TIMEOUT if timeout is None else timeout,
    )
