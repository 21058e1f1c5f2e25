"""Names sort as people count (``web-2`` before ``web-10``), by their text then their
numbers, as splitting each name into text and numbers orders them."""

from __future__ import annotations

import random
import re

from forewarn.fleet.names import natural


def _split(name: str) -> list[str | int]:
    """The order's definition: the name as text and numbers, compared in turn."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def test_numbers_count_as_numbers() -> None:
    names = ["web-10", "web-2", "web-1", "db-3", "web-2b", "web-02", "2web", "web", "web-"]
    assert sorted(names, key=natural) == [
        "2web", "db-3", "web", "web-", "web-1", "web-2", "web-02", "web-2b", "web-10",
    ]  # fmt: skip


def test_any_names_sort_as_their_text_and_numbers_do() -> None:
    rng = random.Random(39)
    letters = "ab-_.Z0123456789"
    names = ["".join(rng.choice(letters) for _ in range(rng.randint(0, 9))) for _ in range(20_000)]
    names += [f"as{i // 100}-{i % 100}" for i in range(0, 100_000, 37)]
    by_key = sorted(names, key=natural)
    assert [_split(n) for n in by_key] == sorted(_split(n) for n in names)
