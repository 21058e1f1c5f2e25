"""bench/freshness.py says a figure is older than the code it measures exactly when git
has a later commit touching that code; RESULTS.md marks every benchmark's current figure."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from bench.freshness import Measured, freshness, read_measured, table

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "bench" / "RESULTS.md"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid",
         *args], capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip


def commit(repo: Path, path: str, text: str) -> str:
    (repo / path).parent.mkdir(parents=True, exist_ok=True)
    (repo / path).write_text(text)
    git(repo, "add", path)
    git(repo, "commit", "-q", "-m", f"change {path}")
    return git(repo, "rev-parse", "--short", "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("no git")
    git(tmp_path, "init", "-q")
    return tmp_path


def test_a_later_change_to_the_measured_code_makes_the_figure_older(repo: Path) -> None:
    measured_at = commit(repo, "src/endpoint.py", "v1")
    commit(repo, "src/other.py", "unrelated")
    endpoint = Measured("tail", measured_at, ("src/endpoint.py",))
    assert freshness(endpoint, repo).changes == 0
    assert freshness(endpoint, repo).verdict().startswith("current")
    later = commit(repo, "src/endpoint.py", "v2")
    stale = freshness(endpoint, repo)
    assert stale.changes == 1 and stale.latest.startswith(later)
    assert stale.verdict().startswith("OLDER than the code: 1 later commit(s)")
    assert freshness(Measured("x", "0123abc", ("src",)), repo).changes is None


def test_the_markers_are_read_and_tabled() -> None:
    text = "x\n<!-- measured: fleet_tail 6d5f722 src/forewarn/imds src/forewarn/server -->\n"
    [m] = read_measured(text)
    assert m == Measured("fleet_tail", "6d5f722", ("src/forewarn/imds", "src/forewarn/server"))
    assert "| `fleet_tail` | 6d5f722 |" in table([freshness(m, REPO)], markdown=True)


def test_every_benchmark_section_of_results_has_a_measured_commit() -> None:
    text = RESULTS.read_text()
    sections = re.split(r"\n## ", text)[1:]
    for section in sections:
        title = section.splitlines()[0]
        if "bench/" in title and "fleet_polling" not in title:  # no valid figure there
            assert read_measured(section), title
    for m in read_measured(text):
        assert all((REPO / path).exists() for path in m.paths), m
