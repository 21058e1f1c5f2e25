"""Resource Graph's query route: QueryRequest in (``query``, ``subscriptions``,
``options`` with ``$top``, ``$skip``, ``$skipToken``, ``resultFormat``), QueryResponse out
(``totalRecords``, ``count``, ``resultTruncated``, ``$skipToken``, ``data`` as an object
array or a table). A query outside the subset is a 400 naming the operator."""

from __future__ import annotations

import base64
import json
from typing import Any

from forewarn.arm.errors import ArmError
from forewarn.arm.resourcegraph.evaluate import run
from forewarn.arm.resourcegraph.kql import KqlError, parse
from forewarn.eventgrid import Ledger
from forewarn.eventgrid.payloads import resource_graph_row

__all__ = ["GRAPH_VERSIONS", "QueryError", "answer_query"]

GRAPH_VERSIONS = ("2018-09-01", "2024-04-01")
PAGE = 100
MAX_PAGE = 1000


class QueryError(ArmError):
    """Resource Graph's 400: ``BadRequest`` with the reason in ``details``."""

    def __init__(self, message: str, what: str = "") -> None:
        super().__init__(400, "BadRequest", message)
        self.what = what

    def body(self) -> dict[str, Any]:
        detail = {"code": "InvalidQuery", "message": self.message}
        if self.what:
            detail["operator"] = self.what
        return {"error": {"code": self.code, "message": self.message, "details": [detail]}}


def _int(options: dict[str, Any], key: str, low: int, high: int) -> int | None:
    v = options.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= high:
        raise QueryError(f"options.{key} must be an integer from {low} to {high}.")
    return v


def _skip_token(token: Any) -> int:
    if not isinstance(token, str) or len(token) > 200:
        raise QueryError("options.$skipToken is not a token this service gave.")
    try:
        skip = json.loads(base64.urlsafe_b64decode(token.encode()))["skip"]
    except (ValueError, KeyError, TypeError):
        raise QueryError("options.$skipToken is not a token this service gave.") from None
    if not isinstance(skip, int) or skip < 0:
        raise QueryError("options.$skipToken is not a token this service gave.")
    return skip


def answer_query(body: dict[str, Any], ledger: Ledger) -> dict[str, Any]:
    """The QueryResponse to a QueryRequest body."""
    query = body.get("query")
    if not isinstance(query, str):
        raise QueryError("query is required: a Kusto query over maintenanceresources.")
    subs = body.get("subscriptions")
    if subs is not None and (
        not isinstance(subs, list) or not all(isinstance(s, str) for s in subs)
    ):
        raise QueryError("subscriptions must be a list of subscription ids.")
    options = body.get("options") or {}
    if not isinstance(options, dict):
        raise QueryError("options must be an object.")
    fmt = options.get("resultFormat", "objectArray")
    if fmt not in ("objectArray", "table"):
        raise QueryError("options.resultFormat must be objectArray or table.")
    top = _int(options, "$top", 1, MAX_PAGE)
    skip = _int(options, "$skip", 0, 2**31) or 0
    if options.get("$skipToken") is not None:
        skip = _skip_token(options["$skipToken"])
    try:
        tree = parse(query)
    except KqlError as exc:
        raise QueryError(f"Query is invalid: {exc}", exc.what) from None
    names = ledger.names
    mine = subs is None or names.subscription.lower() in {s.lower() for s in subs}
    rows = (  # made as the query reads them: ``take 10`` makes ten
        (resource_graph_row(n, names.subscription, names.resource_group) for n in ledger.rows())
        if mine
        else iter(())
    )
    try:
        result = run(tree, rows)
    except KqlError as exc:
        raise QueryError(f"Query is invalid: {exc}", exc.what) from None
    size = top or PAGE
    page = result[skip : skip + size]
    out: dict[str, Any] = {
        "totalRecords": len(result),
        "count": len(page),
        "resultTruncated": "false",
        "facets": [],
        "data": page if fmt == "objectArray" else _table(page),
    }
    if skip + size < len(result):
        token = json.dumps({"skip": skip + size}).encode()
        out["$skipToken"] = base64.urlsafe_b64encode(token).decode()
    return out


def _kind(v: Any) -> str:
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    return "object"


def _table(rows: list[dict[str, Any]]) -> dict[str, Any]:
    names = list(rows[0]) if rows else []
    columns = [
        {"name": n, "type": next((_kind(r[n]) for r in rows if r[n] is not None), "string")}
        for n in names
    ]
    return {"columns": columns, "rows": [[r[n] for n in names] for r in rows]}
