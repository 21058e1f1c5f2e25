"""Tables that fit the terminal, for the CLI and the VM commands alike.

A table is laid out for the terminal's width (80 columns when output is not a terminal, or
``COLUMNS``): optional columns go first, then phrases wrap at their spaces, then ids that
may be cut are cut; the key fields always stay, and ids a user must copy stay whole.
``--wide`` prints every column at full width whatever the terminal. Styles only ever reach
a terminal, and never with ``NO_COLOR`` set. ``table()`` prints without rich
(``forewarn.plaintable``: the same bytes, without rich's ~50 ms of imports and layout)
wherever it can: rich is loaded for ``build()`` (the live view of ``forewarn watch``,
styled rows) and for a text whose width only rich knows. Cells, headers and titles are
literal text, never rich markup or emoji codes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Literal, NamedTuple

from forewarn import plaintable

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

__all__ = ["Column", "build", "console", "layout", "plain", "table"]

#: Space between two columns: one of padding, one of the (blank) divider.
GAP = 2
#: The narrowest a list column gets before its words are folded.
LIST_MIN = 20

Role = Literal["key", "word", "phrase", "list"]


class Column(NamedTuple):
    """One column and how it may give way when the terminal is narrow (a NamedTuple:
    dataclasses loads inspect, a tenth of a VM command's start-up).

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
    return max(plaintable.cell_len(line) for line in text.split("\n"))


def _longest_word(text: str) -> int:
    return max((plaintable.cell_len(word) for word in text.split()), default=0)


def _total(widths: Sequence[int]) -> int:
    return sum(widths) + GAP * max(len(widths) - 1, 0)


def layout(
    columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int, *, wide: bool = False
) -> tuple[list[int], dict[int, int]]:
    """Which columns to show (indices) and how wide each one is, to fit ``width``."""
    cells = [[c.header, *(row[i] for row in rows)] for i, c in enumerate(columns)]
    natural = {i: max(_widest_line(text) for text in texts) for i, texts in enumerate(cells)}
    shown = list(range(len(columns)))
    widths = dict(natural)

    def too_wide() -> bool:
        return _total([widths[i] for i in shown]) > width

    if wide or not too_wide():
        return shown, widths
    for i in sorted(
        (i for i, c in enumerate(columns) if c.optional), key=lambda i: -columns[i].optional
    ):
        if not too_wide():
            break
        shown.remove(i)
    if not too_wide():
        return shown, widths
    for i in shown:  # phrases wrap down to their longest word; lists fold a longer one
        if columns[i].role in ("phrase", "list"):
            floor = LIST_MIN if columns[i].role == "list" else natural[i]
            longest = max(_longest_word(text) for text in cells[i])
            widths[i] = min(natural[i], longest, floor)
    if too_wide():  # ids that may be cut are cut (to their shortest: lists get the rest)
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


def console() -> Console:
    """A console for tables: rich keeps bold and italic under ``NO_COLOR``, but a user
    who set it asked for plain text."""
    from rich.console import Console

    return Console(color_system=None if os.environ.get("NO_COLOR") else "auto")


def _caption(columns: Sequence[Column], shown: Sequence[int]) -> str | None:
    hidden = [c.header for i, c in enumerate(columns) if i not in shown]
    return f"hidden to fit: {', '.join(hidden)} (--wide shows them)" if hidden else None


def build(
    title: str,
    columns: Sequence[Column],
    rows: Sequence[Sequence[str]],
    width: int,
    *,
    wide: bool = False,
    styles: Sequence[str | None] = (),
) -> tuple[Table, int]:
    """The table laid out for ``width`` and the width it takes (``styles``: one per row)."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    shown, widths = layout(columns, rows, width, wide=wide)
    caption = _caption(columns, shown)
    out = Table(
        title=Text(title, style="table.title"),
        caption=Text(caption, style="table.caption") if caption else None,
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        padding=(0, 1, 0, 0),
        title_justify="left",
        caption_justify="left",
    )
    for i in shown:
        column = columns[i]
        whole = column.unwrapped
        out.add_column(
            Text(column.header),
            width=widths[i],
            no_wrap=whole,
            overflow="ellipsis" if whole else "fold",
        )
    for n, row in enumerate(rows):
        style = styles[n] if n < len(styles) else None
        out.add_row(*(Text(row[i]) for i in shown), style=style)
    return out, _total([widths[i] for i in shown])


def plain(
    title: str,
    columns: Sequence[Column],
    rows: Sequence[Sequence[str]],
    width: int,
    *,
    wide: bool = False,
    styled: bool = False,
    widened: Callable[[int], int] | None = None,
) -> str | None:
    """What rich prints for ``build()``'s table (no row styles) on a console ``width``
    wide, without rich: ANSI styles if ``styled`` (a colour terminal); with ``wide`` the
    console is widened to the table (``widened``: the width it then has). None for a
    text whose width only rich knows."""
    shown, widths = layout(columns, rows, width, wide=wide)
    if wide:
        needed = max(width, _total([widths[i] for i in shown]))
        width = widened(needed) if widened is not None else needed
    return plaintable.render(
        title,
        [(columns[i].header, widths[i], columns[i].unwrapped) for i in shown],
        [[row[i] for i in shown] for row in rows],
        width,
        caption=_caption(columns, shown),
        styled=styled,
    )


def table(
    title: str,
    columns: Sequence[Column],
    rows: Sequence[Sequence[str]],
    *,
    wide: bool = False,
) -> None:
    """Print ``rows`` under ``title``, laid out for the terminal (see the module)."""
    screen = plaintable.screen()
    if screen is not None:
        text = plain(
            title, columns, rows, screen.width(), wide=wide, styled=screen.styled,
            widened=screen.width,
        )  # fmt: skip
        if text is not None:
            plaintable.write(text)
            return
    out = console()
    rendered, needed = build(title, columns, rows, out.width, wide=wide)
    if wide:
        out.width = max(out.width, needed)
    out.print(rendered)
