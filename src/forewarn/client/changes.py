"""What changed between two documents: the watch's unit of news.

The documents themselves are the contract's one wire model (``forewarn.contract``), which
this package re-exports; only the client watches, so only the client diffs.
"""

from __future__ import annotations

from dataclasses import dataclass

from forewarn.contract import Document, Event

__all__ = ["DocumentChange", "diff_documents"]


@dataclass(frozen=True, slots=True)
class DocumentChange:
    """What changed between two documents; the first change of a watch adds every event."""

    document: Document
    added: tuple[Event, ...] = ()
    updated: tuple[Event, ...] = ()
    removed: tuple[Event, ...] = ()
    previous: Document | None = None

    def __bool__(self) -> bool:
        return bool(self.added or self.updated or self.removed)


def diff_documents(previous: Document | None, current: Document) -> DocumentChange:
    """Events added, updated (any field changed) and removed between two documents.

    Ids are compared ignoring case, as the endpoint compares them.
    """
    before = {e.event_id.lower(): e for e in (previous.events if previous else ())}
    after = {e.event_id.lower(): e for e in current.events}
    return DocumentChange(
        document=current,
        added=tuple(e for k, e in after.items() if k not in before),
        updated=tuple(e for k, e in after.items() if k in before and before[k] != e),
        removed=tuple(e for k, e in before.items() if k not in after),
        previous=previous,
    )
