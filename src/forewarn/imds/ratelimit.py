"""Per-VM request rate limit (5 requests per second by default, across all paths)."""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["Bucket", "RateLimiter"]


class Bucket:
    """One key's tokens and when they were counted, changed in place: not a new tuple
    per request (why: ``tests/imds/test_young_objects.py``). A repeated poll's ticket
    holds its VM's (``RateLimiter.bucket``): no look-up by name per poll."""

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
        self._buckets: dict[str, Bucket] = {}

    def bucket(self, key: str) -> Bucket:
        """``key``'s bucket (made full if it has none), the same object for as long as the
        limiter lives: a holder may ``take`` from it instead of asking by key."""
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = Bucket(self._rate, self._now())
        return bucket

    def allow(self, key: str) -> bool:
        """Take one token for ``key``; False when the bucket is empty."""
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self.bucket(key)
        return self.take(bucket)

    def take(self, bucket: Bucket) -> bool:
        """Take one token from ``bucket`` (one of this limiter's); False when it is empty."""
        now = self._now()
        rate = self._rate
        tokens = bucket.tokens + (now - bucket.last) * rate
        if tokens > rate:  # at most ``rate`` banked (not ``min``: a call per request)
            tokens = rate
        bucket.last = now
        if tokens < 1.0:
            bucket.tokens = tokens
            return False
        bucket.tokens = tokens - 1.0
        return True
