"""The retry loop's wiring to tenacity, shared by both twins.

The decisions are ``RetryPolicy.delay`` (pure); this only feeds it the attempt count, the
elapsed time from the client's own clock (so tests can fake time) and one jitter draw per
failure, and tells tenacity to wait that long or give up.

The first attempt is made without tenacity (``after_first``): nearly every request is
answered at once, and a tenacity loop per poll cost more CPU than the poll itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from forewarn.client.core import RetryPolicy, Transient

if TYPE_CHECKING:
    import tenacity

__all__ = ["Decider", "uniform"]


def uniform() -> float:
    """A draw from [0, 1), the twins' default jitter: ``random.random``, imported by the
    first retry (a request answered at once never needs it)."""
    from random import random

    return random()


class Decider:
    """One request's retry decisions, in the order tenacity asks: retry?, wait, stop?"""

    def __init__(
        self, policy: RetryPolicy, clock: Callable[[], float], jitter: Callable[[], float]
    ) -> None:
        self._policy = policy
        self._clock = clock
        self._jitter = jitter
        self._start = clock()
        self._delay: float | None = None
        self._attempts_before = 0  # attempts made before tenacity took over

    def after_first(self, failure: Transient) -> float | None:
        """The first attempt failed with ``failure``: seconds to wait, or None to give up.
        Tenacity's attempts then count from the second."""
        self._attempts_before = 1
        return self._decide(failure, 1)

    def _decide(self, failure: Transient, attempt: int) -> float | None:
        elapsed = self._clock() - self._start
        self._delay = self._policy.delay(failure, attempt, elapsed, self._jitter())
        return self._delay

    def _retry(self, state: tenacity.RetryCallState) -> bool:
        outcome = state.outcome
        error = outcome.exception() if outcome is not None else None
        if not isinstance(error, Transient):
            return False
        return self._decide(error, state.attempt_number + self._attempts_before) is not None

    def _wait(self, state: tenacity.RetryCallState) -> float:
        return self._delay or 0.0

    def _stop(self, state: tenacity.RetryCallState) -> bool:
        return self._delay is None

    def options(self) -> dict[str, Any]:
        """Keyword arguments for ``tenacity.Retrying`` / ``AsyncRetrying``."""
        return {"retry": self._retry, "wait": self._wait, "stop": self._stop, "reraise": True}
