"""Per-VM request rate limit (5 requests per second by default, across all paths)."""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["RateLimiter"]


class RateLimiter:
    """A token bucket per key: ``rate`` tokens per second, at most ``rate`` banked.

    Runs on real monotonic time, so a frozen virtual clock does not freeze the limit.
    """

    __slots__ = ("_buckets", "_now", "_rate")

    def __init__(self, rate: float, now: Callable[[], float]) -> None:
        self._rate = rate
        self._now = now
        self._buckets: dict[str, tuple[float, float]] = {}

    def allow(self, key: str) -> bool:
        """Take one token for ``key``; False when the bucket is empty."""
        now = self._now()
        tokens, last = self._buckets.get(key, (self._rate, now))
        tokens = min(self._rate, tokens + (now - last) * self._rate)
        if tokens < 1.0:
            self._buckets[key] = (tokens, now)
            return False
        self._buckets[key] = (tokens - 1.0, now)
        return True
