"""What a deferred reply (``Reply.wait``) becomes, for both transports.

A known service failure (the store cannot make the change durable) is a 503 that says
why; anything else is a fault of ours, logged, and the 500 clients retry with back-off.
"""

from __future__ import annotations

import asyncio
import logging

from forewarn.contract import error_body
from forewarn.fabric import StoreUnavailable
from forewarn.imds.messages import Reply

__all__ = ["INTERNAL_ERROR", "failure_reply", "resolve", "settled"]

log = logging.getLogger(__name__)

INTERNAL_ERROR = Reply(500, error_body("Internal server error"))


def failure_reply(exc: BaseException) -> Reply:
    """The reply for a deferred answer that raised ``exc``."""
    if isinstance(exc, StoreUnavailable):
        return Reply(503, error_body(str(exc)))
    log.error("a deferred reply failed", exc_info=exc)
    return INTERNAL_ERROR


def settled(future: asyncio.Future[Reply]) -> Reply:
    """The reply a finished ``future`` stands for (never raises)."""
    if future.cancelled():
        log.error("a deferred reply was cancelled")
        return INTERNAL_ERROR
    exc = future.exception()
    if exc is not None:
        return failure_reply(exc)
    reply = future.result()
    if not isinstance(reply, Reply):
        log.error("a deferred reply resolved to %r, not a Reply", reply)
        return INTERNAL_ERROR
    return reply


async def resolve(reply: Reply) -> Reply:
    """``reply`` once every ``wait`` behind it has resolved (for the ASGI adapter)."""
    while reply.wait is not None:
        try:
            reply = await reply.wait
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return failure_reply(exc)
        if not isinstance(reply, Reply):
            log.error("a deferred reply resolved to %r, not a Reply", reply)
            return INTERNAL_ERROR
    return reply
