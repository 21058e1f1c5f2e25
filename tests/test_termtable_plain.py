"""Tables printed without rich (``forewarn.plaintable``) are the bytes rich prints: for any
table (headers, cells with spaces, newlines, tabs, long words, wide, combining and
zero-width characters), any width, ``--wide`` or not, plain or styled for a terminal. A
table printed to a pipe loads no rich; a text only rich can measure is printed by rich."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.cells import cell_len as rich_cell_len
from rich.cells import get_character_cell_size
from rich.console import Console

from forewarn import plaintable
from forewarn.termtable import Column, build, console, plain, table

ROOT = Path(__file__).resolve().parents[1]

#: What tables hold, and what trips a renderer: wide CJK, fullwidth and emoji, combining
#: marks, zero-width characters, the controls rich strips (CR, BEL) or keeps (ESC), tabs,
#: no-break and ideographic spaces, markup-like brackets and emoji codes.
_ODD = [
    "é", "ß", "Ω", "ж", "中", "文", "字", "한", "ア", "\uff46", "\uff21", "😀", "\u0301", "\u0308",
    "\u20dd", "\u0903", "\u200b", "\xad", "\u1161", "…", "─", "\r", "\x07", "\x1b", "\u3000",
    "\xa0", "[", "]", ":", "/", "\t", "\u0600",
]  # fmt: skip
#: And some of every kind: Latin, Greek, Cyrillic, Devanagari's spacing marks, Hangul jamo,
#: punctuation and format characters, box drawing, CJK, syllables, fullwidth forms, emoji,
#: private use (whatever this Python's Unicode database assigns: plaintable.known).
_BLOCKS = [
    (0xA0, 0x500), (0x900, 0x980), (0x1100, 0x1200), (0x2000, 0x2100), (0x2500, 0x2600),
    (0x2600, 0x2700), (0x3000, 0x3100), (0x4DC0, 0x4E80), (0xAC00, 0xAC40), (0xD7B0, 0xD800),
    (0xFE00, 0xFF70), (0x1D300, 0x1D380), (0x1F300, 0x1F400), (0xE000, 0xE010),
]  # fmt: skip
_POOL = [
    chr(c)
    for low, high in _BLOCKS
    for c in range(low, high)
    if plaintable._measure(chr(c)) is not None
]
_CHARS = st.one_of(
    st.characters(min_codepoint=0x21, max_codepoint=0x7E), st.sampled_from(_ODD),
    st.sampled_from(_POOL),
)  # fmt: skip
_WORD = st.text(_CHARS, min_size=1, max_size=10) | st.text(_CHARS, min_size=12, max_size=70)
_GAP = st.sampled_from([" ", " ", " ", "  ", "\n", ", ", "\t", " \n"])


@st.composite
def _text(draw: st.DrawFn) -> str:
    words = draw(st.lists(_WORD, max_size=6))
    return "".join(word + draw(_GAP) for word in words)[: draw(st.integers(0, 200))]


_COLUMNS = st.lists(
    st.builds(
        Column,
        header=st.text(_CHARS, max_size=12) | _text(),
        role=st.sampled_from(["key", "word", "phrase", "list"]),
        optional=st.integers(0, 3),
        shortest=st.none() | st.integers(1, 30),
    ),
    min_size=1,
    max_size=7,
)


def rich_prints(
    title: str,
    columns: list[Column],
    rows: list[list[str]],
    width: int,
    *,
    wide: bool = False,
    styled: bool = False,
) -> str:
    """What ``table()`` printed with rich before: ``build()``'s table on a console."""
    out = Console(
        file=io.StringIO(), width=width, force_terminal=styled,
        color_system="standard" if styled else None, _environ={},
    )  # fmt: skip
    rendered, needed = build(title, columns, rows, width, wide=wide)
    if wide:
        out.width = max(out.width, needed)
    out.print(rendered)
    return out.file.getvalue()  # type: ignore[attr-defined,no-any-return]


def same_as_rich(
    title: str, columns: list[Column], rows: list[list[str]], width: int, *, wide: bool = False,
    styled: bool = False,
) -> None:  # fmt: skip
    text = plain(title, columns, rows, width, wide=wide, styled=styled)
    if text is None:  # rich styles the pieces of a title or caption between tabs apart
        assert styled and "\t" in title + "".join(c.header for c in columns)
    else:
        assert text == rich_prints(title, columns, rows, width, wide=wide, styled=styled)


@settings(max_examples=400, deadline=None)
@given(
    title=_text(),
    columns=_COLUMNS,
    cells=st.lists(st.lists(_text(), min_size=7, max_size=7), max_size=5),
    width=st.integers(20, 200),
    wide=st.booleans(),
    styled=st.booleans(),
)
def test_any_table_prints_as_rich_prints_it(
    title: str, columns: list[Column], cells: list[list[str]], width: int, wide: bool, styled: bool
) -> None:
    rows = [row[: len(columns)] for row in cells]
    same_as_rich(title, columns, rows, width, wide=wide, styled=styled)


@settings(max_examples=150, deadline=None)
@given(
    columns=_COLUMNS,
    cells=st.lists(st.lists(_text(), min_size=7, max_size=7), max_size=3),
    width=st.integers(0, 19),
    styled=st.booleans(),
)
def test_narrower_than_any_table_too(
    columns: list[Column], cells: list[list[str]], width: int, styled: bool
) -> None:
    """Below 20 columns rich squeezes every column, down to none: so does the plain text."""
    rows = [row[: len(columns)] for row in cells]
    same_as_rich("Live events", columns, rows, width, styled=styled)


def test_every_character_is_as_wide_as_rich_counts_it_or_left_to_rich() -> None:
    unknown = 0
    for code in range(0x110000):
        width = plaintable._measure(chr(code))
        if width is None:
            unknown += 1
        else:
            assert width == get_character_cell_size(chr(code)), hex(code)
    assert unknown < 0x110000 * 3 // 4  # unassigned code points, mostly
    assert plaintable._measure("中") == 2 and plaintable._measure("\u0301") == 0


@pytest.mark.parametrize(
    "text",
    ["", "EventId", "web-0, web-1", "中文 \uff46\uff55\uff4c\uff4c", "e\u0301\u0308", "a\tb",
     "\x1b[1m", "\u200bx\xad", "👍\ufe0f", "👨\u200d👩", "\u0378", "\U000f0000"],
)  # fmt: skip
def test_cell_len_is_rich_s(text: str) -> None:
    assert plaintable.cell_len(text) == rich_cell_len(text)


@pytest.mark.parametrize("odd", ["👍\ufe0f ok", "👨\u200d👩\u200d👧", "\u05ff"])
def test_a_text_only_rich_can_measure_is_printed_by_rich(
    odd: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    columns = [Column("Id", "key"), Column("What", "phrase")]
    rows = [["a-1", f"{odd} then some words"]]
    assert plain("Live", columns, rows, 60) is None
    for name in ("COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TERM"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COLUMNS", "60")
    table("Live", columns, rows)
    assert capsys.readouterr().out == rich_prints("Live", columns, rows, 60)


def test_text_is_literal_never_markup_or_emoji_codes() -> None:
    """A bracket is text (an IPv6 address, ``[Errno 111]``), not a style rich swallows."""
    columns = [Column("Id", "key"), Column("Detail", "list")]
    rows = [["[bold]x[/bold]", "[errno 111] refused :smile: [/i]"]]
    title = "http://[fe80::1]:80: DocumentIncarnation 3"
    text = plain(title, columns, rows, 100)
    assert text == rich_prints(title, columns, rows, 100)
    assert text is not None and title in text and "[errno 111] refused :smile: [/i]" in text
    assert "[bold]x[/bold]" in text


class _Stream(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@pytest.mark.parametrize(
    ("tty", "env"),
    [
        (False, {}), (True, {}), (True, {"NO_COLOR": "1"}), (True, {"NO_COLOR": ""}),
        (False, {"FORCE_COLOR": "1"}), (True, {"FORCE_COLOR": ""}),
        (True, {"TTY_COMPATIBLE": "0"}), (False, {"TTY_COMPATIBLE": "1", "FORCE_COLOR": ""}),
        (True, {"TERM": "dumb"}), (True, {"TERM": "Unknown", "COLUMNS": "50"}),
        (True, {"TERM": "dumb", "COLUMNS": "50", "LINES": "10"}), (False, {"COLUMNS": "33"}),
        (False, {"COLUMNS": "x"}), (False, {"COLUMNS": "0", "LINES": "5"}),
    ],
)  # fmt: skip
def test_the_screen_is_what_rich_s_console_sees(
    tty: bool, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Styled or not, and as wide (also once widened for ``--wide``) as rich decides."""
    for name in ("COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TERM"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(sys, "stdout", _Stream(tty))
    screen = plaintable.screen()
    rich = console()
    assert screen is not None
    assert screen.styled == (rich.color_system is not None)
    assert screen.width() == rich.width
    rich.width = 300
    assert screen.width(300) == rich.width


def test_rich_prints_where_it_does_more_than_plain_text(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(io.BytesIO(), encoding="latin-1"))
    assert plaintable.screen() is None  # rich draws an ASCII box for it


def _run(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {
        k: v for k, v in os.environ.items()
        if k not in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TERM", "LINES")
    }  # fmt: skip
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT,
        env={**clean, "COLUMNS": "70", **env},
    )  # fmt: skip


#: ``forewarn events --url``'s table of three events.
_TITLE = "http://169.254.169.254/metadata/scheduledevents: DocumentIncarnation 4"
_EVENT_COLUMNS = [
    Column("EventId", "key"), Column("Event", "phrase"), Column("NotBefore (UTC)", "phrase"),
    Column("Resources", "list"), Column("Source", optional=1), Column("Duration", optional=2),
]  # fmt: skip
_EVENT_ROWS = [
    [f"{n}2345678-ABCD-4EF0-8123-456789ABCDEF", "Reboot Scheduled",
     "2026-05-09 10:00:00\nin 14m59s", "web-0, web-1, web-2", "Platform", "300s"]
    for n in range(3)
]  # fmt: skip


def _printing(times: int = 1) -> str:
    """A program that prints the events table (its rows ``times`` over) through
    ``table()``, then the rich modules it loaded (on stderr)."""
    return (
        "import sys\n"
        "from forewarn.termtable import Column, table\n"
        f"table({_TITLE!r}, {_EVENT_COLUMNS!r}, {_EVENT_ROWS!r} * {times})\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'rich'), file=sys.stderr)\n"
    )


@pytest.mark.parametrize("env", [{}, {"NO_COLOR": "1"}, {"FORCE_COLOR": "1"}], ids=str)
def test_a_table_to_a_pipe_loads_no_rich(env: dict[str, str]) -> None:
    ran = _run(_printing(), **env)
    assert ran.returncode == 0, ran.stderr
    assert ran.stderr.strip() == "[]"
    styled = bool(env.get("FORCE_COLOR"))
    assert ran.stdout == rich_prints(_TITLE, _EVENT_COLUMNS, _EVENT_ROWS, 70, styled=styled)
    assert ("\x1b[1mEventId" in ran.stdout) == styled
    assert "hidden to fit: Source, Duration (--wide shows them)" in ran.stdout


def test_a_closed_pipe_ends_the_command_quietly() -> None:
    """As rich ends it (``forewarn events --url ... | head`` gone before the table)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(0.5)\n" + _printing()],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
        env={**os.environ, "COLUMNS": "70"},
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    assert proc.wait(timeout=60) == 1
    assert proc.stderr.read().decode() == ""  # no traceback, and it ended there
