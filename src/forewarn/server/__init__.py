"""Composition root and process runner of ``forewarn serve``."""

from forewarn.server.config import ConfigError, ServeConfig, parse_bind
from forewarn.server.logs import configure_logging
from forewarn.server.runtime import (
    Listeners,
    Prepared,
    Runtime,
    banner,
    bind_listeners,
    build_runtime,
    choose_fleet,
    open_listeners,
    prepare,
    run_server,
)

__all__ = [
    "ConfigError",
    "Listeners",
    "Prepared",
    "Runtime",
    "ServeConfig",
    "banner",
    "bind_listeners",
    "build_runtime",
    "choose_fleet",
    "configure_logging",
    "open_listeners",
    "parse_bind",
    "prepare",
    "run_server",
]
