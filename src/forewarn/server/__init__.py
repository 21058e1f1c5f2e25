"""Composition root and process runner of ``forewarn serve``."""

from .config import ConfigError, ServeConfig, parse_bind
from .runtime import (
    Listeners,
    Runtime,
    banner,
    build_runtime,
    choose_fleet,
    configure_logging,
    open_listeners,
    run_server,
)

__all__ = [
    "ConfigError",
    "Listeners",
    "Runtime",
    "ServeConfig",
    "banner",
    "build_runtime",
    "choose_fleet",
    "configure_logging",
    "open_listeners",
    "parse_bind",
    "run_server",
]
