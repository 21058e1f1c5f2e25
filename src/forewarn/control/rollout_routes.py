"""Rollouts as the control API lists them: ``GET /api/v1/rollouts`` and one by id.

A rollout walks update domains: a scope's, or the region's (the whole fleet, wave by wave).
Its batches' operations are under ``/api/v1/operations`` (their ``rollout_id`` names it);
here is where it stands: the batch (wave) it is at, how many it takes, the operation under
way, the events it made. A region rollout lists no VM names (it keeps a cursor).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from forewarn.fabric import Fabric, NotFoundError, RolloutRecord

__all__ = ["SCHEMAS", "RolloutOut", "RolloutRoutes", "rollout_out", "rollout_paths"]


class RolloutOut(msgspec.Struct):
    """Where a rollout stands."""

    id: str
    kind: str
    #: ``region`` or ``scope NAME``.
    target: str
    region: bool
    #: Batches (a region's waves) begun so far, of ``batches``.
    batch: int
    batches: int
    #: Hosts a region wave updates at once (null for a scope's rollout).
    wave_hosts: int | None
    current_operation: str | None
    #: Events a region rollout made so far (null for a scope's rollout).
    events: int | None
    done: bool


SCHEMAS = (RolloutOut,)


def rollout_out(rollout: RolloutRecord) -> RolloutOut:
    """The API view of a rollout."""
    region = rollout.region
    return RolloutOut(
        id=rollout.id,
        kind=rollout.kind,
        target=rollout.target,
        region=region,
        batch=rollout.next_batch,
        batches=rollout.waves if region else len(rollout.batches),
        wave_hosts=rollout.wave_hosts if region else None,
        current_operation=rollout.current_operation,
        events=rollout.events if region else None,
        done=rollout.done,
    )


def _json(data: Any) -> Response:
    return Response(msgspec.json.encode(data), media_type="application/json")


class RolloutRoutes:
    """Handlers of the rollout routes over one fabric."""

    def __init__(self, fabric: Fabric) -> None:
        self.fabric = fabric

    async def list_rollouts(self, request: Request) -> Response:
        return _json([rollout_out(r) for r in self.fabric.rollouts()])

    async def get_rollout(self, request: Request) -> Response:
        rollout_id = request.path_params["rollout_id"]
        for rollout in self.fabric.rollouts():
            if rollout.id == rollout_id:
                return _json(rollout_out(rollout))
        raise NotFoundError(f"no rollout with id {rollout_id!r}")


def rollout_paths(
    op: Callable[..., dict[str, Any]],
    ref: Callable[[str], dict[str, Any]],
    json: Callable[..., dict[str, Any]],
    path_param: Callable[[str], dict[str, Any]],
) -> dict[str, Any]:
    """The OpenAPI paths of these routes (``openapi.py``'s helpers passed in)."""
    return {
        "/api/v1/rollouts": {
            "get": op(
                "Rollouts (a scope's or the region's update-domain walk), oldest first",
                {"200": json({"type": "array", "items": ref("RolloutOut")})},
            )
        },
        "/api/v1/rollouts/{rollout_id}": {
            "get": op(
                "One rollout", {"200": json(ref("RolloutOut"))}, params=[path_param("rollout_id")]
            )
        },
    }
