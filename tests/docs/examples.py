"""The docs' examples as the runner reads them: each page's fenced blocks, the marker on
the line right before each, and a ``console`` transcript's commands and shown output.

A block of language ``sh``, ``bash``, ``shell``, ``console`` or ``python`` runs unless the
HTML comment on the line right before its opening fence says otherwise:

- ``<!-- example: background -->``: a long-running command, started in the background;
- ``<!-- example: output -->``: a ``console`` transcript whose output is compared;
- ``<!-- example: file NAME -->``: a file the reader saves (a script, a scenario, a test
  file; any language): written to NAME, relative to the page's directory, at its place
  in the page, for later blocks to use (a transcript ``$ python3 NAME`` shows its output);
- ``<!-- example: not run (REASON) -->``: not run, for REASON;
- ``<!-- example: run by PATH -->``: run, as written, by the test module at PATH, whose
  ``doc_examples()`` returns the bodies of the blocks its tests run (so the marker check
  sees that it really reads this one).

tests/docs/test_shell_examples.py runs them; this module only reads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

__all__ = [
    "PYTHON_LANGUAGES",
    "REPO",
    "RUNNABLE",
    "SHELL_LANGUAGES",
    "Block",
    "Kind",
    "MarkerError",
    "Step",
    "matches",
    "page_name",
    "page_paths",
    "pages_to_run",
    "parse_blocks",
    "runner_blocks",
    "shell_blocks",
    "transcript",
]

REPO = Path(__file__).resolve().parents[2]

#: The fence languages whose blocks a reader pastes into a shell.
SHELL_LANGUAGES = frozenset({"sh", "bash", "shell", "console"})
#: The fence languages whose blocks a reader runs with Python.
PYTHON_LANGUAGES = frozenset({"python", "py"})

_FENCE = re.compile(r"^(?P<indent> {0,4})(?P<fence>`{3,}|~{3,})(?P<lang>[\w+-]*)[^\n]*$")
_MARKER = re.compile(r"^\s*<!--\s*example:\s*(?P<text>.*?)\s*-->\s*$")
_NOT_RUN = re.compile(r"not run \((?P<reason>.+)\)")
_RUN_BY = re.compile(r"run by (?P<path>\S+)")
_FILE = re.compile(r"file (?P<name>[\w.+-]+(?:/[\w.+-]+)*)")


class Kind(Enum):
    """What the runner does with a block."""

    RUN = "run"
    BACKGROUND = "background"
    OUTPUT = "output"
    FILE = "file"
    NOT_RUN = "not run"
    RUN_BY = "run by"


#: The kinds of block the runner runs (or, for FILE, writes) itself.
RUNNABLE = (Kind.RUN, Kind.BACKGROUND, Kind.OUTPUT, Kind.FILE)


class MarkerError(ValueError):
    """A marker the convention does not know, or one with no block under it."""


@dataclass(frozen=True)
class Block:
    """A fenced block: where it is (``line``: its opening fence, 1-based), its language,
    its body, and what its marker says (``detail``: the reason, the path that runs it, or
    the file it is written to)."""

    line: int
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


def page_paths() -> list[Path]:
    """README.md and every page of the site, in a stable order."""
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def page_name(page: Path) -> str:
    """A page as a test id and in messages: its path in the checkout."""
    return page.relative_to(REPO).as_posix()


def shell_blocks(page: Path) -> list[Block]:
    """The page's blocks a reader pastes into a shell, whatever their marker."""
    return [block for block in parse_blocks(page.read_text(encoding="utf-8")) if block.is_shell]


def runner_blocks(page: Path) -> list[Block]:
    """The page's blocks the runner runs or writes, in the page's order."""
    return [block for block in parse_blocks(page.read_text(encoding="utf-8")) if block.runs_here]


def pages_to_run(shard: int = 0, shards: int = 1) -> list[Path]:
    """The pages with a block to run; with ``shards``, every ``shards``-th of them from
    the ``shard``-th (so several test files, each a pytest-xdist worker's, share them)."""
    pages = [page for page in page_paths() if runner_blocks(page)]
    return pages[shard::shards]


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
        end = index + 1
        while end < len(lines) and not lines[end].strip().startswith(fence):
            end += 1
        body = "".join(line.removeprefix(indent) + "\n" for line in lines[index + 1 : end])
        kind, detail = (pending[0], pending[1]) if pending else (Kind.RUN, "")
        found.append(Block(index + 1, opening.group("lang"), body, kind, detail))
        pending = None
        index = end + 1
    if pending is not None:
        raise MarkerError(f"line {pending[2]}: a marker with no fenced block under it")
    return found


@dataclass(frozen=True)
class Step:
    """One ``$ command`` of a transcript and the output shown under it."""

    command: str
    shown: list[str]


def transcript(body: str) -> list[Step]:
    """A ``console`` block's commands (``$ `` lines, a trailing ``\\`` continuing one) and
    the lines shown after each."""
    steps: list[Step] = []
    lines = body.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        if not line.startswith("$ "):
            if not steps:
                raise ValueError(f"a transcript starts with output, not '$ ': {line!r}")
            steps[-1].shown.append(line)
            index += 1
            continue
        command = line[2:]
        while command.endswith("\\") and index + 1 < len(lines):
            index += 1
            command += "\n" + lines[index].removeprefix("> ")
        steps.append(Step(command, []))
        index += 1
    return steps


def _line_pattern(shown: str) -> re.Pattern[str]:
    parts = re.split(r"\.\.\.|…", shown.rstrip())
    return re.compile(".*".join(re.escape(part) for part in parts))


def matches(shown: list[str], actual: list[str]) -> bool:
    """Whether ``actual`` output is what a transcript shows: line by line, trailing blanks
    and blank lines at either end ignored; a shown line that is only ``...`` stands for
    any number of lines, and ``...`` (or ``…``) within a line for any text."""
    want = _trim([line.rstrip() for line in shown])
    got = _trim([line.rstrip() for line in actual])
    return _match(want, got)


def _trim(lines: list[str]) -> list[str]:
    while lines and not lines[0]:
        lines = lines[1:]
    while lines and not lines[-1]:
        lines = lines[:-1]
    return lines


def _match(want: list[str], got: list[str]) -> bool:
    if not want:
        return not got
    head = want[0].strip()
    if head in ("...", "…"):
        return any(_match(want[1:], got[skip:]) for skip in range(len(got) + 1))
    return (
        bool(got) and bool(_line_pattern(want[0]).fullmatch(got[0])) and _match(want[1:], got[1:])
    )
