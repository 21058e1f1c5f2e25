"""What the README's and the docs' steps leave in a checkout is ignored by git: a newcomer
who followed them sees a clean ``git status``, and never the ARM listener's private key in it.

A real ``forewarn serve`` (the README's demo: ``--db demo.db``, ARM on, a recording) runs
in an empty directory standing for the checkout; every file it left there must be one
the checkout's ``.gitignore`` ignores. The wheel "Install on a VM" builds is checked by
``tests/vmside/test_vm_install.py``, which runs those commands.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.serverproc import VIRTUAL, ServerProcess, free_port

REPO = Path(__file__).resolve().parents[1]


def not_ignored(paths: list[str]) -> list[str]:
    """Those of ``paths`` (relative to the checkout) that git would list as untracked."""
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    ignored = subprocess.run(
        ["git", "check-ignore", "--no-index", "--stdin"], cwd=REPO, input="\n".join(paths),
        capture_output=True, text=True, check=False,
    ).stdout.splitlines()  # fmt: skip
    return [path for path in paths if path not in ignored]


def test_what_the_demo_server_leaves_is_ignored(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    args = [*VIRTUAL, "--arm-bind", f"127.0.0.1:{free_port()}", "--record",
            str(checkout / "served.jsonl")]  # fmt: skip
    server = ServerProcess(checkout / "demo.db", args).start()
    server.stop()
    left = sorted(str(p.relative_to(checkout)) for p in checkout.rglob("*") if p.is_file())
    assert {"demo.db", "demo.db.id", "forewarn-ca/ca-key.pem"} <= set(left), left
    assert not_ignored(left) == []


def test_the_checks_own_sense() -> None:
    """The check reads .gitignore: what the project tracks is not ignored."""
    assert not_ignored(["README.md", "src/forewarn/vm/text.py", "demo.db"]) == [
        "README.md", "src/forewarn/vm/text.py",
    ]  # fmt: skip
