"""The ``forewarn`` console script: ``forewarn --version`` answers before click loads.

Every VM command pays for click (a third of ``forewarn --version``'s start-up, which
needs none of it); any other arguments go to the click group, ``forewarn.cli.main``,
which prints the same line for ``--version`` among other options.
"""

from __future__ import annotations

import sys

__all__ = ["main"]


def main(prog_name: str | None = None) -> None:
    """``forewarn``: the version alone, or the click group (which exits itself)."""
    if sys.argv[1:] == ["--version"]:
        import forewarn

        sys.stdout.write(f"forewarn, version {forewarn.__version__}\n")
        return
    from forewarn.cli import main as group

    group(prog_name=prog_name)
