"""Running a parsed query over rows (dicts): Kusto's semantics for the subset, enough for
the documented scheduled-events queries (case-insensitive ``=~`` and ``has``, descending
``order by`` unless ``asc``, nulls that match no comparison)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator
from functools import cmp_to_key
from itertools import islice
from typing import Any

from forewarn.arm.resourcegraph.kql import (
    LONG_MAX,
    Call,
    Compare,
    Count,
    KqlError,
    Literal,
    Logic,
    Order,
    Path,
    Project,
    Query,
    Summarize,
    Take,
    Where,
)

__all__ = ["TABLE", "run"]

TABLE = "maintenanceresources"
_TERM = re.compile(r"[A-Za-z0-9]+")
#: An integer in a string, short enough for ``int`` (which refuses over 4,300 digits).
_WHOLE = re.compile(r"[+-]?[0-9]{1,30}")
INT_MAX = 2**31 - 1


def run(query: Query, rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    if query.table.lower() != TABLE:
        raise KqlError(
            f"unsupported table {query.table[:60]!r}: forewarn serves {TABLE} only", query.table
        )
    # streamed: ``where``, ``project`` and ``take`` pass rows on as they come, so a query
    # that takes a few rows reads only as many as it needs; sorting and counting read all
    out: Iterable[dict[str, Any]] = rows
    for step in query.steps:
        if isinstance(step, Where):
            out = _where(step, out)
        elif isinstance(step, Project):
            out = _project(step, out)
        elif isinstance(step, Order):
            out = _sorted(list(out), step.keys)
        elif isinstance(step, Take):
            out = islice(out, max(0, step.count))
        elif isinstance(step, Summarize):
            out = _summarize(step, out)
        elif isinstance(step, Count):
            out = [{"Count": sum(1 for _ in out)}]
    return list(out)


def _where(step: Where, rows: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    return (r for r in rows if _truthy(value(step.condition, r)))


def _project(step: Project, rows: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    return ({name: value(expr, r) for name, expr in step.columns} for r in rows)


def _summarize(step: Summarize, rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[str, dict[str, Any]] = {}
    for row in rows:
        keys = {name: value(expr, row) for name, expr in step.by}
        ident = json.dumps(list(keys.values()), sort_keys=True, default=str)
        group = groups.setdefault(ident, {**keys, step.count_name: 0})
        group[step.count_name] += 1
    if not step.by and not groups:
        return [{step.count_name: 0}]
    return list(groups.values())


def value(expr: Any, row: dict[str, Any]) -> Any:
    if isinstance(expr, Literal):
        return expr.value
    if isinstance(expr, Path):
        node: Any = row
        for part in expr.parts:
            if isinstance(part, int):
                node = (
                    node[part]
                    if isinstance(node, list) and -len(node) <= part < len(node)
                    else None
                )
            else:
                node = node.get(part) if isinstance(node, dict) else None
            if node is None:
                return None
        return node
    if isinstance(expr, Call):
        return _call(expr, [value(a, row) for a in expr.args])
    if isinstance(expr, Logic):
        results = (_truthy(value(p, row)) for p in expr.parts)
        return all(results) if expr.op == "and" else any(results)
    if isinstance(expr, Compare):
        return _compare(expr, row)
    raise KqlError("unsupported expression", "")  # pragma: no cover - the parser makes none


def _text(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, dict | list):
        return json.dumps(v, separators=(",", ":"))
    return str(v)


def _call(call: Call, args: list[Any]) -> Any:
    name, arity = call.name, len(args)
    want = 1
    if arity != want:
        raise KqlError(f"{name}() takes {want} argument, got {arity}", name)
    (v,) = args
    if name == "tostring":
        return _text(v)
    if name == "tolower":
        return _text(v).lower()
    if name == "toupper":
        return _text(v).upper()
    if name in ("toint", "tolong"):
        return _integer(_text(v), INT_MAX if name == "toint" else LONG_MAX)
    if name == "isempty":
        return v is None or v == ""
    if name == "isnotempty":
        return not (v is None or v == "")
    if name == "isnull":
        return v is None
    if name == "isnotnull":
        return v is not None
    if name == "not":
        return not _truthy(v)
    if name == "strlen":
        return len(_text(v))
    if name == "array_length":
        return len(v) if isinstance(v, list) else None
    raise KqlError(f"unsupported function {name!r}", name)  # pragma: no cover


def _integer(text: str, high: int) -> int | None:
    """Kusto's ``toint``/``tolong``: a number's whole part when it fits, else null (never
    Python's OverflowError for ``inf`` or its ValueError for 4,300 digits)."""
    text = text.strip()
    try:
        if _WHOLE.fullmatch(text):
            whole = int(text)
        else:
            real = float(text)
            if not math.isfinite(real):
                return None
            whole = int(real)
    except ValueError:
        return None
    return whole if -high - 1 <= whole <= high else None


def _compare(expr: Compare, row: dict[str, Any]) -> bool:
    op = expr.op
    left = value(expr.left, row)
    negate = op.startswith("!") and op not in ("!=",)
    base = "=~" if op == "!~" else op[1:] if negate else op
    if base in ("in", "in~"):
        items = [value(i, row) for i in expr.right]
        if base == "in~":
            found = _text(left).lower() in {_text(i).lower() for i in items}
        else:
            found = left is not None and any(_equal(left, i) for i in items)
        return found != negate
    right = value(expr.right, row)
    if left is None or right is None:
        return op in ("!=", "!~") and not (left is None and right is None)
    if base == "==":
        return _equal(left, right)
    if op == "!=":
        return not _equal(left, right)
    if base == "=~":
        return (_text(left).lower() == _text(right).lower()) != negate
    if base in ("<", "<=", ">", ">="):
        try:
            order = _order(left, right)
        except TypeError:
            return False
        return {"<": order < 0, "<=": order <= 0, ">": order > 0, ">=": order >= 0}[base]
    lt, rt = _text(left), _text(right)
    result = {
        "contains": lambda: rt.lower() in lt.lower(),
        "contains_cs": lambda: rt in lt,
        "has": lambda: _has(lt.lower(), rt.lower()),
        "has_cs": lambda: _has(lt, rt),
        "startswith": lambda: lt.lower().startswith(rt.lower()),
        "endswith": lambda: lt.lower().endswith(rt.lower()),
    }[base]()
    return result != negate


def _has(text: str, term: str) -> bool:
    if not _TERM.fullmatch(term):
        return term in text
    return term in _TERM.findall(text)


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, str) and isinstance(b, str):
        return a == b
    return _text(a) == _text(b)


def _order(a: Any, b: Any) -> int:
    if isinstance(a, int | float) and isinstance(b, int | float):
        return (a > b) - (a < b)
    sa, sb = _text(a), _text(b)
    return (sa > sb) - (sa < sb)


def _compare_rows(a: dict[str, Any], b: dict[str, Any], keys: tuple[tuple[Any, bool], ...]) -> int:
    for expr, descending in keys:
        va, vb = value(expr, a), value(expr, b)
        if va is None or vb is None:
            if va is None and vb is None:
                continue
            # nulls last when descending, first when ascending (Kusto's defaults)
            first = -1 if va is None else 1
            return first if not descending else -first
        order = _order(va, vb)
        if order:
            return -order if descending else order
    return 0


def _sorted(rows: list[dict[str, Any]], keys: tuple[tuple[Any, bool], ...]) -> list[dict[str, Any]]:
    def compare(a: dict[str, Any], b: dict[str, Any]) -> int:
        return _compare_rows(a, b, keys)

    return sorted(rows, key=cmp_to_key(compare))


def _truthy(v: Any) -> bool:
    return v is True
