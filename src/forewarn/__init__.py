"""forewarn: Azure Scheduled Events, runnable anywhere."""

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
    for entry in sorted(os.listdir(site)):
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
