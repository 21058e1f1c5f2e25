"""Composition root and process runner of ``forewarn serve``."""

from .config import ConfigError, ServeConfig, parse_bind
from .logs import configure_logging
from .runtime import (
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
