"""The endpoint as the Scheduled Events articles find it on a VM without a virtual
network: the address DHCP option 245 carries, read from dhclient and systemd-networkd
lease files (``forewarn discover``, the agent); the variables and the default as
``resolve_endpoint`` has them.
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from forewarn.client.endpoint import (
    DEFAULT_ENDPOINT,
    LEGACY_VARIABLE,
    URL_VARIABLE,
    resolve_endpoint,
)

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["DEFAULT_LEASE_GLOBS", "Discovery", "discover", "option_245"]

#: Where dhclient (Debian/Ubuntu, RHEL, NetworkManager) and systemd-networkd keep leases.
DEFAULT_LEASE_GLOBS: tuple[str, ...] = (
    "/var/lib/dhcp/dhclient*.leases",
    "/var/lib/dhclient/*.lease*",
    "/var/lib/NetworkManager/*.lease",
    "/run/systemd/netif/leases/*",
)

# dhclient: `option unknown-245 a9:fe:a9:fe;` (hex bytes, no zero padding) or a string.
_DHCLIENT = re.compile(r'option\s+unknown-245\s+("(?:[^"\\]|\\.)*"|[0-9A-Fa-f:]+)\s*;')
# systemd-networkd: `OPTION_245=A9FEA9FE`.
_NETWORKD = re.compile(r"^OPTION_245=([0-9A-Fa-f:]+)\s*$", re.MULTILINE)
_STRING_PART = re.compile(r"\\([0-7]{3})|\\(.)|(.)", re.DOTALL)


def _address(data: bytes) -> str | None:
    """Four bytes as a dotted IPv4 address (what ``ipaddress.IPv4Address`` writes)."""
    if len(data) != 4:
        return None
    return ".".join(map(str, data))


def _hex_bytes(text: str) -> bytes | None:
    try:
        if ":" in text:
            return bytes(int(part, 16) for part in text.split(":"))
        return bytes.fromhex(text)
    except ValueError:
        return None


def _dhclient_string(quoted: str) -> bytes:
    """A dhclient quoted option value (octal escapes for unprintable bytes) as bytes."""
    out = bytearray()
    for octal, escaped, plain in _STRING_PART.findall(quoted[1:-1]):
        if octal:
            out.append(int(octal, 8) & 0xFF)
        else:
            out.extend((escaped or plain).encode("latin-1", "replace"))
    return bytes(out)


def option_245(text: str) -> str | None:
    """The last IPv4 address option 245 carries in one lease file's text, or None."""
    found: str | None = None
    for match in _DHCLIENT.finditer(text):
        value = match.group(1)
        data = _dhclient_string(value) if value.startswith('"') else _hex_bytes(value)
        found = (_address(data) if data is not None else None) or found
    for match in _NETWORKD.finditer(text):
        data = _hex_bytes(match.group(1))
        found = (_address(data) if data is not None else None) or found
    return found


@dataclass(frozen=True, slots=True)
class Discovery:
    """The endpoint found, and where from (a variable, a lease file, or the default)."""

    url: str
    source: str
    lease_file: Path | None = None


def _lease_files(lease_files: Iterable[str | os.PathLike[str]] | None) -> list[str]:
    if lease_files is not None:
        return [os.fspath(p) for p in lease_files]
    paths: list[str] = []
    for pattern in DEFAULT_LEASE_GLOBS:
        paths.extend(sorted(glob.glob(pattern)))
    return paths


def _read(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as lease:
        return lease.read()


def discover(
    lease_files: Iterable[str | os.PathLike[str]] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
) -> Discovery:
    """Find the endpoint as the articles do for VMs with or without a virtual network.

    Order: $FOREWARN_IMDS_URL, $SCHEDULEDEVENTSIP, DHCP option 245 in the lease files
    (the most recently written file wins; within a file, the last lease), then
    ``http://169.254.169.254``. ``lease_files`` replaces the system's lease locations.
    """
    env = os.environ if environ is None else environ
    for name in (URL_VARIABLE, LEGACY_VARIABLE):
        if env.get(name, "").strip():
            return Discovery(resolve_endpoint(environ=env), f"${name}")
    hits: list[tuple[float, str, str]] = []
    for path in _lease_files(lease_files):
        try:
            text = _read(path)
            mtime = os.stat(path).st_mtime
        except OSError:
            continue  # unreadable or vanished: other leases may still tell
        address = option_245(text)
        if address is not None:
            hits.append((mtime, path, address))
    if hits:
        _, path, address = max(hits, key=lambda hit: hit[0])
        from pathlib import Path  # only for a lease found: it loads urllib.parse, ipaddress

        return Discovery(f"http://{address}", "DHCP option 245", Path(path))
    return Discovery(DEFAULT_ENDPOINT, "default")
