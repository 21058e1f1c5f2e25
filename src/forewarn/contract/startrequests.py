"""Strict parsing of a StartRequests body: the endpoint rejects a malformed one whole,
naming the problem."""

from __future__ import annotations

import json
from typing import NoReturn

__all__ = ["StartRequestError", "parse_start_requests"]


class StartRequestError(ValueError):
    """A StartRequests body that cannot be accepted; the message names the problem."""


def parse_start_requests(body: bytes | str) -> list[str]:
    """The EventIds a POST asks to start, in order, or StartRequestError.

    A ``DocumentIncarnation`` key (integer or string) is tolerated and ignored. Every
    malformed body, however hostile (bad UTF-8, deep nesting), is a StartRequestError, so
    the endpoint answers 400 and never 500.
    """
    try:
        if isinstance(body, str):
            body = body.encode()
        body.decode()  # a clear message for bad UTF-8 anywhere, not only inside strings
    except UnicodeError:
        raise StartRequestError("Request body is not valid UTF-8") from None
    body = body.removeprefix(b"\xef\xbb\xbf")  # Windows tools may prefix a UTF-8 BOM
    if not body.strip():
        raise StartRequestError('Request body is empty; expected {"StartRequests": [...]}')
    try:
        raw = json.loads(body, parse_constant=_not_json)
    except ValueError:
        raise StartRequestError("Request body is not valid JSON") from None
    except RecursionError:  # the decoder's depth guard: nothing was built, nothing to undo
        raise StartRequestError("Request body is nested too deeply") from None
    if not isinstance(raw, dict):
        raise StartRequestError("Request body must be a JSON object")
    requests = raw.get("StartRequests")
    if requests is None:
        raise StartRequestError("StartRequests is missing")
    if not isinstance(requests, list):
        raise StartRequestError("StartRequests must be a list")
    if not requests:
        raise StartRequestError("StartRequests is empty")
    ids: list[str] = []
    for index, entry in enumerate(requests):
        if not isinstance(entry, dict):
            raise StartRequestError(f"StartRequests[{index}] must be an object")
        event_id = entry.get("EventId")
        if not isinstance(event_id, str) or not event_id.strip():
            raise StartRequestError(f"StartRequests[{index}] has no string EventId")
        ids.append(event_id.strip())
    return ids


def _not_json(name: str) -> NoReturn:
    """NaN, Infinity and -Infinity, which Python's json reads and JSON has not."""
    raise ValueError(f"{name} is not JSON")
