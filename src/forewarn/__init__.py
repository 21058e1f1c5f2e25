"""forewarn: Azure Scheduled Events, runnable anywhere.

Two wings on one shared contract (docs/operations/architecture.md):

- the VM side, on the standard library alone (the plain install, ``forewarn-vm.pyz``):
  ``forewarn.vm`` (the VM's commands: their argparse parsers, tables and errors),
  ``forewarn.client``, ``forewarn.agent``, ``forewarn.conformance``;
- the emulator (the ``[server]`` extra): ``forewarn.fleet``, ``fabric``, ``store``,
  ``imds``, ``control``, ``arm``, ``eventgrid``, ``admission``, ``rehearsal``,
  ``scenarios``, ``replay``, ``server``, ``controlapi``, ``testing`` and ``cli`` (its
  click commands);
- shared by both: ``forewarn.contract``, the wire contract. ``forewarn.script`` is the
  ``forewarn`` command, which hands each command line to its wing.
"""

from __future__ import annotations

from functools import cache

__all__ = ["__version__"]


def __getattr__(name: str) -> str:
    # ``__version__`` is read from the install's metadata on first use: importlib.metadata
    # costs every ``forewarn`` command ~100 modules it rarely needs.
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return _version()


@cache
def _version() -> str:
    # An installed wheel's metadata sits beside the package: its Version line is all
    # ``forewarn --version`` needs, where importlib.metadata doubles the command's start-up.
    import os

    site = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    entries = sorted(os.listdir(site)) if os.path.isdir(site) else []  # not in a zipapp
    for entry in entries:
        metadata = os.path.join(site, entry, "METADATA")
        if not (entry.startswith("forewarn-") and entry.endswith(".dist-info")):
            continue
        if os.path.isfile(metadata):
            with open(metadata, encoding="utf-8") as lines:
                for line in lines:
                    if line.startswith("Version:"):
                        return line.partition(":")[2].strip()
                    if not line.strip():
                        break
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("forewarn")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0.0.0"
