"""Rendered documents, kept until their scope's incarnation changes."""

from __future__ import annotations

from ..contract import ApiVersion, render_document
from ..fabric import VM, ScopeView

__all__ = ["DocumentCache"]


class DocumentCache:
    """Bytes of each (scope, incarnation, api-version) document, rendered once.

    Scopes with per-VM visibility (GPU scale sets) are cached per VM instead.
    """

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[tuple[str, str], tuple[int, dict[str, bytes]]] = {}

    def document(self, view: ScopeView, vm: VM, version: ApiVersion) -> bytes:
        """The document ``vm`` gets for ``version``."""
        per_vm = view.scope.policy.per_vm_visibility
        key = ("vm", vm.name) if per_vm else ("scope", view.scope.id)
        entry = self._entries.get(key)
        if entry is None or entry[0] != view.incarnation:
            entry = (view.incarnation, {})
            self._entries[key] = entry
        body = entry[1].get(version.name)
        if body is None:
            events = view.events_for(vm.name) if per_vm else view.events
            body = render_document(
                view.incarnation, events, version, role_instances=view.scope.role_instances
            )
            entry[1][version.name] = body
        return body
