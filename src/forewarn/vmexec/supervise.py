"""The waiting half of every process between forewarn and COMMAND: wait for one child,
pass on the signals meant for it, and end with its exit status.

Signals are taken with ``sigwaitinfo`` (blocked, never handled), which also tells who
sent each, so that each reaches COMMAND exactly once. The sandbox has a process group of
its own (``terminal.py``), the terminal's when forewarn had it: what the terminal sends
(Ctrl-C) or what is sent to that group (COMMAND's own ``kill 0``) reaches COMMAND
already and is passed on by nobody; what forewarn passes on goes down one hop at a time,
each process passing on only what came from the hop above (``passes``). A PID
namespace's first process reaps every orphan there, as an init does.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable

__all__ = ["FORWARDED", "exit_code", "from_outside_namespace", "from_process", "supervise"]

#: What ``forewarn exec`` passes on to COMMAND.
FORWARDED = frozenset({
    signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
    signal.SIGUSR2,
})  # fmt: skip

#: ``si_code`` of a signal the kernel sent (a terminal's, to its foreground group).
_SI_KERNEL = 0x80

#: Whether a signal taken (its ``siginfo``) is one to pass on.
Passes = Callable[[signal.struct_siginfo], bool]


def from_process(sender: int) -> Passes:
    """Pass on what process ``sender`` (the hop above, in this PID namespace) sent."""
    return lambda info: info.si_pid == sender and info.si_code != _SI_KERNEL


def from_outside_namespace(info: signal.struct_siginfo) -> bool:
    """In a PID namespace's first process: pass on what came from outside the namespace
    (the hop above: its sender's pid is 0 here), not the kernel's nor a process's inside."""
    return info.si_pid == 0 and info.si_code != _SI_KERNEL


def exit_code(status: int) -> int:
    """A wait status as a shell reports it: the exit code, or 128 + the signal."""
    code = os.waitstatus_to_exitcode(status)
    return code if code >= 0 else 128 - code


def supervise(child: int, passes: Passes) -> int:
    """Wait for ``child``, passing on the ``FORWARDED`` signals that ``passes``; its exit
    code.

    The caller has blocked ``FORWARDED`` and ``SIGCHLD`` (before forking ``child``)."""
    waited = {*FORWARDED, signal.SIGCHLD}
    while True:
        info = signal.sigwaitinfo(waited)
        if info.si_signo != signal.SIGCHLD:
            if passes(info):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child, info.si_signo)
            continue
        while True:  # every child that ended (an init adopts orphans)
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return 1  # not ours to lose: someone else reaped it
            if pid == 0:
                break
            if pid == child:
                return exit_code(status)
