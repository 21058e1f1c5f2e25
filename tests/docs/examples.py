"""The docs' examples as the runner reads them: the pages with blocks to run, those
blocks (each read with the marker on the line right before it), and a ``console``
transcript's commands and shown output.

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

The blocks and their markers are read by tests.support.docpages (as every test that runs
a page's block reads it); tests/docs/test_shell_examples.py runs them; this module picks
the pages and blocks the runner runs, and reads a transcript.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from tests.support.docpages import REPO, Block, parse_blocks

__all__ = [
    "SHOWN_LANGUAGES",
    "Step",
    "matches",
    "page_name",
    "page_paths",
    "pages_to_run",
    "runner_blocks",
    "transcript",
]


#: The fence languages of blocks a reader only reads (a file's contents, a synopsis, a
#: diagram): any other block is a shell or Python example, or a ``file`` the page saves.
SHOWN_LANGUAGES = frozenset({"", "text", "yaml", "json", "toml", "ini"})


def page_paths() -> list[Path]:
    """README.md and every page of the site, in a stable order."""
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def page_name(page: Path) -> str:
    """A page as a test id and in messages: its path in the checkout."""
    return page.relative_to(REPO).as_posix()


def runner_blocks(page: Path) -> list[Block]:
    """The page's blocks the runner runs or writes, in the page's order."""
    return [block for block in parse_blocks(page.read_text(encoding="utf-8")) if block.runs_here]


def pages_to_run() -> list[Path]:
    """The pages with a block to run."""
    return [page for page in page_paths() if runner_blocks(page)]


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
