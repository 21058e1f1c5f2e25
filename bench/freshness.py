"""Which current figure in bench/RESULTS.md is older than the code it measures.

    python bench/freshness.py [--results bench/RESULTS.md] [--markdown]

Each benchmark's section of RESULTS.md carries a line the reader does not see::

    <!-- measured: fleet_tail 6d5f722 src/forewarn/imds src/forewarn/server -->

(the benchmark, the commit its figures were measured at, the paths of the code they
measure). For each, git says whether that code changed after the commit: the figure is
then older than the code, and the benchmark wants running again. Prints a table (plain,
or Markdown for the documentation site); exits 0 either way, since a stale figure is
news, not a failure. Needs git and the repository's history.
"""

from __future__ import annotations

import argparse
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MEASURED = re.compile(r"<!--\s*measured:\s*(\S+)\s+([0-9a-f]{7,40})\s+([^>]*?)\s*-->")


@dataclass(frozen=True)
class Measured:
    """One benchmark's current figure: where it was measured and what it measures."""

    name: str
    commit: str
    paths: tuple[str, ...]


@dataclass(frozen=True)
class Freshness:
    measured: Measured
    #: Commits since the measured one that changed the measured code (None: unknown).
    changes: int | None
    #: The newest of them, ``hash date``.
    latest: str = ""

    def verdict(self) -> str:
        if self.changes is None:
            return f"unknown: {self.measured.commit} is not in this clone's history"
        if self.changes == 0:
            return "current: the code it measures has not changed since"
        return f"OLDER than the code: {self.changes} later commit(s) changed it, last {self.latest}"


def read_measured(text: str) -> list[Measured]:
    """Every ``<!-- measured: ... -->`` line of ``text``, in order."""
    return [
        Measured(name, commit, tuple(paths.split()))
        for name, commit, paths in MEASURED.findall(text)
    ]


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=False)  # fmt: skip


def freshness(measured: Measured, repo: Path = REPO, head: str = "HEAD") -> Freshness:
    """Whether ``measured``'s code changed in ``repo`` between its commit and ``head``."""
    if _git(repo, "cat-file", "-e", f"{measured.commit}^{{commit}}").returncode != 0:
        return Freshness(measured, None)
    span = f"{measured.commit}..{head}"
    log = _git(repo, "log", "--format=%h %ad", "--date=format:%Y-%m-%d", span, "--",
               *measured.paths)  # fmt: skip
    if log.returncode != 0:
        return Freshness(measured, None)
    lines = log.stdout.splitlines()
    return Freshness(measured, len(lines), lines[0] if lines else "")


def table(rows: list[Freshness], markdown: bool) -> str:
    if markdown:
        out = ["| benchmark | measured at | code it measures | now |", "|---|---|---|---|"]
        out += [
            f"| `{r.measured.name}` | {r.measured.commit} | "
            f"{', '.join(f'`{p}`' for p in r.measured.paths)} | {r.verdict()} |"
            for r in rows
        ]
        return "\n".join(out)
    width = max((len(r.measured.name) for r in rows), default=0)
    return "\n".join(
        f"{r.measured.name:<{width}}  {r.measured.commit}  {r.verdict()}" for r in rows
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=Path, default=REPO / "bench" / "RESULTS.md")
    parser.add_argument("--markdown", action="store_true", help="a Markdown table")
    args = parser.parse_args()
    rows = [freshness(m) for m in read_measured(args.results.read_text(encoding="utf-8"))]
    print(table(rows, args.markdown))


if __name__ == "__main__":
    main()
