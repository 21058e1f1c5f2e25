"""The ``forewarn`` console script: the VM's commands to ``forewarn.vm.parser``
(argparse, the standard library), the emulator's to its click group (``forewarn.cli``,
the ``[server]`` extra).

``events`` and ``approve`` are the VM's with ``--url`` (the metadata endpoint: or an
option only the endpoint's take), else the control API's. ``forewarn --help`` lists both
wings, the emulator's without loading click.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

__all__ = ["main"]


def _vm_wing(argv: Sequence[str]) -> bool:
    """Whether ``argv`` is a VM command's (or ``--version``)."""
    from forewarn.vm.parser import ENDPOINT_OPTIONS, VM_COMMANDS

    if not argv or argv[0] == "--version" or argv[0] in VM_COMMANDS:
        return True
    options = ENDPOINT_OPTIONS.get(argv[0], ())
    asked = argv[1 : argv.index("--")] if "--" in argv else argv[1:]
    return any(a == o or a.startswith(f"{o}=") for a in asked for o in options)


def _help() -> None:
    """Both wings: the VM's commands (argparse's help), then the emulator's."""
    from forewarn.cli.commands import COMMANDS
    from forewarn.vm.parser import build
    from forewarn.vm.text import fit, terminal_width

    sys.stdout.write(build().format_help())
    print("\nthe emulator's commands (the [server] extra; global options --control URL and")
    print("--token TOKEN, or FOREWARN_CONTROL and FOREWARN_TOKEN, before the command):")
    room = terminal_width() - 15
    for name, command in COMMANDS.items():
        summary = fit(command.summary, room, indent="")
        lines = summary.split("\n")
        print(f"  {name:<11}  {lines[0]}")
        for line in lines[1:]:
            print(f"  {'':<11}  {line}")
    print("\n`forewarn COMMAND --help` says more of each.")


def _command_word(argv: Sequence[str]) -> str:
    """The command of an emulator command line (after the group's own options)."""
    words = iter(argv)
    for word in words:
        if word in ("--control", "--token"):
            next(words, None)
        elif not word.startswith("-"):
            return word
    return argv[0]


def main(prog_name: str | None = None) -> None:
    """``forewarn``: a VM command, the help of both wings, or the click group (which
    exits itself)."""
    argv = sys.argv[1:]
    if argv == ["--version"]:  # before any parser: the one line, at once
        import forewarn

        sys.stdout.write(f"forewarn, version {forewarn.__version__}\n")
        return
    if argv in ([], ["--help"], ["-h"]):
        _help()
        return
    if _vm_wing(argv):
        from forewarn.vm.parser import main as vm

        vm(argv)
        return
    try:
        from forewarn.cli.group import main as group
    except ModuleNotFoundError as exc:
        from forewarn.cli.commands import lacking
        from forewarn.vm.exits import fail

        if exc.name is None or not exc.name.startswith(("click", "forewarn.cli")):
            raise
        fail(lacking(_command_word(argv), exc.name))  # (a VM-only install: the zipapp)
    group(prog_name=prog_name)
