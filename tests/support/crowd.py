"""Many connections from many loopback addresses that say (almost) nothing: the attack
the descriptor guards of the metadata endpoint and of the API listeners are tested with."""

from __future__ import annotations

import select
import socket
import threading

__all__ = ["Crowd", "crowd_address"]


def crowd_address(net: int, i: int) -> str:
    """The ``i``-th address of the crowd of ``net`` (127.N.x.y; no VM of the demo fleet has
    one for ``net`` 9 or more)."""
    return f"127.{net}.{i // 250}.{i % 250 + 1}"


class Crowd:
    """``size`` connections to ``port``, one per address of ``net``, each sending ``first``
    (maybe nothing) and nothing more; ``closed`` counts those the server closed. With
    ``reconnect``, one the server closed (or refused) is opened again at once (an
    attacker repeats)."""

    def __init__(
        self, port: int, net: int, size: int, *, first: bytes = b"", reconnect: bool = False
    ) -> None:
        self.port = port
        self.net = net
        self.size = size
        self.first = first
        self.reconnect = reconnect
        self.sockets: dict[int, socket.socket] = {}
        self.closed = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._keep_open, daemon=True)

    def _open(self, i: int) -> None:
        sock = socket.socket()
        sock.settimeout(2)
        try:
            sock.bind((crowd_address(self.net, i), 0))
            sock.connect(("127.0.0.1", self.port))
            if self.first:
                sock.send(self.first)
        except OSError:
            sock.close()
            return
        self.sockets[i] = sock

    def start(self) -> Crowd:
        for i in range(self.size):
            self._open(i)
        self._thread.start()
        return self

    def _keep_open(self) -> None:
        while not self._stop.wait(0.05):
            by_fd = {s.fileno(): i for i, s in self.sockets.items()}
            readable, _, _ = select.select(list(by_fd), [], [], 0)
            for fd in readable:  # the server closed it (or answered, a 408)
                i = by_fd[fd]
                self.sockets.pop(i).close()
                self.closed += 1
            if self.reconnect:
                for i in set(range(self.size)) - set(self.sockets):
                    self._open(i)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)
        for sock in self.sockets.values():
            sock.close()
