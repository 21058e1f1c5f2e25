"""Every query a client can send to Resource Graph gets ARM's 400 or a result, never a 500:
numbers too long for Python's int (over 4,300 digits) or for a long, reals that overflow,
``toint('inf')``; random query text thrown at the parser and evaluator (hypothesis)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forewarn.arm.resourcegraph import QueryError, answer_query
from forewarn.eventgrid import Notice
from tests.arm.conftest import SUBSCRIPTION
from tests.eventgrid.conftest import GridServer

GRAPH = "/providers/Microsoft.ResourceGraph/resources"
AUTH = {"Authorization": "Bearer x"}
BIG = "9" * 5000
SUBSCRIPTION_PUT = (
    f"/subscriptions/{SUBSCRIPTION}/providers/Microsoft.EventGrid/eventSubscriptions/big"
)
TABLE = "maintenanceresources"


def _notice(i: int, status: str) -> Notice:
    return Notice(
        f"id-{i}", f"event-{i}", f"scope-{i}",
        f"/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/vm{i}"
        f"/providers/Microsoft.Maintenance/scheduledevents/event-{i}",
        "eastus", status, "Reboot", (f"vm{i}",), 1000.0 * i, "a description", "Platform", 300,
        float(i),
    )  # fmt: skip


class _Ledger:
    """What ``answer_query`` reads of the ledger: its names and rows."""

    def __init__(self) -> None:
        self.names = type("Names", (), {"subscription": "s", "resource_group": "rg"})()
        self._notices = [_notice(i, s) for i, s in enumerate(("Scheduled", "Started", "Canceled"))]

    def rows(self) -> list[Notice]:
        return self._notices


LEDGER: Any = _Ledger()

#: Pieces of the subset (and of what is outside it), numbers that break int() and float().
WORDS = [
    "|", "where", "project", "order by", "sort by", "take", "limit", "summarize", "count",
    "count()", "by", "asc", "desc", "nulls", "first", "last", "and", "or", "(", ")", "[", "]",
    ",", ".", "=", "==", "!=", "=~", "!~", "<", "<=", ">", ">=", "-", "contains", "!contains",
    "has", "!has", "startswith", "!startswith", "endswith", "!endswith", "in", "!in", "in~",
    "!in~", "contains_cs", "has_cs", "tostring", "tolower", "toupper", "toint", "tolong",
    "isempty", "isnotempty", "isnull", "isnotnull", "not", "strlen", "array_length", "true",
    "false", "name", "type", "properties", "properties.EventStatus", "properties.Resources",
    "properties.NotBefore", "properties.DurationInSeconds", "properties[0]", "id", "x",
    "'inf'", "'-inf'", "'nan'", "'1e999'", "'-1e999'", "'9223372036854775808'", "'Reboot'",
    '"Started"', "0", "1", "-1", "1.5", "2147483648", "9223372036854775808", BIG,
    f"{BIG}.5", f"0.{BIG}", f"'{BIG}'", f"properties[{BIG}]",
]  # fmt: skip


def _run(query: str) -> None:
    """Answer ``query`` as the route would: a result, or ``QueryError`` (ARM's 400)."""
    try:
        out = answer_query({"query": query, "options": {"resultFormat": "table"}}, LEDGER)
    except QueryError as exc:
        assert exc.status == 400 and exc.body()["error"]["message"]
        return
    assert out["count"] == len(out["data"]["rows"])


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(WORDS), max_size=14))
def test_any_query_of_the_subset_s_words_is_answered_or_a_400(words: list[str]) -> None:
    _run(f"{TABLE} | " + " ".join(words))


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_any_text_is_answered_or_a_400(text: str) -> None:
    _run(text)
    _run(f"{TABLE} | where {text}")


@pytest.mark.parametrize(
    "query",
    [
        f"{TABLE} | take {BIG}",
        f"{TABLE} | limit 9223372036854775808",
        f"{TABLE} | where 1 == {BIG}",
        f"{TABLE} | where 1 == -{BIG}",
        f"{TABLE} | project x = {BIG}.5",
        f"{TABLE} | project x = properties[{BIG}]",
        f"{TABLE} | project x = toint('inf')",
        f"{TABLE} | project x = toint('1e999')",
        f"{TABLE} | project x = tolong('-inf')",
        f"{TABLE} | project x = toint('{BIG}')",
        f"{TABLE} | where name !~ 'event-0'",
    ],
)
def test_numbers_too_big_and_overflowing_conversions_are_400s_or_nulls_on_a_real_server(
    grid: GridServer, query: str
) -> None:
    with grid.arm.https() as http:
        r = http.post(GRAPH, params={"api-version": "2021-03-01"}, json={"query": query},
                      headers=AUTH)  # fmt: skip
    assert r.headers["content-type"] == "application/json", r.text[:300]
    body = r.json()
    if r.status_code == 400:
        assert body["error"]["code"] == "BadRequest" and body["error"]["message"]
        return
    assert r.status_code == 200, r.text[:300]
    for row in body["data"]:  # a conversion that cannot be made is null, as in Kusto
        assert row.get("x") is None


def test_a_body_with_a_number_of_5000_digits_is_a_400_on_a_real_server(grid: GridServer) -> None:
    """On Resource Graph's route and on an event subscription's PUT (which is not made)."""
    body = b'{"query": "maintenanceresources", "options": {"$top": %s}}' % BIG.encode()
    with grid.arm.https() as http:
        r = http.post(GRAPH, params={"api-version": "2021-03-01"}, content=body,
                      headers={**AUTH, "content-type": "application/json"})  # fmt: skip
        assert r.status_code == 400, r.text[:300]
        assert r.json()["error"]["code"] == "InvalidRequestContent"
        put = http.put(SUBSCRIPTION_PUT, params={"api-version": "2025-04-01"},
                       content=b'{"properties": {"eventDeliverySchema": %s}}' % BIG.encode(),
                       headers={**AUTH, "content-type": "application/json"})  # fmt: skip
        assert put.status_code == 400, put.text[:300]
        assert put.json()["error"]["code"] == "InvalidRequestContent"
        assert http.get(SUBSCRIPTION_PUT, params={"api-version": "2025-04-01"},
                        headers=AUTH).status_code == 404  # fmt: skip


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("toint('inf')", None),
        ("toint('1e999')", None),
        ("tolong('-inf')", None),
        ("toint('2147483648')", None),
        ("toint('-12.7')", -12),
        ("tolong('9223372036854775807')", 9223372036854775807),
        ("tolong('9223372036854775808')", None),
    ],
)
def test_conversions_out_of_range_are_null(query: str, expected: int | None) -> None:
    out = answer_query({"query": f"{TABLE} | take 1 | project x = {query}"}, LEDGER)
    assert out["data"] == [{"x": expected}]


def test_numbers_beyond_a_long_are_refused_naming_the_number() -> None:
    for query in (f"{TABLE} | take {BIG}", f"{TABLE} | project x = properties[{BIG}]"):
        with pytest.raises(QueryError, match="long"):
            answer_query({"query": query}, LEDGER)
