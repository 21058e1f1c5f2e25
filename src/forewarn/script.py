"""The ``forewarn`` console script: ``forewarn --version`` answers before click loads, and
so do the commands a VM runs often (``forewarn.fastpath``).

Loading click is a third of ``forewarn --version``'s start-up and most of a VM command's
budget; any other arguments go to the click group, ``forewarn.cli.main``, which prints
the same line for ``--version`` and the same result for those commands.
"""

from __future__ import annotations

import sys

__all__ = ["main"]


def main(prog_name: str | None = None) -> None:
    """``forewarn``: the version alone, a fast-path command, or the click group (which
    exits itself)."""
    if sys.argv[1:] == ["--version"]:
        import forewarn

        sys.stdout.write(f"forewarn, version {forewarn.__version__}\n")
        return
    from forewarn.fastpath import run

    if run(sys.argv[1:]):
        return
    from forewarn.cli import main as group

    group(prog_name=prog_name)
