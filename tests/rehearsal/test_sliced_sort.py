"""The grading's big sorts, made a slice at a time so the event loop gets the
interpreter's lock between them, give exactly ``sorted``'s order: stable, ties and all."""

from __future__ import annotations

import random

import pytest

from forewarn.fleet.names import natural
from forewarn.rehearsal import sliced_sort
from forewarn.rehearsal.sliced_sort import sort_sliced


@pytest.fixture(autouse=True)
def small_slices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sliced_sort, "SLICE", 64)  # many slices, from a few thousand rows


@pytest.mark.parametrize("rows", [0, 1, 63, 64, 65, 1000, 5003])
def test_names_come_out_as_sorted_puts_them(rows: int) -> None:
    rng = random.Random(rows)
    names = [f"as{rng.randint(0, 300)}-{rng.randint(0, 99)}" for _ in range(rows)]
    assert sort_sliced(names, natural) == sorted(names, key=natural)


def test_equal_keys_keep_their_order() -> None:
    rng = random.Random(7)
    rows = [(rng.randint(0, 9), i) for i in range(4000)]  # ten keys: long runs of ties
    assert sort_sliced(rows, key=lambda r: r[0]) == sorted(rows, key=lambda r: r[0])


def test_one_key_for_every_row_and_a_generator_of_them() -> None:
    latencies = [0.0] * 3000 + [1.5, 0.25] * 500
    assert sort_sliced(iter(latencies), key=float) == sorted(latencies)
    assert sort_sliced((x for x in [3.0] * 500), key=float) == [3.0] * 500


def test_rows_that_cannot_be_compared_are_ordered_by_their_keys_alone() -> None:
    class Row:  # no ordering of its own: only the key is ever compared
        def __init__(self, key: tuple[float, str]) -> None:
            self.key = key

    rng = random.Random(3)
    rows = [Row((float(rng.randint(0, 40)), f"vm-{rng.randint(0, 99)}")) for _ in range(3000)]
    assert sort_sliced(rows, key=lambda r: r.key) == sorted(rows, key=lambda r: r.key)
