"""Marks shared by the test packages."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest

__all__ = ["SLOW", "slow"]

#: Long end-to-end tests (real processes on a real clock) run only with
#: FOREWARN_SLOW_TESTS=1 (``.ci/run`` sets it and selects them with ``-m slow``), so the
#: default ``pytest -q`` stays quick.
SLOW = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not os.environ.get("FOREWARN_SLOW_TESTS"), reason="slow: set FOREWARN_SLOW_TESTS=1"
    ),
]


def slow(test: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a test slow (see ``SLOW``)."""
    for mark in SLOW:
        test = mark(test)
    return test
