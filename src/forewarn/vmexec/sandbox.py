"""COMMAND's side: a forked child of forewarn that makes the VM's world and runs COMMAND
in it.

The child enters new network, UTS, mount and PID namespaces (and a user namespace
first when not root, mapping the caller's own uid and gid), brings ``lo`` up with the
endpoint's addresses on it, takes the VM's host name, creates every listening socket
COMMAND will connect to and hands them to forewarn over a unix socket (SCM_RIGHTS):
forewarn, still in the host's network, relays each connection. Then the child forks the
namespace's first process, which forks COMMAND. It leaves forewarn's process group first
(for one of its own, with the terminal if forewarn had it: ``terminal.py``).

Nothing outlives forewarn: each process here is killed when its parent dies
(PR_SET_PDEATHSIG), and when the namespace's first process ends the kernel kills every
process left in it; the namespaces and their mounts go with their last process.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import socket
import sys
import traceback
from collections.abc import Mapping
from dataclasses import dataclass

from forewarn.vmexec import kernel
from forewarn.vmexec.supervise import FORWARDED, from_outside_namespace, from_process, supervise
from forewarn.vmexec.terminal import leave_group

__all__ = ["LEASE_DIRS", "Sandbox", "block_forwarded", "enter"]

#: Where ``forewarn discover`` and the agent look for DHCP leases (the non-VNet
#: discovery), with the file a lease is written as there, in that client's format.
LEASE_DIRS: tuple[tuple[str, str, str], ...] = (
    ("/var/lib/dhcp", "dhclient.eth0.leases", "dhclient"),
    ("/var/lib/dhclient", "dhclient-eth0.leases", "dhclient"),
    ("/var/lib/NetworkManager", "internal-eth0.lease", "dhclient"),
    ("/run/systemd/netif/leases", "2", "networkd"),
)

#: COMMAND could not be run (as a shell says it).
NOT_FOUND, NOT_EXECUTABLE = 127, 126


@dataclass(frozen=True, slots=True)
class Sandbox:
    """What COMMAND's world is made of."""

    hostname: str
    #: Addresses given to ``lo`` beside 127.0.0.1 (the endpoint's).
    addresses: tuple[str, ...]
    #: (host, port) to listen on inside, in order: the sockets forewarn gets.
    listens: tuple[tuple[str, int], ...]
    #: The address DHCP option 245 carries in the VM's lease file, or None (a VNet VM).
    option_245: str | None
    argv: tuple[str, ...]
    env: Mapping[str, str]
    #: The signal mask COMMAND starts with (forewarn's before it blocked FORWARDED).
    mask: frozenset[signal.Signals]


def _lease_text(kind: str, address: str) -> str:
    octets = address.split(".")
    if kind == "networkd":
        return "OPTION_245=" + "".join(f"{int(o):02X}" for o in octets) + "\n"
    hexed = ":".join(f"{int(o):x}" for o in octets)
    return f'lease {{\n  interface "eth0";\n  option unknown-245 {hexed};\n}}\n'


def _write_lease(address: str) -> str | None:
    """The VM's lease file, on a tmpfs over the first lease directory this system has."""
    for directory, name, kind in LEASE_DIRS:
        if os.path.isdir(directory):
            kernel.mount_tmpfs(directory)
            path = os.path.join(directory, name)
            with open(path, "w", encoding="ascii") as lease:
                lease.write(_lease_text(kind, address))
            return path
    return None


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(socket.SOMAXCONN)
    return sock


def _make_world(plan: Sandbox) -> tuple[list[socket.socket], str | None]:
    """Enter the namespaces and build the VM's network, name and files in them."""
    flags = kernel.CLONE_NEWNET | kernel.CLONE_NEWUTS | kernel.CLONE_NEWNS | kernel.CLONE_NEWPID
    uid, gid = os.geteuid(), os.getegid()
    if uid != 0:
        kernel.unshare(kernel.CLONE_NEWUSER)
        kernel.map_ids(uid, gid)
    kernel.unshare(flags)
    kernel.make_private()
    kernel.link_up("lo")
    for address in plan.addresses:
        kernel.add_address("lo", address)
    socket.sethostname(plan.hostname)
    lease = None if plan.option_245 is None else _write_lease(plan.option_245)
    return [_listen(host, port) for host, port in plan.listens], lease


def _run_command(plan: Sandbox) -> None:
    """In COMMAND's process: its signal state as forewarn's caller left it, then exec."""
    try:
        signal.pthread_sigmask(signal.SIG_SETMASK, plan.mask)
        for name in ("SIGPIPE", "SIGXFSZ"):  # Python ignores them; COMMAND must not
            signal.signal(getattr(signal, name), signal.SIG_DFL)
        program = shutil.which(plan.argv[0], path=plan.env.get("PATH", os.defpath))
        if program is None:  # as a shell says it (a PATH entry it may not enter is no match)
            print(f"forewarn exec: {plan.argv[0]}: command not found", file=sys.stderr)
            os._exit(NOT_FOUND)
        os.execve(program, list(plan.argv), dict(plan.env))
    except OSError as exc:
        print(f"forewarn exec: {plan.argv[0]}: {exc.strerror}", file=sys.stderr)
        os._exit(NOT_EXECUTABLE)


def _first_process(plan: Sandbox, parent_alive: int) -> None:
    """PID 1 of the VM's PID namespace: its own /proc, then COMMAND, reaped as an init."""
    kernel.die_with_parent(0)  # its parent is outside the namespace: getppid() is 0
    if select.select([parent_alive], [], [], 0)[0]:
        os._exit(1)  # the parent died before the line above: end now
    with contextlib.suppress(OSError):  # a /proc partly hidden (a container's): the host's
        kernel.mount_proc()
    command = os.fork()
    if command == 0:
        _run_command(plan)
    os._exit(supervise(command, from_outside_namespace))


def enter(plan: Sandbox, channel: socket.socket) -> None:
    """The forked child's whole life: build the world, report, run COMMAND; never returns."""
    code = 1
    try:
        forewarn = os.getppid()
        kernel.die_with_parent(forewarn)
        leave_group()
        try:
            listeners, lease = _make_world(plan)
        except OSError as exc:
            failure = {"error": exc.strerror or str(exc), "errno": exc.errno}
            channel.sendall(json.dumps(failure).encode())
            os._exit(1)
        report = json.dumps({"lease": lease}).encode()
        socket.send_fds(channel, [report], [s.fileno() for s in listeners])
        for sock in listeners:
            sock.close()
        channel.close()
        alive_read, alive_write = os.pipe()
        first = os.fork()
        if first == 0:
            os.close(alive_write)
            _first_process(plan, alive_read)
        os.close(alive_read)
        code = supervise(first, from_process(forewarn))
    except BaseException:
        traceback.print_exc()
    finally:
        os._exit(code)


def block_forwarded() -> frozenset[signal.Signals]:
    """Block what ``supervise`` waits for (before forking); the mask as it was."""
    before = signal.pthread_sigmask(signal.SIG_BLOCK, {*FORWARDED, signal.SIGCHLD})
    return frozenset(signal.Signals(number) for number in before)
