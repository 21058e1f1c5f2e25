"""Chromium for the dashboard's browser tests: Debian's executable, driven by Playwright
(whose own browser download does not work here)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from playwright import sync_api

__all__ = ["CHROMIUM", "browser", "needs_chromium"]

CHROMIUM = os.environ.get("FOREWARN_CHROMIUM", "/usr/bin/chromium")

#: Mark for a module whose tests drive the browser.
needs_chromium = pytest.mark.skipif(
    not os.path.exists(CHROMIUM), reason=f"no Chromium at {CHROMIUM} (.ci/run installs it)"
)


@pytest.fixture
def browser() -> Iterator[Any]:
    """One headless Chromium per test (sandbox off when run as root, as in CI)."""
    with sync_api.sync_playwright() as playwright:
        args = ["--no-sandbox"] if os.geteuid() == 0 else []
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=args)
        yield launched
        launched.close()
