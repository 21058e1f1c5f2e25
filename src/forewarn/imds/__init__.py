"""The metadata endpoint (HTTP): request rules, VM identity, rate limit, document cache."""

from .app import ImdsApp
from .cache import DocumentCache
from .endpoint import Endpoint, ImdsSettings
from .identity import VmResolver
from .instance import INSTANCE_VERSIONS
from .messages import Reply, Request
from .metrics import EndpointMetrics
from .protocol import serve_endpoint
from .ratelimit import RateLimiter

__all__ = [
    "INSTANCE_VERSIONS",
    "DocumentCache",
    "Endpoint",
    "EndpointMetrics",
    "ImdsApp",
    "ImdsSettings",
    "RateLimiter",
    "Reply",
    "Request",
    "VmResolver",
    "serve_endpoint",
]
