"""The retry loop's wiring to tenacity, shared by both twins.

The decisions are ``RetryPolicy.delay`` (pure); this only feeds it the attempt count, the
elapsed time from the client's own clock (so tests can fake time) and one jitter draw per
failure, and tells tenacity to wait that long or give up.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tenacity

from forewarn.client.core import RetryPolicy, Transient

__all__ = ["Decider"]


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

    def _retry(self, state: tenacity.RetryCallState) -> bool:
        outcome = state.outcome
        error = outcome.exception() if outcome is not None else None
        if not isinstance(error, Transient):
            return False
        elapsed = self._clock() - self._start
        self._delay = self._policy.delay(error, state.attempt_number, elapsed, self._jitter())
        return self._delay is not None

    def _wait(self, state: tenacity.RetryCallState) -> float:
        return self._delay or 0.0

    def _stop(self, state: tenacity.RetryCallState) -> bool:
        return self._delay is None

    def options(self) -> dict[str, Any]:
        """Keyword arguments for ``tenacity.Retrying`` / ``AsyncRetrying``."""
        return {"retry": self._retry, "wait": self._wait, "stop": self._stop, "reraise": True}
