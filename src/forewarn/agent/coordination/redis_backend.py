"""Votes in Redis: one hash per event (``NAMESPACE:event:ID``, field = VM), with a TTL.

``HSET`` + ``EXPIRE`` + ``HGETALL`` run in one MULTI transaction, so the reply holds every
vote written before this one, which is what makes "the last one to vote approves" exact.
"""

from __future__ import annotations

import json
from typing import Any

from forewarn.agent.coordination.base import CoordinationError, Vote

__all__ = ["RedisCoordinator"]


def _vote(vm: str, raw: str) -> Vote | None:
    try:
        data = json.loads(raw)
        return Vote(vm, bool(data["ready"]), str(data.get("reason", "")), float(data["at"]))
    except (ValueError, KeyError, TypeError):
        return None  # not ours: ignore rather than crash on a stray field


class RedisCoordinator:
    """A ``Coordinator`` over one Redis connection pool."""

    def __init__(self, url: str, namespace: str, ttl: float) -> None:
        import redis.asyncio as aioredis  # imported only by agents that coordinate over Redis

        self._errors: tuple[type[BaseException], ...] = (aioredis.RedisError, OSError)
        self._redis: Any = aioredis.from_url(url, decode_responses=True)
        self._namespace = namespace
        self._ttl = max(1, int(ttl))
        self._url = url

    def key(self, event_id: str) -> str:
        return f"{self._namespace}:event:{event_id}"

    @staticmethod
    def _votes(raw: dict[str, str]) -> dict[str, Vote]:
        votes = {vm: _vote(vm, value) for vm, value in raw.items()}
        return {vm: vote for vm, vote in votes.items() if vote is not None}

    async def record(
        self, event_id: str, vm: str, ready: bool, reason: str, at: float
    ) -> dict[str, Vote]:
        key = self.key(event_id)
        value = json.dumps({"ready": ready, "reason": reason, "at": at})
        try:
            async with self._redis.pipeline(transaction=True) as pipe:
                pipe.hset(key, vm, value)
                pipe.expire(key, self._ttl)
                pipe.hgetall(key)
                *_, raw = await pipe.execute()
        except self._errors as exc:
            raise CoordinationError(f"redis {self._url}: {exc}") from None
        return self._votes(raw)

    async def votes(self, event_id: str) -> dict[str, Vote]:
        try:
            raw = await self._redis.hgetall(self.key(event_id))
        except self._errors as exc:
            raise CoordinationError(f"redis {self._url}: {exc}") from None
        return self._votes(raw)

    async def forget(self, event_id: str) -> None:
        try:
            await self._redis.delete(self.key(event_id))
        except self._errors as exc:
            raise CoordinationError(f"redis {self._url}: {exc}") from None

    async def close(self) -> None:
        await self._redis.aclose()
