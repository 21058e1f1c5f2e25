"""Reading the documentation as tests read it: a page of the site (or the README), one
section of it by its heading, and the fenced blocks in it, each with the example marker
on the line right before it. Tests that run what a page shows find it here (the docs'
example runner, tests/docs/, included), so every test reads a block as the runner does,
and a page that moves or renames a heading fails one clear assertion.

The markers (``<!-- example: ... -->``; tests/docs/examples.py says what each means):
``background``, ``output``, ``file NAME``, ``not run (REASON)``, ``run by PATH``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

__all__ = [
    "DOCS",
    "PYTHON_LANGUAGES",
    "README",
    "REPO",
    "RUNNABLE",
    "SHELL_LANGUAGES",
    "Block",
    "Kind",
    "MarkerError",
    "block_after",
    "blocks",
    "page",
    "parse_blocks",
    "section",
]

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
README = REPO / "README.md"

#: The fence languages whose blocks a reader pastes into a shell.
SHELL_LANGUAGES = frozenset({"sh", "bash", "shell", "console"})
#: The fence languages whose blocks a reader runs with Python.
PYTHON_LANGUAGES = frozenset({"python", "py"})

_HEADING = re.compile(r"^(#{1,6}) ")
_FENCE = re.compile(r"^(?P<indent> {0,4})(?P<fence>`{3,}|~{3,})(?P<lang>[\w+-]*)[^\n]*$")
_MARKER = re.compile(r"^\s*<!--\s*example:\s*(?P<text>.*?)\s*-->\s*$")
_NOT_RUN = re.compile(r"not run \((?P<reason>.+)\)")
_RUN_BY = re.compile(r"run by (?P<path>\S+)")
_FILE = re.compile(r"file (?P<name>[\w.+-]+(?:/[\w.+-]+)*)")


class Kind(Enum):
    """What the docs' example runner does with a block."""

    RUN = "run"
    BACKGROUND = "background"
    OUTPUT = "output"
    FILE = "file"
    NOT_RUN = "not run"
    RUN_BY = "run by"


#: The kinds of block the runner runs (or, for FILE, writes) itself.
RUNNABLE = (Kind.RUN, Kind.BACKGROUND, Kind.OUTPUT, Kind.FILE)


class MarkerError(ValueError):
    """A page the runner cannot read as written: a marker the convention does not know,
    one with no block under it, or a fence never closed."""


@dataclass(frozen=True)
class Block:
    """A fenced block: where it is (``line``: its opening fence, ``end``: its closing one,
    1-based), its language, its body, and what its marker says (``detail``: the reason,
    the path that runs it, or the file it is written to)."""

    line: int
    end: int
    lang: str
    body: str
    kind: Kind
    detail: str = ""

    @property
    def is_shell(self) -> bool:
        return self.lang in SHELL_LANGUAGES

    @property
    def is_python(self) -> bool:
        return self.lang in PYTHON_LANGUAGES

    @property
    def is_example(self) -> bool:
        """Whether the convention asks the block to run or say why not."""
        return self.is_shell or self.is_python or self.kind is Kind.FILE

    @property
    def runs_here(self) -> bool:
        """Whether the page runner runs (or writes) it."""
        return self.is_example and self.kind in RUNNABLE


def page(name: str) -> str:
    """A page's Markdown: ``README.md``, or a path under ``docs/``."""
    path = README if name == "README.md" else DOCS / name
    return path.read_text(encoding="utf-8")


def section(name: str, heading: str) -> str:
    """The text under ``heading`` (e.g. ``"## The fleet"``) of page ``name``, up to the
    next heading of the same level or higher (a ``# comment`` in a block is none)."""
    text = page(name)
    lines = text.splitlines(keepends=True)
    fenced = {n for block in parse_blocks(text) for n in range(block.line, block.end + 1)}
    headings = [
        (number, len(found.group(1)))
        for number, line in enumerate(lines, 1)
        if number not in fenced and (found := _HEADING.match(line))
    ]
    start = next((n for n, _ in headings if lines[n - 1].rstrip("\n") == heading), None)
    assert start is not None, f"{name} has no heading {heading!r}"
    level = len(heading.split(" ", 1)[0])
    end = next((n for n, depth in headings if n > start and depth <= level), len(lines) + 1)
    return "".join(lines[start : end - 1])


def blocks(text: str, lang: str) -> list[str]:
    """The bodies of the fenced blocks of language ``lang`` in ``text``."""
    return [block.body for block in parse_blocks(text) if block.lang == lang]


def block_after(text: str, marker: str, lang: str) -> str:
    """The body of the fenced ``lang`` block right after the line ``marker``."""
    lines = text.splitlines()
    found = [
        block.body
        for block in parse_blocks(text)
        if block.lang == lang and block.line > 1 and lines[block.line - 2].strip() == marker
    ]
    assert found, f"no {lang} block right after {marker!r}"
    return found[0]


def _marker(text: str, line: int) -> tuple[Kind, str]:
    if text in ("background", "output"):
        return Kind(text), ""
    if found := _NOT_RUN.fullmatch(text):
        return Kind.NOT_RUN, found.group("reason")
    if found := _RUN_BY.fullmatch(text):
        return Kind.RUN_BY, found.group("path")
    if (found := _FILE.fullmatch(text)) and ".." not in found.group("name").split("/"):
        return Kind.FILE, found.group("name")
    raise MarkerError(f"line {line}: unknown marker 'example: {text}'")


def parse_blocks(markdown: str) -> list[Block]:
    """Every fenced block of ``markdown``, with its marker (a block without one: RUN)."""
    lines = markdown.splitlines()
    found: list[Block] = []
    pending: tuple[Kind, str, int] | None = None
    index = 0
    while index < len(lines):
        text = lines[index]
        if marker := _MARKER.match(text):
            if pending is not None:
                raise MarkerError(f"line {pending[2]}: a marker with no fenced block under it")
            pending = (*_marker(marker.group("text"), index + 1), index + 1)
            index += 1
            continue
        opening = _FENCE.match(text)
        if opening is None:
            if pending is not None:
                raise MarkerError(f"line {pending[2]}: a marker with no fenced block under it")
            index += 1
            continue
        fence, indent = opening.group("fence"), opening.group("indent")
        closing = re.compile(rf"\s*{re.escape(fence[0])}{{{len(fence)},}}\s*")
        end = index + 1
        while end < len(lines) and not closing.fullmatch(lines[end]):
            end += 1
        if end == len(lines):
            raise MarkerError(f"line {index + 1}: a fence never closed")
        body = "".join(line.removeprefix(indent) + "\n" for line in lines[index + 1 : end])
        kind, detail = (pending[0], pending[1]) if pending else (Kind.RUN, "")
        found.append(Block(index + 1, end + 1, opening.group("lang"), body, kind, detail))
        pending = None
        index = end + 1
    if pending is not None:
        raise MarkerError(f"line {pending[2]}: a marker with no fenced block under it")
    return found
