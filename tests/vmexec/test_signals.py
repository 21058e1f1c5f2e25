"""Every signal passed on reaches COMMAND exactly once, whoever sends it: forewarn alone,
forewarn's whole process group (``kill -- -PGID``, what ``timeout`` and a shell ending its
jobs do), COMMAND's own group (a script's ``kill 0``), a terminal's Ctrl-C; Ctrl-Z stops
the job and ``fg`` continues it. COMMAND (``counter.py``) counts what it receives.

Each run ends with SIGTERM to forewarn alone, the highest-numbered signal passed on: each
hop takes pending signals lowest first, so any copy of an earlier signal still on its way
arrives before it, and the totals COMMAND prints count every copy.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import shlex
import signal
import subprocess
import termios
import time
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


class _Terminal:
    """An interactive bash on a pseudo-terminal (its controlling terminal), typed into."""

    def __init__(self, cwd: Path) -> None:
        self.master, slave = os.openpty()
        env = {**os.environ, "PS1": "PROMPT> ", "TERM": "dumb"}
        self.bash = subprocess.Popen(
            ["bash", "--norc", "--noprofile", "-i"], stdin=slave, stdout=slave, stderr=slave,
            start_new_session=True, preexec_fn=_take_terminal, env=env, cwd=cwd,
        )  # fmt: skip
        os.close(slave)
        self.seen = b""

    def type(self, text: bytes) -> None:
        os.write(self.master, text)

    def until(self, wanted: str, timeout: float = 90) -> str:
        """What the terminal shows up to ``wanted``."""
        token = wanted.encode()
        deadline = time.monotonic() + timeout
        while token not in self.seen:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self.master], [], [], max(0.0, left))
            assert ready, f"no {wanted!r} on the terminal: {self.seen[-1000:]!r}"
            self.seen += os.read(self.master, 65536)
        end = self.seen.index(token) + len(token)
        shown, self.seen = self.seen[:end], self.seen[end:]
        return shown.decode(errors="replace")

    def jobs(self) -> list[int]:
        """The shell's children: its jobs' leaders (forewarn)."""
        children = Path(f"/proc/{self.bash.pid}/task/{self.bash.pid}/children")
        return [int(pid) for pid in children.read_text().split()]

    def close(self) -> None:
        for job in self.jobs():  # a job left stopped by a failed test ends too
            with contextlib.suppress(ProcessLookupError):
                os.killpg(job, signal.SIGKILL)
        self.bash.kill()
        self.bash.wait(timeout=30)
        os.close(self.master)


def _take_terminal() -> None:
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def test_a_terminals_ctrl_c_ctrl_z_and_fg_reach_command_once(
    vmexec: Exec, shared_dir: Path
) -> None:
    """forewarn as a foreground job of an interactive shell: the sandbox takes the
    terminal, its Ctrl-C and Ctrl-\\ reach COMMAND once (from the terminal, passed on by
    nobody), Ctrl-Z stops the job as the shell sees it and ``fg`` continues it."""
    program = shared_dir / "counter.py"
    program.write_text((HERE / "counter.py").read_text())
    terminal = _Terminal(shared_dir)
    try:
        terminal.until("PROMPT> ")
        command = shlex.join(vmexec.argv("web-0", [SYSTEM_PYTHON, str(program)]))
        terminal.type(f'{command}; echo "stopped=$?"\n'.encode())
        terminal.until("ready")
        terminal.type(b"\x03")
        assert "^C" in terminal.until("INT 1\r\n")
        terminal.type(b"\x1a")
        shown = terminal.until("PROMPT> ")
        assert "Stopped" in shown and f"stopped={128 + signal.SIGTSTP}" in shown, shown
        terminal.type(b"fg\n")
        terminal.until("continued\r\n")  # (the shell names the job first)
        terminal.type(b"\x1c")
        terminal.until("QUIT 1\r\n")
        [forewarn] = terminal.jobs()
        os.kill(forewarn, signal.SIGTERM)
        shown = terminal.until("PROMPT> ")  # the shell has its terminal back
        assert "totals HUP=0 INT=1 QUIT=1 USR1=0 USR2=0 TERM=1\r\n" in shown, shown
    finally:
        terminal.close()
