"""Lines of text that fit the terminal: errors, records, notes, and the tables' cells.

Output's width is ``COLUMNS``, else the terminal's, else 80 (a pipe, a file, the journal),
for a VM command's error as for the rest of its output (issue 40). A line too long is
wrapped at its spaces, its continuation indented; a word longer than a line (a URL, a
path) is never cut: it gets a line of its own, whole, so it can still be copied.
"""

from __future__ import annotations

import os
import shutil
import sys
import textwrap

__all__ = ["cells", "fit", "stderr_terminal_width", "terminal_width"]

#: Narrower than this, wrapping helps nobody: lines are cut at this width instead.
NARROWEST = 40


def terminal_width() -> int:
    """``COLUMNS``, else the terminal's width, else 80."""
    return max(shutil.get_terminal_size((80, 24)).columns, NARROWEST)


def cells(text: str) -> int:
    """The columns ``text`` takes on a terminal: two for a wide (East Asian) character,
    none for a combining mark, one for the rest."""
    if text.isascii():
        return len(text)
    from unicodedata import combining, east_asian_width

    return sum(0 if combining(c) else 2 if east_asian_width(c) in ("W", "F") else 1 for c in text)


def fit(text: str, width: int | None = None, indent: str = "  ") -> str:
    """``text`` with each line wrapped to ``width``, continuations indented by ``indent``
    more than the line itself."""
    width = terminal_width() if width is None else max(width, NARROWEST)
    out: list[str] = []
    for line in text.splitlines() or [""]:
        body = line.lstrip(" ")
        lead = line[: len(line) - len(body)]
        wrapped = textwrap.wrap(
            body, width, initial_indent=lead, subsequent_indent=lead + indent,
            break_long_words=False, break_on_hyphens=False,
        )  # fmt: skip
        out.extend(wrapped or [line])
    return "\n".join(out)


def stderr_terminal_width() -> int | None:
    """The width of the terminal stderr is (``COLUMNS`` when set), else None: the
    emulator's errors are wrapped for a person only, and stay one line in its logs."""
    try:
        if not sys.stderr.isatty():
            return None
        columns = os.environ.get("COLUMNS", "")
        if columns.isdigit() and int(columns) > 0:
            return int(columns)
        return os.get_terminal_size(sys.stderr.fileno()).columns
    except (OSError, ValueError, AttributeError):
        return None
