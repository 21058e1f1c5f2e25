"""An ARM path parsed once: its shape (the literal segments, lower-cased, with ``{}`` for
each name) to route on, and the names in order.

ARM paths alternate a literal and a name (``subscriptions/{id}/resourceGroups/{name}``),
except that ``providers`` is followed by a namespace and then a resource type, both
literal (``providers/Microsoft.Compute/virtualMachines/{name}``); a path that ends on a
literal is a collection or an action (``.../virtualMachines``, ``.../{name}/restart``).
Literals compare case-insensitively, as ARM's do; names keep their case.
"""

from __future__ import annotations

from dataclasses import dataclass

from forewarn.arm.errors import ArmError
from forewarn.imds.segments import decode_segment

__all__ = ["ArmPath", "parse_path"]

#: The longest name shown back in an error message.
SHOWN = 80


@dataclass(frozen=True, slots=True)
class ArmPath:
    """``shape``: e.g. ``subscriptions/{}/resourcegroups/{}``; ``names``: the ``{}``s."""

    shape: str
    names: tuple[str, ...]
    text: str

    def shown(self) -> str:
        """The path as an error message may quote it (long paths cut)."""
        return self.text if len(self.text) <= 200 else self.text[:200] + "..."


def parse_path(path: str) -> ArmPath:
    """Split ``path`` (as sent: raw, without its query) into shape and names, each segment
    decoded after the split (``imds/segments.py``): an encoded ``/`` stays in its name.
    A name that decodes to what no Azure name can hold is ARM's 400 ``InvalidResourceName``;
    such a literal routes nowhere (404)."""
    segments = [s for s in path.split("/") if s]
    shape: list[str] = []
    names: list[str] = []
    literals_due = 1  # how many literal segments come before the next name
    for segment in segments:
        decoded = decode_segment(segment)
        if literals_due:
            low = (segment if decoded is None else decoded).lower()
            shape.append(low)
            literals_due -= 1
            if low == "providers":
                literals_due += 2  # the namespace, then a resource type
        else:
            if decoded is None:
                raise ArmError(
                    400,
                    "InvalidResourceName",
                    f"The resource name '{shown_name(segment)}' is invalid: a name cannot "
                    "hold '/', '\\', control characters or invalid UTF-8, nor be '.' or '..'.",
                )
            shape.append("{}")
            names.append(decoded)
            literals_due = 1
    return ArmPath("/".join(shape), tuple(names), "/" + "/".join(segments))


def shown_name(name: str) -> str:
    """A name as an error message quotes it (cut: a client may send 10 KB of it)."""
    return name if len(name) <= SHOWN else name[:SHOWN] + "..."
