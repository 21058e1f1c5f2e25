"""Run ARGV as nobody where user namespaces cannot be made: inside a user namespace of
our own (root's uids mapped one to one) whose ``user.max_user_namespaces`` is 0, a
limit that holds there and below only (the machine's own stays as it is).

Run as root: ``python no_userns.py ARGV...``; exits with ARGV's status.
"""

from __future__ import annotations

import ctypes
import os
import sys

CLONE_NEWUSER = 0x10000000


def main(argv: list[str]) -> int:
    ready_r, ready_w = os.pipe()
    mapped_r, mapped_w = os.pipe()
    child = os.fork()
    if child == 0:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.unshare(CLONE_NEWUSER) != 0:
            os._exit(100)
        os.write(ready_w, b"u")
        os.read(mapped_r, 1)  # the parent wrote our uid and gid maps
        with open("/proc/sys/user/max_user_namespaces", "w") as limit:
            limit.write("0")
        os.setgroups([])
        os.setgid(65534)
        os.setuid(65534)
        os.execvp(argv[0], argv)
    os.read(ready_r, 1)
    for name in ("uid_map", "gid_map"):
        with open(f"/proc/{child}/{name}", "w") as mapping:
            mapping.write("0 0 65536")
    os.write(mapped_w, b"m")
    _, status = os.waitpid(child, 0)
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
