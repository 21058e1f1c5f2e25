"""Votes in Redis: one hash per event (``NAMESPACE:event:ID``, field = VM), with a TTL.

``HSET`` + ``EXPIRE`` + ``HGETALL`` run in one MULTI transaction, so the reply holds every
vote written before this one, so the last voter sees the group complete. The approval is
claimed under ``NAMESPACE:claim:ID`` by a Lua script (``held:VM`` with a lease, renewed by
its holder; ``done:VM`` once posted, for ``ttl``), which Redis runs atomically. ``forget``
deletes the votes and leaves the claim to expire.
"""

from __future__ import annotations

import json
from typing import Any

from forewarn.agent.coordination.base import Claim, CoordinationError, Vote

__all__ = ["RedisCoordinator"]

#: KEYS[1] the claim; ARGV: vm, lease (ms). Free -> ours; ours and held -> renewed.
_CLAIM = """
local current = redis.call('GET', KEYS[1])
local mine = 'held:' .. ARGV[1]
if not current or current == mine then
  redis.call('SET', KEYS[1], mine, 'PX', ARGV[2])
  return mine
end
return current
"""

#: KEYS[1] the claim; ARGV: vm, ttl (s). Only the holder settles it: 1 if it did.
_SETTLE = """
local current = redis.call('GET', KEYS[1])
if current == 'done:' .. ARGV[1] then return 1 end
if current == 'held:' .. ARGV[1] then
  redis.call('SET', KEYS[1], 'done:' .. ARGV[1], 'EX', ARGV[2])
  return 1
end
return 0
"""


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

    def claim_key(self, event_id: str) -> str:
        return f"{self._namespace}:claim:{event_id}"

    async def claim(self, event_id: str, vm: str, lease: float) -> Claim:
        lease_ms = max(1, int(lease * 1000))
        try:
            raw = await self._redis.eval(_CLAIM, 1, self.claim_key(event_id), vm, lease_ms)
        except self._errors as exc:
            raise CoordinationError(f"redis {self._url}: {exc}") from None
        state, _, holder = str(raw).partition(":")
        done = state == "done"
        return Claim(holder=holder, done=done, ours=holder == vm and not done)

    async def settle(self, event_id: str, vm: str) -> bool:
        try:
            settled = await self._redis.eval(_SETTLE, 1, self.claim_key(event_id), vm, self._ttl)
        except self._errors as exc:
            raise CoordinationError(f"redis {self._url}: {exc}") from None
        return bool(int(settled))

    async def forget(self, event_id: str) -> None:
        try:
            await self._redis.delete(self.key(event_id))
        except self._errors as exc:
            raise CoordinationError(f"redis {self._url}: {exc}") from None

    async def close(self) -> None:
        await self._redis.aclose()
