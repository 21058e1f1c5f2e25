"""Loopback ports for the servers tests start, each handed out once per test process.

A port the kernel picks for ``bind(0)`` comes from its ephemeral range: it may pick the
same one again for the next call before the server has bound the first (one server was
given one port for two listeners), or for another pytest-xdist worker, or for an outgoing
connection. These come from below that range (32768 on Linux), a slice per xdist worker,
in turn from a random start, each checked free when handed out.
"""

from __future__ import annotations

import os
import random
import re
import socket
import threading

__all__ = ["can_bind", "free_port", "free_ports"]

#: The ports handed out: 20000-31999, 3,000 per worker (four slices, then they repeat).
FIRST, SLICE, SLICES = 20_000, 3_000, 4


def _worker_slice() -> range:
    match = re.fullmatch(r"gw(\d+)", os.environ.get("PYTEST_XDIST_WORKER", ""))
    start = FIRST + (int(match.group(1)) % SLICES if match else 0) * SLICE
    return range(start, start + SLICE)


_SLICE = _worker_slice()
_lock = threading.Lock()
_next = random.randrange(len(_SLICE))


def can_bind(port: int) -> bool:
    """Whether nobody listens on loopback ``port`` (or holds it) right now."""
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def free_ports(count: int) -> int:
    """The first of ``count`` consecutive loopback ports that are free right now and were
    not handed out before by this process (until its slice wraps around)."""
    global _next
    with _lock:
        for _ in range(len(_SLICE)):
            if _next + count > len(_SLICE):
                _next = 0
            base = _SLICE[_next]
            _next += count
            if all(can_bind(port) for port in range(base, base + count)):
                return base
    raise RuntimeError(f"no {count} free consecutive ports in {_SLICE}")


def free_port() -> int:
    """A loopback port nobody listens on right now, not handed out before."""
    return free_ports(1)
