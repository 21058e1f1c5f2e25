"""Rendered documents, kept as ready replies until their scope's incarnation changes."""

from __future__ import annotations

from forewarn.contract import ApiVersion, render_document
from forewarn.fabric import ScopeView
from forewarn.fleet import VM
from forewarn.imds.messages import Reply

__all__ = ["DocumentCache"]


class DocumentCache:
    """The 200 reply (body and ETag) of each (scope, incarnation, api-version), built once.

    Scopes with per-VM visibility (GPU scale sets) are cached per VM instead. The same
    Reply object is handed out until the incarnation changes, so transports can cache
    their framing of it by identity.
    """

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[tuple[str, str], tuple[int, dict[str, Reply]]] = {}

    def reply(self, view: ScopeView, vm: VM, version: ApiVersion) -> Reply:
        """The reply carrying the document ``vm`` gets for ``version``."""
        per_vm = view.scope.policy.per_vm_visibility
        key = ("vm", vm.name) if per_vm else ("scope", view.scope.id)
        entry = self._entries.get(key)
        if entry is None or entry[0] != view.incarnation:
            entry = (view.incarnation, {})
            self._entries[key] = entry
        reply = entry[1].get(version.name)
        if reply is None:
            events = view.events_for(vm.name) if per_vm else view.events
            body = render_document(
                view.incarnation, events, version, role_instances=view.scope.role_instances
            )
            reply = Reply(200, body, ((b"etag", b'"%d"' % view.incarnation),))
            entry[1][version.name] = reply
        return reply
