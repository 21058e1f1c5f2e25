"""Per-VM request rate limit (5 requests per second by default, across all paths)."""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["RateLimiter"]


class _Bucket:
    """One key's tokens and when they were counted, changed in place: not a new tuple
    per request (why: ``tests/imds/test_young_objects.py``)."""

    __slots__ = ("last", "tokens")

    def __init__(self, tokens: float, last: float) -> None:
        self.tokens = tokens
        self.last = last


class RateLimiter:
    """A token bucket per key: ``rate`` tokens per second, at most ``rate`` banked.

    Runs on real monotonic time, so a frozen virtual clock does not freeze the limit.
    """

    __slots__ = ("_buckets", "_now", "_rate")

    def __init__(self, rate: float, now: Callable[[], float]) -> None:
        self._rate = rate
        self._now = now
        self._buckets: dict[str, _Bucket] = {}

    def allow(self, key: str) -> bool:
        """Take one token for ``key``; False when the bucket is empty."""
        now = self._now()
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = _Bucket(self._rate, now)
        tokens = min(self._rate, bucket.tokens + (now - bucket.last) * self._rate)
        bucket.last = now
        if tokens < 1.0:
            bucket.tokens = tokens
            return False
        bucket.tokens = tokens - 1.0
        return True
