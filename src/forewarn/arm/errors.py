"""ARM's error shape: ``{"error": {"code", "message"}}`` with the HTTP status.

ArmError        raised by ARM handlers and look-ups; the app answers it as ARM would
(fabric errors are mapped to it in one place: ``from_fabric``)
"""

from __future__ import annotations

from typing import Any

from forewarn.fabric import Conflict, FabricError, InvalidOperation, NotFoundError, StoreUnavailable
from forewarn.fleet import UnknownName

__all__ = ["ArmError", "from_fabric"]


class ArmError(Exception):
    """An ARM error answer: status, ARM error code, message."""

    def __init__(
        self, status: int, code: str, message: str, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message}}


def from_fabric(exc: FabricError | UnknownName) -> ArmError:
    """The ARM answer to a platform refusal."""
    if isinstance(exc, NotFoundError | UnknownName):
        return ArmError(404, "ResourceNotFound", str(exc))
    if isinstance(exc, Conflict | InvalidOperation):
        return ArmError(409, "OperationNotAllowed", str(exc))
    if isinstance(exc, StoreUnavailable):
        return ArmError(503, "ServiceUnavailable", str(exc))
    return ArmError(400, "BadRequest", str(exc))
