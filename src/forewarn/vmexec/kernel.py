"""The Linux calls a VM's sandbox is made of, on the standard library: ``unshare``,
``mount`` and the parent-death signal through libc (``os.unshare`` is Python 3.12's), the
loopback interface brought up and given addresses over rtnetlink (no ``ip`` binary needed).

Each call raises ``OSError`` with the kernel's errno, as ``os`` functions do.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import signal
import socket
import struct

__all__ = [
    "CLONE_NEWNET",
    "CLONE_NEWNS",
    "CLONE_NEWPID",
    "CLONE_NEWUSER",
    "CLONE_NEWUTS",
    "add_address",
    "die_with_parent",
    "link_up",
    "make_private",
    "map_ids",
    "mount_proc",
    "mount_tmpfs",
    "unshare",
]

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

_MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 2, 4, 8
_MS_REC, _MS_PRIVATE = 0x4000, 1 << 18
_PR_SET_PDEATHSIG = 1


@functools.cache
def _c() -> ctypes.CDLL:
    """libc, loaded once (errno kept for ``_check``)."""
    return ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def unshare(flags: int) -> None:
    """Move this process into new namespaces (``CLONE_NEW*`` flags)."""
    _check(_c().unshare(ctypes.c_int(flags)), "unshare")


def die_with_parent(parent: int) -> None:
    """SIGKILL this process when its parent dies; exit now if ``parent`` is gone already
    (it may die between the fork and this call)."""
    _check(_c().prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl")
    if os.getppid() != parent:
        os._exit(1)


def map_ids(uid: int, gid: int) -> None:
    """In a new user namespace: the caller's own uid and gid map to themselves (the
    only mapping an unprivileged process may write), groups dropped as the kernel asks."""
    with open("/proc/self/setgroups", "w") as setgroups:
        setgroups.write("deny")
    with open("/proc/self/uid_map", "w") as uid_map:
        uid_map.write(f"{uid} {uid} 1")
    with open("/proc/self/gid_map", "w") as gid_map:
        gid_map.write(f"{gid} {gid} 1")


def _mount(source: str, target: str, fstype: str | None, flags: int, data: str | None) -> None:
    _check(
        _c().mount(
            source.encode(),
            target.encode(),
            None if fstype is None else fstype.encode(),
            ctypes.c_ulong(flags),
            None if data is None else data.encode(),
        ),
        f"mount {target}",
    )


def make_private() -> None:
    """In a new mount namespace: no mount made here propagates to the host's."""
    _mount("none", "/", None, _MS_REC | _MS_PRIVATE, None)


def mount_tmpfs(target: str) -> None:
    """A small empty tmpfs over ``target`` (in this mount namespace only)."""
    _mount("forewarn", target, "tmpfs", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, "size=64k,mode=755")


def mount_proc() -> None:
    """A /proc of this process's PID namespace."""
    _mount("proc", "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, None)


# ---------------------------------------------------------------------- rtnetlink

_RTM_NEWLINK, _RTM_NEWADDR = 16, 20
_NLMSG_ERROR = 2
_NLM_F_REQUEST, _NLM_F_ACK, _NLM_F_EXCL, _NLM_F_CREATE = 1, 4, 0x200, 0x400
_IFA_ADDRESS, _IFA_LOCAL = 1, 2
_IFF_UP = 1


def _attribute(kind: int, data: bytes) -> bytes:
    size = 4 + len(data)
    return struct.pack("=HH", size, kind) + data + b"\0" * (-size % 4)


def _ask(kind: int, flags: int, payload: bytes) -> None:
    """Send one rtnetlink request and wait for its acknowledgement."""
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE) as sock:
        header = struct.pack(
            "=IHHII", 16 + len(payload), kind, flags | _NLM_F_REQUEST | _NLM_F_ACK, 1, 0
        )
        sock.sendall(header + payload)
        answer = sock.recv(65536)
    _, answer_kind, _, _, _ = struct.unpack_from("=IHHII", answer)
    if answer_kind == _NLMSG_ERROR:
        (error,) = struct.unpack_from("=i", answer, 16)
        if error:
            raise OSError(-error, f"rtnetlink: {os.strerror(-error)}")


def link_up(interface: str) -> None:
    """Bring ``interface`` up (a new network namespace's ``lo`` starts down)."""
    index = socket.if_nametoindex(interface)
    _ask(_RTM_NEWLINK, 0, struct.pack("=BxHiII", socket.AF_UNSPEC, 0, index, _IFF_UP, _IFF_UP))


def add_address(interface: str, address: str) -> None:
    """Give ``interface`` the IPv4 ``address``/32 (what ``ip addr add`` does)."""
    index = socket.if_nametoindex(interface)
    packed = socket.inet_aton(address)
    message = struct.pack("=BBBBI", socket.AF_INET, 32, 0, 0, index)
    message += _attribute(_IFA_LOCAL, packed) + _attribute(_IFA_ADDRESS, packed)
    _ask(_RTM_NEWADDR, _NLM_F_CREATE | _NLM_F_EXCL, message)
