"""The sandbox's own process group, and the terminal handed to it and back.

A signal sent to forewarn's process group (``kill -- -PGID``, ``timeout``, a shell ending
its jobs) would reach COMMAND twice if COMMAND were in that group: once from the sender,
once passed on by forewarn. So the sandbox (and COMMAND with it) leaves forewarn's group
for one of its own, and forewarn passes on every signal it gets, exactly once. When
forewarn held the terminal (a foreground job), the sandbox's group takes it, as a shell
gives a job the terminal: Ctrl-C and Ctrl-Z reach COMMAND from the terminal itself and
COMMAND reads it; forewarn takes it back when COMMAND ends or stops (and stops itself,
so that the shell sees the job stopped), and gives it again when continued.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator

__all__ = ["Terminal", "leave_group"]


@contextlib.contextmanager
def _no_sigttou() -> Iterator[None]:
    """A background group may change the terminal's foreground only with SIGTTOU blocked."""
    before = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTTOU})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def _controlling_terminal() -> int | None:
    try:
        return os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        return None  # none (a CI job, a service, setsid)


def leave_group() -> None:
    """In the sandbox, first thing: a process group of its own; the terminal too when its
    old group (forewarn's) was the terminal's foreground."""
    before = os.getpgid(os.getppid())  # forewarn's
    os.setpgid(0, 0)
    tty = _controlling_terminal()
    if tty is None:
        return
    try:
        with contextlib.suppress(OSError), _no_sigttou():
            if os.tcgetpgrp(tty) == before:
                os.tcsetpgrp(tty, os.getpgrp())
    finally:
        os.close(tty)


class Terminal:
    """forewarn's side of the terminal the sandbox may hold: taken back when COMMAND ends
    (``reclaim``), followed through the sandbox's stops (``follow_stop``)."""

    def __init__(self) -> None:
        self.group = os.getpgrp()
        self.fd = _controlling_terminal()

    def _foreground(self) -> int | None:
        if self.fd is None:
            return None
        try:
            return os.tcgetpgrp(self.fd)
        except OSError:
            return None

    def _give(self, group: int) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError), _no_sigttou():
                os.tcsetpgrp(self.fd, group)

    def reclaim(self, sandbox: int) -> None:
        """The terminal back to forewarn's group, if the sandbox's has it."""
        if self._foreground() == sandbox:
            self._give(self.group)

    def follow_stop(self, sandbox: int) -> None:
        """The sandbox stopped (Ctrl-Z, SIGTTIN, SIGSTOP): stop forewarn likewise, the
        terminal back to its group; when continued, give it again if forewarn's group has
        it (``fg``; ``bg`` does not give it) and continue COMMAND."""
        try:
            stopped = os.waitid(os.P_PID, sandbox, os.WSTOPPED | os.WNOHANG)
        except ChildProcessError:
            return  # reaped already: it ended
        if stopped is None:
            return  # not a stop (it ended or continued)
        self.reclaim(sandbox)
        os.kill(os.getpid(), signal.SIGSTOP if stopped.si_status == signal.SIGSTOP else
                signal.SIGTSTP)  # fmt: skip
        if self._foreground() == self.group:
            self._give(sandbox)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(sandbox, signal.SIGCONT)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
