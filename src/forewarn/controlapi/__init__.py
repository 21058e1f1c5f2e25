"""The one client of a running server's control API (``/api/v1``), for everything that
drives a server from outside it: the ``forewarn`` commands, the scenario engine (and the
dashboard's scenario player through it) and the testing kit.

Its own room, in the layers just above ``forewarn.contract`` and below everything that
uses it, because it is a client, not part of the emulator: it speaks HTTP only (httpx),
imports nothing of the project but this room, and so loads in a blink for the CLI's
control commands (import-linter holds it to that). Synchronous only: every user is
(the scenario engine plays on a thread of its own), so there is no async twin to drift.
"""

from typing import TYPE_CHECKING

from forewarn.controlapi.errors import (
    ControlError,
    ControlRefused,
    ControlSettingError,
    ControlUnreachable,
    NotControlApi,
)

if TYPE_CHECKING:
    from forewarn.controlapi.client import (
        DEFAULT_TIMEOUT,
        ControlClient,
        TriggerOptions,
        check_base_url,
        read_answer,
        segment,
    )

_CLIENT = ("DEFAULT_TIMEOUT", "ControlClient", "TriggerOptions", "check_base_url",
           "read_answer", "segment")  # fmt: skip


def __getattr__(name: str) -> object:
    # The client (and httpx) load on first use: the CLI's error funnel names the errors
    # in every command, the VM's included, which must not pay for httpx to start.
    if name in _CLIENT:
        from forewarn.controlapi import client

        return getattr(client, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_TIMEOUT",
    "ControlClient",
    "ControlError",
    "ControlRefused",
    "ControlSettingError",
    "ControlUnreachable",
    "NotControlApi",
    "TriggerOptions",
    "check_base_url",
    "read_answer",
    "segment",
]
