"""Resource Graph over a region's events: a query that takes a few rows reads as many from
the ledger as it needs, not every row (issue 39), and the ledger keeps its rows in order."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from forewarn.arm.resourcegraph import answer_query
from forewarn.eventgrid import Ledger, Notice
from forewarn.eventgrid.ledger import CHANNEL, notice_json
from forewarn.fabric import Changes, OutboxEntry
from tests.eventgrid.test_graph_any_query import _notice

TABLE = "maintenanceresources"


class _Region:
    """A ledger of a million events, made as they are read (and counted)."""

    def __init__(self, rows: int = 1_000_000) -> None:
        self.names = type("Names", (), {"subscription": "s", "resource_group": "rg"})()
        self.total = rows
        self.read = 0

    def rows(self) -> Iterator[Notice]:
        for i in range(self.total):
            self.read += 1
            yield _notice(i, ("Scheduled", "Started")[i % 2])


def _ask(ledger: Any, query: str) -> dict[str, Any]:
    return answer_query({"query": query}, ledger)


def test_take_and_limit_read_only_the_rows_they_return() -> None:
    for query, wanted, read in [
        (f"{TABLE} | take 5", 5, 5),
        (f"{TABLE} | limit 3 | project name", 3, 3),
        (f"{TABLE} | where properties.EventStatus == 'Started' | take 4", 4, 8),
        (f"{TABLE} | project id, name | take 0", 0, 0),
    ]:
        region = _Region()
        out = _ask(region, query)
        assert out["count"] == out["totalRecords"] == wanted, query
        assert region.read <= read + 1, (query, region.read)  # one more to see it ends
    region = _Region(rows=2_000)
    assert _ask(region, f"{TABLE} | count")["data"] == [{"Count": 2_000}]
    assert region.read == 2_000  # counting reads them all, as it must


def test_the_ledger_gives_its_rows_oldest_change_first_whatever_order_they_came_in() -> None:
    ledger = Ledger(None, lambda: 0.0, lambda _: True)  # type: ignore[arg-type]

    def publish(*notices: Notice) -> None:
        outbox = [OutboxEntry(id=n.id, channel=CHANNEL, body=notice_json(n)) for n in notices]
        ledger.published(Changes(outbox=outbox))

    at = {1: 5.0, 2: 5.0, 3: 1.0, 4: 9.0}

    def notice(i: int, status: str = "Scheduled") -> Notice:
        return replace(_notice(i, status), at=at[i])

    publish(notice(2), notice(1))  # the same change time: by event id
    assert [n.event_id for n in ledger.rows()] == ["event-1", "event-2"]
    publish(notice(4), notice(3))  # an older change after a newer one
    assert [n.event_id for n in ledger.rows()] == ["event-3", "event-1", "event-2", "event-4"]
    at[1] = 10.0
    publish(notice(1, "Started"))  # a row changes: it moves to its new place
    assert [n.event_id for n in ledger.rows()] == ["event-3", "event-2", "event-4", "event-1"]
    assert [n.status for n in ledger.rows()][-1] == "Started"
