"""The metadata endpoint (HTTP): request rules, VM identity, rate limit, document cache."""

from .app import ImdsApp, ImdsSettings
from .identity import VmResolver
from .instance import INSTANCE_VERSIONS
from .ratelimit import RateLimiter

__all__ = ["INSTANCE_VERSIONS", "ImdsApp", "ImdsSettings", "RateLimiter", "VmResolver"]
