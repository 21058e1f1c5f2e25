"""``termtable``'s tables as text without rich: what rich prints for them, byte for byte.

Rich costs a VM command a third of its start-up (its imports, then 20-45 ms to lay a
table out), for a table that carries no style (a pipe, a file, ``NO_COLOR``) or, on a
terminal, three: an italic title, bold headers and a dim italic caption. ``render`` lays
out the one table ``termtable`` builds (``box.SIMPLE_HEAD`` without edges, padding
``(0, 1, 0, 0)``, fixed-width left-justified columns, each ``no_wrap`` with an ellipsis or
folded at its spaces) as rich 15 does; ``screen`` says where rich would print it alike,
and how wide. A text whose width only rich knows (a character unassigned in this
Python's Unicode database, an emoji sequence) gets None: the caller prints it with rich.
tests/test_termtable_plain.py holds the two equal. Only the standard library.
"""

from __future__ import annotations

import itertools
import os
import re
import sys
from collections.abc import Callable, Sequence

__all__ = ["PlainColumn", "Screen", "cell_len", "known", "render", "screen", "write"]

# ------------------------------------------------------------------ cells, as rich counts

#: Anything but what rich counts one cell each without a look-up (``rich.cells``).
_NOT_SINGLE = "[^\x20-\x7e\xa0-\xac\xae-\u02ff\u0370-\u0482\u2500-\u25fc\u2800-\u28ff]"
#: Where rich's table (wcwidth's, Unicode 17) parts from the categories and East Asian
#: widths of Python 3.11's database: symbols wide since Unicode 16, ...
_WIDE = (
    (0x2630, 0x2637), (0x268A, 0x268F), (0x4DC0, 0x4DFF), (0x1D300, 0x1D356), (0x1D360, 0x1D376),
)  # fmt: skip
#: ... Hangul fillers, skin-tone modifiers, and the vowels and final consonants of Hangul
#: (part of a syllable): no cell; ...
_ZERO = (
    (0x3164, 0x3164), (0xFFA0, 0xFFA0), (0x1F3FB, 0x1F3FF), (0x1160, 0x11FF), (0xD7B0, 0xD7FF),
)  # fmt: skip
#: ... and the soft hyphen and the prepended concatenation marks (one cell).
_ONE = frozenset({0xAD, *range(0x600, 0x606), 0x6DD, 0x70F, 0x890, 0x891, 0x8E2, 0x110BD, 0x110CD})
#: Categories of no width: marks, format characters, line and paragraph separators.
_NO_CELL = frozenset({"Mn", "Me", "Mc", "Cf", "Zl", "Zp"})
_widths: dict[str, int | None] = {}


def _char_width(char: str) -> int | None:
    """The cells rich gives ``char``, None where this module does not know them."""
    width = _widths.get(char, -1)
    if width == -1:
        width = _widths[char] = _measure(char)
    return width


def _measure(char: str) -> int | None:
    """``_char_width`` without the cache (tests/test_termtable_plain.py checks every code
    point against rich)."""
    import unicodedata

    code = ord(char)
    category = unicodedata.category(char)
    if code < 32 or 0x7F <= code < 0xA0:
        return 0
    if char in "\u200d\ufe0f" or category in ("Cn", "Cs"):
        return None  # joiner, emoji presentation (rich measures the sequence), unknown here
    if code in _ONE:
        return 1
    if category in _NO_CELL or _within(code, _ZERO):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") or _within(code, _WIDE) else 1


def _within(code: int, ranges: tuple[tuple[int, int], ...]) -> bool:
    return any(low <= code <= high for low, high in ranges)


def _single(text: str) -> bool:
    """Every character one cell, as rich decides without a look-up."""
    return (text.isascii() and text.isprintable()) or not re.search(_NOT_SINGLE, text)


def known(text: str) -> bool:
    """Whether this module knows the width of every character of ``text``."""
    return _single(text) or all(_char_width(char) is not None for char in text)


def cell_len(text: str) -> int:
    """The cells ``text`` takes on a terminal, as ``rich.cells.cell_len`` counts them
    (rich's own answer only for what this module does not know: ``known``)."""
    if _single(text):
        return len(text)
    total = 0
    for char in text:
        width = _char_width(char)
        if width is None:
            from rich.cells import cell_len as rich_cell_len

            return rich_cell_len(text)
        total += width
    return total


def _graphemes(text: str) -> list[tuple[int, int, int]]:
    """(start, end, cells) of each character with the no-width ones that follow it."""
    spans: list[tuple[int, int, int]] = []
    for index, char in enumerate(text):
        width = _char_width(char) or 0
        if width or not spans:
            spans.append((index, index + 1, width))
        else:
            spans[-1] = (spans[-1][0], index + 1, spans[-1][2])
    return spans


def _set_cells(text: str, total: int) -> str:
    """``text`` cropped or padded to ``total`` cells (a wide character cut: a space)."""
    if _single(text):
        return text + " " * (total - len(text)) if len(text) < total else text[:total]
    if total <= 0:
        return ""
    size = cell_len(text)
    if size <= total:
        return text + " " * (total - size)
    size = 0
    for start, _end, width in _graphemes(text):
        if size == total:
            return text[:start]
        if size + width > total:
            return text[:start] + " "
        size += width
    return text


def _chop(text: str, width: int) -> list[str]:
    """``text`` in pieces of at most ``width`` cells."""
    if _single(text):
        return [text[index : index + width] for index in range(0, len(text), width)]
    lines: list[str] = []
    size = offset = 0
    for start, _end, cells in _graphemes(text):
        if size + cells > width:
            lines.append(text[offset:start])
            offset, size = start, 0
        size += cells
    if size:
        lines.append(text[offset:])
    return lines


# ------------------------------------------------------------------ text, as rich wraps it

_STRIP = dict.fromkeys((7, 8, 11, 12, 13))  # what rich.text.Text drops: BEL BS VT FF CR
_WORD = re.compile(r"\s*\S+\s*")
_TRAILING_SPACE = re.compile(r"\s+$")


def _expand_tabs(line: str) -> str:
    pieces = line.split("\t")
    parts = [piece + "\t" for piece in pieces[:-1]] + [pieces[-1]] * bool(pieces[-1])
    out, position = [], 0
    for part in parts:
        if part.endswith("\t"):
            part = part[:-1] + " "
            position += cell_len(part)
            if position % 8:
                part += " " * (8 - position % 8)
                position += 8 - position % 8
        else:
            position += cell_len(part)
        out.append(part)
    return "".join(out)


def _breaks(text: str, width: int) -> list[int]:
    """Where rich breaks ``text`` to fit ``width``: at spaces, a longer word folded."""
    breaks: list[int] = []
    offset = 0
    match = _WORD.match(text, 0)
    while match is not None:
        start, end = match.span()
        word = match.group(0)
        length = cell_len(word.rstrip())
        if width - offset >= length:
            offset += cell_len(word)
        elif length > width:
            pieces = _chop(word, width)
            for n, piece in enumerate(pieces):
                if start:
                    breaks.append(start)
                if n == len(pieces) - 1:
                    offset = cell_len(piece)
                else:
                    start += len(piece)
        elif offset and start:
            breaks.append(start)
            offset = cell_len(word)
        match = _WORD.match(text, end)
    return breaks


def _truncate(text: str, width: int, ellipsis: bool, pad: bool) -> str:
    length = cell_len(text)
    if length > width:
        text = _set_cells(text, width - 1) + "…" if ellipsis else _set_cells(text, width)
    if pad and length < width:
        text += " " * (width - length)
    return text


def _lines(text: str, width: int, whole: bool) -> list[str]:
    """``text`` in lines of ``width`` cells: left-justified, each ``whole`` line cut with an
    ellipsis, else wrapped at its spaces with longer words folded (``Text.wrap``)."""
    out: list[str] = []
    for line in text.split("\n"):
        if "\t" in line:
            line = _expand_tabs(line)
        pieces = [line]
        if not whole:
            bounds = [0, *_breaks(line, width), len(line)]
            pieces = [line[start:end] for start, end in itertools.pairwise(bounds)]
            for n, piece in enumerate(pieces):
                excess = len(piece) - width
                trailing = _TRAILING_SPACE.search(piece) if excess > 0 else None
                if trailing is not None:
                    pieces[n] = piece[: -min(len(trailing.group(0)), excess)]
        for piece in pieces:
            piece = _truncate(piece, width, whole, pad=True)
            out.append(_truncate(piece, width, whole, pad=False))
    return out


# ------------------------------------------------------------------ the table, as rich draws it

Segment = tuple[str, str]  # text, and the SGR parameters of its style ("": none)
TITLE, HEADER, CAPTION = "3", "1", "2;3"  # rich's table.title, .header and .caption


#: A column as ``termtable.build`` adds it: its header, width (without padding), and
#: whole (never wrapped, cut with an ellipsis) or not (folded at its spaces).
PlainColumn = tuple[str, int, bool]


def _crop(line: list[Segment], length: int) -> list[Segment]:
    """``line`` cut to ``length`` cells (``Segment.adjust_line_length``, no padding)."""
    if sum(cell_len(text) for text, _ in line) <= length:
        return line
    out: list[Segment] = []
    size = 0
    for text, style in line:
        cells = cell_len(text)
        if size + cells < length:
            out.append((text, style))
            size += cells
        else:
            out.append((_set_cells(text, length - size), style))
            break
    return out


def _reduce(excess: int, widths: list[int]) -> list[int]:
    """Take ``excess`` cells off the columns evenly (``rich._ratio.ratio_reduce``)."""
    ratios = [1 if width else 0 for width in widths]
    total_ratio = sum(ratios)
    if not total_ratio:
        return widths[:]
    out = []
    for ratio, width in zip(ratios, widths, strict=True):
        if ratio and total_ratio > 0:
            taken = min(width, round(ratio * excess / total_ratio))
            out.append(width - taken)
            excess -= taken
            total_ratio -= ratio
        else:
            out.append(width)
    return out


def _annotation(text: str, width: int, style: str) -> list[list[Segment]]:
    if not text or width < 1:
        return []
    return [[(line, style)] for line in _lines(text, width, whole=False)]


def render(
    title: str,
    columns: Sequence[PlainColumn],
    rows: Sequence[Sequence[str]],
    width: int,
    *,
    caption: str | None = None,
    styled: bool = False,
) -> str | None:
    """What rich's console ``width`` wide prints for the table (ANSI styles if
    ``styled``), None if a text holds a character whose width only rich knows."""
    texts = [title, caption or "", *(c[0] for c in columns), *(t for r in rows for t in r)]
    if not all(known(text) for text in texts) or (styled and "\t" in f"{title}{caption}"):
        return None  # rich styles a styled text's tabs apart: left to rich, as is rare
    if width < 1:
        return ""
    if not columns:
        return "\n"
    dividers = len(columns) - 1
    pads = [1] * dividers + [0]
    room = max(0, width - dividers)

    def measure(n: int, room: int) -> int:
        return 0 if room < 1 else min(columns[n][1] + pads[n], room)

    widths = [measure(n, room) or 1 for n in range(len(columns))]
    if sum(widths) > room:  # still too wide: rich takes from every column alike
        widths = _reduce(sum(widths) - room, widths)
        widths = [measure(n, cells) for n, cells in enumerate(widths)]
    table_width = sum(widths) + dividers

    lines = _annotation(title.translate(_STRIP), table_width, TITLE)
    header = [column[0] for column in columns]
    for index, row in enumerate([header, *rows]):
        style = HEADER if index == 0 else ""
        cells: list[list[list[Segment]]] = []
        for n, text in enumerate(row):
            inner = widths[n] - pads[n]
            pad = [(" " * pads[n], style)] if pads[n] else []
            cells.append(
                []
                if widths[n] < 1 or inner < 1
                else [
                    [(line, style), *pad]
                    for line in _lines(text.translate(_STRIP), inner, columns[n][2])
                ]
            )
        height = max(len(cell) for cell in cells)
        for n, cell in enumerate(cells):  # headers sit at the bottom, cells at the top
            blank = [[(" " * widths[n], style if height else "")]] * (max(height, 1) - len(cell))
            cells[n] = blank + cell if index == 0 else cell + blank
        for k in range(max(height, 1)):
            line: list[Segment] = []
            for n, cell in enumerate(cells):
                line.extend([(" ", ""), *cell[k]] if n else cell[k])
            lines.append(line)
        if index == 0:
            lines.append([("─" * table_width, "")])
    lines.extend(_annotation((caption or "").translate(_STRIP), table_width, CAPTION))

    out: list[str] = []
    for line in lines:
        for text, sgr in _crop(line, width):
            out.append(f"\x1b[{sgr}m{text}\x1b[0m" if styled and sgr and text else text)
        out.append("\n")
    return "".join(out)


# ------------------------------------------------------------------ where rich would print


def _number(value: str | None) -> int | None:
    """``COLUMNS`` or ``LINES`` as rich reads it (a digit string, else none)."""
    return int(value) if value is not None and value.isdigit() else None


class Screen:
    """Standard output as rich's ``Console`` sees it: ``styled`` (a colour terminal:
    styles written as ANSI codes) or not, and its width (a plain class: a dataclass costs
    start-up)."""

    __slots__ = ("columns", "dumb", "lines", "styled")

    def __init__(self, styled: bool, dumb: bool, columns: int | None, lines: int | None) -> None:
        self.styled, self.dumb, self.columns, self.lines = styled, dumb, columns, lines

    def width(self, wanted: int | None = None) -> int:
        """The console's width; ``wanted``: once set to that (``Console.width = ...``)."""
        own = self.columns if wanted is None else wanted
        if own is not None and self.lines is not None:
            return own
        if self.dumb:
            return 80
        measured = None
        for fd in (0, 1, 2):
            try:
                measured = os.get_terminal_size(fd).columns
                break
            except (AttributeError, ValueError, OSError):
                pass
        if self.columns is not None:
            measured = self.columns
        return (measured or 80) if own is None else own


def _terminal(out: object) -> bool:
    """``Console.is_terminal``."""
    compatible = os.environ.get("TTY_COMPATIBLE", "")
    if compatible in ("0", "1"):
        return compatible == "1"
    force = os.environ.get("FORCE_COLOR")
    if force is not None:
        return force != ""
    isatty: Callable[[], bool] | None = getattr(out, "isatty", None)
    try:
        return False if isatty is None else bool(isatty())
    except ValueError:
        return False


def screen() -> Screen | None:
    """Standard output as rich would print to it, or None where rich does more than this
    module knows (Windows, Jupyter, IDLE, a stream rich wraps, an encoding not UTF)."""
    import builtins

    out = sys.stdout
    if (
        sys.platform == "win32"
        or out is None
        or hasattr(out, "rich_proxied_file")
        or hasattr(builtins, "get_ipython")
        or str(getattr(sys.stdin, "__module__", "")).startswith("idlelib")
        or not (getattr(out, "encoding", "utf-8") or "utf-8").lower().startswith("utf")
    ):
        return None
    try:
        columns, lines = _number(os.environ.get("COLUMNS")), _number(os.environ.get("LINES"))
    except ValueError:  # a digit int() refuses ("²"): rich's own error
        return None
    terminal = _terminal(out)
    dumb = terminal and os.environ.get("TERM", "").lower() in ("dumb", "unknown")
    styled = terminal and not dumb and not os.environ.get("NO_COLOR")
    return Screen(styled, dumb, columns, lines)


def write(text: str) -> None:
    """``text`` on standard output; a closed pipe ends the command as rich ends it."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        raise SystemExit(1) from None
