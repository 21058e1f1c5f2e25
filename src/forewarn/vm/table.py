"""Tables as plain text that fit the output's width, for the VM commands and the CLI alike.

A table is laid out for ``COLUMNS``, else the terminal's width, else 80: optional columns
go first, then phrases wrap at their spaces, then ids that may be cut are cut; the key
fields always stay, and ids a user must copy stay whole. ``--wide`` prints every column at
full width whatever the width. A table of ``records`` whose rows would not stay whole on
one line each (``forewarn events --url`` in 80 columns) is printed a record at a time
instead, a field a line (as psql's expanded display). Styles (an italic title, bold
headers, a dim caption, a row's own) reach a terminal only, and never with ``NO_COLOR``.
"""

from __future__ import annotations

import os
import sys
import textwrap
from collections.abc import Sequence
from typing import Literal, NamedTuple

from forewarn.vm.text import cells, fit, terminal_width

__all__ = ["Column", "layout", "render", "styled", "table"]

#: Space between two columns.
GAP = 2
#: The narrowest a list column gets before its words are folded.
LIST_MIN = 20
#: ANSI styles (SGR parameters) of a table's parts.
TITLE, HEADER, CAPTION = "3", "1", "2;3"

Role = Literal["key", "word", "phrase", "list"]


class Column(NamedTuple):
    """One column and how it may give way when the output is narrow.

    ``key``: an id, never wrapped; cut with an ellipsis down to ``shortest`` if that is
    set, else always whole (ids a user copies). ``word``: a short value, never wrapped.
    ``phrase``: wraps at its spaces, down to its longest word. ``list``: wraps at its
    spaces and takes the width that is left. ``optional`` columns (the highest number
    first) are hidden when the table would not fit otherwise.
    """

    header: str
    role: Role = "word"
    optional: int = 0
    shortest: int | None = None

    @property
    def unwrapped(self) -> bool:
        """Never wrapped (a ``key`` or a ``word``): cut with an ellipsis instead."""
        return self.role in ("key", "word")


def _widest_line(text: str) -> int:
    return max(cells(line) for line in text.split("\n"))


def _longest_word(text: str) -> int:
    return max((cells(word) for word in text.split()), default=0)


def _total(widths: Sequence[int]) -> int:
    return sum(widths) + GAP * max(len(widths) - 1, 0)


def _natural(columns: Sequence[Column], rows: Sequence[Sequence[str]]) -> dict[int, int]:
    return {
        i: max(_widest_line(text) for text in (c.header, *(row[i] for row in rows)))
        for i, c in enumerate(columns)
    }


def _shown(columns: Sequence[Column], natural: dict[int, int], width: int) -> list[int]:
    """The columns left once optional ones (the highest number first) gave way."""
    shown = list(range(len(columns)))
    for i in sorted((i for i, c in enumerate(columns) if c.optional),
                    key=lambda i: -columns[i].optional):  # fmt: skip
        if _total([natural[n] for n in shown]) <= width:
            break
        shown.remove(i)
    return shown


def layout(
    columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int, *, wide: bool = False
) -> tuple[list[int], dict[int, int]]:
    """Which columns to show (indices) and how wide each one is, to fit ``width``."""
    natural = _natural(columns, rows)
    widths = dict(natural)
    if wide or _total(list(natural.values())) <= width:
        return list(range(len(columns))), widths
    shown = _shown(columns, natural, width)
    if _total([widths[i] for i in shown]) <= width:
        return shown, widths
    for i in shown:  # phrases wrap down to their longest word; lists fold a longer one
        if columns[i].role in ("phrase", "list"):
            texts = [columns[i].header, *(row[i] for row in rows)]
            floor = LIST_MIN if columns[i].role == "list" else natural[i]
            widths[i] = min(natural[i], max(_longest_word(t) for t in texts), floor)
    if _total([widths[i] for i in shown]) > width:  # ids that may be cut are cut
        for i in shown:
            widths[i] = min(widths[i], columns[i].shortest or widths[i])
    spare = width - _total([widths[i] for i in shown])
    for role in ("list", "phrase"):  # what is left goes to the lists, then the phrases
        growing = [i for i in shown if columns[i].role == role]
        for n, i in enumerate(growing):
            share = max(spare // (len(growing) - n), 0)
            grown = min(natural[i], widths[i] + share)
            spare -= grown - widths[i]
            widths[i] = grown
    return shown, widths


def styled() -> bool:
    """Whether styles reach standard output: a terminal, not ``dumb``, no ``NO_COLOR``."""
    try:
        terminal = sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False
    dumb = os.environ.get("TERM", "").lower() in ("dumb", "unknown")
    return terminal and not dumb and not os.environ.get("NO_COLOR")


def _cut(text: str, width: int) -> str:
    """``text`` within ``width`` columns, an ellipsis where it was cut."""
    if cells(text) <= width:
        return text
    while text and cells(text) > width - 1:
        text = text[:-1]
    return text + "…"


def _cell_lines(text: str, width: int, whole: bool) -> list[str]:
    out: list[str] = []
    for line in text.split("\n"):
        if whole:
            out.append(_cut(line, width))
        else:
            out.extend(textwrap.wrap(line, width, break_on_hyphens=False) or [""])
    return out


def _paint(text: str, style: str | None, on: bool) -> str:
    return f"\x1b[{style}m{text}\x1b[0m" if on and style and text else text


def _grid(
    columns: Sequence[Column], rows: Sequence[Sequence[str]], shown: Sequence[int],
    widths: dict[int, int], styles: Sequence[str | None], on: bool,
) -> list[str]:  # fmt: skip
    """The header, its rule and the rows, each cell padded to its column."""
    lines: list[str] = []
    header = [columns[i].header for i in shown]
    for n, row in enumerate([header, *([row[i] for i in shown] for row in rows)]):
        style = HEADER if n == 0 else (styles[n - 1] if n - 1 < len(styles) else None)
        parts = [_cell_lines(text, widths[i], columns[i].unwrapped)
                 for text, i in zip(row, shown, strict=True)]  # fmt: skip
        for k in range(max(len(p) for p in parts)):
            texts = [p[k] if k < len(p) else "" for p in parts]
            padded = [t + " " * (widths[i] - cells(t)) for t, i in zip(texts, shown, strict=True)]
            lines.append(_paint((" " * GAP).join(padded).rstrip(), style, on))
        if n == 0:
            lines.append("─" * _total([widths[i] for i in shown]))
    return lines


def _records(
    columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int,
    styles: Sequence[str | None], on: bool,
) -> list[str]:  # fmt: skip
    """Each row as a block of ``header  value`` lines, a blank line between blocks."""
    label = max(cells(c.header) for c in columns) + GAP
    lines: list[str] = []
    for n, row in enumerate(rows):
        style = styles[n] if n < len(styles) else None
        if n:
            lines.append("")
        for column, text in zip(columns, row, strict=True):
            head = column.header + " " * (label - cells(column.header))
            for k, part in enumerate(text.split("\n")):
                wrapped = fit(" " * label + part, width, indent="").split("\n")
                wrapped[0] = (head if k == 0 else " " * label) + wrapped[0][label:]
                lines.extend(_paint(line, style, on) for line in wrapped)
    return lines


def render(
    title: str,
    columns: Sequence[Column],
    rows: Sequence[Sequence[str]],
    width: int,
    *,
    wide: bool = False,
    records: bool = False,
    styles: Sequence[str | None] = (),
    on: bool = False,
) -> str:
    """The table laid out for ``width`` (see the module); ``styles``: one per row (SGR
    parameters), written with the table's own only if ``on``."""
    natural = _natural(columns, rows)
    shown = _shown(columns, natural, width)
    if records and rows and not wide and _total([natural[i] for i in shown]) > width:
        body = _records(columns, rows, width, styles, on)
        shown = list(range(len(columns)))
        heading = fit(title, width)
    else:
        shown, widths = layout(columns, rows, width, wide=wide)
        body = _grid(columns, rows, shown, widths, styles, on)
        heading = fit(title, max(width, _total([widths[i] for i in shown])))
    lines = [_paint(line, TITLE, on) for line in heading.split("\n")] + body
    hidden = [c.header for i, c in enumerate(columns) if i not in shown]
    if hidden:
        caption = fit(f"hidden to fit: {', '.join(hidden)} (--wide shows them)", width)
        lines += [_paint(line, CAPTION, on) for line in caption.split("\n")]
    return "\n".join(lines) + "\n"


def table(
    title: str,
    columns: Sequence[Column],
    rows: Sequence[Sequence[str]],
    *,
    wide: bool = False,
    records: bool = False,
) -> None:
    """Print ``rows`` under ``title``, laid out for the output (see the module)."""
    text = render(title, columns, rows, terminal_width(), wide=wide, records=records,
                  on=styled())  # fmt: skip
    sys.stdout.write(text)
    sys.stdout.flush()
