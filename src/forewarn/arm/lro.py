"""Long-running operations as ARM reports them, over the platform's operations.

An ARM operation is one or more platform operations; its name lists their ids, so the
status needs no state of its own (and survives a restart). It is over when every
platform operation's impact is over (the VM is back; a deleted VM is gone) or the
operation was canceled:
``begin_restart(...).result()`` returns when the reboot is over.
"""

from __future__ import annotations

import datetime
from typing import Any

from forewarn.arm.errors import ArmError
from forewarn.fabric import Fabric, NotFoundError, OperationRecord, OperationState

__all__ = ["LongRunning", "decode_name", "encode_name"]

_SEPARATOR = "."


def encode_name(operations: list[OperationRecord]) -> str:
    return _SEPARATOR.join(op.id for op in operations)


def decode_name(name: str) -> list[str]:
    ids = [part for part in name.split(_SEPARATOR) if part]
    if not ids or len(ids) > 10_000:
        raise ArmError(404, "ResourceNotFound", f"The operation '{name[:80]}' was not found.")
    return ids


def _iso(at: float) -> str:
    return datetime.datetime.fromtimestamp(at, datetime.UTC).isoformat().replace("+00:00", "Z")


class LongRunning:
    """Status documents and polling hints for ARM operations."""

    def __init__(self, fabric: Fabric) -> None:
        self.fabric = fabric

    def operations(self, name: str) -> list[OperationRecord]:
        try:
            return [self.fabric.operation(op_id) for op_id in decode_name(name)]
        except NotFoundError:
            raise ArmError(
                404, "ResourceNotFound", f"The operation '{name[:80]}' was not found."
            ) from None

    def _ends_at(self, op: OperationRecord) -> float | None:
        """When an operation's impact is over (None: not started yet)."""
        if op.state is OperationState.CANCELED:
            return op.ended_at or op.created_at
        if op.deletes_vms:  # over once the VMs are gone, when the operation completes
            return op.ended_at if op.state is OperationState.COMPLETED else None
        if op.started_at is None:
            return None
        return op.started_at + op.impact_seconds

    def done(self, ops: list[OperationRecord]) -> bool:
        self.fabric.catch_up()
        now = self.fabric.clock.now()
        ends = [self._ends_at(self.fabric.operation(op.id)) for op in ops]
        return all(end is not None and now >= end for end in ends)

    def status(self, name: str) -> dict[str, Any]:
        """The Azure-AsyncOperation document."""
        ops = self.operations(name)
        done = self.done(ops)
        ops = [self.fabric.operation(op.id) for op in ops]
        canceled = all(op.state is OperationState.CANCELED for op in ops)
        body: dict[str, Any] = {
            "name": name,
            "startTime": _iso(min(op.created_at for op in ops)),
            "status": "InProgress" if not done else ("Canceled" if canceled else "Succeeded"),
        }
        if done:
            ends = [self._ends_at(op) or op.created_at for op in ops]
            body["endTime"] = _iso(max(ends))
        if done and canceled:
            body["error"] = {
                "code": "OperationCanceled",
                "message": "The operation was canceled: its Scheduled Event was canceled.",
            }
        return body

    def retry_after_ms(self, ops: list[OperationRecord]) -> int:
        """How long a poller should wait: about half the real time left, 50 ms to 10 s."""
        clock = self.fabric.clock
        ends = [self._ends_at(self.fabric.operation(op.id)) for op in ops]
        if clock.rate == 0:  # a virtual clock moves when told: look again soon
            return 250
        pending = [
            end if end is not None else (op.remove_at or op.not_before)
            for op, end in zip((self.fabric.operation(op.id) for op in ops), ends, strict=True)
        ]
        real = max(clock.real_seconds_until(at) for at in pending)
        return int(min(10_000, max(50, real * 1000 / 2)))
