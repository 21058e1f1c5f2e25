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
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("forewarn")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0.0.0"
