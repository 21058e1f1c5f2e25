"""Query parameters that name something, read one way by every route that takes them
(the verdict's pages of scopes, the dashboard's): the same mistake gets the same 400."""

from __future__ import annotations

from starlette.requests import Request

from forewarn.rehearsal.bounded import SCOPE_KINDS

__all__ = ["BadQuery", "checked_scope_kind", "named"]


class BadQuery(ValueError):
    """A query parameter that is not what the route takes (its message says which)."""


def named(request: Request, name: str) -> str | None:
    """A parameter naming something, None when not given (``BadQuery``: given empty)."""
    raw = request.query_params.get(name)
    if raw is not None and not raw.strip():
        raise BadQuery(f"query parameter {name} is empty; name a {name} or omit it")
    return raw


def checked_scope_kind(kind: str | None) -> str | None:
    """``kind`` if it is a scope kind or None (``BadQuery``: another word)."""
    if kind is not None and kind not in SCOPE_KINDS:
        raise BadQuery(f"query parameter kind takes one of {', '.join(SCOPE_KINDS)}")
    return kind
