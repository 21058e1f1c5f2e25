"""The ARM listener's part of the composition root: its settings from the server's
configuration and the fleet file, started with one call from ``runtime``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from forewarn.arm import ArmListener, ArmSettings, serve_arm
from forewarn.server.config import parse_bind

if TYPE_CHECKING:
    from forewarn.server.runtime import Runtime

__all__ = ["arm_settings", "start_arm"]


def arm_settings(runtime: Runtime) -> ArmSettings | None:
    """None unless ``--arm-bind`` was given."""
    config = runtime.config
    if config.arm_bind is None:
        return None
    host, port = parse_bind(config.arm_bind)
    where = config.arm_ca_dir or os.path.join(os.path.dirname(config.db) or ".", "forewarn-ca")
    return ArmSettings(
        host=host,
        port=port,
        ca_dir=Path(where),
        token=config.arm_token,
        subscription=None if runtime.spec is None else runtime.spec.subscription,
        resource_group=None if runtime.spec is None else runtime.spec.resource_group,
    )


async def start_arm(runtime: Runtime) -> ArmListener:
    """Serve ARM when configured (its banner line printed); ``close()`` it on the way out."""
    return await serve_arm(
        runtime.fabric, arm_settings(runtime), announce=_print, eventgrid=runtime.eventgrid
    )


def _print(line: str) -> None:
    print(line, flush=True)
