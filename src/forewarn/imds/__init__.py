"""The metadata endpoint (HTTP): request rules, VM identity, rate limit, document cache."""

from forewarn.imds.app import ImdsApp
from forewarn.imds.cache import DocumentCache
from forewarn.imds.endpoint import Endpoint, ImdsSettings
from forewarn.imds.identity import VmResolver
from forewarn.imds.instance import INSTANCE_VERSIONS
from forewarn.imds.messages import Reply, Request
from forewarn.imds.metrics import EndpointMetrics
from forewarn.imds.protocol import serve_endpoint
from forewarn.imds.ratelimit import RateLimiter

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
