"""The live dashboard: a static page (no build step) fed by the control API and a
server-sent event stream of every change this process publishes."""

from forewarn.control.dashboard.hub import Hub
from forewarn.control.dashboard.routes import (
    STATIC_PREFIX,
    DashboardRoutes,
    ScenarioHook,
    is_public,
    wants_page,
)

__all__ = ["STATIC_PREFIX", "DashboardRoutes", "Hub", "ScenarioHook", "is_public", "wants_page"]
