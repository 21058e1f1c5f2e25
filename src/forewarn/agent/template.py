"""Webhook bodies: a TOML table whose string values are ``string.Template``s.

Templating the structure instead of the JSON text (Jinja2's way) means the body is always
valid JSON whatever an event's description holds, with no escaping filters to forget and
no template engine shipped to every VM. A string that is exactly one placeholder
(``"${Resources}"``) takes the value itself, so lists and numbers keep their JSON type.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from string import Template
from typing import Any

from forewarn.contract import EVENT_KEYS

__all__ = ["DEFAULT_BODY", "PLACEHOLDERS", "placeholders", "render"]

#: Names a template may use: the event's wire fields, plus the agent's own.
PLACEHOLDERS = (
    *EVENT_KEYS,
    "event",
    "vm_name",
    "phase",
    "deadline",
)

DEFAULT_BODY: dict[str, Any] = {"vm": "${vm_name}", "phase": "${phase}", "event": "${event}"}

_WHOLE = re.compile(r"^\$(?:\{(\w+)\}|(\w+))$")


def placeholders(body: Any) -> set[str]:
    """Every placeholder name used anywhere in ``body``; ValueError for a malformed one."""
    if isinstance(body, str):
        template = Template(body)
        if not template.is_valid():
            raise ValueError(f"{body!r} has a '$' that starts no placeholder (write $$ for $)")
        return set(template.get_identifiers())
    if isinstance(body, Mapping):
        return set().union(*(placeholders(v) for v in body.values())) if body else set()
    if isinstance(body, list):
        return set().union(*(placeholders(v) for v in body)) if body else set()
    return set()


def render(body: Any, values: Mapping[str, Any]) -> Any:
    """``body`` with placeholders replaced (strings by text, whole placeholders by value)."""
    if isinstance(body, str):
        whole = _WHOLE.match(body)
        if whole:
            return values[whole[1] or whole[2]]
        text = {k: v if isinstance(v, str) else _text(v) for k, v in values.items()}
        return Template(body).substitute(text)
    if isinstance(body, Mapping):
        return {k: render(v, values) for k, v in body.items()}
    if isinstance(body, list):
        return [render(v, values) for v in body]
    return body


def _text(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)
