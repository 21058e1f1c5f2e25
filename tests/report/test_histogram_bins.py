"""The report's latency histograms count each value in the bin its edges say: a value on
an edge in the bin above it, the largest in the last bin, none lost or counted twice."""

from __future__ import annotations

import random
from bisect import bisect_right

from forewarn.rehearsal.report.charts import histogram
from forewarn.rehearsal.verdicts import stats

#: The bins' edges as the page labels them (seconds), from 0 to a day.
EDGES = [0, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 900, 1800, 3600, 86400]


def test_a_value_on_an_edge_counts_in_the_bin_above_it() -> None:
    bars = histogram(stats([0.2, 1.0, 1.0, 1.5, 2.0, 4.9, 5000])).bars
    assert [b.title for b in bars[:4]] == [
        "1 between 0 s to 0.5 s", "0 between 0.5 s to 1 s",
        "3 between 1 s to 2 s", "2 between 2 s to 5 s",
    ]  # fmt: skip
    assert bars[-1].title == "1 between 60 min to 24 h"
    assert sum(b.count for b in bars) == 7


def test_every_value_is_counted_once_in_the_bin_that_holds_it() -> None:
    rng = random.Random(39)
    values = [0.0, 5000.0] + [
        rng.choice(EDGES[:-1]) if rng.random() < 0.2 else rng.uniform(0, 5000) for _ in range(5000)
    ]
    bars = histogram(stats(values)).bars
    assert len(bars) == len(EDGES) - 1
    expected = [0] * len(bars)
    for v in values:  # the bin whose lower edge is the largest at or below the value
        expected[bisect_right(EDGES, v) - 1] += 1
    assert [b.count for b in bars] == expected
    assert sum(expected) == len(values)
