"""Reading the documentation as tests read it: a page of the site (or the README), one
section of it by its heading, and the fenced blocks in it. Tests that run what a page
shows find it here, so a page that moves or renames a heading fails one clear assertion.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["DOCS", "README", "REPO", "block_after", "blocks", "page", "section"]

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
README = REPO / "README.md"

_HEADING = re.compile(r"^(#{1,6}) ", re.MULTILINE)


def page(name: str) -> str:
    """A page's Markdown: ``README.md``, or a path under ``docs/``."""
    path = README if name == "README.md" else DOCS / name
    return path.read_text(encoding="utf-8")


def section(name: str, heading: str) -> str:
    """The text under ``heading`` (e.g. ``"## The fleet"``) of page ``name``, up to the
    next heading of the same level or higher."""
    text = page(name)
    level = len(heading.split(" ", 1)[0])
    start = text.find(f"\n{heading}\n")
    assert start != -1, f"{name} has no heading {heading!r}"
    body = text[start + len(heading) + 2 :]
    for match in _HEADING.finditer(body):
        if len(match.group(1)) <= level and not _in_fence(body, match.start()):
            return body[: match.start()]
    return body


def _in_fence(text: str, offset: int) -> bool:
    """Whether ``offset`` falls inside a fenced block (a ``# comment`` line of a shell
    block is not a heading)."""
    return text[:offset].count("\n```") % 2 == 1


def blocks(text: str, lang: str) -> list[str]:
    """The bodies of the fenced blocks of language ``lang`` in ``text``."""
    return re.findall(rf"^```{re.escape(lang)}\n(.*?)^```", text, re.DOTALL | re.MULTILINE)


def block_after(text: str, marker: str, lang: str) -> str:
    """The body of the fenced ``lang`` block right after the line ``marker``."""
    found = re.search(re.escape(marker) + rf"\n```{re.escape(lang)}\n(.*?)^```", text,
                      re.DOTALL | re.MULTILINE)  # fmt: skip
    assert found, f"no {lang} block right after {marker!r}"
    return found.group(1)
