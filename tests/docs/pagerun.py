"""Running one page's examples as a reader would: in order, in one bash session, from a
fresh clone of the checkout, in an environment with nothing of the test run.

The session (``set -euo pipefail``) starts in a fresh clone of the checkout (the work not
yet committed laid over it: tests/docs/readerenv.py), with a HOME of its own and the
machine's PATH, no venv on it: ``forewarn`` is found only once the page activates a venv,
``python3`` is the machine's until then. A page that links Get started's set-up
(``get-started.md#set-up``) finds the venv that set-up makes in its clone as ``.venv``
(built once per test session, as Get started writes it; a page that installs more runs
the set-up itself first, in its own clone); any other page has only what its own blocks
make. Each block is written to a file beside (not in) the clone and ``source``d, so a
variable or a ``cd`` one block makes is there for the next, and nothing reads the
session's own input:

- a plain block must exit 0 (``set -e`` ends the session at its first failing command);
- a plain ``python`` block is written to a file of its own and run there with ``python3``
  (whichever the session has: the venv's once the page activated one), in the session's
  current directory and environment; it must exit 0 too;
- a ``file NAME`` block is written to NAME under the session's current directory when the
  session reaches it (a later block runs or reads it);
- a ``background`` block is sourced in a background subshell, its output to a log; the
  session then waits until every port it serves accepts a connection (the ports of its
  ``--*-bind HOST:PORT`` options, and for ``forewarn serve`` the default metadata and
  control ports it was not given), and fails with the log if it exits first;
- an ``output`` transcript's commands each run with their output (stdout and stderr, as
  a terminal shows them) kept to compare with what the page shows; their exit status is
  not held against them (a transcript may show a failure).

At the end the page must have left nothing untracked in its checkout (what it writes is
ignored, or in a directory of its own).

Ports: the well-known ones the pages write (:data:`DEFAULT_PORTS`: 8169 and 8170, the
server's defaults; 8443 ARM's; the others a page's own) would clash between pages and with
other tests, so each is replaced, in every block of the page (commands, files written with
heredocs, Python and shown output alike), by one free port: ``127.0.0.1:8169`` becomes
``127.0.0.1:PORT`` wherever it appears. A command that relies on a default instead gets
the same port from the environment: ``FOREWARN_SERVE_IMDS_BIND``,
``FOREWARN_SERVE_CONTROL_BIND``, ``FOREWARN_REPLAY_IMDS_BIND`` (serve's and replay's
options), ``FOREWARN_EXEC_ENDPOINT`` (the endpoint ``forewarn exec`` relays to) and
``FOREWARN_CONTROL`` (the control API the operator's commands call): the only variables
of the test run the session has. Only a port preceded by ``:``, ``=`` or a blank, and
followed by neither a letter, a digit nor a ``-``, is replaced (never the ``9000`` in
``4000-9000-...``, ``9000-77`` or ``81690``: an id, a number);
test_the_pages_use_only_ports_the_runner_moves holds each loopback address a page writes
to those ports.

At the page's end (or when it fails) the session's whole process group is killed
(SIGKILL: nothing the pages' servers keep is needed after, and ``forewarn serve`` takes
about 2 s to stop gracefully), and with it any process still working in the page's
directories that left the group (a daemon the page started and did not stop).
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from tests.docs.examples import Step, matches, page_name, runner_blocks, transcript
from tests.docs.readerenv import (
    SETUP_TIMEOUT,
    clone_checkout,
    installs_more,
    leftovers,
    links_setup,
    reader_environment,
    setup_command,
    shared_venv,
)
from tests.support.docpages import REPO, Block, Kind
from tests.support.ports import free_port

__all__ = [
    "DEFAULT_PORTS",
    "PageResult",
    "assert_page_runs",
    "rewrite_ports",
    "run_page",
    "served_ports",
    "venv_plan",
]

#: The fixed ports the pages write, each replaced by a free one per page.
DEFAULT_PORTS = (8169, 8170, 8443, 8269, 9000, 9465, 6391)

#: Seconds a page may take in all, and a background block to answer.
PAGE_TIMEOUT = 240
READY_TIMEOUT = 60

_PORT = re.compile(r"(?<=[:=\s])(" + "|".join(map(str, DEFAULT_PORTS)) + r")(?![\w-])")
_BIND = re.compile(r"--(?P<option>[\w-]+)-bind[ =](?P<host>\[[^\]]+\]|[^\s:]+):(?P<port>\d+)")


def rewrite_ports(text: str, ports: dict[int, int]) -> str:
    """``text`` with each of :data:`DEFAULT_PORTS` replaced by its port in ``ports``."""
    return _PORT.sub(lambda found: str(ports[int(found.group(1))]), text)


def served_ports(body: str, ports: dict[int, int]) -> list[tuple[str, int]]:
    """The (host, port)s a background block listens on, as the runner can tell."""
    served = {
        found.group("option"): (found.group("host").strip("[]"), int(found.group("port")))
        for found in _BIND.finditer(body)
    }
    if re.search(r"\bforewarn serve\b", body):
        served.setdefault("imds", ("127.0.0.1", ports[8169]))
        served.setdefault("control", ("127.0.0.1", ports[8170]))
    return [("127.0.0.1" if host in ("0.0.0.0", "::") else host, port)
            for host, port in served.values()]  # fmt: skip


@dataclass
class Compared:
    """One transcript command: where, what it printed, whether it is what the page shows."""

    line: int
    step: Step
    actual: list[str] | None  # None: the session ended before it ran

    @property
    def ok(self) -> bool:
        return self.actual is not None and matches(self.step.shown, self.actual)


@dataclass
class PageResult:
    """What running a page's blocks gave: the session's exit code and output (the
    blocks' headers ``::: line N`` between them), its background logs, the transcripts."""

    returncode: int
    output: str
    background_logs: dict[int, str] = field(default_factory=dict)
    compared: list[Compared] = field(default_factory=list)
    #: What the page left untracked in its checkout.
    leftovers: list[str] = field(default_factory=list)

    def failed_block(self) -> str:
        """The output from the last block that started, for a failure message."""
        start = self.output.rfind("\n::: line ")
        return self.output[start + 1 :] if start != -1 else self.output


def _environment(home: Path, ports: dict[int, int]) -> dict[str, str]:
    imds, control = f"127.0.0.1:{ports[8169]}", f"127.0.0.1:{ports[8170]}"
    return {
        **reader_environment(home),
        "NO_COLOR": "1",
        "COLUMNS": "80",
        "PYTHONUNBUFFERED": "1",
        "FOREWARN_SERVE_IMDS_BIND": imds,
        "FOREWARN_SERVE_CONTROL_BIND": control,
        "FOREWARN_REPLAY_IMDS_BIND": imds,
        "FOREWARN_EXEC_ENDPOINT": f"http://{imds}",
        "FOREWARN_CONTROL": f"http://{control}",
    }


_PRELUDE = f"""\
set -euo pipefail
fw_ready() {{  # PID LOG HOST:PORT...: wait until each port accepts a connection
  local pid=$1 log=$2 end=$((SECONDS + {READY_TIMEOUT})) address; shift 2
  for address in "$@"; do
    until (exec 3<>"/dev/tcp/${{address%:*}}/${{address##*:}}") 2>/dev/null; do
      if ! kill -0 "$pid" 2>/dev/null; then
        echo "the background block ended before $address answered; its output:"; cat "$log"
        exit 1
      fi
      if ((SECONDS >= end)); then
        echo "$address did not answer in {READY_TIMEOUT} s; the block's output:"; cat "$log"
        exit 1
      fi
      sleep 0.1
    done
  done
}}
"""


def _script(blocks: list[Block], run: Path, ports: dict[int, int], setup: str | None) -> str:
    """The page as one bash script (``setup`` first); each block's text in a file of its
    own under ``run``."""
    lines = [_PRELUDE]
    if setup is not None:
        path = run / "set-up.sh"
        path.write_text(setup, encoding="utf-8")
        lines += ["printf '\\n::: set-up\\n'", f"source {shlex.quote(str(path))} </dev/null"]
    for block in blocks:
        lines.append(f"printf '\\n::: line {block.line}\\n'")  # on a line of its own
        if block.kind is Kind.FILE:
            path = run / f"file-{block.line}"
            path.write_text(block.body, encoding="utf-8")
            target = shlex.quote(block.detail)
            lines.append(f"install -D -m 644 {shlex.quote(str(path))} {target}")
            continue
        if block.is_python:
            path = run / f"block-{block.line}.py"
            path.write_text(block.body, encoding="utf-8")
            lines.append(f"python3 {shlex.quote(str(path))} </dev/null")
            continue
        if block.kind is Kind.OUTPUT:
            for index, step in enumerate(transcript(block.body)):
                stem = run / f"step-{block.line}-{index}"
                stem.with_suffix(".sh").write_text(step.command + "\n", encoding="utf-8")
                q = shlex.quote(str(stem))
                lines.append(f"set +e; source {q}.sh </dev/null >{q}.out 2>&1; set -e")
            continue
        path = run / f"block-{block.line}.sh"
        path.write_text(block.body, encoding="utf-8")
        q = shlex.quote(str(path))
        if block.kind is Kind.BACKGROUND:
            served = served_ports(block.body, ports)
            if not served:
                lines.append(f"echo 'cannot tell which ports line {block.line} serves'; exit 1")
                continue
            log = shlex.quote(str(run / f"background-{block.line}.log"))
            addresses = " ".join(f"{host}:{port}" for host, port in served)
            lines.append(f"( source {q} ) </dev/null >{log} 2>&1 &")
            lines.append(f'fw_ready "$!" {log} {addresses}')
        else:
            lines.append(f"source {q} </dev/null")
    lines.append("printf '\\n::: end\\n'")
    return "\n".join(lines) + "\n"


def run_page(
    blocks: list[Block], root: Path, *, venv: Path | None = None, setup: str | None = None
) -> PageResult:
    """Run ``blocks`` (a page's runnable ones, ports not yet rewritten) under ``root``: in
    a fresh clone of the checkout (``root/checkout``), HOME ``root/home``. ``venv``: lent
    to the page as the clone's ``.venv``; ``setup``: a command run first, as a block of
    its own (``::: set-up``: Get started's set-up, for a page that installs more)."""
    root = root.resolve()  # as /proc shows working directories
    ports = {port: free_port() for port in DEFAULT_PORTS}
    blocks = [replace(block, body=rewrite_ports(block.body, ports)) for block in blocks]
    home, run = root / "home", root / "run"
    home.mkdir()
    run.mkdir()
    checkout = clone_checkout(root / "checkout")
    if venv is not None:
        (checkout / ".venv").symlink_to(venv)
    script = run / "page.sh"
    script.write_text(_script(blocks, run, ports, setup), encoding="utf-8")
    log_path = run / "page.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            ["bash", "--noprofile", "--norc", str(script)], cwd=checkout,
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            env=_environment(home, ports), start_new_session=True,
        )  # fmt: skip
        try:
            returncode = proc.wait(timeout=_budget(blocks, setup))
        except subprocess.TimeoutExpired:
            returncode = -1
        finally:
            _stop_group(proc, root)
    output = log_path.read_text(encoding="utf-8", errors="replace")
    if returncode == -1:
        output += "\n(the page did not finish in time)"
    return PageResult(
        returncode,
        output,
        {
            b.line: (run / f"background-{b.line}.log").read_text(errors="replace")
            for b in blocks
            if b.kind is Kind.BACKGROUND and (run / f"background-{b.line}.log").exists()
        },
        _compare(blocks, run),
        leftovers(checkout),
    )


def _budget(blocks: list[Block], setup: str | None) -> float:
    """Seconds the page may take: :data:`PAGE_TIMEOUT`, and a set-up's more for each
    install it makes (the set-up run first, a block of its own that runs ``pip install``)."""
    installs = (setup is not None) + sum(installs_more([block.body]) for block in blocks)
    return PAGE_TIMEOUT + SETUP_TIMEOUT * installs


def _compare(blocks: list[Block], run: Path) -> list[Compared]:
    compared = []
    for block in blocks:
        if block.kind is not Kind.OUTPUT:
            continue
        for index, step in enumerate(transcript(block.body)):
            out = run / f"step-{block.line}-{index}.out"
            actual = out.read_text(errors="replace").splitlines() if out.exists() else None
            compared.append(Compared(block.line, step, actual))
    return compared


def _stop_group(proc: subprocess.Popen[bytes], root: Path) -> None:
    """SIGKILL the session's process group (the session included, and every server its
    blocks started), and any process that left the group but still works under ``root`` (a
    daemon such as ``redis-server --daemonize yes``), until none of them is left alive."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 10
    while (left := _survivors(proc.pid, root)) and time.monotonic() < deadline:
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.02)


def _survivors(pgid: int, root: Path) -> list[int]:
    """The live processes (not zombies) of group ``pgid``, or working in ``root`` or under
    it, as Linux's /proc shows them."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            # /proc/PID/stat: "pid (comm) state ppid pgrp ...", comm may hold blanks
            state, _, group = (entry / "stat").read_text().rpartition(")")[2].split()[:3]
            if state != "Z" and (int(group) == pgid or _works_in(entry, root)):
                found.append(int(entry.name))
    return found


def _works_in(entry: Path, root: Path) -> bool:
    with contextlib.suppress(OSError):
        cwd = Path(os.readlink(entry / "cwd"))
        return cwd == root or root in cwd.parents
    return False


def venv_plan(page: Path) -> str:
    """Where ``page`` gets Get started's venv: ``lent`` (it links the set-up and installs
    nothing more), ``set-up`` (it links it and installs more: it runs the set-up first, in
    its own clone), or ``none`` (it makes what it needs itself, or needs none)."""
    if page == REPO / "docs" / "get-started.md" or not links_setup(page.read_text("utf-8")):
        return "none"
    return "set-up" if installs_more([block.body for block in runner_blocks(page)]) else "lent"


def assert_page_runs(page: Path, session_dir: Path) -> None:
    """Run ``page``'s runnable blocks as a reader would (Get started's venv lent, or its
    set-up run first, when the page links that set-up); fail naming the block that failed
    (its output, the background servers' logs), if the session did not start each block
    in the page's order, naming each transcript command that printed other than shown, or
    naming what the page left untracked in its checkout."""
    blocks = runner_blocks(page)
    plan = venv_plan(page)
    venv = shared_venv(session_dir) if plan == "lent" else None
    setup = setup_command() if plan == "set-up" else None
    with tempfile.TemporaryDirectory(prefix="fw-page-") as root:
        result = run_page(blocks, Path(root), venv=venv, setup=setup)
    logs = "".join(
        f"\n--- background block at line {line}:\n{log[-3000:]}"
        for line, log in result.background_logs.items()
    )
    finished = re.search(r"^::: end$", result.output, re.MULTILINE)
    assert result.returncode == 0 and finished, (
        f"{page_name(page)}: a block failed (exit {result.returncode}):\n"
        f"{result.failed_block()[-4000:]}{logs}"
    )
    started = [int(line) for line in re.findall(r"^::: line (\d+)$", result.output, re.MULTILINE)]
    assert started == [block.line for block in blocks], (
        f"{page_name(page)}: the session ran the blocks at lines {started}, "
        f"not the page's {[block.line for block in blocks]}"
    )
    wrong = [c for c in result.compared if not c.ok]
    assert not wrong, f"{page_name(page)}: output other than shown:\n" + "\n".join(
        f"line {c.line}: $ {c.step.command}\n--- shown:\n"
        + "\n".join(c.step.shown)
        + "\n--- printed:\n"
        + "\n".join(c.actual or ["(not run: the session ended before it)"])
        for c in wrong
    )
    assert not result.leftovers, (
        f"{page_name(page)} leaves files untracked in the checkout (work in a directory of "
        f"the page's own, or ignore them): {result.leftovers}"
    )
