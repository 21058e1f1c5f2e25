"""The emulator's ``forewarn`` commands: click, loaded only when one of them runs.

The package's root re-exports only the table of those commands (``forewarn.cli.commands``:
where each lives, its line in ``forewarn --help``, the extra it needs) and the message for
a missing extra: the ``forewarn`` script reads them without loading click. The click group
is ``forewarn.cli.group.main`` (also ``forewarn.cli.main``); each command's module is
imported when that command runs. Errors a user can make end as one message on stderr and
a non-zero exit, never a traceback. The VM's commands are ``forewarn.vm``'s.
"""

from __future__ import annotations

from typing import Any

from forewarn.cli.commands import COMMANDS, SERVER, LazyCommand, lacking

__all__ = ["COMMANDS", "SERVER", "LazyCommand", "lacking", "main"]


def __getattr__(name: str) -> Any:
    # ``forewarn.cli.main``, the click group, imported (with click) only when asked for.
    if name != "main":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from forewarn.cli.group import main as group

    return group
