"""Text for status notes and logs: one trimmed line, whatever a handler printed."""

from __future__ import annotations

__all__ = ["one_line"]


def one_line(text: str, limit: int = 300) -> str:
    """``text``'s non-blank lines joined by " | ", trimmed to ``limit`` characters."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    joined = " | ".join(lines)
    return joined if len(joined) <= limit else joined[: limit - 1].rstrip() + "…"
