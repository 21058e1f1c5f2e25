"""Lines of text that fit the terminal, for what is not a table: errors, records, notes.

Output's width is the tables' (``COLUMNS``, else the terminal's, else 80 when output is
not a terminal). An error is wrapped for a person only (stderr a terminal, to ``COLUMNS``
or its width): in a log (systemd's journal, a CI job) it stays one line. A line too long is
wrapped at its spaces, its continuation indented; a word longer than a line (a URL, a
path) is never cut: it gets a line of its own, whole, so it can still be copied. Only the
standard library: the VM side imports it.
"""

from __future__ import annotations

import os
import shutil
import sys
import textwrap

__all__ = ["fit", "fit_error", "terminal_width"]

#: Narrower than this, wrapping helps nobody: lines are cut at this width instead.
NARROWEST = 40


def terminal_width() -> int:
    """``COLUMNS``, else the terminal's width, else 80."""
    return max(shutil.get_terminal_size((80, 24)).columns, NARROWEST)


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


def _error_width() -> int | None:
    """The width of the terminal stderr is (``COLUMNS`` when set), else None: an error
    is wrapped for a person only, and stays one line in a log, a pipe or a CI job, whatever
    ``COLUMNS`` says (readline and CI runners export it without a terminal)."""
    try:
        if not sys.stderr.isatty():
            return None
        columns = os.environ.get("COLUMNS", "")
        if columns.isdigit() and int(columns) > 0:
            return int(columns)
        return os.get_terminal_size(sys.stderr.fileno()).columns
    except (OSError, ValueError, AttributeError):
        return None


def fit_error(text: str) -> str:
    """An error for stderr: wrapped to the terminal a person reads it on, else as it is."""
    width = _error_width()
    return text if width is None else fit(text, width)
