"""The waiting half of every process between forewarn and COMMAND: wait for one child,
pass on the signals meant for it, and end with its exit status.

Signals are taken with ``sigwaitinfo`` (blocked, never handled), which also tells who
sent each: a terminal's Ctrl-C reaches the whole foreground process group, COMMAND
included, and is not passed on a second time; a ``kill`` of forewarn is. A PID
namespace's first process reaps every orphan there, as an init does.
"""

from __future__ import annotations

import contextlib
import os
import signal

__all__ = ["FORWARDED", "exit_code", "supervise"]

#: What ``forewarn exec`` passes on to COMMAND.
FORWARDED = frozenset({
    signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
    signal.SIGUSR2,
})  # fmt: skip

#: ``si_code`` of a signal the kernel sent (a terminal's, to its foreground group).
_SI_KERNEL = 0x80


def exit_code(status: int) -> int:
    """A wait status as a shell reports it: the exit code, or 128 + the signal."""
    code = os.waitstatus_to_exitcode(status)
    return code if code >= 0 else 128 - code


def supervise(child: int) -> int:
    """Wait for ``child``, passing ``FORWARDED`` signals on; its exit code.

    The caller has blocked ``FORWARDED`` and ``SIGCHLD`` (before forking ``child``)."""
    waited = {*FORWARDED, signal.SIGCHLD}
    while True:
        info = signal.sigwaitinfo(waited)
        if info.si_signo != signal.SIGCHLD:
            if info.si_code != _SI_KERNEL:
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
