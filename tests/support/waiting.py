"""Poll a condition until it holds: the one way tests wait for something asynchronous."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import pytest

__all__ = ["wait_until"]

T = TypeVar("T")


def wait_until(
    predicate: Callable[[], T], timeout: float = 60.0, what: str = "", *, interval: float = 0.05
) -> T:
    """Call ``predicate`` every ``interval`` s until it returns something truthy, and return
    that; fail the test after ``timeout`` s, saying ``what`` it waited for and the last
    value seen."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(
                f"timed out after {timeout} s waiting for {what or predicate!r} "
                f"(last value: {value!r})"
            )
        time.sleep(interval)
