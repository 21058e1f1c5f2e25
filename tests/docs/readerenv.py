"""What a reader starts a page with, and nothing of the test run: a fresh clone of the
checkout (with the work not yet committed laid over it), an environment with no venv on
PATH and a HOME of its own, and, for a page that says it follows Get started's set-up, the
venv that set-up makes.

That venv is built once per test session by running Get started's set-up block, as
written, in a clone of its own (``shared_venv``), and lent to every page that links
Get started's set-up and installs nothing more; a page that installs more (``pip
install``) runs the set-up itself, in its own clone, so what it adds is its alone. Never
the test run's own venv.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.support.docpages import REPO, blocks, section

__all__ = [
    "SETUP_HEADING",
    "SETUP_LINK",
    "clone_checkout",
    "installs_more",
    "leftovers",
    "links_setup",
    "reader_environment",
    "setup_command",
    "shared_venv",
]

#: Get started's set-up: the heading whose one ``sh`` block makes the checkout's venv.
SETUP_PAGE, SETUP_HEADING = "get-started.md", "## Set up"
#: How a page says it follows that set-up: a link to it (``get-started.md#set-up``).
SETUP_LINK = re.compile(r"\]\((?:\.\./)*(?:docs/)?get-started\.md#set-up\)")
_PIP_INSTALL = re.compile(r"\bpip3? install\b")

#: Seconds the set-up may take (pip, from a warm cache, on a loaded machine).
SETUP_TIMEOUT = 600

#: Variables of the test run a reader's shell does not have.
_TEST_RUN = ("FOREWARN_", "PYTEST_", "COV_", "VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")


def setup_command() -> str:
    """Get started's set-up block, as the page writes it."""
    [command] = blocks(section(SETUP_PAGE, SETUP_HEADING), "sh")
    return command


def links_setup(markdown: str) -> bool:
    """Whether a page says it follows Get started's set-up (links its heading)."""
    return SETUP_LINK.search(markdown) is not None


def installs_more(bodies: list[str]) -> bool:
    """Whether a page's blocks install packages themselves (``pip install``)."""
    return any(_PIP_INSTALL.search(body) for body in bodies)


def reader_environment(home: Path) -> dict[str, str]:
    """The machine's environment as a new login shell has it: no variable of the test
    run, no venv's ``bin`` on PATH, ``home`` as HOME (pip's cache still the machine's)."""
    venvs = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()} - {Path("/usr")}
    path = [
        entry
        for entry in os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin").split(os.pathsep)
        if entry and not any(v == Path(entry).resolve() or v in Path(entry).resolve().parents
                             for v in venvs)
    ]  # fmt: skip
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(_TEST_RUN) and name != "SCHEDULEDEVENTSIP"
    }
    env.update(HOME=str(home), PATH=os.pathsep.join(path), LC_ALL="C.UTF-8")
    # pip's cache is the machine's, as a reader's own HOME would have it (a new HOME would
    # download and build every wheel again, for every page that installs)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pip"
    env.setdefault("PIP_CACHE_DIR", str(cache))
    return env


def _git(*args: str, cwd: Path = REPO) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True, timeout=120
    ).stdout


def clone_checkout(target: Path) -> Path:
    """A fresh clone of the checkout at ``target``, with what is not committed yet (files
    changed, added or deleted) laid over it, and staged, so ``leftovers`` sees only what
    came after."""
    _git("clone", "--quiet", "--no-checkout", str(REPO), str(target))
    listed = _git("ls-files", "-z", "--cached", "--others", "--exclude-standard")
    deleted = set(_git("ls-files", "-z", "--deleted").split("\0"))
    for name in listed.split("\0"):
        if not name or name in deleted:
            continue
        source, copy = REPO / name, target / name
        copy.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            copy.symlink_to(os.readlink(source))
        else:
            shutil.copy2(source, copy)
    _git("add", "--all", cwd=target)
    with (target / ".git" / "info" / "exclude").open("a") as exclude:
        exclude.write("/.venv\n")  # the set-up's venv, lent as a link (not a directory)
    return target


def leftovers(checkout: Path) -> list[str]:
    """What a page left untracked in its checkout (neither committed nor ignored)."""
    status = _git("status", "--porcelain", "--untracked-files=all", cwd=checkout)
    return [line[3:] for line in status.splitlines() if line.startswith("?? ")]


def _build(root: Path, env: dict[str, str]) -> Path:
    checkout = clone_checkout(root / "forewarn")
    done = subprocess.run(
        ["bash", "--noprofile", "--norc", "-euo", "pipefail", "-c", setup_command()],
        cwd=checkout, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=SETUP_TIMEOUT,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(
            f"Get started's set-up failed:\n{done.stdout[-2000:]}{done.stderr[-3000:]}"
        )
    return checkout / ".venv"


def shared_venv(session_dir: Path) -> Path:
    """Get started's venv, built once under ``session_dir`` (shared by every pytest-xdist
    worker of the run: the first to ask builds it, under a lock, the others wait)."""
    root = session_dir / "get-started-venv"
    root.mkdir(parents=True, exist_ok=True)
    with (root / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        built = root / "built"
        if built.exists():
            failure = built.read_text()
            if failure:
                raise RuntimeError(failure)
            return root / "forewarn" / ".venv"
        home = root / "home"
        home.mkdir()
        try:
            venv = _build(root, reader_environment(home))
        except (RuntimeError, subprocess.SubprocessError) as error:
            built.write_text(str(error) or repr(error))
            raise
        built.write_text("")
        return venv
