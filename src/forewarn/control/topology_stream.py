"""``GET /api/v1/topology`` streamed: every scope and VM of the fleet, written as it is made.

A million-VM fleet's topology is some 400 MB of JSON: built as one document it held the
event loop (and the VMs' endpoint) for tens of seconds and that much memory at once. Here
each scope's head, then its VMs ``BATCH`` at a time, then each host, are encoded and sent
in turn, the loop given back between pieces; memory holds one batch. The document is the
same as before (one scope a line).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import asdict
from typing import Any

import msgspec

from forewarn.fabric import Fabric

__all__ = ["BATCH", "topology_pieces"]

#: VMs encoded per piece (about 400 KB of JSON).
BATCH = 1000

_encode = msgspec.json.encode


def _batches(names: Iterable[str]) -> Iterable[list[str]]:
    it = iter(names)
    while batch := list(itertools.islice(it, BATCH)):
        yield batch


async def topology_pieces(fabric: Fabric, vm_out: Callable[[str], Any]) -> AsyncIterator[bytes]:
    """The topology document in pieces: ``{"scopes": [...], "hosts": {...},
    "default_vm": ...}``, each VM as ``vm_out`` makes it."""
    yield b'{"scopes":['
    for i, scope in enumerate(fabric.topology.scopes.values()):
        head = _encode({
            "id": scope.id,
            "kind": scope.kind.value,
            "update_domains": scope.update_domains,
            "fault_domains": scope.fault_domains,
            "policy": asdict(fabric.policy(scope.id)),
            "incarnation": fabric.view(scope.id).incarnation,
            "enabled": fabric.is_enabled(scope.id),
        })  # fmt: skip
        yield (b",\n" if i else b"\n") + head[:-1] + b',"vms":['
        for k, batch in enumerate(_batches(scope.vm_names)):
            yield (b"," if k else b"") + _encode([vm_out(n) for n in batch])[1:-1]
            await asyncio.sleep(0)
        yield b"]}"
    yield b'\n],"hosts":{'
    hosts = fabric.topology.hosts()
    for k, batch in enumerate(_batches(hosts)):
        piece = _encode({h: [vm.name for vm in hosts[h]] for h in batch})[1:-1]
        yield (b"," if k else b"") + piece
        await asyncio.sleep(0)
    yield b'},"default_vm":' + _encode(fabric.topology.default_vm) + b"}\n"
