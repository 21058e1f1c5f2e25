"""``forewarn serve``: its settings (``config``), the composition root (``runtime``), its
sockets (``listeners``), the serving loop (``serving``), several workers (``workers``) and
the scale-out's part (``cluster/``)."""

from forewarn.server.config import ConfigError, ServeConfig, parse_bind
from forewarn.server.listeners import Listeners, banner, bind_listeners, open_listeners
from forewarn.server.logs import configure_logging
from forewarn.server.runtime import Prepared, Runtime, build_runtime, choose_fleet, prepare
from forewarn.server.serving import run_server

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
