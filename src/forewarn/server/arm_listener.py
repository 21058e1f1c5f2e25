"""The ARM listener's part of the composition root: its settings from the server's
configuration and the fleet file, started with one call from ``runtime``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from forewarn.admission import Pool
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
        header_timeout=config.api_header_timeout,
        host=host,
        port=port,
        ca_dir=Path(where),
        token=config.arm_token,
        client_secret=config.arm_client_secret,
    )


async def start_arm(runtime: Runtime, pool: Pool | None = None) -> ArmListener:
    """Serve ARM when configured (its banner line printed); ``close()`` it on the way out.
    ``pool``: the API listeners' connections, shared with the control API."""
    return await serve_arm(
        runtime.fabric,
        arm_settings(runtime),
        announce=_print,
        eventgrid=runtime.eventgrid,
        pool=pool,
        signer=runtime.endpoint.tokens,  # the VMs' tokens, as the endpoint signs them
    )


def _print(line: str) -> None:
    print(line, flush=True)
