"""Every signal passed on reaches COMMAND exactly once, whoever sends it: forewarn alone,
forewarn's whole process group (``kill -- -PGID``, what ``timeout`` and a shell ending its
jobs do), COMMAND's own group (a script's ``kill 0``), a terminal's Ctrl-C; Ctrl-Z stops
the job and ``fg`` continues it. COMMAND (``counter.py``) counts what it receives.

Each run ends with SIGTERM to forewarn alone, the highest-numbered signal passed on: each
hop takes pending signals lowest first, so any copy of an earlier signal still on its way
arrives before it, and the totals COMMAND prints count every copy.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

from tests.vmexec.conftest import SYSTEM_PYTHON, Exec

HERE = Path(__file__).parent
#: Signals sent, in order, and what COMMAND prints for each.
SENT = (("HUP", signal.SIGHUP), ("INT", signal.SIGINT), ("QUIT", signal.SIGQUIT),
        ("USR1", signal.SIGUSR1), ("USR2", signal.SIGUSR2))  # fmt: skip


def _counter(vmexec: Exec, shared_dir: Path, *args: str) -> subprocess.Popen[str]:
    program = shared_dir / "counter.py"
    program.write_text((HERE / "counter.py").read_text())
    # its own session: forewarn's process group is its own, not pytest's
    return vmexec.start("web-0", SYSTEM_PYTHON, str(program), *args, start_new_session=True)


def _read_until(proc: subprocess.Popen[str], wanted: str) -> list[str]:
    assert proc.stdout is not None
    lines: list[str] = []
    while (line := proc.stdout.readline()) != f"{wanted}\n":
        assert line, (lines, proc.stderr.read() if proc.stderr else "")
        lines.append(line.rstrip("\n"))
    return lines


def _totals(proc: subprocess.Popen[str]) -> str:
    """SIGTERM to forewarn alone; the totals COMMAND printed, and its exit status 0."""
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return out.splitlines()[-1]


def test_a_signal_to_forewarns_process_group_reaches_command_once(
    vmexec: Exec, shared_dir: Path
) -> None:
    proc = _counter(vmexec, shared_dir)
    _read_until(proc, "ready")
    for name, number in SENT:
        os.killpg(proc.pid, number)  # forewarn is its group's leader
        assert _read_until(proc, f"{name} 1") == []
    assert _totals(proc) == "totals HUP=1 INT=1 QUIT=1 USR1=1 USR2=1 TERM=1"


def test_a_signal_to_forewarn_alone_reaches_command_once(vmexec: Exec, shared_dir: Path) -> None:
    proc = _counter(vmexec, shared_dir)
    _read_until(proc, "ready")
    for name, number in SENT:
        proc.send_signal(number)
        assert _read_until(proc, f"{name} 1") == []
    assert _totals(proc) == "totals HUP=1 INT=1 QUIT=1 USR1=1 USR2=1 TERM=1"


def test_commands_kill_0_reaches_its_group_once_and_forewarn_passes_nothing_back(
    vmexec: Exec, shared_dir: Path
) -> None:
    proc = _counter(vmexec, shared_dir, "--kill-group")
    _read_until(proc, "ready")
    assert _totals(proc) == "totals HUP=0 INT=0 QUIT=0 USR1=1 USR2=0 TERM=1"
