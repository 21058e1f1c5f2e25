"""``run``: COMMAND as a VM of the fleet, from the fork to its exit status.

forewarn forks the sandbox (``sandbox.py``), takes the listening sockets it made inside
the VM's network namespace, relays their connections from the host's network
(``relay.py``) and passes SIGINT, SIGTERM and the like on, until COMMAND ends; its exit
status is the run's.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
import signal
import socket
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from forewarn.vmexec import relay
from forewarn.vmexec.errors import NamespacesUnavailable
from forewarn.vmexec.sandbox import Sandbox, block_forwarded, enter
from forewarn.vmexec.supervise import FORWARDED, exit_code
from forewarn.vmexec.target import VmTarget
from forewarn.vmexec.terminal import Terminal

__all__ = [
    "ENDPOINT_ADDRESS",
    "HIDDEN_VARIABLES",
    "NON_VNET_ADDRESS",
    "Forward",
    "parse_forward",
    "run",
]

#: Where every Azure VM finds the endpoint.
ENDPOINT_ADDRESS = "169.254.169.254"
#: Where a VM without a virtual network finds it too: the address DHCP option 245 carries
#: (Azure's host address; the articles' non-VNet discovery sample reads it from a lease).
NON_VNET_ADDRESS = "168.63.129.16"
#: What would point a VM-side client elsewhere than the real address: not passed on.
HIDDEN_VARIABLES = ("FOREWARN_IMDS_URL", "SCHEDULEDEVENTSIP")


@dataclass(frozen=True, slots=True)
class Forward:
    """A port of the host's loopback, reachable at the same address inside."""

    host: str
    port: int


def parse_forward(text: str) -> Forward:
    """``PORT``, ``HOST:PORT`` or ``[V6]:PORT`` of a loopback address (ValueError else)."""
    host, sep, port_text = text.rpartition(":")
    if not sep:
        host = "127.0.0.1"
    host = host.removeprefix("[").removesuffix("]")
    if host == "localhost":
        host = "127.0.0.1"
    try:
        port = int(port_text)
    except ValueError:
        raise ValueError(f"--forward {text!r}: expected PORT or HOST:PORT") from None
    if not 0 < port < 65536:
        raise ValueError(f"--forward {text!r}: port {port} is outside 1..65535")
    import ipaddress

    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise ValueError(
            f"--forward {text!r}: only the host's loopback can be forwarded "
            "(127.0.0.0/8 or ::1), the rest of its network stays outside"
        )
    return Forward(host, port)


def _why_no_namespaces(error: str, code: int | None) -> str:
    """What keeps namespaces from this system, as far as /proc tells."""
    hints: list[str] = []
    for path, off in (
        ("/proc/sys/user/max_user_namespaces", "0"),
        ("/proc/sys/kernel/unprivileged_userns_clone", "0"),
        ("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "1"),
    ):
        with contextlib.suppress(OSError), open(path, encoding="ascii") as setting:
            if setting.read().strip() == off:
                hints.append(f"{path.removeprefix('/proc/sys/').replace('/', '.')} is {off}")
    if os.geteuid() != 0 and code in (errno.EPERM, errno.ENOSPC, errno.EINVAL, errno.EACCES):
        hints.append("unprivileged user namespaces are off here: run it as root")
    return error + (f" ({'; '.join(hints)})" if hints else "")


def _unavailable(vm: VmTarget, why: str) -> NamespacesUnavailable:
    url = f"http://{vm.upstream[0]}:{vm.upstream[1]}"
    if vm.source is None:
        how = f"FOREWARN_IMDS_URL={url} (or --url {url}) speaks as VM {vm.name!r}"
    else:
        how = (
            f"FOREWARN_IMDS_URL={url} from source address {vm.source} (or --url {url} "
            f"--source-address {vm.source}) speaks as VM {vm.name!r}"
        )
    return NamespacesUnavailable(
        f"cannot give VM {vm.name!r} its own network namespace here: {why}. Point the "
        f"program at the endpoint instead: {how}"
    )


def _routes(vm: VmTarget, forwards: Sequence[Forward]) -> tuple[tuple[str, int], ...]:
    listens = [(ENDPOINT_ADDRESS, 80)]
    if vm.non_vnet:
        listens.append((NON_VNET_ADDRESS, 80))
    listens += [(f.host, f.port) for f in forwards]
    return tuple(listens)


def _forward_signals(child: int, terminal: Terminal) -> None:
    """Pass every FORWARDED signal forewarn gets on to the sandbox, once: COMMAND is in
    the sandbox's own process group, so none of them reached it already (a terminal's
    Ctrl-C, when forewarn had the terminal, went to that group itself). A stop of the
    sandbox stops forewarn too (``Terminal.follow_stop``)."""
    while True:
        info = signal.sigwaitinfo({*FORWARDED, signal.SIGCHLD})
        if info.si_signo == signal.SIGCHLD:
            terminal.follow_stop(child)
            continue
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, info.si_signo)


async def _relay_until_exit(child: int, routes: Sequence[relay.Route]) -> int:
    loop = asyncio.get_running_loop()
    ended: asyncio.Future[None] = loop.create_future()
    pidfd = os.pidfd_open(child)

    def on_exit() -> None:
        if not ended.done():
            ended.set_result(None)

    loop.add_reader(pidfd, on_exit)
    try:
        await relay.serve(routes, ended)
    finally:
        loop.remove_reader(pidfd)
        os.close(pidfd)
    _, status = os.waitpid(child, 0)
    return exit_code(status)


def run(
    vm: VmTarget,
    argv: Sequence[str],
    *,
    forwards: Sequence[Forward] = (),
    environ: Mapping[str, str] | None = None,
) -> int:
    """Run ``argv`` as ``vm`` until it ends; its exit status (ExecError before it runs)."""
    if not sys.platform.startswith("linux"):
        raise _unavailable(vm, f"network namespaces are Linux's, this is {sys.platform}")
    env = {k: v for k, v in (os.environ if environ is None else environ).items()
           if k not in HIDDEN_VARIABLES}  # fmt: skip
    listens = _routes(vm, forwards)
    addresses = (ENDPOINT_ADDRESS, NON_VNET_ADDRESS) if vm.non_vnet else (ENDPOINT_ADDRESS,)
    mask = block_forwarded()
    plan = Sandbox(
        hostname=vm.computer_name, addresses=addresses, listens=listens,
        option_245=NON_VNET_ADDRESS if vm.non_vnet else None, argv=tuple(argv), env=env,
        mask=mask,
    )  # fmt: skip
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    terminal = Terminal()  # before the sandbox may take the terminal
    sys.stdout.flush()
    sys.stderr.flush()
    child = os.fork()
    if child == 0:
        ours.close()
        enter(plan, theirs)
    theirs.close()
    try:
        return _supervise(vm, child, ours, listens, addresses, mask, terminal)
    finally:
        terminal.reclaim(child)
        terminal.close()


def _supervise(
    vm: VmTarget,
    child: int,
    ours: socket.socket,
    listens: Sequence[tuple[str, int]],
    addresses: Sequence[str],
    mask: frozenset[signal.Signals],
    terminal: Terminal,
) -> int:
    """From the fork on: the sandbox's report, then relay and pass signals until it ends."""
    try:
        message, fds, _, _ = socket.recv_fds(ours, 1 << 16, len(listens))
    finally:
        ours.close()
    report: dict[str, Any] = (
        json.loads(message) if message else {"error": "the sandbox ended before it was made"}
    )
    if "error" in report or len(fds) != len(listens):
        for fd in fds:
            os.close(fd)
        os.waitpid(child, 0)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        raise _unavailable(vm, _why_no_namespaces(str(report.get("error")), report.get("errno")))
    if vm.non_vnet and report.get("lease") is None:
        print(
            "forewarn exec: no DHCP lease directory on this system to hold VM "
            f"{vm.name!r}'s option 245; it finds the endpoint at {NON_VNET_ADDRESS} and "
            f"{ENDPOINT_ADDRESS} all the same",
            file=sys.stderr,
        )
    routes = [
        relay.Route(socket.socket(fileno=fd), vm.upstream if i < len(addresses) else listens[i],
                    vm.source if i < len(addresses) else None)
        for i, fd in enumerate(fds)
    ]  # fmt: skip
    threading.Thread(target=_forward_signals, args=(child, terminal), daemon=True).start()
    try:
        return asyncio.run(_relay_until_exit(child, routes))
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)
        raise
