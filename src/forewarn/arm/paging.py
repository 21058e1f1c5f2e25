"""ARM's paged lists: ``{"value": [...], "nextLink": ...}``, a page at a time, the next
page's URL carrying where it starts (``$skiptoken``), as clients follow it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from starlette.requests import Request

from forewarn.arm.errors import ArmError

__all__ = ["PAGE_SIZE", "page"]

#: Items per page (ARM's compute lists page at about this size too).
PAGE_SIZE = 100
T = TypeVar("T")


def page(
    request: Request, items: Sequence[T], render: Callable[[T], dict[str, Any]]
) -> dict[str, Any]:
    """The page of ``items`` the request asks for, rendered, with the next page's link."""
    token = request.query_params.get("$skiptoken", "0")
    if not (token.isascii() and token.isdigit()) or len(token) > 9:
        raise ArmError(400, "InvalidSkipToken", "The $skiptoken of this list is not valid.")
    start = int(token)
    out: dict[str, Any] = {"value": [render(i) for i in items[start : start + PAGE_SIZE]]}
    if start + PAGE_SIZE < len(items):
        out["nextLink"] = str(request.url.include_query_params(**{"$skiptoken": start + PAGE_SIZE}))
    return out
