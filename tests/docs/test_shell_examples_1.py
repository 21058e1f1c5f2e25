"""The pages of shard 1 of tests/docs/test_shell_examples.py (which says how they run): a
file of its own, so another pytest-xdist worker runs them beside the other shards."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs.examples import page_name, pages_to_run
from tests.docs.pagerun import assert_page_runs
from tests.docs.test_shell_examples import SHARDS


@pytest.mark.parametrize("page", pages_to_run(1, SHARDS), ids=page_name)
def test_the_page_s_shell_examples_run(page: Path) -> None:
    assert_page_runs(page)
