"""The client's one retry loop's decisions, shared by both twins.

The rules are ``RetryPolicy.delay`` (pure); a ``Decider`` feeds it the attempts made so
far, the time elapsed on the client's own clock (so tests can fake time) and one jitter
draw per failure. The twins loop: send, and on a ``Transient`` failure wait what
``after`` says or give up when it says None.
"""

from __future__ import annotations

from collections.abc import Callable

from forewarn.client.core import RetryPolicy, Transient

__all__ = ["Decider", "uniform"]


def uniform() -> float:
    """A draw from [0, 1), the twins' default jitter: ``random.random``, imported by the
    first retry (a request answered at once never needs it)."""
    from random import random

    return random()


class Decider:
    """One request's retry decisions, from its first attempt on."""

    def __init__(
        self, policy: RetryPolicy, clock: Callable[[], float], jitter: Callable[[], float]
    ) -> None:
        self._policy = policy
        self._clock = clock
        self._jitter = jitter
        self._start = clock()
        self._attempts = 0

    def after(self, failure: Transient) -> float | None:
        """An attempt failed with ``failure``: seconds to wait, or None to give up."""
        self._attempts += 1
        elapsed = self._clock() - self._start
        return self._policy.delay(failure, self._attempts, elapsed, self._jitter())
