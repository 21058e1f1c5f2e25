"""systemd's notify protocol: READY, STATUS, STOPPING and watchdog pings, no dependency.

Under ``Type=notify`` systemd sets ``NOTIFY_SOCKET`` (a path, or ``@name`` for an abstract
socket) and, with ``WatchdogSec``, ``WATCHDOG_USEC`` (and ``WATCHDOG_PID``): the agent
sends one datagram per message, and pings at half the watchdog interval so a hung agent
is restarted. Without those variables every call does nothing.
"""

from __future__ import annotations

import os
import socket

__all__ = ["notify", "watchdog_interval"]


def notify(message: str) -> bool:
    """Send ``message`` (e.g. "READY=1") to systemd; False when not run under it."""
    address = os.environ.get("NOTIFY_SOCKET", "")
    if not address:
        return False
    if address.startswith("@"):
        address = "\0" + address[1:]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.sendto(message.encode(), address)
    except OSError:
        return False
    return True


def watchdog_interval() -> float | None:
    """Seconds between pings (half of ``WATCHDOG_USEC``), or None with no watchdog."""
    usec = os.environ.get("WATCHDOG_USEC", "")
    pid = os.environ.get("WATCHDOG_PID", "")
    if not usec.isdigit() or int(usec) == 0 or (pid and pid != str(os.getpid())):
        return None
    return int(usec) / 2e6
